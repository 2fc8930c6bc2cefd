//! `cks-iso diff A B` on real files: ISOs authored with `cks-iso iso` (with a `cks-iso.lock`, with
//! only a `versions.txt`), lock files, and bad input that must be exit 2 with a clear error.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::*;
use cks_iso::lock::{
    ArchEntry, Autoscaler, FileEntry, ImageEntry, Kubeadm, Lock, LockedRequest, ManifestEntry,
    VERSION,
};
use sha2::{Digest as _, Sha256};

const NETWORK: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: net\ndata:\n  mtu: \"1450\"\n  mode: vxlan\n";

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A lock of `arch` for the tree `cks_tree` writes, with `network` as network.yaml.
fn lock(arch: &str, network: &str) -> Lock {
    Lock {
        version: VERSION,
        cks_iso: "0.1.0".into(),
        epoch: 1_700_000_000,
        epoch_from: None,
        request: locked_request(arch),
        autoscaler: Autoscaler {
            version: "1.33.3".into(),
            tag: "cluster-autoscaler-1.33.3".into(),
            commit: Some("3".repeat(40)),
            pinned: false,
        },
        kubeadm: Kubeadm {
            pause: "3.10".into(),
            etcd: "3.5.21-0".into(),
            coredns: "v1.12.0".into(),
            source: "embedded table".into(),
        },
        manifests: locked_manifests(network),
        arches: BTreeMap::from([(arch.to_owned(), arch_entry(arch))]),
    }
}

/// The request of [`lock`]: Kubernetes 1.33.1 for `arch` and the versions that go with it.
fn locked_request(arch: &str) -> LockedRequest {
    LockedRequest {
        kubernetes: "1.33.1".into(),
        kubernetes_label: None,
        arches: vec![arch.into()],
        cni: "1.6.2".into(),
        crictl: "1.33.0".into(),
        etcd: None,
        csi: None,
        ccm: "v1.2.0".into(),
        autoscaler: "1.33.3".into(),
        headlamp: None,
        headlamp_image: None,
        cloudstack: None,
        volume_id: "CDROM".into(),
        name: "setup-v1.33.1".into(),
    }
}

/// The four manifests of [`lock`], `network` as network.yaml, each taken as written.
fn locked_manifests(network: &str) -> Vec<ManifestEntry> {
    [
        ("network.yaml", network),
        ("dashboard.yaml", "apiVersion: v1\nkind: Namespace\n"),
        (
            "autoscaler.yaml",
            "args:\n  - --nodes=<min>:<max>:<cluster-id>\n",
        ),
        (
            "provider.yaml",
            "image: apache/cloudstack-kubernetes-provider:v1.2.0\n",
        ),
    ]
    .iter()
    .map(|(path, text)| ManifestEntry {
        path: (*path).into(),
        role: path.trim_end_matches(".yaml").into(),
        source: format!("file:{path}"),
        sha256_taken: sha(text.as_bytes()),
        sha256: sha(text.as_bytes()),
    })
    .collect()
}

/// The ISO of `arch` in [`lock`]: kubeadm, the autoscaler's image and pause.
fn arch_entry(arch: &str) -> ArchEntry {
    let uname = if arch == "amd64" { "x86_64" } else { "aarch64" };
    ArchEntry {
        iso: format!("setup-v1.33.1-{uname}.iso"),
        files: vec![FileEntry {
            path: "k8s/kubeadm".into(),
            url: "https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm".into(),
            size: 70_000,
            sha256: "a".repeat(64),
            signature: None,
        }],
        images: vec![
            ImageEntry {
                reference: "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.3".into(),
                digest: format!("sha256:{}", "b".repeat(64)),
                manifest: format!("sha256:{}", "c".repeat(64)),
                size: 1000,
                extra: None,
                signature: None,
            },
            ImageEntry {
                reference: "registry.k8s.io/pause:3.10".into(),
                digest: format!("sha256:{}", "d".repeat(64)),
                manifest: format!("sha256:{}", "e".repeat(64)),
                size: 500,
                extra: None,
                signature: None,
            },
        ],
    }
}

fn write_lock(dir: &Path, name: &str, lock: &Lock) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, lock.render()).unwrap();
    path
}

/// An ISO of the CKS-like tree with `network` as network.yaml and `lock` at its root (if any).
fn iso(dir: &Path, name: &str, network: &str, lock: Option<&Lock>) -> PathBuf {
    let root = dir.join(format!("{name}.d"));
    cks_tree(&root);
    // The archive of every image the lock names (cks_tree holds pause's already).
    fs::write(
        root.join("docker/cluster-autoscaler:v1.33.3.tar"),
        noise(6, 2000),
    )
    .unwrap();
    fs::write(root.join("network.yaml"), network).unwrap();
    if let Some(lock) = lock {
        fs::write(root.join("cks-iso.lock"), lock.render()).unwrap();
    }
    let out = dir.join(format!("{name}.iso"));
    build_iso(&root, &out);
    out
}

fn diff(args: &[&Path], json: bool) -> Output {
    let mut cmd = cks_iso();
    cmd.arg("diff").args(args);
    if json {
        cmd.arg("--json");
    }
    cmd.output().unwrap()
}

#[test]
fn an_iso_is_identical_to_itself() {
    let dir = tempfile::tempdir().unwrap();
    let a = iso(dir.path(), "a", NETWORK, Some(&lock("amd64", NETWORK)));
    let o = diff(&[&a, &a], false);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert_eq!(out, "", "nothing on stdout when identical");
    let o = diff(&[&a, &a], true);
    assert_eq!(o.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["identical"], true);
    assert_eq!(json["a"]["source"], "lock");
    // An ISO agrees with the lock it carries.
    let l = write_lock(dir.path(), "a.lock", &lock("amd64", NETWORK));
    let o = diff(&[&l, &a], false);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn diff_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let old = lock("amd64", NETWORK);
    let mut new = old.clone();
    new.autoscaler.version = "1.33.1".into();
    let a = write_lock(dir.path(), "old.lock", &old);
    let b = write_lock(dir.path(), "new.lock", &new);
    for json in [false, true] {
        let mut cmd = cks_iso();
        cmd.arg("diff").args([&a, &b]);
        if json {
            cmd.arg("--json");
        }
        ended_quietly("cks-iso diff", &into_closed_pipe(cmd));
    }
}

#[test]
fn two_locks_name_the_autoscaler_the_image_digest_and_the_file_hash() {
    let dir = tempfile::tempdir().unwrap();
    let old = lock("amd64", NETWORK);
    let mut new = old.clone();
    new.autoscaler.version = "1.33.1".into();
    new.autoscaler.commit = Some("1".repeat(40));
    let arch = new.arches.get_mut("amd64").unwrap();
    arch.files[0].sha256 = "f".repeat(64);
    arch.images[1].digest = format!("sha256:{}", "9".repeat(64));
    arch.images[0].reference = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.1".into();
    let a = write_lock(dir.path(), "old.lock", &old);
    let b = write_lock(dir.path(), "new.lock", &new);
    let o = diff(&[&a, &b], false);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        !err.contains("error"),
        "a difference is not an error: {err}"
    );
    for want in [
        "~ autoscaler: 1.33.3 → 1.33.1",
        "~ autoscaler-commit: 333333333333 → 111111111111",
        "- registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.3: sha256:bbbbbbbbbbbb (platform sha256:cccccccccccc)",
        "+ registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.1: sha256:bbbbbbbbbbbb",
        "~ registry.k8s.io/pause:3.10: sha256:dddddddddddd → sha256:999999999999 (platform sha256:eeeeeeeeeeee)",
        "~ k8s/kubeadm: 70000 B sha256:aaaaaaaaaaaa → 70000 B sha256:ffffffffffff",
    ] {
        assert!(out.contains(want), "{want:?} not in:\n{out}");
    }
    let o = diff(&[&a, &b], true);
    assert_eq!(o.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["format"], 1);
    assert_eq!(json["identical"], false);
    assert_eq!(json["versions"][0]["name"], "autoscaler");
    assert_eq!(json["versions"][0]["a"], "1.33.3");
    assert_eq!(json["versions"][0]["b"], "1.33.1");
    let images = &json["arches"][0]["images"];
    let pause = images
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "registry.k8s.io/pause:3.10")
        .unwrap();
    assert_eq!(pause["change"], "changed");
    assert_eq!(pause["b"]["digest"], format!("sha256:{}", "9".repeat(64)));
    assert_eq!(json["arches"][0]["files"][0]["b"]["sha256"], "f".repeat(64));
}

#[test]
fn two_isos_whose_manifest_differs_by_a_line_show_the_unified_diff() {
    let dir = tempfile::tempdir().unwrap();
    let changed = NETWORK.replace("mode: vxlan", "mode: geneve");
    let a = iso(dir.path(), "a", NETWORK, Some(&lock("amd64", NETWORK)));
    let b = iso(dir.path(), "b", &changed, Some(&lock("amd64", &changed)));
    let o = diff(&[&a, &b], false);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    for want in [
        "manifests:\n  ~ network.yaml: sha256:",
        "--- a/network.yaml",
        "+++ b/network.yaml",
        "-  mode: vxlan",
        "+  mode: geneve",
    ] {
        assert!(out.contains(want), "{want:?} not in:\n{out}");
    }
    assert!(
        !out.contains("apiVersion"),
        "only the changed line and its context:\n{out}"
    );
    let json: serde_json::Value = serde_json::from_slice(&diff(&[&a, &b], true).stdout).unwrap();
    let m = &json["manifests"][0];
    assert_eq!(m["name"], "network.yaml");
    assert!(
        m["diff"].as_str().unwrap().contains("+  mode: geneve\n"),
        "{m}"
    );
    assert_eq!(
        json["entries"],
        serde_json::json!([]),
        "the yaml is not also an entry"
    );
}

#[test]
fn an_iso_without_a_lock_is_read_from_its_versions_txt_and_isos_of_two_arches_compare() {
    let dir = tempfile::tempdir().unwrap();
    // cks_tree's versions.txt says only `kubernetes v1.33.1` and `arch amd64`.
    let old = iso(dir.path(), "old", NETWORK, None);
    let arm = iso(dir.path(), "arm", NETWORK, Some(&lock("arm64", NETWORK)));
    let o = diff(&[&old, &arm], false);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        err.contains("has no cks-iso.lock") && err.contains("versions.txt"),
        "{err}"
    );
    assert!(out.contains("arch: amd64 → arm64"), "{out}");
    assert!(out.contains("from its versions.txt"), "{out}");
    let o = diff(&[&old, &old], false);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn bad_input_is_exit_2_naming_the_file_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let good = iso(dir.path(), "good", NETWORK, Some(&lock("amd64", NETWORK)));
    let notes = dir.path().join("notes.txt");
    fs::write(&notes, "not a lock, not an ISO\n").unwrap();
    let broken = dir.path().join("broken.lock");
    fs::write(&broken, "{ \"version\": 1, ").unwrap();
    let mut v2 = serde_json::to_value(lock("amd64", NETWORK)).unwrap();
    v2["version"] = 2.into();
    let future = dir.path().join("future.lock");
    fs::write(&future, v2.to_string()).unwrap();
    let bytes = fs::read(&good).unwrap();
    let half = dir.path().join("half.iso");
    fs::write(&half, &bytes[..bytes.len() / 2]).unwrap();
    let missing = dir.path().join("missing.iso");
    // An ISO whose own lock is of a schema this cks-iso does not read.
    let root = dir.path().join("v2iso.d");
    cks_tree(&root);
    fs::write(root.join("cks-iso.lock"), v2.to_string()).unwrap();
    let v2iso = dir.path().join("v2iso.iso");
    build_iso(&root, &v2iso);
    let cases: [(&Path, &[&str]); 6] = [
        (&v2iso, &["v2iso.iso:cks-iso.lock", "lock version 2"]),
        (&notes, &["notes.txt", "neither a cks-iso lock nor an ISO"]),
        (&broken, &["broken.lock", "is not a cks-iso lock"]),
        (&future, &["future.lock", "lock version 2"]),
        (&half, &["half.iso", "truncated"]),
        (&missing, &["missing.iso", "cannot read"]),
    ];
    for (bad, words) in cases {
        for args in [[bad, good.as_path()], [good.as_path(), bad]] {
            let o = diff(&args, false);
            let (out, err) = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}:\n{err}");
            assert_eq!(out, "", "{args:?}: nothing on stdout");
            assert!(!err.contains("panicked"), "{err}");
            for w in words.iter().chain(&["hint:"]) {
                assert!(err.contains(w), "{args:?}: {w:?} not in:\n{err}");
            }
        }
    }
}
