//! Signatures through the pipeline, judged on the run's lock and the [`BuildError`] variant: the
//! evidence each image and binary verified with is locked, a locked build takes that evidence
//! again after the publisher signed anew, and evidence that is gone or does not verify fails the
//! realize step naming the image or file and the check, before any ISO is written. In-process
//! ports of `signatures::image_locks`, `signatures::image_refusals`, `signatures::binary_refusals`
//! and `signatures::binary_bundles`, which keep what the command prints and its exit codes.

use super::*;
use cks_iso::pipeline::realize::RealizeError;
use cks_iso::trust::binaries::BinaryError;
use cks_iso_testworld::rekor_v2::{Authority, BundleOptions, publish_bundle, publish_bundles};
use cks_iso_testworld::sigstore::SignOptions;
use cks_iso_testworld::upstream::sha256_hex;
use cks_iso_testworld::world::binary_signer;

const PAUSE: &str = "registry.k8s.io/pause:3.10";

/// The binaries the world's release signs, as the lock names them.
const SIGNED_FILES: [&str; 3] = ["k8s/kubeadm", "k8s/kubectl", "k8s/kubelet"];

/// The world's amd64 request into `dir/out`, its run's lock to `dir/run.lock`.
fn amd64(world: &World, dir: &Path, out: &str) -> BuildOptions {
    BuildOptions {
        request: request(world, &["amd64"], &dir.join(out)),
        lock_file: Some(dir.join("run.lock")),
        ..BuildOptions::default()
    }
}

/// A locked build of `lock` into `dir/out`.
fn locked(lock: &Path, dir: &Path, out: &str) -> BuildOptions {
    BuildOptions {
        request: RequestOptions {
            output: Some(dir.join(out)),
            ..RequestOptions::default()
        },
        locked: Some(lock.to_owned()),
        ..BuildOptions::default()
    }
}

/// The lock's entry for the image `reference` (without its digest) of amd64.
fn image<'a>(lock: &'a cks_iso::lock::Lock, reference: &str) -> &'a cks_iso::lock::ImageEntry {
    let images = &lock.arches["amd64"].images;
    (images.iter())
        .find(|i| i.reference.split('@').next() == Some(reference))
        .unwrap_or_else(|| panic!("no {reference} in {images:#?}"))
}

/// The lock's entry for the file at `path` in the ISO, of amd64.
fn file<'a>(lock: &'a cks_iso::lock::Lock, path: &str) -> &'a cks_iso::lock::FileEntry {
    let files = &lock.arches["amd64"].files;
    (files.iter().find(|f| f.path == path)).unwrap_or_else(|| panic!("no {path} in {files:#?}"))
}

/// A build that must fail in its realize step before writing: the inner error, and its message
/// with every cause on one line, then its hint as the command prints it.
fn realize_fails(tools: &Tools, options: &BuildOptions) -> (Box<RealizeError>, String) {
    let (built, events) = build(tools, options);
    let e = built.expect_err("the realize step refuses the signature");
    let hint = e
        .hint()
        .unwrap_or_else(|| panic!("no hint for: {}", causes(&e)));
    let text = format!("{}\nhint: {hint}", causes(&e));
    assert!(!e.is_usage(), "{text}");
    assert!(
        events.iter().all(|e| !e.starts_with("written")),
        "{events:?}"
    );
    let out = options.request.output.as_ref().unwrap();
    assert!(files_in(out).is_empty(), "{:?}", files_in(out));
    match e {
        BuildError::Realize(inner) => (inner, text),
        other => panic!("not the realize step's error: {other:?}"),
    }
}

/// A build under the default mode locks what verified: each registry.k8s.io image's signature
/// manifest under the `.sig` tag of its platform manifest, kept in the ISO's `signatures/` by
/// digest; each Kubernetes binary's `.sig`, `.cert` and Rekor entry; nothing for what no one
/// signs.
#[test]
fn a_build_locks_the_evidence_each_image_and_binary_verified_with() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools::open(&world, &dir.path().join("cache"));
    let (built, _) = build(&tools, &amd64(&world, dir.path(), "out"));
    let built = built.unwrap();
    let images = &built.lock.arches["amd64"].images;
    let (ours, theirs): (Vec<_>, Vec<_>) =
        (images.iter()).partition(|i| i.reference.starts_with("registry.k8s.io/"));
    assert!(!ours.is_empty() && !theirs.is_empty(), "{images:#?}");
    for i in &ours {
        let sig = (i.signature.as_ref()).unwrap_or_else(|| panic!("unlocked: {i:#?}"));
        let hex = i.manifest.trim_start_matches("sha256:");
        assert_eq!(sig.tag, format!("sha256-{hex}.sig"), "{i:#?}");
        assert!(sig.manifest.starts_with("sha256:") && sig.manifest.len() == 71);
    }
    for i in &theirs {
        assert_eq!(i.signature, None, "{i:#?}");
    }
    for f in &built.lock.arches["amd64"].files {
        let signature = f.signature.as_ref();
        if SIGNED_FILES.contains(&f.path.as_str()) {
            let s = signature.unwrap_or_else(|| panic!("unlocked: {f:#?}"));
            assert!(
                s.sig.is_some() && s.cert.is_some() && s.rekor.is_some(),
                "{s:#?}"
            );
            assert_eq!(s.bundle, None, "no bundle is published: {s:#?}");
        } else {
            assert_eq!(signature, None, "{f:#?}");
        }
    }
    // The ISO keeps the signature manifest the lock names, byte for byte (read by bsdtar).
    let sig = &image(&built.lock, PAUSE)
        .signature
        .as_ref()
        .unwrap()
        .manifest;
    let kept = format!(
        "signatures/images/{}.json",
        sig.trim_start_matches("sha256:")
    );
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let iso = built.isos[0].path.to_str().unwrap();
    crate::support::tool(
        "bsdtar",
        ["-x", "-f", iso, "-C", crate::support::p(&tree), &kept],
    );
    let bytes = std::fs::read(tree.join(&kept)).unwrap();
    assert_eq!(format!("sha256:{}", sha256_hex(&bytes)), *sig);
}

/// Kubernetes signs pause again, which moves its `.sig` tags: a locked build on an empty cache
/// takes the locked signature manifest by digest (the same ISO), an unlocked one the new one;
/// a lock naming a signature manifest the registry never had fails realize naming both.
#[test]
fn a_locked_build_keeps_the_locked_image_signature_after_the_image_is_signed_again() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (first, _) = build(
        &Tools::open(&world, &d.join("cache")),
        &amd64(&world, d, "out"),
    );
    let first = first.unwrap();
    let locked_sig = image(&first.lock, PAUSE).signature.clone().unwrap();
    let pause = world.image(PAUSE);
    let mut digests = vec![pause.digest.clone()];
    digests.extend(pause.manifests.values().cloned());
    for digest in digests {
        let layer = (world.sigstore()).sign(&pause.repository, &digest, &SignOptions::default());
        world.push_signature(&pause.repository, &digest, &[layer]);
    }
    let lock = d.join("run.lock");
    let (again, events) = build(
        &Tools::open(&world, &d.join("cache-again")),
        &locked(&lock, d, "again"),
    );
    let again = again.unwrap();
    assert!(events.iter().all(|e| !e.starts_with("lock ")), "{events:?}");
    assert_eq!(again.isos[0].sha256, first.isos[0].sha256);
    assert_eq!(
        image(&again.lock, PAUSE).signature,
        Some(locked_sig.clone())
    );
    let fresh = BuildOptions {
        lock_file: None,
        ..amd64(&world, d, "fresh")
    };
    let (fresh, _) = build(&Tools::open(&world, &d.join("cache-fresh")), &fresh);
    let fresh = fresh.unwrap();
    let new_sig = image(&fresh.lock, PAUSE).signature.clone().unwrap();
    assert_eq!(new_sig.tag, locked_sig.tag);
    assert_ne!(new_sig.manifest, locked_sig.manifest);
    assert_ne!(fresh.isos[0].sha256, first.isos[0].sha256);
    // The lock edited to name a signature manifest never pushed.
    let gone = format!("sha256:{}", sha256_hex(b"never pushed"));
    let mut edited = first.lock.clone();
    let arch = edited.arches.get_mut("amd64").unwrap();
    let entry = (arch.images.iter_mut())
        .find(|i| i.reference.starts_with(PAUSE))
        .unwrap();
    entry.signature.as_mut().unwrap().manifest = gone.clone();
    let bad = d.join("gone.lock");
    std::fs::write(&bad, edited.render()).unwrap();
    let tools = Tools::open(&world, &d.join("cache-gone"));
    let (e, text) = realize_fails(&tools, &locked(&bad, d, "gone"));
    assert!(
        matches!(
            *e,
            RealizeError::Checker(_) | RealizeError::Signatures { .. }
        ),
        "{e:?}"
    );
    for w in [PAUSE, gone.as_str(), "signed again since it was locked"] {
        assert!(text.contains(w), "missing {w:?} in {text}");
    }
}

/// A release signed onto Rekor v2 alone (a bundle beside each binary, no `.sig`/`.cert`): the
/// lock names each bundle by the sha256 of the published bytes and nothing of a pair; once the
/// bundle kubeadm's lock entry names is gone, a locked build on an empty cache fails realize
/// with `BundleGone` naming what the lock expected, rather than taking anything else.
#[test]
fn rekor_v2_bundles_are_locked_and_a_locked_build_refuses_one_that_is_gone() {
    let world = World::start(Default::default());
    publish_bundles(&world, &BundleOptions::default(), true);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (built, _) = build(
        &Tools::open(&world, &d.join("cache")),
        &amd64(&world, d, "out"),
    );
    let built = built.unwrap();
    let release = format!("dl.k8s.io/release/v{}/bin/linux/amd64", world.kubernetes());
    for path in SIGNED_FILES {
        let served = format!("{release}/{}.sigstore.json", &path["k8s/".len()..]);
        let published = world.upstream().take(&served).unwrap();
        let body = published.body.clone();
        world.upstream().put(&served, body, published.content_type);
        let s = file(&built.lock, path).signature.clone().unwrap();
        assert_eq!(s.bundle, Some(sha256_hex(&published.body)), "{path}");
        assert_eq!((s.sig, s.cert, s.rekor), (None, None, None), "{path}");
    }
    let bundle = format!("{release}/kubeadm.sigstore.json");
    world.upstream().take(&bundle).unwrap();
    let tools = Tools::open(&world, &d.join("cache-gone"));
    let lock = d.join("run.lock");
    let (e, text) = realize_fails(&tools, &locked(&lock, d, "gone"));
    let RealizeError::Binary(b) = *e else {
        panic!("not a binary's signature: {text}");
    };
    let BinaryError::BundleGone {
        artifact, locked, ..
    } = *b
    else {
        panic!("not BundleGone: {text}");
    };
    assert!(artifact.ends_with("/amd64/kubeadm"), "{artifact}");
    let expected = file(&built.lock, "k8s/kubeadm").signature.clone().unwrap();
    assert_eq!(Some(locked), expected.bundle);
    assert!(text.contains("build without --locked"), "{text}");
}

/// A Rekor v2 bundle beside kubeadm that does not verify — a timestamp of an authority the
/// trusted root does not name, a checkpoint signed by another key, another signer's bundle
/// beside a valid `.sig`/`.cert` — fails realize as the binary's untrusted signature naming
/// the check; a failing bundle is never passed over for the pair.
#[test]
fn a_rekor_v2_bundle_that_does_not_verify_fails_realize_naming_the_check() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let kubeadm = format!(
        "dl.k8s.io/release/v{}/bin/linux/amd64/kubeadm",
        world.kubernetes()
    );
    let mut settings = pipeline::settings(world.config_path()).unwrap();
    settings.http.retry.attempts = 2;
    let tools = Tools::on(settings, &d.join("cache"), None);
    let cases: [(BundleOptions, &[&str]); 3] = [
        (
            BundleOptions {
                authority: Authority::Rogue,
                ..BundleOptions::default()
            },
            &[
                "fails the RFC 3161 timestamp check",
                "no timestamp authority",
            ],
        ),
        (
            BundleOptions {
                foreign_checkpoint_key: true,
                ..BundleOptions::default()
            },
            &["fails the Rekor checkpoint check", "does not verify"],
        ),
        (
            BundleOptions {
                signer: SignOptions {
                    identity: "mallory@example.com".into(),
                    ..binary_signer()
                },
                ..BundleOptions::default()
            },
            &["fails the identity check", "mallory@example.com"],
        ),
    ];
    for (n, (bundle, wanted)) in cases.iter().enumerate() {
        publish_bundle(&world, &kubeadm, bundle, false);
        let options = BuildOptions {
            lock_file: None,
            ..amd64(&world, d, &format!("bad-{n}"))
        };
        let (e, text) = realize_fails(&tools, &options);
        assert!(
            matches!(&*e, RealizeError::Binary(b) if matches!(**b, BinaryError::Untrusted(_))),
            "case {n}: {e:?}"
        );
        for w in [&[kubeadm.as_str(), ".sigstore.json"][..], wanted].concat() {
            assert!(text.contains(w), "case {n}: missing {w:?} in {text}");
        }
    }
}
