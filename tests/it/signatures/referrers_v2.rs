//! Images signed the cosign 3 way onto a Rekor v2 log: the referrer's bundle v0.3 holds a DSSE
//! envelope logged as a `hashedrekord` 0.0.2 over the SHA-256 of its pre-authentication encoding
//! (Rekor v2 has no `dsse` kind), with no SET and no integrated time, dated by an RFC 3161
//! timestamp of the world's timestamp authority (testworld `referrers` with
//! `DsseOptions::rekor_v2`). Such an image verifies in `verify-image`, `pull` and `build` under
//! `--signatures verify`; the ISO keeps the bundle, which `verify --signatures`, `verify-bundle
//! --offline` and Sigstore's own Python client re-check with every server stopped. A timestamp of
//! an authority outside the trusted root, a checkpoint signed by another key and an entry logged
//! for another envelope each fail naming the check, with a hint, and leave no archive or ISO.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::signatures::referrers::{
    PAUSE, TRUST, config_through, json, referrer_oracle, sign_referrer, sign_referrer_alone,
    verify_image, world_without_sig_tags,
};
use crate::support::*;
use cks_iso_testworld::faults::FaultProxy;
use cks_iso_testworld::referrers::{DsseOptions, OnRekorV2};
use cks_iso_testworld::rekor_v2::Authority;
use cks_iso_testworld::world::World;

const GOOGLE: &str = "https://accounts.google.com";

fn on_rekor_v2(on: OnRekorV2) -> DsseOptions {
    DsseOptions {
        rekor_v2: Some(on),
        ..DsseOptions::default()
    }
}

/// `pull --signatures verify`: a bad signature fails it, a missing one only warns.
fn pull(config: &Path, cache: &Path, out: &Path, image: &str) -> Output {
    cks_iso()
        .env("CKS_ISO_CONFIG", config)
        .args(["pull", "--arch", "amd64", "--signatures", "verify"])
        .args(["--cache-dir", p(cache), "--out", p(out), image])
        .output()
        .unwrap()
}

/// `build --signatures verify` of the world's release for amd64 into `dir/out`.
fn build(world: &World, dir: &Path, out: &str, extra: &[&str]) -> Output {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = build_in(world.config_path(), &tmp);
    cmd.env_remove("CKS_ISO_SIGNATURES")
        .args(["--kubernetes", world.kubernetes()])
        .args(["--network", world.network_url()])
        .args(["--dashboard", world.dashboard_url()])
        .args(["--output", p(&dir.join(out))])
        .args(["--cache-dir", p(&dir.join(format!("cache-{out}")))])
        .args(["--arch", "amd64", "--signatures", "verify"])
        .args(extra);
    cmd.output().unwrap()
}

fn files_in(dir: &Path) -> usize {
    fs::read_dir(dir).map_or(0, |d| d.count())
}

#[test]
fn an_image_signed_onto_rekor_v2_verifies_everywhere_and_its_iso_reverifies_offline() {
    let world = world_without_sig_tags(&[PAUSE]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, d);
    let image = world.image(PAUSE).clone();
    let referrer = sign_referrer(&world, PAUSE, &on_rekor_v2(OnRekorV2::default()));
    let by_digest = format!("registry.k8s.io/pause@{}", image.digest);
    assert_verify_image_takes_the_referrer(&config, d, &image.digest, &referrer);

    let pulled = d.join("pulled");
    let done = pull(&config, &d.join("cache-pull"), &pulled, &by_digest);
    assert_eq!(done.status.code(), Some(0), "{}", combined(&done));
    assert!(
        !stderr(&done).to_lowercase().contains("unsigned"),
        "{}",
        stderr(&done)
    );
    assert_eq!(files_in(&pulled), 1, "one archive");

    let lock = d.join("run.lock");
    let out = build(&world, d, "out", &["--lock-file", p(&lock)]);
    assert!(out.status.success(), "{}", combined(&out));
    let iso = d.join(format!("out/setup-v{}-x86_64.iso", world.kubernetes()));
    let tree = d.join("tree");
    let kept = kept_rekor_v2_bundle(&iso, &tree);

    // Every server stopped, against the world's root given by hand.
    let root = d.join("root.json");
    fs::copy(world.trusted_root_path(), &root).unwrap();
    drop(world);
    let out = cks_iso()
        .args([
            "verify",
            "--signatures",
            "--trusted-root",
            p(&root),
            p(&iso),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", combined(&out));
    assert_the_kept_bundle_verifies_on_its_own(&kept, &root, &image.digest);
    // Sigstore's own Python client judges the same bundle: the world's Rekor v2 DSSE entry,
    // checkpoint and timestamp are in the shapes a verifier cks-iso did not write reads.
    referrer_oracle(&tree, &root, TRUST, GOOGLE);
}

/// `verify-image --json` finds pause verified through the referrer, and the plain line says the
/// time is a timestamp's: a Rekor v2 entry integrates at no time.
fn assert_verify_image_takes_the_referrer(config: &Path, d: &Path, signed: &str, referrer: &str) {
    let by_digest = format!("registry.k8s.io/pause@{signed}");
    let done = verify_image(config, &d.join("cache"), &["--json", &by_digest]);
    assert_eq!(done.status.code(), Some(0), "{}", combined(&done));
    let entry = &json(&done)["images"][0];
    assert_eq!(entry["verdict"], "verified", "{entry:#}");
    assert_eq!(entry["found"], "referrer", "{entry:#}");
    assert_eq!(entry["identity"], TRUST, "{entry:#}");
    assert_eq!(entry["signed_digest"], signed);
    assert_eq!(entry["signature"]["manifest"], referrer);
    let line = verify_image(config, &d.join("cache"), &["--offline", &by_digest]);
    assert_eq!(line.status.code(), Some(0), "{}", combined(&line));
    let text = String::from_utf8_lossy(&line.stdout).into_owned();
    assert!(
        text.contains(&format!("verified: {TRUST}"))
            && text.contains("timestamped at")
            && text.contains(&format!("referrer {referrer} of {signed}")),
        "{text}"
    );
}

/// The ISO verified pause through the referrer and keeps the Rekor v2 bundle (a `hashedrekord`
/// 0.0.2 entry, no inclusion promise), byte for byte as the registry holds it. Returns its path.
fn kept_rekor_v2_bundle(iso: &Path, tree: &Path) -> std::path::PathBuf {
    let report = signature_report(iso, tree);
    let entry = image_entry(&report, PAUSE);
    assert_eq!(entry["verdict"], "verified", "{entry:#}");
    assert_eq!(entry["found"], "referrer", "{entry:#}");
    let manifest: serde_json::Value = serde_json::from_slice(
        &fs::read(tree.join(entry["signature_manifest"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    let layer = manifest["layers"][0]["digest"].as_str().unwrap();
    let kept = tree.join(format!(
        "signatures/images/blobs/sha256/{}",
        layer.trim_start_matches("sha256:")
    ));
    let bundle: serde_json::Value = serde_json::from_slice(&fs::read(&kept).unwrap()).unwrap();
    let tlog = &bundle["verificationMaterial"]["tlogEntries"][0];
    assert_eq!(tlog["kindVersion"]["kind"], "hashedrekord", "{tlog:#}");
    assert_eq!(tlog["kindVersion"]["version"], "0.0.2", "{tlog:#}");
    assert!(tlog.get("inclusionPromise").is_none(), "{tlog:#}");
    kept
}

/// The kept bundle on its own: the artifact a cosign 3 bundle signs is the image digest.
fn assert_the_kept_bundle_verifies_on_its_own(kept: &Path, root: &Path, signed: &str) {
    let out = cks_iso()
        .args(["verify-bundle", "--offline", "--trusted-root", p(root)])
        .args(["--bundle", p(kept), "--certificate-identity", TRUST])
        .args(["--certificate-oidc-issuer", GOOGLE, signed])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", combined(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("timestamped at"),
        "{}",
        combined(&out)
    );
}

#[test]
fn a_rekor_v2_referrer_failing_a_check_is_refused_naming_it() {
    let world = world_without_sig_tags(&[PAUSE]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, d);
    let image = world.image(PAUSE).clone();
    let by_digest = format!("registry.k8s.io/pause@{}", image.digest);
    let altered = "or the trusted root (--trusted-root) is not the one that signed it";
    let cases = [
        (
            "a timestamp of an authority outside the trusted root",
            OnRekorV2 {
                authority: Authority::Rogue,
                ..OnRekorV2::default()
            },
            "fails the RFC 3161 timestamp check: timestamp #1: it was signed by no timestamp \
             authority of the trusted root",
            "check its timestampAuthorities (--trusted-root)",
        ),
        (
            "a checkpoint signed by another key",
            OnRekorV2 {
                foreign_checkpoint_key: true,
                ..OnRekorV2::default()
            },
            "fails the Rekor checkpoint check",
            altered,
        ),
        (
            "an entry logged for another envelope",
            OnRekorV2 {
                other_envelope: true,
                ..OnRekorV2::default()
            },
            "fails the Rekor entry check: the entry logs SHA2_256:",
            altered,
        ),
    ];
    for (i, (name, on, check, hint)) in cases.iter().enumerate() {
        sign_referrer_alone(&world, PAUSE, &on_rekor_v2(*on));
        let named = |out: &Output, what: &str| {
            let err = stderr(out);
            assert_eq!(out.status.code(), Some(1), "{name}, {what}: {err}");
            assert!(
                err.contains(&format!("the signature of {}", image.digest)) && err.contains(check),
                "{name}, {what}: wanted {check:?} in:\n{err}"
            );
            assert!(
                err.contains("hint:") && err.contains(hint),
                "{name}, {what}: wanted the hint {hint:?} in:\n{err}"
            );
        };
        let cache = d.join(format!("cache-{i}"));
        let done = verify_image(&config, &cache, &[&by_digest]);
        named(&done, "verify-image");
        assert!(
            String::from_utf8_lossy(&done.stdout).contains("FAILED:"),
            "{}",
            combined(&done)
        );
        let pulled = d.join(format!("pulled-{i}"));
        named(&pull(&config, &cache, &pulled, &by_digest), "pull");
        assert_eq!(
            files_in(&pulled),
            0,
            "{name}: no archive of a badly signed image"
        );
        let out = format!("bad-{i}");
        named(&build(&world, d, &out, &[]), "build");
        assert_eq!(files_in(&d.join(&out)), 0, "{name}: no ISO");
    }
}
