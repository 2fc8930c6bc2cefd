//! Kubernetes releases and what goes with each, as upstream publishes them: what a version is,
//! which autoscaler releases exist (tag listing over git's smart HTTP) and which one and which
//! CCM tag a Kubernetes minor takes, and the images kubeadm names for a release.
//!
//! Kept apart from [`crate::pipeline::resolve`], which puts these together with the upstream downloads
//! ([`crate::upstream`]) into one build's inputs: `upstream` needs the version types and the tag
//! listing too, and taking them from `resolve` made the two modules depend on each other.
//!
//! - [`version`]: Kubernetes versions, the autoscaler release for a minor (or the pin), the CCM tag.
//! - [`git`]: tag listing like `git ls-remote` over smart HTTP (v2 `ls-refs`, v0 fallback), on top
//!   of the pkt-line framing in [`pktline`].
//! - [`kubeadm`]: kubeadm's image list from its constants source or the embedded table.

mod error;
pub mod git;
pub mod pktline;

// The pure half (versions, the autoscaler and CCM choice, kubeadm's images) is the domain
// crate's; under the names the rest of the crate uses.
pub use cks_iso_domain::release::{
    AutoscalerChoice, AutoscalerVersion, Extras, GitRef, KubeVersion, VersionError,
    autoscaler_image, ccm_tag, choose_autoscaler, images, kubeadm, provider_image, version,
};
pub use error::ResolveError;
pub use git::{Listing, Protocol, ls_remote};
