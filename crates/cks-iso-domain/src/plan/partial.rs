//! The versions a request gives before anything is fetched: what the user gave ([`Given`]) and
//! the defaults applied to it ([`Partial`]), in one place for `resolve`, `build` and `doctor`,
//! and what a lock pins read back the same way.

use cks_iso_oci::image::Arch;

use crate::catalog::{DEFAULT_CNI, DEFAULT_CSI, bare_version, default_crictl};
use crate::release::{KubeVersion, VersionError, ccm_tag};

/// What the arguments decided before anything was fetched.
#[derive(Debug, Clone)]
pub struct Partial {
    /// The Kubernetes release.
    pub kube: KubeVersion,
    /// The architecture whose URLs are listed.
    pub arch: Arch,
    /// The CCM tag.
    pub ccm: String,
    /// The autoscaler release asked for, if any (else the newest of the minor).
    pub pin: Option<String>,
    /// Where [`Partial::pin`] was given (a flag or a variable's name).
    pub pin_origin: &'static str,
    /// CNI plugins, without `v`.
    pub cni: String,
    /// crictl, without `v`.
    pub crictl: String,
    /// etcd without `v`, when bundled.
    pub etcd: Option<String>,
    /// Keep an arm64 etcd under its own name rather than the one etcd nodes read
    /// ([`crate::catalog::Pins::etcd_own_name`]).
    pub etcd_own_name: bool,
    /// `None` leaves the CSI manifests out.
    pub csi: Option<String>,
}

/// The versions the user gave (flags, environment, positional form), before defaults.
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// CNI plugins, with or without `v` [default: [`DEFAULT_CNI`]].
    pub cni: Option<String>,
    /// crictl [default: the Kubernetes minor's `.0`].
    pub crictl: Option<String>,
    /// etcd, when bundled.
    pub etcd: Option<String>,
    /// CSI driver tag, or `none` [default: [`DEFAULT_CSI`]].
    pub csi: Option<String>,
    /// CCM tag [default: `v1.2.0`].
    pub ccm: Option<String>,
    /// Autoscaler release [default: the newest of the minor].
    pub autoscaler: Option<String>,
    /// Where the autoscaler release was given (`--autoscaler-version`, `AUTOSCALER_VERSION`), for
    /// the messages about it.
    pub autoscaler_origin: &'static str,
}

impl Partial {
    /// The defaults applied to what was given, in one place for `resolve`, `build` and `doctor`.
    pub fn new(kube: KubeVersion, arch: Arch, given: Given) -> Result<Self, VersionError> {
        Ok(Self {
            ccm: ccm_tag(given.ccm.as_deref())?,
            pin: given.autoscaler,
            pin_origin: given.autoscaler_origin,
            cni: given
                .cni
                .as_deref()
                .map_or(DEFAULT_CNI.to_owned(), bare_version),
            crictl: given
                .crictl
                .as_deref()
                .map_or_else(|| default_crictl(&kube), bare_version),
            etcd: given.etcd.as_deref().map(bare_version),
            etcd_own_name: false,
            csi: csi_tag(given.csi.as_deref()),
            kube,
            arch,
        })
    }
}

/// The CSI driver tag: the default, the given one with a `v`, or `None` for `none`.
pub fn csi_tag(given: Option<&str>) -> Option<String> {
    match given.map(str::trim) {
        Some("none") => None,
        other => Some(format!("v{}", bare_version(other.unwrap_or(DEFAULT_CSI)))),
    }
}
