use std::collections::BTreeMap;

use super::*;
use crate::lock::{
    ArchEntry, Autoscaler, FileEntry, ImageEntry, Kubeadm, Lock, LockedRequest, ManifestEntry,
    VERSION,
};
use crate::versions::{FileRecord, ImageRecord, Versions};

fn hex(c: char) -> String {
    c.to_string().repeat(64)
}

fn arch_entry(uname: &str) -> ArchEntry {
    ArchEntry {
        iso: format!("setup-v1.33.1-{uname}.iso"),
        files: vec![FileEntry::new(
            "k8s/kubeadm".into(),
            "https://dl.k8s.io/kubeadm".into(),
            10,
            hex('a'),
        )],
        images: vec![ImageEntry::new(
            "registry.k8s.io/pause:3.10".into(),
            format!("sha256:{}", hex('b')),
            format!("sha256:{}", hex('c')),
            100,
        )],
    }
}

fn lock() -> Lock {
    Lock {
        version: VERSION,
        cks_iso: "0.1.0".into(),
        epoch: 1_700_000_000,
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
            autoscaler: "1.33.3".into(),
            headlamp: None,
            headlamp_image: None,
            cloudstack: None,
            volume_id: "CDROM".into(),
            name: "setup-v1.33.1".into(),
        },
        autoscaler: Autoscaler {
            version: "1.33.3".into(),
            tag: "cluster-autoscaler-1.33.3".into(),
            commit: Some("1".repeat(40)),
            pinned: false,
        },
        kubeadm: Kubeadm {
            pause: "3.10".into(),
            etcd: "3.5.21-0".into(),
            coredns: "v1.12.0".into(),
            source: "embedded table".into(),
        },
        manifests: vec![ManifestEntry {
            path: "network.yaml".into(),
            role: "network".into(),
            source: "file:network.yaml".into(),
            sha256_taken: hex('d'),
            sha256: hex('e'),
        }],
        arches: BTreeMap::from([
            ("amd64".into(), arch_entry("x86_64")),
            ("arm64".into(), arch_entry("aarch64")),
        ]),
    }
}

fn side(lock: &Lock) -> Side {
    Side::from_lock("x.lock", Kind::Lock, lock)
}

#[test]
fn a_lock_is_identical_to_itself_and_renders_nothing() {
    let report = compare(&side(&lock()), &side(&lock()));
    assert!(report.identical, "{report:#?}");
    assert_eq!(render(&report), "");
}

#[test]
fn a_cloudstack_release_or_headlamp_version_that_changed_is_named() {
    let mut b = lock();
    b.request.cloudstack = Some("4.23".into());
    b.request.headlamp = Some("0.40.1".into());
    let report = compare(&side(&lock()), &side(&b));
    let names: Vec<&str> = report.versions.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["headlamp", "cloudstack"]);
    let text = render(&report);
    assert!(text.contains("+ cloudstack: 4.23"), "{text}");
}

#[test]
fn versions_images_and_files_are_named_per_arch() {
    let mut b = lock();
    b.autoscaler.version = "1.33.1".into();
    b.autoscaler.commit = Some("2".repeat(40));
    b.request.etcd = Some("3.5.21".into());
    let amd = b.arches.get_mut("amd64").unwrap();
    amd.images[0].digest = format!("sha256:{}", hex('f'));
    amd.files[0].sha256 = hex('9');
    let report = compare(&side(&lock()), &side(&b));
    assert!(!report.identical);
    let names: Vec<&str> = report.versions.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["etcd", "autoscaler", "autoscaler-commit"]);
    assert_eq!(report.versions[0].change, ChangeKind::Added);
    assert_eq!(report.arches.len(), 1, "arm64 is the same: {report:#?}");
    let amd = &report.arches[0];
    assert_eq!(amd.a.as_deref(), Some("amd64"));
    assert_eq!(amd.images[0].name, "registry.k8s.io/pause:3.10");
    assert_eq!(amd.files[0].name, "k8s/kubeadm");
    let text = render(&report);
    for want in [
        "~ autoscaler: 1.33.3 → 1.33.1",
        "~ autoscaler-commit: 111111111111 → 222222222222",
        "+ etcd: 3.5.21",
        "images (amd64):",
        "~ registry.k8s.io/pause:3.10: sha256:bbbbbbbbbbbb → sha256:ffffffffffff (platform sha256:cccccccccccc)",
        "~ k8s/kubeadm: 10 B sha256:aaaaaaaaaaaa → 10 B sha256:999999999999",
    ] {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
}

#[test]
fn add_on_images_are_labelled_with_why_they_are_there() {
    let mut b = lock();
    let amd = b.arches.get_mut("amd64").unwrap();
    let mut asked = amd.images[0].clone();
    asked.reference = "quay.io/acme/agent:2.1".into();
    asked.extra = Some(crate::lock::EXTRA_ASKED.into());
    let mut named = asked.clone();
    named.reference = "docker.io/acme/sidecar:latest".into();
    named.extra = Some(crate::lock::extra_from_manifest("addon.yaml"));
    amd.images.extend([asked, named]);
    let report = compare(&side(&lock()), &side(&b));
    let text = render(&report);
    for want in [
        "+ quay.io/acme/agent:2.1: sha256:bbbbbbbbbbbb (platform sha256:cccccccccccc) [add-on, asked for]",
        "+ docker.io/acme/sidecar:latest: sha256:bbbbbbbbbbbb (platform sha256:cccccccccccc) [add-on, named by addon.yaml]",
    ] {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
    // The JSON says why, as the lock does.
    let json = serde_json::to_value(&report).unwrap();
    let images = &json["arches"][0]["images"];
    let extras: Vec<_> = images
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["b"]["extra"].as_str())
        .collect();
    assert_eq!(
        extras,
        [Some("manifest:addon.yaml"), Some("image")],
        "{images:#}"
    );
}

#[test]
fn an_arch_only_one_lock_has_is_named_not_listed() {
    let mut b = lock();
    b.arches.remove("arm64");
    b.arches.insert("riscv64".into(), arch_entry("riscv64"));
    let report = compare(&side(&lock()), &side(&b));
    let pairs: Vec<_> = report
        .arches
        .iter()
        .map(|a| (a.a.as_deref(), a.b.as_deref(), a.files.len()))
        .collect();
    assert_eq!(
        pairs,
        [(Some("arm64"), None, 0), (None, Some("riscv64"), 0)]
    );
    let text = render(&report);
    assert!(text.contains("arch arm64: only in a"), "{text}");
}

#[test]
fn two_single_arch_sides_are_compared_whatever_their_arch() {
    let mut a = lock();
    a.arches.remove("arm64");
    let mut b = lock();
    b.arches.remove("amd64");
    let report = compare(&side(&a), &side(&b));
    assert_eq!(report.arches.len(), 1);
    assert_eq!(report.arches[0].b.as_deref(), Some("arm64"));
    assert!(report.arches[0].images.is_empty(), "same content");
    assert!(render(&report).contains("arch: amd64 → arm64"));
}

fn entry(kind: EntryKind, size: u64, mode: u32) -> EntryInfo {
    EntryInfo { kind, size, mode }
}

fn iso(lock: &Lock, network: &str, extra: Option<EntryInfo>) -> Side {
    let only = lock.only(&["amd64"], "x").unwrap();
    let mut entries = BTreeMap::from([
        ("/".to_owned(), entry(EntryKind::Dir, 2048, 0o755)),
        ("k8s/kubeadm".to_owned(), entry(EntryKind::File, 10, 0o755)),
        // An archive holds the image's bytes (100 in the lock) and tar headers.
        (
            "docker/pause:3.10.tar".to_owned(),
            entry(EntryKind::File, 2048, 0o644),
        ),
        (
            "network.yaml".to_owned(),
            entry(EntryKind::File, network.len() as u64, 0o644),
        ),
    ]);
    if let Some(e) = extra {
        entries.insert("notes.txt".into(), e);
    }
    let texts = BTreeMap::from([("network.yaml".to_owned(), network.as_bytes().to_vec())]);
    Side::from_lock("x.iso", Kind::Iso, &only).with_iso("CDROM", entries, texts)
}

#[test]
fn iso_manifests_get_a_unified_diff_and_other_entries_are_listed() {
    let old = "a: 1\nb: 2\nc: 3\n";
    let new = "a: 1\nb: 20\nc: 3\n";
    let a = iso(&lock(), old, None);
    let b = iso(&lock(), new, Some(entry(EntryKind::File, 5, 0o600)));
    let report = compare(&a, &b);
    assert_eq!(report.manifests.len(), 1);
    let diff = report.manifests[0].diff.as_deref().unwrap();
    assert!(
        diff.contains("--- a/network.yaml\n+++ b/network.yaml\n"),
        "{diff}"
    );
    assert!(diff.contains("-b: 2\n+b: 20\n"), "{diff}");
    assert_eq!(report.entries.len(), 1, "{:#?}", report.entries);
    assert_eq!(report.entries[0].name, "notes.txt");
    assert_eq!(report.entries[0].change, ChangeKind::Added);
    let text = render(&report);
    assert!(text.contains("  + notes.txt: file 5 B 0600"), "{text}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["manifests"][0]["name"], "network.yaml");
    assert_eq!(json["entries"][0]["b"]["mode"], "0600");
}

#[test]
fn a_lock_and_the_iso_it_describes_agree_and_the_iso_bytes_win() {
    let text = "a: 1\n";
    let mut locked = lock().only(&["amd64"], "x").unwrap();
    locked.manifests[0].sha256 = cks_iso_io::Sha256Sum::of(text.as_bytes()).to_string();
    let report = compare(&side(&locked), &iso(&lock(), text, None));
    assert!(report.identical, "{report:#?}");
    // The lock in the ISO says 'eee…', the bytes say otherwise: the bytes are compared.
    let report = compare(
        &side(&lock().only(&["amd64"], "x").unwrap()),
        &iso(&lock(), text, None),
    );
    assert_eq!(report.manifests.len(), 1, "{report:#?}");
}

#[test]
fn versions_txt_compares_with_a_lock_on_what_both_know() {
    let versions = Versions {
        kubernetes: "v1.33.1".into(),
        arch: "amd64".into(),
        cni_plugins: "v1.6.2".into(),
        crictl: "v1.33.0".into(),
        etcd: None,
        autoscaler: "1.33.3".into(),
        ccm: "v1.2.0".into(),
        csi_driver: Some("v3.0.0".into()),
        cloudstack: None,
        files: vec![
            FileRecord {
                path: "k8s/kubeadm".into(),
                sha256: hex('a'),
                source: "https://dl.k8s.io/kubeadm".into(),
            },
            FileRecord {
                path: "network.yaml".into(),
                sha256: hex('e'),
                source: "file".into(),
            },
        ],
        images: vec![ImageRecord {
            name: "registry.k8s.io/pause:3.10".into(),
            digest: format!("sha256:{}", hex('b')),
            archive: "docker/pause:3.10.tar".into(),
        }],
    };
    let old = Side::from_versions("old.iso", &versions).with_iso(
        "CDROM",
        BTreeMap::from([("k8s/kubeadm".to_owned(), entry(EntryKind::File, 10, 0o755))]),
        BTreeMap::new(),
    );
    let new = side(&lock().only(&["amd64"], "x").unwrap());
    let report = compare(&old, &new);
    assert!(report.identical, "{report:#?}");
    let mut other = lock().only(&["amd64"], "x").unwrap();
    other.arches.get_mut("amd64").unwrap().files[0].size = 11;
    let report = compare(&old, &side(&other));
    assert_eq!(report.arches[0].files[0].name, "k8s/kubeadm", "{report:#?}");
}

#[test]
fn records_are_entries_only_when_one_side_lacks_them() {
    let text = "a: 1\n";
    let mut a = iso(&lock(), text, None);
    let mut b = iso(&lock(), text, None);
    let put = |s: &mut Side, path: &str, size: u64| {
        let entries = s.entries.as_mut().unwrap();
        entries.insert(path.to_owned(), entry(EntryKind::File, size, 0o644));
    };
    put(&mut a, "versions.txt", 10);
    put(&mut b, "versions.txt", 12);
    put(&mut b, "sbom.cdx.json", 100);
    put(&mut a, "docker/pause:3.10.tar", 1);
    let report = compare(&a, &b);
    let names: Vec<(&str, ChangeKind)> = report
        .entries
        .iter()
        .map(|c| (c.name.as_str(), c.change))
        .collect();
    assert_eq!(names, [("sbom.cdx.json", ChangeKind::Added)]);
}

#[test]
fn an_iso_is_compared_with_its_own_arch_of_a_lock_of_several() {
    let text = "a: 1\n";
    let mut all = lock();
    all.manifests[0].sha256 = cks_iso_io::Sha256Sum::of(text.as_bytes()).to_string();
    let report = compare(&side(&all), &iso(&lock(), text, None));
    assert!(report.identical, "{report:#?}");
    assert_eq!(report.a.arches, ["amd64", "arm64"]);
    all.arches.get_mut("amd64").unwrap().files[0].sha256 = hex('0');
    let report = compare(&iso(&lock(), text, None), &side(&all));
    assert_eq!(report.arches.len(), 1);
    assert_eq!(report.arches[0].files[0].name, "k8s/kubeadm");
}

#[test]
fn an_iso_lacking_what_its_own_lock_names_is_not_identical_to_anything() {
    let text = "a: 1\n";
    let mut locked = lock().only(&["amd64"], "x").unwrap();
    locked.manifests[0].sha256 = cks_iso_io::Sha256Sum::of(text.as_bytes()).to_string();
    let good = iso(&lock(), text, None);
    assert!(good.gaps.is_empty(), "{:?}", good.gaps);
    // network.yaml deleted, the archive swapped for 7 bytes, kubeadm a directory: its lock still
    // says what the original held.
    let only = lock().only(&["amd64"], "x").unwrap();
    let entries = BTreeMap::from([
        ("/".to_owned(), entry(EntryKind::Dir, 2048, 0o755)),
        ("k8s/kubeadm".to_owned(), entry(EntryKind::Dir, 2048, 0o755)),
        (
            "docker/pause:3.10.tar".to_owned(),
            entry(EntryKind::File, 7, 0o644),
        ),
    ]);
    let bad =
        Side::from_lock("bad.iso", Kind::Iso, &only).with_iso("CDROM", entries, BTreeMap::new());
    for other in [side(&locked), good] {
        let report = compare(&other, &bad);
        assert!(!report.identical, "{report:#?}");
        let paths: Vec<&str> = report.unlike_lock.iter().map(|g| g.path.as_str()).collect();
        assert_eq!(
            paths,
            ["network.yaml", "k8s/kubeadm", "docker/pause:3.10.tar"],
            "{report:#?}"
        );
        let text = render(&report);
        assert!(
            text.contains("bad.iso: network.yaml: the lock names this file; the ISO lacks it"),
            "{text}"
        );
        assert!(text.contains("the archive holds only 7"), "{text}");
    }
}

#[test]
fn two_isos_alike_but_for_their_signer_differ_and_say_who_signed_each() {
    let a = iso(&lock(), "a: 1\n", None);
    let mut b = a.clone();
    assert!(compare(&a, &b).identical);
    let signed = Signature {
        status: SignatureStatus::Verified,
        file: Some("x.iso.sigstore.json".into()),
        kind: Some(SignerKind::Key),
        signer: Some("the key sha256:aa (iso.pub)".into()),
        key: Some("sha256:aa".into()),
        ..Signature::unsigned()
    };
    b.signature = Some(signed.clone());
    let mut a = a;
    a.signature = Some(Signature::unsigned());
    let report = compare(&a, &b);
    assert!(!report.identical, "{report:#?}");
    let text = render(&report);
    assert!(
        text.contains("signature:\n  a: unsigned (no .sigstore.json or .sig beside it)\n  b: signed by the key sha256:aa (iso.pub), at a time"),
        "{text}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["b"]["signature"]["status"], "verified");
    assert_eq!(json["b"]["signature"]["key"], "sha256:aa");
    assert_eq!(json["a"]["signature"]["status"], "unsigned");
    // The same signer again (another signing time) is the same; a lock has no signature.
    a.signature = Some(Signature {
        time: Some("2026-01-01T00:00:00Z".into()),
        ..signed
    });
    assert!(compare(&a, &b).identical);
    assert!(compare(&side(&lock()), &b).b.signature.is_some());
    assert_eq!(
        serde_json::to_value(compare(&side(&lock()), &b)).unwrap()["a"]["signature"],
        serde_json::Value::Null
    );
}
