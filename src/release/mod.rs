//! Kubernetes releases and what goes with each, as upstream publishes them: what a version is,
//! which autoscaler releases exist (tag listing over git's smart HTTP) and which one and which
//! CCM tag a Kubernetes minor takes, and the images kubeadm names for a release.
//!
//! Kept apart from [`crate::resolve`], which puts these together with the upstream downloads
//! ([`crate::upstream`]) into one build's inputs: `upstream` needs the version types and the tag
//! listing too, and taking them from `resolve` made the two modules depend on each other.
//!
//! - [`version`]: Kubernetes versions, the autoscaler release for a minor (or the pin), the CCM tag.
//! - [`git`]: tag listing like `git ls-remote` over smart HTTP (v2 `ls-refs`, v0 fallback), on top
//!   of the pkt-line framing in [`pktline`].
//! - [`kubeadm`]: kubeadm's image list from its constants source or the embedded table.

mod error;
pub mod git;
pub mod kubeadm;
pub mod pktline;
pub mod version;

pub use error::ResolveError;
pub use git::{GitRef, Listing, Protocol, ls_remote};
pub use kubeadm::{Extras, images};
pub use version::{AutoscalerChoice, AutoscalerVersion, KubeVersion, ccm_tag, choose_autoscaler};

/// The cluster-autoscaler image of a release (`1.33.4`), as `registry.k8s.io` publishes it.
pub fn autoscaler_image(version: &impl std::fmt::Display) -> String {
    format!("registry.k8s.io/autoscaling/cluster-autoscaler:v{version}")
}

/// The CloudStack CCM image of a tag (`v1.2.0`).
pub fn provider_image(tag: &str) -> String {
    format!("apache/cloudstack-kubernetes-provider:{tag}")
}
