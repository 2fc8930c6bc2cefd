use std::collections::BTreeMap;

use super::*;
use crate::lock::{ArchEntry, Autoscaler, Kubeadm, LockedRequest, ManifestEntry};

fn lock() -> Lock {
    let arch = ArchEntry {
        iso: "x.iso".into(),
        files: vec![],
        images: vec![],
    };
    let manifest = |path: &str, source: &str| ManifestEntry {
        path: path.into(),
        role: "network".into(),
        source: source.into(),
        sha256_taken: "a".repeat(64),
        sha256: "b".repeat(64),
    };
    Lock {
        version: crate::lock::VERSION,
        cks_iso: "0.1.0".into(),
        epoch: 1,
        epoch_from: None,
        request: LockedRequest {
            kubernetes: "1.33.1".into(),
            kubernetes_label: None,
            arches: vec!["amd64".into(), "arm64".into()],
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
            pinned: false,
        },
        kubeadm: Kubeadm {
            pause: "3.10".into(),
            etcd: "3.5.21-0".into(),
            coredns: "v1.12.0".into(),
            source: "embedded table".into(),
        },
        manifests: vec![
            manifest("network.yaml", "file:calico.yaml"),
            manifest("dashboard.yaml", "https://example.org/dashboard.yaml"),
        ],
        arches: BTreeMap::from([("amd64".into(), arch.clone()), ("arm64".into(), arch)]),
    }
}

fn network_file() -> Flags {
    Flags {
        network: Some("/somewhere/calico.yaml".into()),
        ..Flags::default()
    }
}

#[test]
fn the_lock_decides_versions_arches_name_and_manifest_sources() {
    let got = locked(&lock(), "x", &[], network_file(), Extra::default()).unwrap();
    assert_eq!(got.request.kubernetes, "1.33.1");
    assert_eq!(got.request.arches, [Arch::Amd64, Arch::Arm64]);
    assert_eq!(got.request.name, "setup-v1.33.1");
    assert_eq!(
        got.request.dashboard,
        Some(Source::Url("https://example.org/dashboard.yaml".into()))
    );
    assert_eq!(
        got.request.network,
        Source::File("/somewhere/calico.yaml".into())
    );
    assert_eq!(got.volume_id, "CDROM");
}

#[test]
fn a_flag_repeating_the_lock_is_fine_and_one_contradicting_it_is_a_usage_error() {
    let flags = Flags {
        kubernetes: Some("v1.33.1".into()),
        ..network_file()
    };
    locked(&lock(), "x", &[], flags, Extra::default()).unwrap();
    let flags = Flags {
        cni: Some("1.7.0".into()),
        ..network_file()
    };
    let err = locked(&lock(), "x", &[], flags, Extra::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--cni \"1.7.0\" contradicts the lock, which says \"1.6.2\""
    );
    let extra = Extra {
        autoscaler: Some(("1.33.1".into(), "AUTOSCALER_VERSION")),
        ..Extra::default()
    };
    let err = locked(&lock(), "x", &[], network_file(), extra).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("AUTOSCALER_VERSION=\"1.33.1\" contradicts"),
        "{err}"
    );
}

#[test]
fn a_local_manifest_must_be_given_again() {
    let err = locked(&lock(), "x", &[], Flags::default(), Extra::default()).unwrap_err();
    assert!(
        matches!(
            &err,
            PlanError::LocalManifest {
                flag: "--network",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("calico.yaml"), "{err}");
}

#[test]
fn arch_picks_from_the_lock_and_an_unlocked_arch_is_refused() {
    let flags = Flags {
        arches: vec!["aarch64".into()],
        ..network_file()
    };
    let got = locked(&lock(), "x", &[], flags, Extra::default()).unwrap();
    assert_eq!(got.request.arches, [Arch::Arm64]);
    assert_eq!(got.lock.arches.len(), 1);
    let mut one = lock();
    one.arches.remove("arm64");
    let flags = Flags {
        arches: vec!["arm64".into()],
        ..network_file()
    };
    let err = locked(&one, "old.lock", &[], flags, Extra::default()).unwrap_err();
    assert!(
        err.to_string().contains("old.lock locks amd64, not arm64"),
        "{err}"
    );
}

#[test]
fn positional_arguments_do_not_mix_with_a_lock() {
    let positional: Vec<String> = (0..7).map(|i| i.to_string()).collect();
    let err = locked(&lock(), "x", &positional, network_file(), Extra::default()).unwrap_err();
    assert!(matches!(err, PlanError::LockedPositional));
}

#[test]
fn a_lock_without_a_headlamp_image_keeps_ghcr_and_one_with_it_keeps_that() {
    // A lock written before registry.k8s.io served Headlamp names no image: the same ISO, from
    // ghcr.io, even for a release registry.k8s.io serves now.
    let mut old = lock();
    old.request.headlamp = Some("0.41.0".into());
    let got = locked(&old, "x", &[], network_file(), Extra::default()).unwrap();
    assert_eq!(
        got.request.headlamp_image.as_deref(),
        Some("ghcr.io/headlamp-k8s/headlamp:v0.41.0")
    );
    let mut new = old.clone();
    new.request.headlamp_image = Some("registry.k8s.io/headlamp/headlamp:v0.41.0".into());
    let got = locked(&new, "x", &[], network_file(), Extra::default()).unwrap();
    assert_eq!(
        got.request.headlamp_image.as_deref(),
        Some("registry.k8s.io/headlamp/headlamp:v0.41.0")
    );
    assert_eq!(
        locked(&lock(), "x", &[], network_file(), Extra::default())
            .unwrap()
            .request
            .headlamp_image,
        None
    );
}

/// The lock with an add-on image asked for and a local and a downloaded add-on manifest.
fn lock_with_addons() -> Lock {
    let mut lock = lock();
    let extra = |path: &str, source: &str| ManifestEntry {
        path: path.into(),
        role: crate::lock::EXTRA_ROLE.into(),
        source: source.into(),
        sha256_taken: "c".repeat(64),
        sha256: "d".repeat(64),
    };
    lock.manifests
        .push(extra("velero.yaml", "file:velero.yaml"));
    lock.manifests
        .push(extra("ms.yaml", "https://example.org/ms.yaml"));
    for arch in lock.arches.values_mut() {
        let [digest, manifest] = ["e", "f"].map(|c| format!("sha256:{}", c.repeat(64)));
        let nginx = "docker.io/library/nginx:1.27".into();
        arch.images.push(crate::lock::ImageEntry {
            extra: Some(crate::lock::EXTRA_ASKED.into()),
            ..crate::lock::ImageEntry::new(nginx, digest, manifest, 1)
        });
    }
    lock
}

#[test]
fn the_lock_decides_the_addons_and_flags_may_only_repeat_them() {
    let with = |images: &[&str], manifests: &[&str]| Extra {
        addons: crate::plan::addons(
            &images.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            &manifests.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
        .unwrap(),
        ..Extra::default()
    };
    // The local manifest must be given again.
    let err = locked(
        &lock_with_addons(),
        "x",
        &[],
        network_file(),
        with(&[], &[]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("velero.yaml") && err.contains("--manifest"),
        "{err}"
    );
    let pinned = locked(
        &lock_with_addons(),
        "x",
        &[],
        network_file(),
        with(&["nginx:1.27"], &["/tmp/velero.yaml"]),
    )
    .unwrap();
    let addons = &pinned.request.addons;
    assert_eq!(addons.images, ["docker.io/library/nginx:1.27"]);
    let names: Vec<(&str, &Source)> = addons
        .manifests
        .iter()
        .map(|(n, s)| (n.as_str(), s))
        .collect();
    assert_eq!(
        names,
        [
            ("velero.yaml", &Source::File("/tmp/velero.yaml".into())),
            (
                "ms.yaml",
                &Source::Url("https://example.org/ms.yaml".into())
            ),
        ]
    );
    let other = locked(
        &lock_with_addons(),
        "x",
        &[],
        network_file(),
        with(&["busybox"], &["/tmp/velero.yaml"]),
    )
    .unwrap_err();
    assert!(
        other
            .to_string()
            .starts_with("--image \"docker.io/library/busybox:latest\" contradicts"),
        "{other}"
    );
    let unknown = locked(
        &lock(),
        "x",
        &[],
        network_file(),
        with(&[], &["/tmp/new.yaml"]),
    );
    assert!(unknown.unwrap_err().to_string().contains("no new.yaml"));
}
