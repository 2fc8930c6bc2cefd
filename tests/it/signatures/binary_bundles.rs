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
use std::process::{Command, Output};

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

/// `verify --signatures` of `iso` against `root`.
fn verify_signatures(iso: &Path, root: &Path) -> std::process::Output {
    cks_iso()
        .args(["verify", "--signatures", "--trusted-root", p(root), p(iso)])
        .output()
        .unwrap()
}

/// A copy of the extracted `tree` named `name`, its kubectl bundle rewritten by `edit` (indented
/// when `pretty`), made into `name.iso`.
fn iso_with_kubectl_bundle(
    (dir, tree): (&Path, &Path),
    name: &str,
    pretty: bool,
    edit: impl FnOnce(&mut serde_json::Value),
) -> std::path::PathBuf {
    let copy = dir.join(name);
    run(Command::new("cp").args(["-a", p(tree), p(&copy)]));
    let bundle = copy.join("signatures/binaries/k8s/kubectl.sigstore.json");
    let mut json: serde_json::Value = serde_json::from_slice(&fs::read(&bundle).unwrap()).unwrap();
    edit(&mut json);
    let bytes = if pretty {
        serde_json::to_vec_pretty(&json)
    } else {
        serde_json::to_vec(&json)
    };
    fs::write(&bundle, bytes.unwrap()).unwrap();
    let bad = dir.join(format!("{name}.iso"));
    run(cks_iso().args(["iso", p(&copy), "-o", p(&bad)]));
    bad
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
        assert_bundle_shipped_and_locked(&world, &tree, &locked, b);
    }
    assert_the_lock_carries_the_bundles_across_an_air_gap(&world, d, &lock, &iso);
    assert_a_gone_locked_bundle_fails_the_locked_build(&world, d, &lock);

    // Every server stopped: the ISO's evidence re-verifies, and so does a bundle on its own.
    let root = d.join("root.json");
    fs::copy(world.trusted_root_path(), &root).unwrap();
    drop(world);
    let verified = verify_signatures(&iso, &root);
    assert!(verified.status.success(), "{}", combined(&verified));
    assert_a_bundle_verifies_on_its_own(&tree, &root);
    // Sigstore's own Python client verifies the same bundles, offline: the world's Rekor v2
    // log, timestamps and bundles are in the shapes the real verifiers read.
    crate::signatures::common::assert_bundle_oracle_agrees(&tree, &root);
    assert_an_altered_checkpoint_is_caught(d, &tree, &root);
    assert_bloated_timestamp_lists_are_refused_quickly(d, &tree, &root);
}

/// One binary of the report: verified by krel-staging through the published bundle, kept byte
/// for byte (no pair: none was published), a Rekor v2 entry, signed at its timestamp's time
/// (about two minutes ago), and named by digest in the lock with nothing of a pair.
fn assert_bundle_shipped_and_locked(
    world: &World,
    tree: &Path,
    locked: &serde_json::Value,
    b: &serde_json::Value,
) {
    assert_eq!(b["verdict"], "verified", "{b:#}");
    assert_eq!(b["identity"], STAGING);
    let path = b["path"].as_str().unwrap();
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
    let t = b["integrated_time"].as_i64().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - 600..now).contains(&t), "{b:#}");
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

/// The lock carries the bundles across an air gap: exported, imported into a fresh cache, a
/// locked offline rebuild from it alone writes the same ISO.
fn assert_the_lock_carries_the_bundles_across_an_air_gap(
    world: &World,
    d: &Path,
    lock: &Path,
    iso: &Path,
) {
    let carry = d.join("carry");
    ok(cks_iso()
        .args(["cache", "export", "--locked", p(lock), "-o", p(&carry)])
        .args(["--cache-dir", p(&d.join("cache"))])
        .output()
        .unwrap());
    let fresh = d.join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    ok(cks_iso()
        .args(["cache", "import", p(&carry), "--locked", p(lock)])
        .args(["--cache-dir", p(&fresh.join("cache"))])
        .output()
        .unwrap());
    let offline = ["--locked", p(lock), "--offline"];
    let again = ok(build(world, &fresh, "again", &offline).output().unwrap());
    let rebuilt = iso_in(&fresh.join("again")).pop().expect("an ISO");
    assert!(same_bytes(iso, &rebuilt), "{}", stderr(&again));
}

/// A bundle the lock names that is gone fails the locked build, rather than taking the pair.
fn assert_a_gone_locked_bundle_fails_the_locked_build(world: &World, d: &Path, lock: &Path) {
    let served = format!("{}.sigstore.json", kubeadm(world));
    let kept = world.upstream().take(&served).unwrap();
    let gone = d.join("gone");
    fs::create_dir_all(&gone).unwrap();
    let out = build(world, &gone, "out", &["--locked", p(lock)])
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
}

/// `verify-bundle --offline` re-checks kubeadm's bundle from the ISO and names its timestamp.
fn assert_a_bundle_verifies_on_its_own(tree: &Path, root: &Path) {
    let out = ok(cks_iso()
        .args([
            "verify-bundle",
            "--offline",
            "--kubernetes-binary",
            "--trusted-root",
            p(root),
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
}

/// A bundle altered in the ISO is caught: its checkpoint's root hash line changed.
fn assert_an_altered_checkpoint_is_caught(d: &Path, tree: &Path, root: &Path) {
    let bad = iso_with_kubectl_bundle((d, tree), "tampered", true, |json| {
        let envelope = &mut json["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["checkpoint"]
            ["envelope"];
        let text = envelope.as_str().unwrap().to_owned();
        let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
        lines[1] = "999999".into();
        *envelope = lines.join("\n").into();
    });
    let out = verify_signatures(&bad, root);
    let text = combined(&out);
    assert!(
        !out.status.success() && text.contains("kubectl") && text.contains("checkpoint"),
        "{text}"
    );
}

/// A bundle bloated in the ISO with distinct junk timestamps (nothing signs their list): 4 MB of
/// them are refused unread, 5 000 under the size cap refused by their number, each in seconds
/// (the quadratic duplicate check took minutes on the 4 MB one).
fn assert_bloated_timestamp_lists_are_refused_quickly(d: &Path, tree: &Path, root: &Path) {
    for (count, wanted) in [
        (150_000, "larger than 256.00 KiB"),
        (5_000, "more than the 32 read"),
    ] {
        let bad =
            iso_with_kubectl_bundle((d, tree), &format!("timestamps-{count}"), false, |json| {
                let list: Vec<serde_json::Value> = (0..count as u32)
                    .map(|i| serde_json::json!({"signedTimestamp": http::base64(&i.to_be_bytes())}))
                    .collect();
                json["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"] =
                    list.into();
            });
        let start = std::time::Instant::now();
        let out = verify_signatures(&bad, root);
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
    for (name, opts, wanted) in &bad_bundles() {
        eprintln!("case: {name}");
        publish_bundle(&world, &path, opts, false);
        assert_refused_naming_the_bundle(&world, d, &path, wanted);
    }
    assert_an_unfetchable_bundle_fails_naming_it(&world, d, &path);
    // Without a bundle the pair is still what verifies it; with a good one, the bundle.
    world.upstream().take(&format!("{path}.sigstore.json"));
    let (tree, out) = build_and_extract(&world, d, "pair");
    assert!(
        tree.join("signatures/binaries/k8s/kubeadm.sig").exists(),
        "{}",
        stderr(&out)
    );
    assert_a_rekor_v1_bundle_published_alone_verifies(&world, d, &path, &tree);
    publish_bundle(&world, &path, &BundleOptions::default(), false);
    let (tree, _) = build_and_extract(&world, d, "bundle");
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

/// The bad bundles of the matrix, with the words each failure must say.
fn bad_bundles() -> Vec<(&'static str, BundleOptions, Vec<&'static str>)> {
    vec![
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
    ]
}

/// A build fails with exit 1 naming the bundle's URL, a hint and each of `wanted`; no ISO.
fn assert_refused_naming_the_bundle(world: &World, d: &Path, path: &str, wanted: &[&str]) {
    let bundle_url = format!("https://{path}.sigstore.json");
    let out = build(world, d, "bad", &["--retries", "2"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for w in [&[bundle_url.as_str(), "hint:"][..], wanted].concat() {
        assert!(err.contains(w), "missing {w:?} in:\n{err}");
    }
    assert!(iso_in(&d.join("bad")).is_empty(), "no ISO after:\n{err}");
}

/// A bundle that cannot be fetched (larger than any real one) fails the build naming it: only a
/// 404 says there is none.
fn assert_an_unfetchable_bundle_fails_naming_it(world: &World, d: &Path, path: &str) {
    world.upstream().put(
        &format!("{path}.sigstore.json"),
        vec![b' '; 300 * 1024],
        "application/json",
    );
    let out = build(world, d, "bad", &[]).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for w in [
        format!("cannot fetch the signature of https://{path}"),
        "kubeadm.sigstore.json: the body is larger than".into(),
    ] {
        assert!(err.contains(&w), "missing {w:?} in:\n{err}");
    }
}

/// A build into `d/name`, its ISO extracted into `d/tree-name`; returns the tree and the output.
fn build_and_extract(world: &World, d: &Path, name: &str) -> (std::path::PathBuf, Output) {
    let out = ok(build(world, d, name, &[]).output().unwrap());
    let tree = d.join(format!("tree-{name}"));
    fs::create_dir_all(&tree).unwrap();
    let iso = iso_in(&d.join(name)).pop().expect("an ISO");
    tool("bsdtar", ["-x", "-f", p(&iso), "-C", p(&tree)]);
    (tree, out)
}

/// A Rekor v1 bundle (hashedrekord 0.0.1 with its SET: the one the pair's ISO `tree` holds,
/// which Sigstore's Python client verifies in `signatures`) published alone also verifies the
/// binary, and is shipped byte for byte; the pair is served again after.
fn assert_a_rekor_v1_bundle_published_alone_verifies(
    world: &World,
    d: &Path,
    path: &str,
    tree: &Path,
) {
    let v1 = fs::read(tree.join("signatures/binaries/k8s/kubeadm.sigstore.json")).unwrap();
    let sig = world.upstream().take(&format!("{path}.sig")).unwrap();
    let cert = world.upstream().take(&format!("{path}.cert")).unwrap();
    let json = format!("{path}.sigstore.json");
    world.upstream().put(&json, v1.clone(), "application/json");
    let (tree, _) = build_and_extract(world, d, "v1");
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
}
