//! The files a build takes from upstream web servers, as data: each file an ISO needs is an
//! [`Artifact`] — its upstream URL (what `versions.txt` records), where the checksum is published
//! and in which shape ([`checksum`]), and what the bytes must be ([`content`]). [`catalog`] lists
//! them for a set of resolved [`Pins`] and an architecture, so `resolve` can print every URL
//! without downloading. Taking one through the mirrors and verifying it is the network side's
//! (`cks_iso::upstream::Fetcher`).

pub mod checksum;
pub mod content;
pub mod label;

pub use checksum::Checksum;
pub use content::Content;

use crate::release::{AutoscalerVersion, KubeVersion};
use cks_iso_oci::image::Arch;

/// CNI plugins release used when none is given.
pub const DEFAULT_CNI: &str = "1.6.2";
/// CloudStack CSI driver release used when none is given (`docs/reference/iso-contract.md` §2).
pub const DEFAULT_CSI: &str = "v3.0.0";

/// Everything resolved that decides which files a build downloads.
#[derive(Debug, Clone)]
pub struct Pins {
    /// Kubernetes release.
    pub kubernetes: KubeVersion,
    /// CNI plugins version, without `v`.
    pub cni: String,
    /// cri-tools version, without `v`.
    pub crictl: String,
    /// etcd version without `v`, when etcd is bundled.
    pub etcd: Option<String>,
    /// Keep an arm64 etcd under its own name, `etcd/etcd-linux-arm64.tar.gz` (CloudStack 4.20,
    /// whose nodes read no etcd, and locks that recorded that name); otherwise it goes under
    /// [`crate::contract::ETCD_TARBALL`], the one name etcd nodes read.
    pub etcd_own_name: bool,
    /// The autoscaler release whose CloudStack example is bundled.
    pub autoscaler: AutoscalerVersion,
    /// The CCM tag, with `v`.
    pub ccm_tag: String,
    /// The CSI driver tag with `v`, when the CSI manifests are bundled.
    pub csi: Option<String>,
}

/// The crictl release that goes with a Kubernetes minor: cri-tools versions follow Kubernetes'.
pub fn default_crictl(kube: &KubeVersion) -> String {
    format!("{}.{}.0", kube.major, kube.minor)
}

/// Strips one leading `v`.
pub fn bare_version(v: &str) -> String {
    let v = v.trim();
    v.strip_prefix('v').unwrap_or(v).to_owned()
}

/// The old name of a file, tried only when the current one answers 404.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Legacy {
    /// Upstream URL under the old name.
    pub url: String,
}

/// One file a build downloads.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// Short name for messages, e.g. `kubeadm`.
    pub name: String,
    /// Its path in the ISO, e.g. `k8s/kubeadm`.
    pub dest: String,
    /// Upstream URL (before mirror rewriting).
    pub url: String,
    /// Tried only when `url` answers 404 (the CNI legacy file name).
    pub legacy: Option<Legacy>,
    /// Where its sha256 is published, if anywhere.
    pub checksum: Option<Checksum>,
    /// Whether a missing checksum file is an error (else a warning: "where published").
    pub checksum_required: bool,
    /// What the bytes must be.
    pub content: Content,
    /// Unix mode of the file in the ISO.
    pub mode: u32,
}

impl Artifact {
    /// The upstream URLs it is taken from: its URL, then its legacy name's.
    pub fn urls(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.url.as_str()).chain(self.legacy.as_ref().map(|l| l.url.as_str()))
    }

    /// Whether a lock may record it under `url`: only one of [`Artifact::urls`], so that the
    /// URL a lock names is the URL the bytes are verified under, whether they come from the
    /// cache or the network.
    pub fn taken_from(&self, url: &str) -> bool {
        self.urls().any(|u| u == url)
    }
}

/// The last path segment of a URL: the name checksum files use.
pub fn file_name(url: &str) -> &str {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    path.rsplit('/').next().unwrap_or(path)
}

/// Every file a build for `arch` downloads, in the order a build takes them.
pub fn catalog(pins: &Pins, arch: Arch) -> Vec<Artifact> {
    let mut out = kubernetes_binaries(pins, arch);
    out.push(cni_plugins(pins, arch));
    out.push(crictl(pins, arch));
    out.extend(etcd(pins, arch));
    out.extend(manifests(pins));
    out
}

/// kubeadm, kubelet and kubectl, each checked against its bare-hex `.sha256`.
fn kubernetes_binaries(pins: &Pins, arch: Arch) -> Vec<Artifact> {
    let a = arch.k8s();
    let k = &pins.kubernetes;
    let mut out = Vec::new();
    for bin in ["kubeadm", "kubelet", "kubectl"] {
        let url = format!("https://dl.k8s.io/release/v{k}/bin/linux/{a}/{bin}");
        out.push(Artifact {
            name: bin.into(),
            dest: crate::contract::k8s_binary(bin),
            checksum: Some(Checksum::BareHex {
                url: format!("{url}.sha256"),
            }),
            url,
            legacy: None,
            checksum_required: true,
            content: Content::Elf(arch),
            mode: 0o755,
        });
    }
    out
}

/// The CNI plugins' tarball, with the older name a release may still use (`legacy`).
fn cni_plugins(pins: &Pins, arch: Arch) -> Artifact {
    let a = arch.k8s();
    let cni = &pins.cni;
    let cni_base =
        format!("https://github.com/containernetworking/plugins/releases/download/v{cni}");
    let url = format!("{cni_base}/cni-plugins-linux-{a}-v{cni}.tgz");
    Artifact {
        name: "cni-plugins".into(),
        dest: crate::contract::cni_tarball(a),
        checksum: Some(Checksum::HexName {
            url: format!("{url}.sha256"),
        }),
        url,
        legacy: Some(Legacy {
            url: format!("{cni_base}/cni-plugins-{a}-v{cni}.tgz"),
        }),
        checksum_required: false,
        content: Content::GzipTar,
        mode: 0o644,
    }
}

/// crictl's tarball.
fn crictl(pins: &Pins, arch: Arch) -> Artifact {
    let a = arch.k8s();
    let crictl = &pins.crictl;
    let url = format!(
        "https://github.com/kubernetes-sigs/cri-tools/releases/download/v{crictl}/crictl-v{crictl}-linux-{a}.tar.gz"
    );
    Artifact {
        name: "crictl".into(),
        dest: format!("cri-tools/crictl-linux-{a}.tar.gz"),
        checksum: Some(Checksum::HexName {
            url: format!("{url}.sha256"),
        }),
        url,
        legacy: None,
        checksum_required: true,
        content: Content::GzipTar,
        mode: 0o644,
    }
}

/// etcd's tarball, when the CloudStack release's nodes take one.
fn etcd(pins: &Pins, arch: Arch) -> Option<Artifact> {
    let a = arch.k8s();
    pins.etcd.as_ref().map(|etcd| {
        let base = format!("https://github.com/etcd-io/etcd/releases/download/v{etcd}");
        // Under the amd64 name etcd nodes read, an arm64 etcd must hold arm64 executables: the
        // name no longer says what it is, so its members do.
        let under_amd64_name = arch == Arch::Arm64 && !pins.etcd_own_name;
        Artifact {
            name: "etcd".into(),
            dest: crate::contract::etcd_tarball(a, pins.etcd_own_name),
            url: format!("{base}/etcd-v{etcd}-linux-{a}.tar.gz"),
            legacy: None,
            checksum: Some(Checksum::Sums {
                url: format!("{base}/SHA256SUMS"),
            }),
            checksum_required: true,
            content: match under_amd64_name {
                true => Content::GzipTarOf(arch),
                false => Content::GzipTar,
            },
            mode: 0o644,
        }
    })
}

/// The autoscaler's and the CCM's manifests, and the CSI driver's when pinned: YAML, with no
/// checksum file to check them against.
fn manifests(pins: &Pins) -> Vec<Artifact> {
    let mut out = Vec::new();
    let manifest = |name: &str, dest: &str, url: String| Artifact {
        name: name.into(),
        dest: dest.into(),
        url,
        legacy: None,
        checksum: None,
        checksum_required: false,
        content: Content::Yaml,
        mode: 0o644,
    };
    out.push(manifest(
        "autoscaler manifest",
        crate::contract::AUTOSCALER,
        format!(
            "https://raw.githubusercontent.com/kubernetes/autoscaler/{}/cluster-autoscaler/cloudprovider/cloudstack/examples/cluster-autoscaler-standard.yaml",
            pins.autoscaler.tag()
        ),
    ));
    out.push(manifest(
        "CCM manifest",
        crate::contract::PROVIDER,
        format!(
            "https://raw.githubusercontent.com/apache/cloudstack-kubernetes-provider/{}/deployment.yaml",
            pins.ccm_tag
        ),
    ));
    if let Some(csi) = &pins.csi {
        let base =
            format!("https://github.com/cloudstack/cloudstack-csi-driver/releases/download/{csi}");
        out.push(manifest(
            "CSI manifest",
            "manifest.yaml",
            format!("{base}/manifest.yaml"),
        ));
        out.push(manifest(
            "CSI snapshot CRDs",
            "snapshot-crds.yaml",
            format!("{base}/snapshot-crds.yaml"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_may_name_a_download_only_by_its_url_or_its_legacy_name() {
        let pins = Pins {
            kubernetes: "1.33.1".parse().unwrap(),
            cni: "1.6.2".into(),
            crictl: "1.33.0".into(),
            etcd: None,
            autoscaler: AutoscalerVersion {
                major: 1,
                minor: 33,
                patch: 4,
            },
            ccm_tag: "v1.2.0".into(),
            csi: None,
            etcd_own_name: false,
        };
        let all = catalog(&pins, Arch::Amd64);
        let cni = all.iter().find(|a| a.dest.starts_with("cni/")).unwrap();
        let legacy = &cni
            .legacy
            .as_ref()
            .expect("the CNI tarball has a legacy name")
            .url;
        assert!(cni.taken_from(&cni.url) && cni.taken_from(legacy));
        let kubeadm = all.iter().find(|a| a.dest == "k8s/kubeadm").unwrap();
        assert!(kubeadm.taken_from(&kubeadm.url));
        for forged in [
            "https://example.org/cni-plugins-linux-amd64-v1.6.2.tgz",
            &format!("{}?x", cni.url),
            &cni.url.replace("v1.6.2", "v1.6.1"),
            &kubeadm.url,
        ] {
            assert!(!cni.taken_from(forged), "{forged}");
        }
    }
}
