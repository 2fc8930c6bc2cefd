use super::sample::sample;
use super::*;

#[test]
fn render_is_sorted_and_parses_back_to_the_same_lock() {
    let lock = sample();
    let text = lock.render();
    assert!(text.ends_with('\n'));
    let back = Lock::parse(&text, "x").unwrap();
    assert_eq!(back.request.arches, ["amd64", "arm64"]);
    assert_eq!(back.arches["amd64"].files[0].path, "k8s/kubeadm");
    assert_eq!(back.arches["amd64"].images[0].reference, "docker.io/a/b:1");
    assert_eq!(back.render(), text, "rendering is stable");
}

#[test]
fn a_lock_of_another_version_is_refused_by_its_version_not_its_fields() {
    let text = r#"{"version": 2, "whatever": true}"#;
    let err = Lock::parse(text, "old.lock").unwrap_err();
    assert!(matches!(err, LockError::Version { found: 2, .. }), "{err}");
    assert!(err.to_string().contains("old.lock"));
}

#[test]
fn text_that_is_not_a_lock_is_invalid_with_the_reason() {
    for text in ["", "not json", "[1]", r#"{"version": 1}"#] {
        let err = Lock::parse(text, "bad.lock").unwrap_err();
        assert!(matches!(err, LockError::Invalid { .. }), "{text}: {err}");
    }
}

#[test]
fn unknown_fields_are_refused_rather_than_ignored() {
    let mut value: serde_json::Value = serde_json::from_str(&sample().render()).unwrap();
    value["request"]["extra"] = serde_json::json!("x");
    let err = Lock::parse(&value.to_string(), "x").unwrap_err();
    assert!(err.to_string().contains("extra"), "{err}");
}

#[test]
fn only_keeps_the_asked_arches_and_refuses_others() {
    let lock = sample();
    let one = lock.only(&["arm64"], "x").unwrap();
    assert_eq!(one.arches.keys().collect::<Vec<_>>(), ["arm64"]);
    assert_eq!(one.request.arches, ["arm64"]);
    let mut amd = lock.only(&["amd64"], "x").unwrap();
    amd.arches.clear();
    assert!(matches!(
        amd.only(&["amd64"], "x"),
        Err(LockError::Arch { .. })
    ));
}

#[test]
fn an_image_signature_is_kept_and_a_lock_without_one_still_reads() {
    let mut lock = sample();
    let signature = ImageSignature {
        tag: format!("sha256-{}.sig", "b".repeat(64)),
        manifest: format!("sha256:{}", "f".repeat(64)),
    };
    lock.normalise();
    lock.arches.get_mut("amd64").unwrap().images[0].signature = Some(signature.clone());
    let text = lock.render();
    assert!(text.contains("\"signature\": {"), "{text}");
    let back = Lock::parse(&text, "x").unwrap();
    assert_eq!(back, lock);
    assert_eq!(back.arches["amd64"].images[0].signature, Some(signature));
    assert_eq!(back.arches["arm64"].images[0].signature, None);
    // A version-1 lock written before images' signatures were locked.
    let old = sample().render();
    assert!(!old.contains("\"signature\""), "{old}");
    let mut plain = sample();
    plain.normalise();
    assert_eq!(Lock::parse(&old, "old.lock").unwrap(), plain);
}

#[test]
fn a_file_signature_is_a_bundle_or_a_whole_pair() {
    let hex = |c: &str| Some(c.repeat(64));
    let with = |signature: FileSignature| {
        let mut lock = sample();
        lock.normalise();
        lock.arches.get_mut("amd64").unwrap().files[0].signature = Some(signature);
        lock.render()
    };
    let bundle = FileSignature {
        bundle: hex("a"),
        sig: None,
        cert: None,
        rekor: None,
    };
    let pair = FileSignature {
        bundle: None,
        sig: hex("b"),
        cert: hex("c"),
        rekor: hex("d"),
    };
    for good in [bundle.clone(), pair.clone()] {
        let text = with(good.clone());
        let back = Lock::parse(&text, "x").unwrap();
        assert_eq!(back.arches["amd64"].files[0].signature, Some(good));
    }
    // A bundle lock names the bundle alone; a pair lock keeps its three fields as before.
    assert!(!with(bundle.clone()).contains("\"sig\""));
    assert!(!with(pair.clone()).contains("\"bundle\""));
    for bad in [
        FileSignature {
            sig: hex("b"),
            ..bundle
        },
        FileSignature {
            rekor: None,
            ..pair
        },
    ] {
        let err = Lock::parse(&with(bad), "x.lock").unwrap_err().to_string();
        assert!(
            err.contains("x.lock") && err.contains("neither a bundle alone"),
            "{err}"
        );
    }
}

#[test]
fn a_file_image_or_manifest_listed_twice_is_refused_naming_it() {
    // A second entry for k8s/kubeadm: the build takes the first, a reader may read the other.
    let mut twice = sample();
    let arch = twice.arches.get_mut("amd64").unwrap();
    let mut other = arch.files[1].clone();
    other.url = "https://example.org/kubeadm".into();
    other.sha256 = "e".repeat(64);
    arch.files.push(other);
    let err = Lock::parse(&twice.render(), "two.lock").unwrap_err();
    let said = err.to_string();
    assert!(matches!(err, LockError::Invalid { .. }), "{said}");
    assert!(
        said.contains("two.lock")
            && said.contains("arches.amd64.files: k8s/kubeadm is listed more than once")
            && said.contains("https://dl.k8s.io/kubeadm")
            && said.contains("https://example.org/kubeadm"),
        "{said}"
    );
    assert!(err.hint().unwrap().contains("cks-iso build --lock-file"));

    let mut images = sample();
    let arch = images.arches.get_mut("arm64").unwrap();
    arch.images.push(arch.images[0].clone());
    let said = Lock::parse(&images.render(), "x").unwrap_err().to_string();
    assert!(
        said.contains("arches.arm64.images: registry.k8s.io/pause:3.10 is listed more than once"),
        "{said}"
    );

    let mut manifests = sample();
    let entry = ManifestEntry {
        path: "network.yaml".into(),
        role: "network".into(),
        source: "https://example.org/n.yaml".into(),
        sha256_taken: "a".repeat(64),
        sha256: "a".repeat(64),
    };
    manifests.manifests = vec![entry.clone(), entry];
    let said = Lock::parse(&manifests.render(), "x")
        .unwrap_err()
        .to_string();
    assert!(
        said.contains("manifests: network.yaml is listed more than once"),
        "{said}"
    );
    // The same path in two architectures is two files, not a duplicate.
    Lock::parse(&sample().render(), "x").unwrap();
}

#[test]
fn an_arm64_etcd_under_its_own_name_is_told_from_the_files() {
    let mut lock = sample();
    assert!(!lock.etcd_own_name());
    let own = FileEntry {
        path: crate::contract::etcd_tarball("arm64", true),
        url: "https://github.com/etcd-io/etcd/etcd.tar.gz".into(),
        size: 1,
        sha256: "e".repeat(64),
        signature: None,
    };
    lock.arches.get_mut("arm64").unwrap().files.push(own);
    assert!(lock.etcd_own_name());
}

#[test]
fn addons_round_trip_old_locks_read_without_them_and_unknown_words_are_refused() {
    let mut lock = sample();
    lock.normalise();
    let old = lock.render();
    assert!(!old.contains("\"extra\""), "{old}");
    lock.manifests.push(ManifestEntry {
        path: "velero.yaml".into(),
        role: EXTRA_ROLE.into(),
        source: "https://example.org/velero.yaml".into(),
        sha256_taken: "c".repeat(64),
        sha256: "d".repeat(64),
    });
    let images = &mut lock.arches.get_mut("amd64").unwrap().images;
    images[0].extra = Some(EXTRA_ASKED.into());
    images[1].extra = Some(extra_from_manifest("velero.yaml"));
    lock.normalise();
    let text = lock.render();
    assert_eq!(Lock::parse(&text, "x").unwrap(), lock);
    for bad in [
        "manifest:network.yaml",
        "manifest:gone.yaml",
        "image\nimage x",
    ] {
        let mut forged = lock.clone();
        forged.arches.get_mut("amd64").unwrap().images[0].extra = Some(bad.into());
        let err = Lock::parse(&forged.render(), "forged.lock").unwrap_err();
        assert!(err.to_string().contains("\"extra\""), "{bad:?}: {err}");
    }
}
