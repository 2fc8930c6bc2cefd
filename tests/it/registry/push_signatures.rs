//! Signatures travel with `cks-iso push`: the cosign `.sig` manifests and the cosign 3 referrers a
//! lock accepted go up with their image to a second real registry (Debian's `docker-registry`,
//! which has no Referrers API, so referrers are listed in the tag-schema fallback index as cosign
//! lists them there), and `cks-iso verify-image` of the pushed copy — through a configuration
//! whose mirrors point at the target, with a cold cache — finds the same signer.

use std::path::{Path, PathBuf};

use crate::support::push::{lock_of, raw_digest, write_lock};
use crate::support::*;
use cks_iso::lock::{ImageEntry, ImageSignature};
use cks_iso_testworld::registry::DockerRegistry;
use cks_iso_testworld::world::{Options, World};

const PAUSE: &str = "registry.k8s.io/pause:3.10";
const TRUST: &str = "krel-trust@k8s-releng-prod.iam.gserviceaccount.com";

/// A lock of amd64 naming the world's pause with the signature manifest `sig` under `tag`.
fn signed_lock(world: &World, dir: &Path, tag: &str, sig: &str) -> PathBuf {
    let pause = world.image(PAUSE);
    let mut entry = ImageEntry::new(
        PAUSE.into(),
        pause.digest.clone(),
        pause.manifests["amd64"].clone(),
        1,
    );
    entry.signature = Some(ImageSignature {
        tag: tag.to_owned(),
        manifest: sig.to_owned(),
    });
    let mut lock = lock_of(&[]);
    lock.arches.get_mut("amd64").unwrap().images = vec![entry];
    write_lock(dir, &lock)
}

/// `cks-iso push` of `lock` to `target` (plain HTTP) through the world's configuration.
fn push_to(
    world: &World,
    dir: &Path,
    lock: &Path,
    target: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut cmd = cks_iso();
    cmd.env("CKS_ISO_CONFIG", world.config_path())
        .env("HOME", dir)
        .args([
            "push",
            "--locked",
            p(lock),
            "--cache-dir",
            p(&dir.join("cache")),
        ])
        .args([
            "--to",
            target,
            "--insecure-registry",
            target.split('/').next().unwrap(),
        ])
        .args(extra);
    ok(run(&mut cmd))
}

/// `verify-image PAUSE` (judged for `extra`, e.g. `--arch amd64`) against the copy pushed under
/// `http://<target>/` (a prefix included), with a cold cache.
fn verify_pushed(world: &World, dir: &Path, target: &str, extra: &[&str]) -> String {
    let reg = world.registry_host();
    let host = target.split('/').next().unwrap();
    let yaml = world
        .config_yaml()
        .replace(&format!("http://{reg}/"), &format!("http://{target}/"))
        .replace(&reg, host);
    std::fs::copy(world.trusted_root_path(), dir.join("trusted_root.json")).unwrap();
    let config = dir.join("target.yaml");
    std::fs::write(&config, yaml).unwrap();
    let done = cks_iso()
        .env("CKS_ISO_CONFIG", &config)
        .args([
            "verify-image",
            "--cache-dir",
            p(&dir.join("verify-cache")),
            PAUSE,
        ])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", combined(&done));
    String::from_utf8_lossy(&done.stdout).into_owned()
}

#[test]
fn sig_tags_travel_and_verify_image_passes_on_the_pushed_copy() {
    let world = World::start(Options::default());
    let pause = world.image(PAUSE).clone();
    let sig_tag = format!("sha256-{}.sig", pause.digest.trim_start_matches("sha256:"));
    let head = cks_iso_testworld::http::request(
        &world.registry_host(),
        "HEAD",
        &format!("/v2/{}/manifests/{sig_tag}", pause.repository),
        &[("accept", "application/vnd.oci.image.manifest.v1+json")],
        &[],
    )
    .unwrap();
    assert_eq!(head.status, 200, "the world signs {PAUSE}");
    let sig = head.header("docker-content-digest").unwrap().to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let lock = signed_lock(&world, tmp.path(), &sig_tag, &sig);
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let to = format!("{}/mirror", target.host());
    let out = push_to(&world, tmp.path(), &lock, &to, &[]);
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(line.contains(&format!("@{}", pause.digest)), "{line}");
    let pushed_sig = format!("{to}/{}:{sig_tag}", pause.repository);
    assert_eq!(
        raw_digest(&pushed_sig),
        sig,
        "the signature manifest, byte for byte"
    );
    let said = verify_pushed(&world, tmp.path(), &to, &[]);
    assert!(
        said.starts_with(&format!("{PAUSE} {} verified: {TRUST}", pause.digest)),
        "{said}"
    );

    // Without signatures, the .sig tag stays behind.
    let storage = tempfile::tempdir().unwrap();
    let bare = DockerRegistry::start(storage.path(), None);
    push_to(
        &world,
        tmp.path(),
        &lock,
        &bare.host(),
        &["--without-signatures"],
    );
    let missing = cks_iso_testworld::http::request(
        &bare.host(),
        "HEAD",
        &format!("/v2/{}/manifests/{sig_tag}", pause.repository),
        &[],
        &[],
    )
    .unwrap();
    assert_eq!(missing.status, 404);

    // Offline, a signature whose config the cache lacks stays behind, with a warning naming it.
    let raw = run_tool(
        "skopeo",
        &[
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{pushed_sig}"),
        ],
    );
    let config: serde_json::Value = serde_json::from_slice(&raw.stdout).unwrap();
    let hex = config["config"]["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    std::fs::remove_file(tmp.path().join("cache/blobs/sha256").join(hex)).unwrap();
    let storage = tempfile::tempdir().unwrap();
    let offline = DockerRegistry::start(storage.path(), None);
    let out = push_to(&world, tmp.path(), &lock, &offline.host(), &["--offline"]);
    let err = stderr(&out);
    assert!(
        err.contains(&sig_tag) && err.contains("not pushed"),
        "{err}"
    );
    let pushed = format!("{}/{}:3.10", offline.host(), pause.repository);
    assert_eq!(
        raw_digest(&pushed),
        pause.digest,
        "the image itself went up"
    );
}

#[test]
fn an_image_list_is_judged_as_build_judges_it_and_its_signature_travels() {
    let world = World::start(Options::default());
    let pause = world.image(PAUSE).clone();
    let sig_tag = format!("sha256-{}.sig", pause.digest.trim_start_matches("sha256:"));
    let tmp = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let to = format!("{}/mirror", target.host());
    let mut cmd = cks_iso();
    cmd.env("CKS_ISO_CONFIG", world.config_path())
        .env("HOME", tmp.path())
        .args([
            "push", "--image", PAUSE, "--arch", "amd64", "--arch", "arm64",
        ])
        .args(["--cache-dir", p(&tmp.path().join("cache"))])
        .args(["--to", &to, "--insecure-registry", &target.host()]);
    let out = ok(run(&mut cmd));
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        line.trim(),
        format!("{PAUSE} {to}/{}:3.10@{}", pause.repository, pause.digest)
    );
    let err = stderr(&out);
    assert!(
        err.contains("signatures: verify"),
        "build's default mode: {err}"
    );
    // The world signs each platform manifest and the index; build accepts a platform's own
    // signature first, so each arch's `.sig` goes along, the index's does not.
    let sig_digest = |tag: &str, host: &str| {
        let head = cks_iso_testworld::http::request(
            host,
            "HEAD",
            &format!("/v2/{}/manifests/{tag}", pause.repository),
            &[("accept", "application/vnd.oci.image.manifest.v1+json")],
            &[],
        )
        .unwrap();
        (head.status == 200).then(|| head.header("docker-content-digest").unwrap().to_owned())
    };
    for arch in ["amd64", "arm64"] {
        let manifest = &pause.manifests[arch];
        let tag = format!("sha256-{}.sig", manifest.trim_start_matches("sha256:"));
        let upstream = sig_digest(&tag, &world.registry_host());
        assert!(upstream.is_some(), "the world signs {PAUSE} for {arch}");
        let pushed_sig = format!("{to}/{}:{tag}", pause.repository);
        assert_eq!(
            Some(raw_digest(&pushed_sig)),
            upstream,
            "{arch}'s signature went along"
        );
    }
    let index_sig = cks_iso_testworld::http::request(
        &target.host(),
        "HEAD",
        &format!("/v2/mirror/{}/manifests/{sig_tag}", pause.repository),
        &[],
        &[],
    )
    .unwrap();
    assert_eq!(index_sig.status, 404, "only the signatures accepted travel");
    // verify-image judges the pushed copy as build judged the source for linux/arm64.
    let said = verify_pushed(&world, tmp.path(), &to, &["--arch", "arm64"]);
    assert!(said.contains(&format!("verified: {TRUST}")), "{said}");
}

#[test]
fn a_cosign_3_referrer_travels_into_the_targets_fallback_index() {
    use cks_iso_testworld::referrers::{DsseOptions, push_referrer};
    // No .sig tags: the referrer is the image's only signature.
    let world = World::start(Options {
        unsigned: vec![PAUSE.to_owned()],
        ..Options::default()
    });
    let pause = world.image(PAUSE).clone();
    let bundle = world
        .sigstore()
        .sign_dsse(&pause.digest, &DsseOptions::default());
    let host = world.registry_host();
    let referrer = push_referrer(&host, &pause.repository, &pause.digest, &bundle, true).digest;
    let fallback = format!("sha256-{}", pause.digest.trim_start_matches("sha256:"));
    let tmp = tempfile::tempdir().unwrap();
    let lock = signed_lock(&world, tmp.path(), &fallback, &referrer);
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let to = format!("{}/mirror", target.host());
    push_to(&world, tmp.path(), &lock, &to, &[]);
    let by_digest = format!("{to}/{}@{referrer}", pause.repository);
    assert_eq!(
        raw_digest(&by_digest),
        referrer,
        "the referrer, byte for byte"
    );
    let listed = run_tool(
        "skopeo",
        &[
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{to}/{}:{fallback}", pause.repository),
        ],
    );
    let index: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        index["manifests"][0]["digest"],
        referrer.as_str(),
        "{index}"
    );
    let said = verify_pushed(&world, tmp.path(), &to, &[]);
    assert!(
        said.starts_with(&format!("{PAUSE} {} verified: {TRUST}", pause.digest)),
        "{said}"
    );
    // A second push finds the referrer listed and puts nothing.
    let again = push_to(&world, tmp.path(), &lock, &to, &[]);
    assert!(
        stderr(&again).contains("0 manifests put"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn a_cosign_3_referrer_goes_through_the_referrers_api_where_the_target_has_one() {
    use crate::support::push::ReferrersFront;
    use cks_iso_testworld::referrers::{DsseOptions, push_referrer};
    let world = World::start(Options {
        unsigned: vec![PAUSE.to_owned()],
        ..Options::default()
    });
    let pause = world.image(PAUSE).clone();
    let bundle = world
        .sigstore()
        .sign_dsse(&pause.digest, &DsseOptions::default());
    let host = world.registry_host();
    let referrer = push_referrer(&host, &pause.repository, &pause.digest, &bundle, true).digest;
    let fallback = format!("sha256-{}", pause.digest.trim_start_matches("sha256:"));
    let tmp = tempfile::tempdir().unwrap();
    let lock = signed_lock(&world, tmp.path(), &fallback, &referrer);
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let front = ReferrersFront::start(&target.host());
    let to = format!("{}/mirror", front.host());
    let out = push_to(&world, tmp.path(), &lock, &to, &[]);
    let err = stderr(&out);
    assert!(
        err.contains("1 referrer(s) listed by its Referrers API"),
        "{err}"
    );
    assert_eq!(
        front.seen("/referrers/"),
        0,
        "the PUT's OCI-Subject said so"
    );
    let by_digest = format!("{to}/{}@{referrer}", pause.repository);
    assert_eq!(
        raw_digest(&by_digest),
        referrer,
        "the referrer, byte for byte"
    );
    let no_fallback = |registry: &str| {
        let head = cks_iso_testworld::http::request(
            registry,
            "HEAD",
            &format!("/v2/mirror/{}/manifests/{fallback}", pause.repository),
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(head.status, 404, "no fallback index where the API lists it");
    };
    no_fallback(&target.host());
    // verify-image finds the signature through the target's Referrers API.
    let said = verify_pushed(&world, tmp.path(), &to, &[]);
    assert!(
        said.starts_with(&format!("{PAUSE} {} verified: {TRUST}", pause.digest)),
        "{said}"
    );
    // Pushed again, the referrer is there: the API's list says it is listed, nothing is put.
    let again = push_to(&world, tmp.path(), &lock, &to, &[]);
    let err = stderr(&again);
    assert!(err.contains("0 manifests put"), "{err}");
    assert!(
        err.contains("1 referrer(s) listed by its Referrers API"),
        "{err}"
    );
    assert!(front.seen("GET /v2/mirror/") > 0 && front.seen("/referrers/") >= 1);
    no_fallback(&target.host());
}
