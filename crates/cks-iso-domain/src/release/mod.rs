//! Kubernetes releases as upstream publishes them, the pure half: what a version is, which
//! autoscaler release and CCM tag a Kubernetes minor takes from a tag listing, and the images
//! kubeadm names for a release (from its constants source or the embedded table).
//!
//! The listing itself (git's smart HTTP) and the download of kubeadm's constants are the network
//! side's (`cks_iso::release`); they hand this module the refs and the text.
//!
//! - `version`: Kubernetes versions, the autoscaler release for a minor (or the pin), the CCM tag.
//! - [`kubeadm`]: kubeadm's image list from its constants source or the embedded table.

mod error;
pub mod kubeadm;
mod version;

pub use error::VersionError;
pub use version::{
    AUTOSCALER_REF_PREFIX, AUTOSCALER_REPO, AUTOSCALER_TAG_PREFIX, AutoscalerChoice,
    AutoscalerVersion, DEFAULT_CCM_TAG, FIRST_MINOR, KubeVersion, autoscaler_pin,
    autoscaler_releases, ccm_tag, check_supported, choose_autoscaler, newest_for_minor, shown,
};

/// One ref as `git ls-remote` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRef {
    /// Full name, e.g. `refs/tags/cluster-autoscaler-1.33.1`.
    pub name: String,
    /// The object the ref points at (the tag object for an annotated tag).
    pub oid: String,
    /// For an annotated tag, the commit it points at.
    pub peeled: Option<String>,
}

/// The cluster-autoscaler image of a release (`1.33.4`), as `registry.k8s.io` publishes it.
pub fn autoscaler_image(version: &impl std::fmt::Display) -> String {
    format!("registry.k8s.io/autoscaling/cluster-autoscaler:v{version}")
}

/// The CloudStack CCM image of a tag (`v1.2.0`).
pub fn provider_image(tag: &str) -> String {
    format!("apache/cloudstack-kubernetes-provider:{tag}")
}
