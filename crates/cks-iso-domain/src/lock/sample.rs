//! A lock of two arches built field by field, for the tests of this crate and of the crates
//! that read locks (`test-support` feature); not part of the library's API.

use std::collections::BTreeMap;

use super::*;

/// A lock of two arches, for the tests of the modules that read locks.
pub fn sample() -> Lock {
    let image = |reference: &str| ImageEntry {
        reference: reference.into(),
        digest: format!("sha256:{}", "a".repeat(64)),
        manifest: format!("sha256:{}", "b".repeat(64)),
        size: 10,
        extra: None,
        signature: None,
    };
    let arch = ArchEntry {
        iso: "setup-v1.33.1-x86_64.iso".into(),
        files: vec![
            FileEntry {
                path: "k8s/kubelet".into(),
                url: "https://dl.k8s.io/kubelet".into(),
                size: 2,
                sha256: "c".repeat(64),
                signature: None,
            },
            FileEntry {
                path: "k8s/kubeadm".into(),
                url: "https://dl.k8s.io/kubeadm".into(),
                size: 1,
                sha256: "d".repeat(64),
                signature: None,
            },
        ],
        images: vec![
            image("registry.k8s.io/pause:3.10"),
            image("docker.io/a/b:1"),
        ],
    };
    Lock {
        version: VERSION,
        cks_iso: "0.1.0".into(),
        epoch: 1_700_000_000,
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
