//! Kubernetes binaries signed onto Rekor v2, as `cosign sign-blob --bundle` signs them: no
//! `.sig`/`.cert`, a Sigstore bundle v0.3 `<file>.sigstore.json` beside each (a `hashedrekord`
//! 0.0.2 entry with its inclusion proof and checkpoint, an RFC 3161 timestamp of the world's
//! timestamp authority). The world's Rekor v2 log and authority (testworld `rekor_v2`, `tsa`) are
//! in its `trusted_root.json`. Such a release builds, its bundles go into the ISO byte for byte
//! and into the lock, and `verify --signatures` and `verify-bundle --offline` re-check them with
//! every server stopped; a bundle for another file, a timestamp of an authority the root does not
//! name (or whose certificate's extended key usage is not critical), a checkpoint signed by
//! another key, a bundle without a timestamp, and a bad bundle beside a good `.sig`/`.cert` each
//! fail the build naming the check and the bundle; a bundle that cannot be fetched fails naming
//! it; a Rekor v1 bundle (with its SET) published alone verifies too; without a bundle (a 404)
//! the pair is still used.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::*;
use cks_iso_testworld::http;
use cks_iso_testworld::rekor_v2::{Authority, BundleOptions, publish_bundle, publish_bundles};
use cks_iso_testworld::sigstore::SignOptions;
use cks_iso_testworld::world::{Options, World, binary_signer};
use sha2::Digest as _;

use cks_iso_testworld::sigstore::K8S_BINARY_IDENTITY as STAGING;

/// [`crate::signatures::common::build`] for amd64 alone.
fn build(world: &World, dir: &Path, out: &str, args: &[&str]) -> Command {
    crate::signatures::common::build(world, dir, out, &[&["--arch", "amd64"], args].concat())
}

fn kubeadm(world: &World) -> String {
    format!(
        "dl.k8s.io/release/v{}/bin/linux/amd64/kubeadm",
        world.kubernetes()
    )
}

fn iso_in(dir: &Path) -> Vec<std::path::PathBuf> {
    fs::read_dir(dir)
        .map(|r| {
            r.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "iso"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_rekor_v2_signed_release_builds_and_its_iso_reverifies_offline() {
    let world = World::start(Options::default());
    publish_bundles(&world, &BundleOptions::default(), true);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lock = d.join("run.lock");
    let out = ok(build(&world, d, "out", &["--lock-file", p(&lock)])
        .output()
        .unwrap());
    assert!(
        stderr(&out).contains("3 of 3 covered files' signatures verified"),
        "{}",
        stderr(&out)
    );
    let iso = iso_in(&d.join("out")).pop().expect("an ISO");
    let tree = d.join("tree");
    let report = signature_report(&iso, &tree);
    let locked: serde_json::Value = serde_json::from_slice(&fs::read(&lock).unwrap()).unwrap();
    for b in report["binaries"].as_array().unwrap() {
        assert_eq!(b["verdict"], "verified", "{b:#}");
        assert_eq!(b["identity"], STAGING);
        let path = b["path"].as_str().unwrap();
        // The published bundle, byte for byte; no pair, none was published.
        let served = format!(
            "{}.sigstore.json",
            b["url"].as_str().unwrap().trim_start_matches("https://")
        );
        let published = world.upstream().take(&served).unwrap();
        world
            .upstream()
            .put(&served, published.body.clone(), published.content_type);
        let kept = fs::read(tree.join(b["bundle"].as_str().unwrap())).unwrap();
        assert_eq!(kept, published.body, "{path}");
        let bundle: serde_json::Value = serde_json::from_slice(&kept).unwrap();
        assert_eq!(
            bundle["verificationMaterial"]["tlogEntries"][0]["kindVersion"]["version"],
            "0.0.2"
        );
        assert!(
            !tree
                .join(format!("signatures/binaries/{path}.sig"))
                .exists()
        );
        // The signing time is the timestamp's: about two minutes ago.
        let t = b["integrated_time"].as_i64().unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        assert!((now - 600..now).contains(&t), "{b:#}");
        // The lock names the bundle by digest, and nothing of a pair.
        let file = locked["arches"]["amd64"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .unwrap();
        let digest = hex::encode(sha2::Sha256::digest(&kept));
        assert_eq!(file["signature"]["bundle"], digest.as_str(), "{file:#}");
        assert!(file["signature"].get("sig").is_none(), "{file:#}");
    }
    // The lock carries the bundles across an air gap: exported, imported into a fresh cache,
    // a locked offline rebuild from it alone writes the same ISO.
    let carry = d.join("carry");
    ok(cks_iso()
        .args(["cache", "export", "--locked", p(&lock), "-o", p(&carry)])
        .args(["--cache-dir", p(&d.join("cache"))])
        .output()
        .unwrap());
    let fresh = d.join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    ok(cks_iso()
        .args(["cache", "import", p(&carry), "--locked", p(&lock)])
        .args(["--cache-dir", p(&fresh.join("cache"))])
        .output()
        .unwrap());
    let again = ok(build(
        &world,
        &fresh,
        "again",
        &["--locked", p(&lock), "--offline"],
    )
    .output()
    .unwrap());
    let rebuilt = iso_in(&fresh.join("again")).pop().expect("an ISO");
    assert!(same_bytes(&iso, &rebuilt), "{}", stderr(&again));
    // A bundle the lock names that is gone fails the locked build, rather than taking the pair.
    let served = format!("{}.sigstore.json", kubeadm(&world));
    let kept = world.upstream().take(&served).unwrap();
    let gone = d.join("gone");
    fs::create_dir_all(&gone).unwrap();
    let out = build(&world, &gone, "out", &["--locked", p(&lock)])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for w in [
        "kubeadm: the bundle the lock names is gone: expected sha256:",
        "kubeadm.sigstore.json, which is not published",
        "hint: build without --locked",
    ] {
        assert!(err.contains(w), "missing {w:?} in:\n{err}");
    }
    world.upstream().put(&served, kept.body, kept.content_type);

    // Every server stopped: the ISO's evidence re-verifies, and so does a bundle on its own.
    let root = d.join("root.json");
    fs::copy(world.trusted_root_path(), &root).unwrap();
    drop(world);
    let verified = cks_iso()
        .args([
            "verify",
            "--signatures",
            "--trusted-root",
            p(&root),
            p(&iso),
        ])
        .output()
        .unwrap();
    assert!(verified.status.success(), "{}", combined(&verified));
    let out = ok(cks_iso()
        .args([
            "verify-bundle",
            "--offline",
            "--kubernetes-binary",
            "--trusted-root",
            p(&root),
            "--bundle",
            p(&tree.join("signatures/binaries/k8s/kubeadm.sigstore.json")),
            p(&tree.join("k8s/kubeadm")),
        ])
        .output()
        .unwrap());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("timestamped at"),
        "{}",
        combined(&out)
    );
    // Sigstore's own Python client verifies the same bundles, offline: the world's Rekor v2
    // log, timestamps and bundles are in the shapes the real verifiers read.
    let oracle = crate::signatures::common::bundle_oracle(&tree, &root);
    let said = String::from_utf8_lossy(&oracle.stdout).into_owned();
    assert!(
        oracle.status.success(),
        "bundle oracle: {said}{}",
        stderr(&oracle)
    );
    assert_eq!(said.trim(), "ok: 3 bundles");
    // A bundle altered in the ISO is caught: its checkpoint's root hash line changed.
    let copy = d.join("tampered");
    run(Command::new("cp").args(["-a", p(&tree), p(&copy)]));
    let bundle = copy.join("signatures/binaries/k8s/kubectl.sigstore.json");
    let mut json: serde_json::Value = serde_json::from_slice(&fs::read(&bundle).unwrap()).unwrap();
    let envelope = &mut json["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["checkpoint"]
        ["envelope"];
    let text = envelope.as_str().unwrap().to_owned();
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    lines[1] = "999999".into();
    *envelope = lines.join("\n").into();
    fs::write(&bundle, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
    let bad = d.join("bad.iso");
    run(cks_iso().args(["iso", p(&copy), "-o", p(&bad)]));
    let out = cks_iso()
        .args([
            "verify",
            "--signatures",
            "--trusted-root",
            p(&root),
            p(&bad),
        ])
        .output()
        .unwrap();
    let text = combined(&out);
    assert!(
        !out.status.success() && text.contains("kubectl") && text.contains("checkpoint"),
        "{text}"
    );
    // A bundle bloated in the ISO with distinct junk timestamps (nothing signs their list):
    // 4 MB of them are refused unread, 5 000 under the size cap refused by their number, each
    // in seconds (the quadratic duplicate check took minutes on the 4 MB one).
    for (count, wanted) in [
        (150_000, "larger than 256.00 KiB"),
        (5_000, "more than the 32 read"),
    ] {
        let copy = d.join(format!("timestamps-{count}"));
        run(Command::new("cp").args(["-a", p(&tree), p(&copy)]));
        let bundle = copy.join("signatures/binaries/k8s/kubectl.sigstore.json");
        let mut json: serde_json::Value =
            serde_json::from_slice(&fs::read(&bundle).unwrap()).unwrap();
        let list: Vec<serde_json::Value> = (0..count as u32)
            .map(|i| serde_json::json!({"signedTimestamp": http::base64(&i.to_be_bytes())}))
            .collect();
        json["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"] =
            list.into();
        fs::write(&bundle, serde_json::to_vec(&json).unwrap()).unwrap();
        let bad = d.join(format!("timestamps-{count}.iso"));
        run(cks_iso().args(["iso", p(&copy), "-o", p(&bad)]));
        let start = std::time::Instant::now();
        let out = cks_iso()
            .args([
                "verify",
                "--signatures",
                "--trusted-root",
                p(&root),
                p(&bad),
            ])
            .output()
            .unwrap();
        let took = start.elapsed();
        let text = combined(&out);
        assert!(!out.status.success(), "{text}");
        assert!(
            text.contains("kubectl.sigstore.json") && text.contains(wanted),
            "{text}"
        );
        assert!(
            took < std::time::Duration::from_secs(60),
            "{took:?}: {text}"
        );
    }
}

#[test]
fn bad_rekor_v2_bundles_fail_the_build_naming_the_check() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = kubeadm(&world);
    let bundle_url = format!("https://{path}.sigstore.json");
    let fails_with = |wanted: &[&str]| {
        let out = build(&world, d, "bad", &["--retries", "2"])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        for w in [&[bundle_url.as_str(), "hint:"][..], wanted].concat() {
            assert!(err.contains(w), "missing {w:?} in:\n{err}");
        }
        assert!(iso_in(&d.join("bad")).is_empty(), "no ISO after:\n{err}");
    };
    let cases: Vec<(&str, BundleOptions, Vec<&str>)> = vec![
        (
            "a bundle for another file",
            BundleOptions {
                other_file: Some(b"another file".to_vec()),
                ..BundleOptions::default()
            },
            vec!["fails the layer integrity check", "the file hashes to"],
        ),
        (
            "a timestamp of an authority the root does not name",
            BundleOptions {
                authority: Authority::Rogue,
                ..BundleOptions::default()
            },
            vec![
                "fails the RFC 3161 timestamp check",
                "no timestamp authority of the trusted root",
                "check its timestampAuthorities (--trusted-root)",
            ],
        ),
        (
            // RFC 3161 §2.3; OpenSSL (under sigstore-python) refuses it too.
            "a timestamp authority whose extended key usage is not critical",
            BundleOptions {
                authority: Authority::Lax,
                ..BundleOptions::default()
            },
            vec![
                "fails the RFC 3161 timestamp check",
                "time stamping alone, marked critical",
            ],
        ),
        (
            "a checkpoint signed by another key",
            BundleOptions {
                foreign_checkpoint_key: true,
                ..BundleOptions::default()
            },
            vec!["fails the Rekor checkpoint check", "does not verify"],
        ),
        (
            "no timestamp at all",
            BundleOptions {
                no_timestamp: true,
                ..BundleOptions::default()
            },
            vec![
                "fails the RFC 3161 timestamp check",
                "no RFC 3161 timestamp",
            ],
        ),
        (
            // The .sig/.cert beside it stay good: a failing bundle is never passed over.
            "another signer's bundle beside a valid pair",
            BundleOptions {
                signer: SignOptions {
                    identity: "mallory@example.com".into(),
                    ..binary_signer()
                },
                ..BundleOptions::default()
            },
            vec!["fails the identity check", "mallory@example.com"],
        ),
    ];
    for (name, opts, wanted) in &cases {
        eprintln!("case: {name}");
        publish_bundle(&world, &path, opts, false);
        fails_with(wanted);
    }
    // A bundle that cannot be fetched (larger than any real one) fails the build naming it:
    // only a 404 says there is none.
    world.upstream().put(
        &format!("{path}.sigstore.json"),
        vec![b' '; 300 * 1024],
        "application/json",
    );
    let out = build(&world, d, "bad", &[]).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for w in [
        format!("cannot fetch the signature of https://{path}"),
        "kubeadm.sigstore.json: the body is larger than".into(),
    ] {
        assert!(err.contains(&w), "missing {w:?} in:\n{err}");
    }
    // Without a bundle the pair is still what verifies it; with a good one, the bundle.
    world.upstream().take(&format!("{path}.sigstore.json"));
    let out = ok(build(&world, d, "pair", &[]).output().unwrap());
    let tree = d.join("tree-pair");
    fs::create_dir_all(&tree).unwrap();
    let iso = iso_in(&d.join("pair")).pop().expect("an ISO");
    tool("bsdtar", ["-x", "-f", p(&iso), "-C", p(&tree)]);
    assert!(
        tree.join("signatures/binaries/k8s/kubeadm.sig").exists(),
        "{}",
        stderr(&out)
    );
    // A Rekor v1 bundle (hashedrekord 0.0.1 with its SET: the one that ISO holds, which
    // Sigstore's Python client verifies in `signatures`) published alone also verifies it.
    let v1 = fs::read(tree.join("signatures/binaries/k8s/kubeadm.sigstore.json")).unwrap();
    let sig = world.upstream().take(&format!("{path}.sig")).unwrap();
    let cert = world.upstream().take(&format!("{path}.cert")).unwrap();
    let json = format!("{path}.sigstore.json");
    world.upstream().put(&json, v1.clone(), "application/json");
    ok(build(&world, d, "v1", &[]).output().unwrap());
    let tree = d.join("tree-v1");
    fs::create_dir_all(&tree).unwrap();
    let iso = iso_in(&d.join("v1")).pop().expect("an ISO");
    tool("bsdtar", ["-x", "-f", p(&iso), "-C", p(&tree)]);
    assert!(!tree.join("signatures/binaries/k8s/kubeadm.sig").exists());
    assert_eq!(
        fs::read(tree.join("signatures/binaries/k8s/kubeadm.sigstore.json")).unwrap(),
        v1
    );
    world
        .upstream()
        .put(&format!("{path}.sig"), sig.body, sig.content_type);
    world
        .upstream()
        .put(&format!("{path}.cert"), cert.body, cert.content_type);
    publish_bundle(&world, &path, &BundleOptions::default(), false);
    ok(build(&world, d, "bundle", &[]).output().unwrap());
    let tree = d.join("tree-bundle");
    fs::create_dir_all(&tree).unwrap();
    let iso = iso_in(&d.join("bundle")).pop().expect("an ISO");
    tool("bsdtar", ["-x", "-f", p(&iso), "-C", p(&tree)]);
    assert!(!tree.join("signatures/binaries/k8s/kubeadm.sig").exists());
    assert_eq!(
        fs::read(tree.join("signatures/binaries/k8s/kubeadm.sigstore.json")).unwrap(),
        world
            .upstream()
            .take(&format!("{path}.sigstore.json"))
            .unwrap()
            .body
    );
}
