//! A lock of two arches built field by field, for the tests of this crate and of the crates
//! that read locks (`test-support` feature); not part of the library's API.

use std::collections::BTreeMap;

use super::{ArchEntry, Autoscaler, FileEntry, ImageEntry, Kubeadm, Lock, LockedRequest, VERSION};

/// A lock of two arches, for the tests of the modules that read locks.
pub fn sample() -> Lock {
    let digest = |fill: &str| format!("sha256:{}", fill.repeat(64));
    let image = |reference: &str| ImageEntry::new(reference.into(), digest("a"), digest("b"), 10);
    let file = |name: &str, size, fill: &str| {
        let url = format!("https://dl.k8s.io/{name}");
        FileEntry::new(format!("k8s/{name}"), url, size, fill.repeat(64))
    };
    let arch = ArchEntry {
        iso: "setup-v1.33.1-x86_64.iso".into(),
        files: vec![file("kubelet", 2, "c"), file("kubeadm", 1, "d")],
        images: vec![
            image("registry.k8s.io/pause:3.10"),
            image("docker.io/a/b:1"),
        ],
    };
    Lock {
        version: VERSION,
        cks_iso: "0.1.0".into(),
        epoch: 1_700_000_000,
        epoch_from: None,
        request: LockedRequest {
            kubernetes: "1.33.1".into(),
            kubernetes_label: None,
            arches: vec!["arm64".into(), "amd64".into()],
            cni: "1.6.2".into(),
            crictl: "1.33.0".into(),
            etcd: None,
            csi: Some("v3.0.0".into()),
            ccm: "v1.2.0".into(),
            autoscaler: "1.33.4".into(),
            headlamp: None,
            headlamp_image: None,
            cloudstack: None,
            volume_id: "CDROM".into(),
            name: "setup-v1.33.1".into(),
        },
        autoscaler: Autoscaler {
            version: "1.33.4".into(),
            tag: "cluster-autoscaler-1.33.4".into(),
            commit: None,
            pinned: true,
        },
        kubeadm: Kubeadm {
            pause: "3.10".into(),
            etcd: "3.5.21-0".into(),
            coredns: "v1.12.0".into(),
            source: "embedded table".into(),
        },
        manifests: vec![],
        arches: BTreeMap::from([("amd64".into(), arch.clone()), ("arm64".into(), arch)]),
    }
}
