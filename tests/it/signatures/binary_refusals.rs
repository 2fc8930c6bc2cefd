//! Kubernetes binaries' signatures refused: the world's Sigstore signs each 1.26+ binary
//! (`.sig`/`.cert` served beside it, identity krel-staging) and logs it in its Rekor stand-in (a
//! real Merkle tree, signed checkpoints). Another identity, a flipped SET, a Rekor entry for
//! another blob, a tampered checkpoint or inclusion proof, a missing `.sig` each fail the build
//! naming the binary's URL before any ISO is written; `--signatures off` builds; a policy rule
//! covering CNI, which publishes no signature, warns under verify and fails under enforce.

use std::fs;
use std::path::Path;

use super::common::{GOOGLE, STAGING, build, fails_with};
use crate::support::{ok, p, stderr};
use cks_iso_testworld::rekor::Tamper;
use cks_iso_testworld::sigstore::SignOptions;
use cks_iso_testworld::world::{Options, World, binary_signer};

/// Bad material is fetched again before it fails the build: once is enough here.
const AMD64: [&str; 4] = ["--arch", "amd64", "--retries", "2"];

#[test]
fn bad_or_missing_binary_signatures_fail_the_build_before_writing() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = format!(
        "dl.k8s.io/release/v{}/bin/linux/amd64/kubeadm",
        world.kubernetes()
    );
    let file = world.upstream().take(&path).unwrap();
    world
        .upstream()
        .put(&path, file.body.clone(), file.content_type);
    let url = format!("https://{path}");

    assert_each_bad_signature_fails_naming_the_binary(&world, d, &path, &file.body);
    world.sign_binary(&path, &file.body, &binary_signer(), None);
    assert_bad_rekor_proofs_fail(&world, d, &url);
    assert_a_missing_sig_fails_unless_off(&world, d, &path);
    assert_an_unsigned_cni_under_policy_warns_then_fails(&world, d);
}

/// The binary signed badly: the words each failure must say.
fn bad_signatures() -> Vec<(&'static str, SignOptions, Option<String>, Vec<&'static str>)> {
    vec![
        (
            "wrong identity",
            SignOptions {
                identity: "mallory@example.com".into(),
                ..binary_signer()
            },
            None,
            vec!["fails the identity check", "mallory@example.com", STAGING],
        ),
        (
            "flipped bit in the SET",
            SignOptions {
                flip_set: true,
                ..binary_signer()
            },
            None,
            vec!["fails the Rekor signed entry timestamp check"],
        ),
        (
            "a Rekor entry for another blob",
            binary_signer(),
            Some("ab".repeat(32)),
            vec![
                "fails the Rekor entry check",
                "has no entry that logs this file",
            ],
        ),
    ]
}

/// Each bad signature of kubeadm fails the build naming its URL, its digest, the check, a hint.
fn assert_each_bad_signature_fails_naming_the_binary(
    world: &World,
    dir: &Path,
    path: &str,
    body: &[u8],
) {
    let url = format!("https://{path}");
    for (name, opts, other, wanted) in &bad_signatures() {
        world.sign_binary(path, body, opts, other.as_deref());
        let wanted = [&[url.as_str(), "sha256:", "hint:"][..], wanted].concat();
        eprintln!("case: {name}");
        fails_with(world, dir, &AMD64, &wanted);
    }
}

/// A tampered checkpoint or inclusion proof in the Rekor stand-in fails its own check.
fn assert_bad_rekor_proofs_fail(world: &World, dir: &Path, url: &str) {
    for (tamper, step) in [
        (Tamper::Checkpoint, "fails the Rekor checkpoint check"),
        (Tamper::ProofHash, "fails the Rekor inclusion proof check"),
    ] {
        world.rekor().tamper(tamper);
        fails_with(world, dir, &AMD64, &[url, step]);
    }
    world.rekor().tamper(Tamper::None);
}

/// A 1.26+ binary without .sig is an error, whatever the mode but off.
fn assert_a_missing_sig_fails_unless_off(world: &World, dir: &Path, path: &str) {
    let url = format!("https://{path}");
    let sig = world.upstream().take(&format!("{path}.sig")).unwrap();
    fails_with(
        world,
        dir,
        &AMD64,
        &[
            url.as_str(),
            "no signature for sha256:",
            "always signed",
            "hint:",
        ],
    );
    let off = [&AMD64[..], &["--signatures", "off"]].concat();
    ok(build(world, dir, "off", &off).output().unwrap());
    world
        .upstream()
        .put(&format!("{path}.sig"), sig.body, sig.content_type);
}

/// A policy rule covering CNI, which publishes no signature: a warning under verify, an error
/// under enforce.
fn assert_an_unsigned_cni_under_policy_warns_then_fails(world: &World, dir: &Path) {
    let policy = dir.join("policy.yaml");
    fs::write(
        &policy,
        format!(
            "rules:\n  - match: \"github.com/containernetworking/**\"\n    identity: release@cni.example\n    issuer: {GOOGLE}\n"
        ),
    )
    .unwrap();
    let with_policy = [&AMD64[..], &["--signature-policy", p(&policy)]].concat();
    let out = ok(build(world, dir, "cni", &with_policy).output().unwrap());
    assert!(
        stderr(&out).contains("UNSIGNED: no .sig or .cert"),
        "{}",
        stderr(&out)
    );
    let enforce = [&with_policy[..], &["--signatures", "enforce"]].concat();
    fails_with(
        world,
        dir,
        &enforce,
        &[
            "containernetworking",
            "no signature for",
            "--signatures enforce",
        ],
    );
}
