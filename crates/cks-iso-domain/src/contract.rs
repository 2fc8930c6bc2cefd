//! Every path of the ISO, as the node-side consumers read them (`docs/reference/iso-contract.md`
//! §2).
//!
//! CloudStack's node scripts are not ours and will not change: they read fixed paths at the ISO's
//! root, glob `*.yaml` there and `docker/*.tar`. The build that writes these paths, `verify` that
//! checks them, `diff` that compares them and the SBOMs that list them name each one from here,
//! so a path cannot be spelt two ways. Pure: no I/O.

/// The kubelet, kubeadm and kubectl binaries, in this order.
pub const K8S_BINARIES: [&str; 3] = ["k8s/kubeadm", "k8s/kubelet", "k8s/kubectl"];

/// `k8s/<bin>`: where a Kubernetes binary goes.
pub fn k8s_binary(bin: &str) -> String {
    format!("k8s/{bin}")
}

/// The CNI plugins tarball of `arch` (`amd64`, `arm64`).
pub fn cni_tarball(arch: &str) -> String {
    format!("cni/cni-plugins-{arch}.tgz")
}

/// The one etcd tarball etcd nodes read (CloudStack 4.21 on): they extract this name whatever
/// their architecture, so an arm64 ISO's etcd goes under it too.
pub const ETCD_TARBALL: &str = "etcd/etcd-linux-amd64.tar.gz";

/// Where the etcd tarball of `arch` (`amd64`, `arm64`) goes: [`ETCD_TARBALL`], unless `own_name`
/// keeps it under its architecture's name (`etcd/etcd-linux-arm64.tar.gz`), which no etcd node
/// reads (CloudStack 4.20 ISOs, whose nodes read no etcd, and locks that recorded that name).
pub fn etcd_tarball(arch: &str, own_name: bool) -> String {
    match own_name {
        true => format!("etcd/etcd-linux-{arch}.tar.gz"),
        false => ETCD_TARBALL.to_owned(),
    }
}

/// The folder of image archives: everything in it is imported, so only `*.tar` go there.
pub const IMAGES_DIR: &str = "docker";
/// [`IMAGES_DIR`] with its `/`, the prefix of every image archive's path.
pub const IMAGES_PREFIX: &str = "docker/";

/// `docker/<file>`: the path of the image archive named `file` (e.g. `pause:3.10.tar`).
pub fn image_archive(file: &str) -> String {
    format!("{IMAGES_PREFIX}{file}")
}

/// What cks-iso records about the build, for nodes and people (`docs/reference/iso-contract.md`
/// §6).
pub const VERSIONS: &str = "versions.txt";

/// The ISO's own lock: every resolved input, enough to rebuild it byte for byte.
pub const LOCK: &str = "cks-iso.lock";

/// The ISO's inventory, CycloneDX 1.6.
pub const SBOM_CYCLONEDX: &str = "sbom.cdx.json";

/// The ISO's inventory, SPDX 2.3.
pub const SBOM_SPDX: &str = "sbom.spdx.json";

/// The signature evidence `verify --signatures` re-checks offline: binaries' bundles, the image
/// signature manifests (an OCI layout under `images/`) and the trusted root.
pub const SIGNATURES_DIR: &str = "signatures";
/// [`SIGNATURES_DIR`] with its `/`.
pub const SIGNATURES_PREFIX: &str = "signatures/";

/// The kubelet systemd unit and kubeadm's drop-in, at the root.
pub const KUBELET_SERVICE: &str = "kubelet.service";
/// See [`KUBELET_SERVICE`].
pub const KUBEADM_DROPIN: &str = "10-kubeadm.conf";

/// The user's CNI manifest.
pub const NETWORK: &str = "network.yaml";
/// The pinned cluster-autoscaler manifest.
pub const AUTOSCALER: &str = "autoscaler.yaml";
/// The pinned CloudStack cloud controller manager manifest.
pub const PROVIDER: &str = "provider.yaml";
/// The dashboard manifest (required up to CloudStack 4.22).
pub const DASHBOARD: &str = "dashboard.yaml";
/// The optional Headlamp manifest.
pub const HEADLAMP: &str = "headlamp.yaml";
/// The CloudStack CSI driver's manifest (copied to `/opt/csi` with [`CSI_SNAPSHOT_CRDS`]).
pub const CSI_MANIFEST: &str = "manifest.yaml";
/// The CloudStack CSI driver's snapshot CRDs.
pub const CSI_SNAPSHOT_CRDS: &str = "snapshot-crds.yaml";

/// Every name at the ISO's root that cks-iso writes or CloudStack's node scripts read: an
/// add-on manifest may take none of them (it would replace the file nodes apply or read).
pub const OWNED: [&str; 18] = [
    NETWORK,
    DASHBOARD,
    HEADLAMP,
    AUTOSCALER,
    PROVIDER,
    CSI_MANIFEST,
    CSI_SNAPSHOT_CRDS,
    VERSIONS,
    LOCK,
    SBOM_CYCLONEDX,
    SBOM_SPDX,
    KUBELET_SERVICE,
    KUBEADM_DROPIN,
    IMAGES_DIR,
    SIGNATURES_DIR,
    "k8s",
    "cni",
    "cri-tools",
];

/// Whether `name` is one of [`OWNED`], or the etcd directory, case-insensitively (Joliet and
/// people read names without case).
pub fn owned(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    OWNED.contains(&lower.as_str()) || lower == "etcd"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_the_contract_s() {
        assert_eq!(k8s_binary("kubeadm"), K8S_BINARIES[0]);
        assert_eq!(cni_tarball("arm64"), "cni/cni-plugins-arm64.tgz");
        assert_eq!(etcd_tarball("arm64", false), ETCD_TARBALL);
        assert_eq!(etcd_tarball("amd64", true), ETCD_TARBALL);
        assert_eq!(etcd_tarball("arm64", true), "etcd/etcd-linux-arm64.tar.gz");
        assert_eq!(image_archive("pause:3.10.tar"), "docker/pause:3.10.tar");
        assert_eq!(IMAGES_PREFIX, format!("{IMAGES_DIR}/"));
        assert_eq!(SIGNATURES_PREFIX, format!("{SIGNATURES_DIR}/"));
        assert!(owned("Autoscaler.yaml") && owned("etcd") && !owned("velero.yaml"));
        assert_eq!(ETCD_TARBALL.split('/').next(), Some("etcd"));
        // Node scripts glob `*.yaml` at the root: nothing of cks-iso's own may match.
        for own in [VERSIONS, LOCK, SBOM_CYCLONEDX, SBOM_SPDX] {
            assert!(!own.ends_with(".yaml") && !own.contains('/'), "{own}");
        }
    }
}
