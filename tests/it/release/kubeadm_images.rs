//! kubeadm's image list computed without kubeadm equals what kubeadm prints (`upstream.md` §2):
//! registry cutover, CoreDNS naming in 1.20, `+` → `_`, the order change at 1.29, and the extras
//! per patch release — both from the embedded table and from constants files shaped like kubeadm's.

use cks_iso::release::kubeadm::{Extras, constants_unix_url, declares_pause, images};
use cks_iso::release::version::KubeVersion;

/// What `kubeadm config images list --kubernetes-version v<version>` prints, per the table.
const EXPECTED: &[(&str, &str)] = &[
    (
        "1.20.15",
        "
k8s.gcr.io/kube-apiserver:v1.20.15
k8s.gcr.io/kube-controller-manager:v1.20.15
k8s.gcr.io/kube-scheduler:v1.20.15
k8s.gcr.io/kube-proxy:v1.20.15
k8s.gcr.io/pause:3.2
k8s.gcr.io/etcd:3.4.13-0
k8s.gcr.io/coredns:1.7.0",
    ),
    (
        "1.21.4",
        "
k8s.gcr.io/kube-apiserver:v1.21.4
k8s.gcr.io/kube-controller-manager:v1.21.4
k8s.gcr.io/kube-scheduler:v1.21.4
k8s.gcr.io/kube-proxy:v1.21.4
k8s.gcr.io/pause:3.4.1
k8s.gcr.io/etcd:3.4.13-0
k8s.gcr.io/coredns/coredns:v1.8.0",
    ),
    (
        "1.22.16",
        "
k8s.gcr.io/kube-apiserver:v1.22.16
k8s.gcr.io/kube-controller-manager:v1.22.16
k8s.gcr.io/kube-scheduler:v1.22.16
k8s.gcr.io/kube-proxy:v1.22.16
k8s.gcr.io/pause:3.5
k8s.gcr.io/etcd:3.5.0-0
k8s.gcr.io/coredns/coredns:v1.8.4",
    ),
    (
        "1.22.17",
        "
registry.k8s.io/kube-apiserver:v1.22.17
registry.k8s.io/kube-controller-manager:v1.22.17
registry.k8s.io/kube-scheduler:v1.22.17
registry.k8s.io/kube-proxy:v1.22.17
registry.k8s.io/pause:3.5
registry.k8s.io/etcd:3.5.6-0
registry.k8s.io/coredns/coredns:v1.8.4",
    ),
    (
        "1.23.0",
        "
k8s.gcr.io/kube-apiserver:v1.23.0
k8s.gcr.io/kube-controller-manager:v1.23.0
k8s.gcr.io/kube-scheduler:v1.23.0
k8s.gcr.io/kube-proxy:v1.23.0
k8s.gcr.io/pause:3.6
k8s.gcr.io/etcd:3.5.1-0
k8s.gcr.io/coredns/coredns:v1.8.6",
    ),
    (
        "1.24.0",
        "
k8s.gcr.io/kube-apiserver:v1.24.0
k8s.gcr.io/kube-controller-manager:v1.24.0
k8s.gcr.io/kube-scheduler:v1.24.0
k8s.gcr.io/kube-proxy:v1.24.0
k8s.gcr.io/pause:3.7
k8s.gcr.io/etcd:3.5.3-0
k8s.gcr.io/coredns/coredns:v1.8.6",
    ),
    (
        "1.25.0",
        "
registry.k8s.io/kube-apiserver:v1.25.0
registry.k8s.io/kube-controller-manager:v1.25.0
registry.k8s.io/kube-scheduler:v1.25.0
registry.k8s.io/kube-proxy:v1.25.0
registry.k8s.io/pause:3.8
registry.k8s.io/etcd:3.5.4-0
registry.k8s.io/coredns/coredns:v1.9.3",
    ),
    (
        "1.26.0",
        "
registry.k8s.io/kube-apiserver:v1.26.0
registry.k8s.io/kube-controller-manager:v1.26.0
registry.k8s.io/kube-scheduler:v1.26.0
registry.k8s.io/kube-proxy:v1.26.0
registry.k8s.io/pause:3.9
registry.k8s.io/etcd:3.5.6-0
registry.k8s.io/coredns/coredns:v1.9.3",
    ),
    (
        "1.27.7",
        "
registry.k8s.io/kube-apiserver:v1.27.7
registry.k8s.io/kube-controller-manager:v1.27.7
registry.k8s.io/kube-scheduler:v1.27.7
registry.k8s.io/kube-proxy:v1.27.7
registry.k8s.io/pause:3.9
registry.k8s.io/etcd:3.5.9-0
registry.k8s.io/coredns/coredns:v1.10.1",
    ),
    (
        "1.28.15",
        "
registry.k8s.io/kube-apiserver:v1.28.15
registry.k8s.io/kube-controller-manager:v1.28.15
registry.k8s.io/kube-scheduler:v1.28.15
registry.k8s.io/kube-proxy:v1.28.15
registry.k8s.io/pause:3.9
registry.k8s.io/etcd:3.5.15-0
registry.k8s.io/coredns/coredns:v1.10.1",
    ),
    (
        "1.29.0",
        "
registry.k8s.io/kube-apiserver:v1.29.0
registry.k8s.io/kube-controller-manager:v1.29.0
registry.k8s.io/kube-scheduler:v1.29.0
registry.k8s.io/kube-proxy:v1.29.0
registry.k8s.io/coredns/coredns:v1.11.1
registry.k8s.io/pause:3.9
registry.k8s.io/etcd:3.5.10-0",
    ),
    (
        "1.29.11",
        "
registry.k8s.io/kube-apiserver:v1.29.11
registry.k8s.io/kube-controller-manager:v1.29.11
registry.k8s.io/kube-scheduler:v1.29.11
registry.k8s.io/kube-proxy:v1.29.11
registry.k8s.io/coredns/coredns:v1.11.1
registry.k8s.io/pause:3.9
registry.k8s.io/etcd:3.5.16-0",
    ),
    (
        "1.30.5",
        "
registry.k8s.io/kube-apiserver:v1.30.5
registry.k8s.io/kube-controller-manager:v1.30.5
registry.k8s.io/kube-scheduler:v1.30.5
registry.k8s.io/kube-proxy:v1.30.5
registry.k8s.io/coredns/coredns:v1.11.3
registry.k8s.io/pause:3.9
registry.k8s.io/etcd:3.5.15-0",
    ),
    (
        "1.31.0",
        "
registry.k8s.io/kube-apiserver:v1.31.0
registry.k8s.io/kube-controller-manager:v1.31.0
registry.k8s.io/kube-scheduler:v1.31.0
registry.k8s.io/kube-proxy:v1.31.0
registry.k8s.io/coredns/coredns:v1.11.1
registry.k8s.io/pause:3.10
registry.k8s.io/etcd:3.5.15-0",
    ),
    (
        "1.31.14",
        "
registry.k8s.io/kube-apiserver:v1.31.14
registry.k8s.io/kube-controller-manager:v1.31.14
registry.k8s.io/kube-scheduler:v1.31.14
registry.k8s.io/kube-proxy:v1.31.14
registry.k8s.io/coredns/coredns:v1.11.3
registry.k8s.io/pause:3.10
registry.k8s.io/etcd:3.5.24-0",
    ),
    (
        "1.32.10",
        "
registry.k8s.io/kube-apiserver:v1.32.10
registry.k8s.io/kube-controller-manager:v1.32.10
registry.k8s.io/kube-scheduler:v1.32.10
registry.k8s.io/kube-proxy:v1.32.10
registry.k8s.io/coredns/coredns:v1.11.3
registry.k8s.io/pause:3.10
registry.k8s.io/etcd:3.5.24-0",
    ),
    (
        "1.33.1",
        "
registry.k8s.io/kube-apiserver:v1.33.1
registry.k8s.io/kube-controller-manager:v1.33.1
registry.k8s.io/kube-scheduler:v1.33.1
registry.k8s.io/kube-proxy:v1.33.1
registry.k8s.io/coredns/coredns:v1.12.0
registry.k8s.io/pause:3.10
registry.k8s.io/etcd:3.5.21-0",
    ),
    (
        "1.34.2",
        "
registry.k8s.io/kube-apiserver:v1.34.2
registry.k8s.io/kube-controller-manager:v1.34.2
registry.k8s.io/kube-scheduler:v1.34.2
registry.k8s.io/kube-proxy:v1.34.2
registry.k8s.io/coredns/coredns:v1.12.1
registry.k8s.io/pause:3.10.1
registry.k8s.io/etcd:3.6.5-0",
    ),
    (
        "1.35.7",
        "
registry.k8s.io/kube-apiserver:v1.35.7
registry.k8s.io/kube-controller-manager:v1.35.7
registry.k8s.io/kube-scheduler:v1.35.7
registry.k8s.io/kube-proxy:v1.35.7
registry.k8s.io/coredns/coredns:v1.13.1
registry.k8s.io/pause:3.10.1
registry.k8s.io/etcd:3.6.6-0",
    ),
    (
        "1.36.3",
        "
registry.k8s.io/kube-apiserver:v1.36.3
registry.k8s.io/kube-controller-manager:v1.36.3
registry.k8s.io/kube-scheduler:v1.36.3
registry.k8s.io/kube-proxy:v1.36.3
registry.k8s.io/coredns/coredns:v1.14.2
registry.k8s.io/pause:3.10.2
registry.k8s.io/etcd:3.6.8-0",
    ),
];

fn version(s: &str) -> KubeVersion {
    s.parse().unwrap()
}

fn lines(s: &str) -> Vec<String> {
    s.trim().lines().map(str::to_owned).collect()
}

fn fixture(name: &str) -> String {
    let path = format!("{}/fixtures/kubeadm/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn image_list_matches_kubeadm_for_versions_across_1_20_to_1_36() {
    assert!(EXPECTED.len() >= 15);
    for (v, want) in EXPECTED {
        let v = version(v);
        let extras = Extras::embedded(&v).unwrap_or_else(|| panic!("no embedded extras for {v}"));
        assert_eq!(images(&v, &extras), lines(want), "Kubernetes {v}");
    }
}

#[test]
fn a_v_prefix_changes_nothing() {
    let (v, want) = EXPECTED[EXPECTED.len() - 1];
    let with_v = version(&format!("v{v}"));
    assert_eq!(
        images(&with_v, &Extras::embedded(&with_v).unwrap()),
        lines(want)
    );
}

#[test]
fn build_metadata_plus_becomes_underscore_in_tags() {
    let v = version("v1.33.1+cks.1");
    let list = images(&v, &Extras::embedded(&v).unwrap());
    assert_eq!(list[0], "registry.k8s.io/kube-apiserver:v1.33.1_cks.1");
    assert_eq!(list[3], "registry.k8s.io/kube-proxy:v1.33.1_cks.1");
    assert!(list.iter().all(|i| !i.contains('+')), "{list:?}");
}

#[test]
fn kubeadm_1_20_declares_pause_in_constants_unix_go() {
    let v = version("1.20.15");
    let constants = fixture("constants-v1.20.go");
    assert!(!declares_pause(&constants));
    let err = Extras::from_constants(&constants, v.minor).unwrap_err();
    assert!(err.to_string().contains("PauseVersion"), "{err}");
    let both = format!("{constants}\n{}", fixture("constants_unix-v1.20.go"));
    assert_eq!(
        Extras::from_constants(&both, v.minor).ok(),
        Extras::embedded(&v)
    );
    assert!(
        constants_unix_url(&v).ends_with("/v1.20.15/cmd/kubeadm/app/constants/constants_unix.go")
    );
}

#[test]
fn constants_files_shaped_like_kubeadms_give_the_tables_extras() {
    for (file, v) in [
        ("constants-v1.22.17.go", "1.22.17"),
        ("constants-v1.29.3.go", "1.29.3"),
        ("constants-v1.36.3.go", "1.36.3"),
    ] {
        let v = version(v);
        let parsed = Extras::from_constants(&fixture(file), v.minor).unwrap();
        assert_eq!(Some(parsed), Extras::embedded(&v), "{file}");
    }
}

#[test]
fn a_release_newer_than_the_table_is_listed_from_its_constants() {
    let v = version("1.37.0");
    assert_eq!(Extras::embedded(&v), None);
    // Its map may not have the new minor yet: kubeadm then uses the nearest key.
    let extras = Extras::from_constants(&fixture("constants-v1.36.3.go"), v.minor).unwrap();
    let list = images(&v, &extras);
    assert_eq!(list[4], "registry.k8s.io/coredns/coredns:v1.14.2");
    assert_eq!(list[6], "registry.k8s.io/etcd:3.6.8-0");
}

/// Each form kubeadm's etcd map has taken (fixtures/README.md names the upstream change of each)
/// gives kubeadm's extras for its release: skew keys in 1.35, literal keys again in 1.36 and 1.37.
#[test]
fn every_form_of_the_etcd_map_gives_the_releases_own_extras() {
    for (file, v, coredns, etcd, pause) in [
        (
            "constants-v1.35.9.go",
            "1.35.9",
            "v1.13.1",
            "3.6.10-0",
            "3.10.1",
        ),
        (
            "constants-v1.36.4.go",
            "1.36.4",
            "v1.14.2",
            "3.6.10-0",
            "3.10.2",
        ),
        (
            "constants-v1.37.0.go",
            "1.37.0",
            "v1.14.2",
            "3.6.11-0",
            "3.10.2",
        ),
    ] {
        let v = version(v);
        let extras = Extras::from_constants(&fixture(file), v.minor)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let list = images(&v, &extras);
        assert_eq!(
            list[4..],
            [
                format!("registry.k8s.io/coredns/coredns:{coredns}"),
                format!("registry.k8s.io/pause:{pause}"),
                format!("registry.k8s.io/etcd:{etcd}"),
            ],
            "{file}"
        );
    }
}

/// A skew key is relative to the release the file belongs to: in the 1.35 file the `0` entry is
/// 1.35's and the `-1` entry 1.34's; the embedded table, which stops at 1.35.7, does not guess.
#[test]
fn skew_keys_belong_to_the_files_own_release() {
    let v = version("1.35.9");
    assert_eq!(Extras::embedded(&v), None);
    let src = fixture("constants-v1.35.9.go").replace(
        "uint8(getSkewedKubernetesVersion(-1).Minor()): \"3.6.10-0\"",
        "uint8(getSkewedKubernetesVersion(-1).Minor()): \"3.5.24-0\"",
    );
    assert_eq!(Extras::from_constants(&src, 35).unwrap().etcd, "3.6.10-0");
    // Without an entry for 1.35 itself, kubeadm takes the nearest: 1.34's.
    let older = src.replace("(0).Minor", "(-2).Minor");
    assert_eq!(Extras::from_constants(&older, 35).unwrap().etcd, "3.5.24-0");
}
