//! What goes into an ISO, as `resolve` and `build` both take it: the component versions, the
//! add-ons, and the rest of the request (its manifests, CloudStack release, name, volume ID and
//! date), which `resolve --lock` needs to print the very lock `build` resolves from the same flags.

use std::path::PathBuf;

use clap::Args;

use crate::env;
use crate::release::DEFAULT_CCM_TAG;
use crate::upstream::{DEFAULT_CNI, DEFAULT_CSI};

/// The add-ons `build` and `resolve` take (docs/guide/add-ons.md): images and manifests.
#[derive(Debug, Clone, Default, Args)]
pub struct AddonArgs {
    /// Extra image for docker/, repeatable: a reference as docker pull takes it (nginx,
    /// quay.io/org/name:tag, name@sha256:…, name:tag@sha256:…), pulled for the ISO's arch.
    #[arg(long = "image", value_name = "REF")]
    pub images: Vec<String>,
    /// A file of extra images, one reference a line (# comments and blank lines allowed).
    /// Repeatable.
    #[arg(long = "images-file", value_name = "FILE")]
    pub images_files: Vec<PathBuf>,
    /// Extra manifest at the ISO's root, repeatable: [NAME=]URL|FILE, under NAME or its file
    /// name (ending in .yaml); edited and checked as the bundled ones, its images pulled.
    #[arg(long = "manifest", value_name = "[NAME=]URL|FILE")]
    pub manifests: Vec<String>,
}

/// The request beside its versions and add-ons, as `build` takes it and `resolve --lock` too:
/// the manifests given, the ISOs' name, volume ID and date, and the CloudStack release.
#[derive(Debug, Clone, Default, Args)]
pub struct RequestArgs {
    /// CNI manifest (network.yaml): URL or local file.
    #[arg(long, value_name = "URL|FILE")]
    pub network: Option<String>,
    /// Dashboard manifest (dashboard.yaml): URL or local file.
    #[arg(long, value_name = "URL|FILE")]
    pub dashboard: Option<String>,
    /// Headlamp manifest (headlamp.yaml), optional: URL or local file.
    #[arg(long, value_name = "URL|FILE", conflicts_with = "headlamp_version")]
    pub headlamp: Option<String>,
    /// Headlamp release (0.40.1, with or without v), as CloudStack 4.23 takes it: its
    /// kubernetes-headlamp.yaml becomes headlamp.yaml, its image pinned to the release's tag;
    /// --dashboard becomes optional.
    #[arg(long, value_name = "VERSION")]
    pub headlamp_version: Option<String>,
    /// ISO name before `-<x86_64|aarch64>.iso` [default: setup-v<KUBERNETES>]; not with several
    /// --kubernetes, whose ISOs each keep their default name.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Volume ID: CloudStack nodes look for CDROM [default: CDROM, or the lock's].
    #[arg(long, value_name = "ID")]
    pub volume_id: Option<String>,
    /// Seconds since 1970 that date the ISO [default: $SOURCE_DATE_EPOCH, else the lock's, else
    /// the newest `created` of kubeadm's linux/amd64 images: never the clock].
    #[arg(long, value_name = "N")]
    pub source_date_epoch: Option<i64>,
    /// The CloudStack release the ISOs are for (4.20, 4.21, 4.22, 4.23 or 24; a later one with a warning and 24's rules): its ISO name,
    /// dashboard or Headlamp manifest, etcd and CSI rules, recorded in versions.txt, the lock and
    /// the SBOMs [default: config file, else what 4.22 and 4.23 both read, recording none; a
    /// Headlamp version without --dashboard means 4.23].
    #[arg(long, value_name = "RELEASE", env = env::CKS_ISO_CLOUDSTACK.name, hide_env_values = true)]
    pub cloudstack: Option<String>,
}

impl RequestArgs {
    /// The first of these flags given that only a lock uses (`--cloudstack` aside, which the
    /// environment may set), for `resolve` without `--lock`.
    pub fn lock_only_flag(&self) -> Option<&'static str> {
        [
            (self.network.is_some(), "--network"),
            (self.dashboard.is_some(), "--dashboard"),
            (self.headlamp.is_some(), "--headlamp"),
            (self.headlamp_version.is_some(), "--headlamp-version"),
            (self.name.is_some(), "--name"),
            (self.volume_id.is_some(), "--volume-id"),
            (self.source_date_epoch.is_some(), "--source-date-epoch"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
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
