//! What goes into an ISO, as `resolve` and `build` both take it: the component versions and
//! the add-on images.

use std::path::PathBuf;

use clap::Args;

use crate::env;
use crate::release::version::DEFAULT_CCM_TAG;
use crate::upstream::{DEFAULT_CNI, DEFAULT_CSI};

/// The add-on images `build` and `resolve` take (docs/guide/add-ons.md).
#[derive(Debug, Clone, Default, Args)]
pub struct AddonImageArgs {
    /// Extra image for docker/, repeatable: a reference as docker pull takes it (nginx,
    /// quay.io/org/name:tag, name@sha256:…, name:tag@sha256:…), pulled for the ISO's arch.
    #[arg(long = "image", value_name = "REF")]
    pub images: Vec<String>,
    /// A file of extra images, one reference a line (# comments and blank lines allowed).
    /// Repeatable.
    #[arg(long = "images-file", value_name = "FILE")]
    pub images_files: Vec<PathBuf>,
}

/// The component versions `resolve` and `build` both take.
#[derive(Debug, Clone, Args)]
pub struct VersionArgs {
    /// `--cni`.
    #[arg(
        long,
        value_name = "VERSION",
        help = format!("CNI plugins release [default: {DEFAULT_CNI}]")
    )]
    pub cni: Option<String>,
    /// `--crictl`.
    #[arg(
        long,
        value_name = "VERSION",
        help = "cri-tools (crictl) release [default: the Kubernetes minor's .0]"
    )]
    pub crictl: Option<String>,
    /// `--etcd`.
    #[arg(
        long,
        value_name = "VERSION",
        help = "etcd release to bundle for etcd nodes (none by default)"
    )]
    pub etcd: Option<String>,
    /// `--autoscaler-version` or `AUTOSCALER_VERSION`.
    #[arg(
        long,
        value_name = "VERSION",
        env = env::AUTOSCALER_VERSION.name,
        hide_env_values = true,
        help = "Exact cluster-autoscaler release [default: newest of the minor]"
    )]
    pub autoscaler_version: Option<String>,
    /// `--ccm-version` or `CCM_VERSION`.
    #[arg(
        long,
        value_name = "TAG",
        env = env::CCM_VERSION.name,
        hide_env_values = true,
        help = format!("CloudStack CCM tag [default: {DEFAULT_CCM_TAG}]")
    )]
    pub ccm_version: Option<String>,
    /// `--csi-version`.
    #[arg(
        long,
        value_name = "TAG",
        help = format!(
            "CloudStack CSI driver release, or `none` to leave the CSI manifests out \
             [default: {DEFAULT_CSI}]"
        )
    )]
    pub csi_version: Option<String>,
}
