//! Images signed the cosign 3 way — a Sigstore bundle v0.3 (a DSSE envelope of an in-toto
//! statement naming the image digest) attached as an OCI 1.1 referrer — against the local world,
//! whose Sigstore signs so (testworld `referrers`) beside the legacy `.sig` tags. Debian's
//! docker-registry 2.8 has no Referrers API: the world lists referrers in the tag-schema fallback
//! index `sha256-<hex>`, as cosign does on such a registry, and cks-iso finds them there after the
//! registry's 404. The Referrers API's own answer is given by the fault proxy (a redirect of
//! `/referrers/` to an index that only that answer names). `verify-image`, `pull` and `build`
//! accept a referrer-signed image under the same policy, say where the signature was found, refuse a
//! bundle of another signer, of another digest or with a tampered payload naming the check, and
//! the ISO keeps the bundle so that `verify --signatures` re-checks it offline.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::*;
use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
use cks_iso_testworld::referrers::{DsseOptions, Tamper, push_index, push_referrer};
use cks_iso_testworld::sigstore::SignOptions;
use cks_iso_testworld::world::{Options, World};

pub(crate) const PAUSE: &str = "registry.k8s.io/pause:3.10";
pub(crate) const TRUST: &str = "krel-trust@k8s-releng-prod.iam.gserviceaccount.com";

/// A world whose registry.k8s.io images named in `unsigned` have no `.sig` tags.
pub(crate) fn world_without_sig_tags(unsigned: &[&str]) -> World {
    World::start(Options {
        unsigned: unsigned.iter().map(|s| s.to_string()).collect(),
        ..Options::default()
    })
}

/// Sigstore's own Python client (`scripts/check-referrer-bundles.py`) verifies the one referrer
/// bundle kept in the extracted ISO `tree` against `root` for `identity` and `issuer`: the world's
/// cosign 3 signer judged by a verifier cks-iso did not write.
pub(crate) fn referrer_oracle(tree: &Path, root: &Path, identity: &str, issuer: &str) {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-sbom/bin/python");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-referrer-bundles.py");
    let said = no_internet(&mut std::process::Command::new(&python))
        .arg(&script)
        .args([p(tree), p(root), identity, issuer])
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (run `make deps`)", python.display()));
    assert!(
        said.status.success(),
        "referrer oracle: {}",
        combined(&said)
    );
    assert_eq!(
        String::from_utf8_lossy(&said.stdout).trim(),
        "ok: 1 referrers"
    );
}

/// Signs `reference`'s top digest the cosign 3 way with `opts` as its only referrer: the
/// fallback index lists that one alone (a fresh list replaces the last one).
pub(crate) fn sign_referrer_alone(world: &World, reference: &str, opts: &DsseOptions) {
    let image = world.image(reference);
    let bundle = world.sigstore().sign_dsse(&image.digest, opts);
    let host = world.registry_host();
    let referrer = push_referrer(&host, &image.repository, &image.digest, &bundle, false);
    let hex = image.digest.trim_start_matches("sha256:");
    let tag = format!("sha256-{hex}");
    push_index(&host, &image.repository, &tag, &[referrer.descriptor]);
}

/// Signs `reference`'s top digest the cosign 3 way with `opts` and lists the referrer in the
/// fallback index; the referrer manifest's digest.
pub(crate) fn sign_referrer(world: &World, reference: &str, opts: &DsseOptions) -> String {
    let image = world.image(reference);
    let bundle = world.sigstore().sign_dsse(&image.digest, opts);
    push_referrer(
        &world.registry_host(),
        &image.repository,
        &image.digest,
        &bundle,
        true,
    )
    .digest
}

pub(crate) fn config_through(world: &World, proxy: &FaultProxy, dir: &Path) -> PathBuf {
    fs::copy(world.trusted_root_path(), dir.join("trusted_root.json")).unwrap();
    hostile::config_via(world, dir, &world.registry_url(), &proxy.url())
}

pub(crate) fn verify_image(config: &Path, cache: &Path, args: &[&str]) -> Output {
    cks_iso()
        .env("CKS_ISO_CONFIG", config)
        .args(["verify-image", "--cache-dir", p(cache)])
        .args(args)
        .output()
        .unwrap()
}

fn pull(config: &Path, cache: &Path, out: &Path, image: &str) -> Output {
    cks_iso()
        .env("CKS_ISO_CONFIG", config)
        .args(["pull", "--arch", "amd64", "--signatures", "enforce"])
        .args(["--cache-dir", p(cache), "--out", p(out), image])
        .output()
        .unwrap()
}

pub(crate) fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", combined(out)))
}

#[test]
fn a_referrer_signed_image_verifies_through_the_tag_schema_fallback() {
    let world = world_without_sig_tags(&[PAUSE]);
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, dir.path());
    let image = world.image(PAUSE).clone();
    let referrer = sign_referrer(&world, PAUSE, &DsseOptions::default());
    let by_digest = format!("registry.k8s.io/pause@{}", image.digest);
    let cache = dir.path().join("cache");

    let done = verify_image(&config, &cache, &["--json", &by_digest]);
    assert_eq!(done.status.code(), Some(0), "{}", combined(&done));
    let entry = &json(&done)["images"][0];
    assert_eq!(entry["verdict"], "verified", "{entry:#}");
    assert_eq!(entry["found"], "referrer", "{entry:#}");
    assert_eq!(entry["identity"], TRUST, "{entry:#}");
    assert_eq!(entry["signed_digest"], image.digest.as_str());
    let hex = image.digest.trim_start_matches("sha256:");
    assert_eq!(entry["signature"]["tag"], format!("sha256-{hex}"));
    assert_eq!(entry["signature"]["manifest"], referrer.as_str());
    // The registry was asked for its Referrers API (a 404: docker-registry has none), then
    // the fallback tag, after the legacy .sig tag.
    let paths: Vec<String> = proxy.log().iter().map(|r| r.path.clone()).collect();
    let api = paths
        .iter()
        .position(|p| p.contains(&format!("/referrers/{}", image.digest)))
        .unwrap_or_else(|| panic!("no Referrers API request: {paths:#?}"));
    let fallback = paths
        .iter()
        .position(|p| p.ends_with(&format!("/manifests/sha256-{hex}")))
        .unwrap_or_else(|| panic!("no fallback tag request: {paths:#?}"));
    assert!(api < fallback, "{paths:#?}");
    assert!(
        paths[api].contains("artifactType=application/vnd.dev.sigstore.bundle.v0.3%2Bjson"),
        "{}",
        paths[api]
    );

    // pull takes it as build does: the archive is written under --signatures enforce.
    let pulled = dir.path().join("pulled");
    let done = pull(&config, &cache, &pulled, &by_digest);
    assert_eq!(done.status.code(), Some(0), "{}", combined(&done));
    assert_eq!(fs::read_dir(&pulled).unwrap().count(), 1, "one archive");

    // The plain line names the referrer; offline, the cache's copy verifies again.
    let line = verify_image(&config, &cache, &["--offline", &by_digest]);
    assert_eq!(line.status.code(), Some(0), "{}", combined(&line));
    let text = String::from_utf8_lossy(&line.stdout).into_owned();
    assert!(
        text.contains(&format!("verified: {TRUST}"))
            && text.contains(&format!("referrer {referrer} of {}", image.digest))
            && text.contains("in the cache (--offline)"),
        "{text}"
    );

    // Signed both ways, a legacy `.sig` of the index verifies first: judged for linux/amd64,
    // the platform manifest's missing `.sig` and the index's are asked, and no referrer at all.
    let layer = world
        .sigstore()
        .sign(&image.repository, &image.digest, &SignOptions::default());
    world.push_signature(&image.repository, &image.digest, &[layer]);
    let before = proxy.log().len();
    let cache = dir.path().join("cache-both");
    let done = verify_image(&config, &cache, &["--json", "--arch", "amd64", &by_digest]);
    assert_eq!(done.status.code(), Some(0), "{}", combined(&done));
    assert_eq!(json(&done)["images"][0]["found"], "tag");
    let asked: Vec<String> = proxy.log()[before..]
        .iter()
        .map(|r| r.path.clone())
        .collect();
    assert!(
        !asked.iter().any(|p| p.contains("/referrers/")),
        "no referrer is asked for when a .sig verifies: {asked:#?}"
    );
}

#[test]
fn the_referrers_api_answer_is_taken_when_the_registry_gives_one() {
    let world = world_without_sig_tags(&[PAUSE]);
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, dir.path());
    let image = world.image(PAUSE).clone();
    let bundle = world
        .sigstore()
        .sign_dsse(&image.digest, &DsseOptions::default());
    // Not in the fallback index: only the API's answer names it.
    let referrer = push_referrer(
        &world.registry_host(),
        &image.repository,
        &image.digest,
        &bundle,
        false,
    );
    push_index(
        &world.registry_host(),
        &image.repository,
        "api-answer",
        std::slice::from_ref(&referrer.descriptor),
    );
    // docker-registry 2.8 has no Referrers API: the proxy stands in for one, answering
    // `/referrers/` with a redirect to that index (200, an OCI image index, as the API answers).
    proxy.add(
        Rule::path_contains("/referrers/").fault(Fault::Redirect(format!(
            "{}/v2/{}/manifests/api-answer",
            proxy.url(),
            image.repository
        ))),
    );
    let by_digest = format!("registry.k8s.io/pause@{}", image.digest);
    let done = verify_image(&config, &dir.path().join("cache"), &["--json", &by_digest]);
    assert_eq!(done.status.code(), Some(0), "{}", combined(&done));
    let entry = &json(&done)["images"][0];
    assert_eq!(entry["found"], "referrer", "{entry:#}");
    assert_eq!(entry["signature"]["manifest"], referrer.digest.as_str());
    let hex = image.digest.trim_start_matches("sha256:");
    let fallback = format!("/manifests/sha256-{hex}");
    let paths: Vec<String> = proxy.log().iter().map(|r| r.path.clone()).collect();
    assert!(
        !paths.iter().any(|p| p.ends_with(&fallback)),
        "the fallback tag is not asked when the API answers: {paths:#?}"
    );
    assert!(
        paths.iter().any(|p| p.contains("/referrers/")),
        "{paths:#?}"
    );

    // A registry that answers the API's path with 400, 405 or 406 has none either: the
    // fallback index is taken (here listing the same referrer).
    push_index(
        &world.registry_host(),
        &image.repository,
        &format!("sha256-{hex}"),
        std::slice::from_ref(&referrer.descriptor),
    );
    for status in [400, 405, 406] {
        proxy.clear_rules();
        proxy.add(Rule::path_contains("/referrers/").fault(Fault::Status(status)));
        let before = proxy.log().len();
        let cache = dir.path().join(format!("cache-{status}"));
        let done = verify_image(&config, &cache, &["--json", &by_digest]);
        assert_eq!(done.status.code(), Some(0), "{status}: {}", combined(&done));
        assert_eq!(json(&done)["images"][0]["found"], "referrer", "{status}");
        let asked: Vec<String> = proxy.log()[before..]
            .iter()
            .map(|r| r.path.clone())
            .collect();
        assert!(
            asked.iter().any(|p| p.ends_with(&fallback)),
            "{status}: {asked:#?}"
        );
    }
}

#[test]
fn a_referrer_of_another_signer_digest_or_payload_fails_naming_the_check() {
    let world = world_without_sig_tags(&[PAUSE]);
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, dir.path());
    let image = world.image(PAUSE).clone();
    let by_digest = format!("registry.k8s.io/pause@{}", image.digest);
    let other = format!("sha256:{}", "5".repeat(64));
    let cases = [
        (
            DsseOptions {
                sign: SignOptions {
                    identity: "mallory@example.com".into(),
                    ..SignOptions::default()
                },
                ..DsseOptions::default()
            },
            "fails the identity check: signed by mallory@example.com",
            "not by the signer asked for",
        ),
        (
            DsseOptions {
                subject: Some(other.clone()),
                ..DsseOptions::default()
            },
            "fails the signed digest check: the statement speaks of",
            "altered",
        ),
        (
            DsseOptions {
                tamper: Tamper::BeforeLogging,
                ..DsseOptions::default()
            },
            "fails the signature check: the leaf's key: the signature does not verify over the envelope's DSSE",
            "altered",
        ),
        (
            DsseOptions {
                tamper: Tamper::AfterLogging,
                ..DsseOptions::default()
            },
            "fails the Rekor entry check: the entry logs a payload hashing to",
            "altered",
        ),
    ];
    for (i, (opts, check, hint)) in cases.iter().enumerate() {
        sign_referrer_alone(&world, PAUSE, opts);
        let cache = dir.path().join(format!("cache-{i}"));
        let done = verify_image(&config, &cache, &[&by_digest]);
        let err = stderr(&done);
        assert_eq!(done.status.code(), Some(1), "{opts:?}: {err}");
        assert!(
            err.contains(&format!("{by_digest}: the signature of {}", image.digest))
                && err.contains(check),
            "{opts:?}: wanted {check:?} in:\n{err}"
        );
        assert!(err.contains("hint:") && err.contains(hint), "{err}");
        let line = String::from_utf8_lossy(&done.stdout).into_owned();
        assert!(line.contains("FAILED:"), "{line}");
        // pull refuses it the same way and writes no archive.
        let pulled = dir.path().join(format!("pulled-{i}"));
        let done = pull(&config, &cache, &pulled, &by_digest);
        assert_eq!(done.status.code(), Some(1), "{}", combined(&done));
        assert!(stderr(&done).contains(check), "{}", stderr(&done));
        let written = fs::read_dir(&pulled).map_or(0, |d| d.count());
        assert_eq!(written, 0, "no archive of a badly signed image");
    }
}

/// `build` of the world for amd64 under `--signatures enforce` into `dir/out`, with `extra`.
fn build_enforced(world: &World, dir: &Path, out: &str, extra: &[&str]) -> Output {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = build_in(world.config_path(), &tmp);
    cmd.env_remove("CKS_ISO_SIGNATURES")
        .args(["--kubernetes", world.kubernetes()])
        .args(["--network", world.network_url()])
        .args(["--dashboard", world.dashboard_url()])
        .args(["--output", p(&dir.join(out))])
        .args(["--cache-dir", p(&dir.join("cache"))])
        .args(["--arch", "amd64", "--signatures", "enforce"])
        .args(extra);
    cmd.output().unwrap()
}

#[test]
fn build_takes_a_referrer_signed_image_locks_it_and_the_iso_reverifies_offline() {
    let world = world_without_sig_tags(&[PAUSE]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let image = world.image(PAUSE).clone();
    let referrer = sign_referrer(&world, PAUSE, &DsseOptions::default());
    let lock = d.join("run.lock");
    ok(build_enforced(&world, d, "out", &["--lock-file", p(&lock)]));
    let iso = d.join(format!("out/setup-v{}-x86_64.iso", world.kubernetes()));
    let tree = d.join("tree");
    assert_the_iso_keeps_the_referrer(&iso, &tree, &image.digest, &referrer);
    assert_the_lock_names_the_referrer(&lock, &image.digest, &referrer);
    // A locked rebuild takes the same referrer by digest and makes the same ISO.
    ok(build_enforced(&world, d, "again", &["--locked", p(&lock)]));
    let again = d.join(format!("again/setup-v{}-x86_64.iso", world.kubernetes()));
    assert!(
        fs::read(&iso).unwrap() == fs::read(&again).unwrap(),
        "a locked rebuild makes the same ISO"
    );
    assert_cache_import_takes_the_referrers_list(d, &lock);

    // Offline, every server stopped, against the world's root given by hand.
    let root = d.join("root.json");
    fs::copy(world.trusted_root_path(), &root).unwrap();
    drop(world);
    // Sigstore's own Python client verifies the kept bundle (the world's cosign 3 signer judged
    // by a verifier cks-iso did not write), and its statement names the signed digest.
    referrer_oracle(&tree, &root, TRUST, "https://accounts.google.com");
    let out = verify_signatures(&iso, &root);
    assert!(out.status.success(), "{}", combined(&out));
    assert_a_flipped_byte_in_the_kept_bundle_is_caught(d, &tree, &root);
}

/// The ISO's report says pause was verified through a referrer of its top digest, and the ISO
/// keeps the referrer manifest under its digest.
fn assert_the_iso_keeps_the_referrer(iso: &Path, tree: &Path, signed: &str, referrer: &str) {
    let report = signature_report(iso, tree);
    let entry = image_entry(&report, PAUSE);
    assert_eq!(entry["verdict"], "verified", "{entry:#}");
    assert_eq!(entry["found"], "referrer", "{entry:#}");
    assert_eq!(entry["signed_digest"], signed);
    let hex = referrer.trim_start_matches("sha256:");
    let kept = tree.join(format!("signatures/images/{hex}.json"));
    assert_eq!(
        entry["signature_manifest"],
        format!("signatures/images/{hex}.json")
    );
    assert!(kept.exists(), "the referrer manifest is kept");
}

/// The lock names the referrer by digest, under the tag schema's name of the signed digest.
fn assert_the_lock_names_the_referrer(lock: &Path, signed: &str, referrer: &str) {
    let locked: serde_json::Value = serde_json::from_slice(&fs::read(lock).unwrap()).unwrap();
    let images = locked["arches"]["amd64"]["images"].as_array().unwrap();
    let pause = images.iter().find(|i| i["reference"] == PAUSE).unwrap();
    let image_hex = signed.trim_start_matches("sha256:");
    assert_eq!(pause["signature"]["tag"], format!("sha256-{image_hex}"));
    assert_eq!(pause["signature"]["manifest"], referrer);
}

/// `cache` with `args` succeeds; what it said.
fn cache_cmd(args: &[&str]) -> String {
    let out = cks_iso().arg("cache").args(args).output().unwrap();
    assert!(out.status.success(), "cache {args:?}: {}", combined(&out));
    combined(&out)
}

/// `cache import` without a lock takes what verifies: the referrers list is signature material,
/// and pause's tag is signed through it, as a `.sig`-signed image's tag is.
fn assert_cache_import_takes_the_referrers_list(dir: &Path, lock: &Path) {
    let carry = dir.join("carry");
    let source = dir.join("cache");
    cache_cmd(&[
        "export",
        "--cache-dir",
        p(&source),
        "--locked",
        p(lock),
        "-o",
        p(&carry),
    ]);
    let fresh = dir.join("fresh");
    let said = cache_cmd(&["import", p(&carry), "--cache-dir", p(&fresh)]);
    for taken in ["referrers:registry.k8s.io/pause@", &format!("tag:{PAUSE} ")] {
        assert!(
            !said
                .lines()
                .any(|l| l.contains(taken) && l.contains("not imported")),
            "{taken} is imported:\n{said}"
        );
    }
}

/// `verify --signatures` of `iso` against `root`.
fn verify_signatures(iso: &Path, root: &Path) -> Output {
    cks_iso()
        .args(["verify", "--signatures", "--trusted-root", p(root)])
        .arg(iso)
        .output()
        .unwrap()
}

/// The bundle in the ISO is what is judged: a flipped byte in it is caught.
fn assert_a_flipped_byte_in_the_kept_bundle_is_caught(dir: &Path, tree: &Path, root: &Path) {
    let bundle_dir = tree.join("signatures/images/blobs/sha256");
    let bundle = fs::read_dir(&bundle_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|f| fs::read_to_string(f).is_ok_and(|t| t.contains("dsseEnvelope")))
        .expect("the bundle is kept");
    let mut bytes = fs::read(&bundle).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    fs::write(&bundle, bytes).unwrap();
    let spoiled = dir.join("spoiled.iso");
    run(cks_iso().args(["iso", p(tree), "-o", p(&spoiled)]));
    let out = verify_signatures(&spoiled, root);
    assert_eq!(out.status.code(), Some(1), "{}", combined(&out));
    assert!(
        combined(&out).contains("fails the layer integrity check"),
        "{}",
        combined(&out)
    );
}
