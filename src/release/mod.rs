//! Kubernetes releases and what goes with each, as upstream publishes them: what a version is,
//! which autoscaler releases exist (tag listing over git's smart HTTP) and which one and which
//! CCM tag a Kubernetes minor takes, and the images kubeadm names for a release.
//!
//! Kept apart from [`crate::pipeline::resolve`], which puts these together with the upstream downloads
//! ([`crate::upstream`]) into one build's inputs: `upstream` needs the version types and the tag
//! listing too, and taking them from `resolve` made the two modules depend on each other.
//!
//! - versions (the domain's): [`KubeVersion`], the autoscaler release for a minor ([`autoscaler_pin`]
//!   or the choice from the tags), the CCM tag ([`ccm_tag`]).
//! - [`git`]: tag listing like `git ls-remote` over smart HTTP (v2 `ls-refs`, v0 fallback), on top
//!   of the pkt-line framing in [`pktline`].
//! - [`kubeadm`]: kubeadm's image list from its constants source or the embedded table.

mod error;
pub mod git;
pub mod pktline;

// The pure half (versions, the autoscaler and CCM choice, kubeadm's images) is the domain
// crate's; under the names the rest of the crate uses.
pub use cks_iso_domain::release::{
    AUTOSCALER_REF_PREFIX, AUTOSCALER_REPO, AutoscalerChoice, AutoscalerVersion, DEFAULT_CCM_TAG,
    GitRef, KubeVersion, VersionError, autoscaler_image, autoscaler_pin, ccm_tag, check_supported,
    choose_autoscaler, kubeadm, provider_image,
};
pub use error::ResolveError;
