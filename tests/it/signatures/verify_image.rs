//! `cks-iso verify-image` against the local world, whose Sigstore signs registry.k8s.io's images
//! (each index and platform manifest) as Kubernetes' promoter does: a signed image verifies by
//! tag and by digest — by digest, the registry sees only the `.sig` tag and its payload, seen
//! through a logging proxy in front of it —, `--arch` takes the platform manifest's signature as
//! `build` does, an unsigned image is reported (and fails under `--enforce`), a signer other than
//! the one asked for and a tampered signature fail naming why, `--json` carries every field, a
//! registry that wants credentials gets them from the auth file, and bad usage exits 2 before any
//! request.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::*;
use cks_iso_testworld::faults::FaultProxy;
use cks_iso_testworld::registry::{FrontAuth, TokenFront};
use cks_iso_testworld::sigstore::SignOptions;
use cks_iso_testworld::world::{Image, Options, World};

const PAUSE: &str = "registry.k8s.io/pause:3.10";
const TRUST: &str = "krel-trust@k8s-releng-prod.iam.gserviceaccount.com";
const GOOGLE: &str = "https://accounts.google.com";

/// The world's configuration with its registry behind `proxy`, written into `dir` beside the
/// trusted root it names.
fn config_through(world: &World, proxy: &FaultProxy, dir: &Path) -> PathBuf {
    fs::copy(world.trusted_root_path(), dir.join("trusted_root.json")).unwrap();
    hostile::config_via(world, dir, &world.registry_url(), &proxy.url())
}

fn verify_image(config: &Path, cache: &Path, args: &[&str]) -> Output {
    cks_iso()
        .env("CKS_ISO_CONFIG", config)
        .args(["verify-image", "--cache-dir", p(cache)])
        .args(args)
        .output()
        .unwrap()
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

fn out(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The GETs and HEADs the registry saw since `from`, as `METHOD path`.
fn seen(proxy: &FaultProxy, from: usize) -> Vec<String> {
    proxy.log()[from..]
        .iter()
        .filter(|r| r.path.starts_with("/v2/") && r.path != "/v2/")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

#[test]
fn a_signed_image_verifies_by_tag_and_by_digest_fetching_only_its_signature() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, dir.path());
    let pause = world.image(PAUSE).clone();
    let by_digest = format!("registry.k8s.io/pause@{}", pause.digest);
    assert_by_digest_fetches_only_the_signature(
        &config,
        &proxy,
        &dir.path().join("cache-digest"),
        &pause,
    );
    let cache = dir.path().join("cache-tag");
    assert_by_tag_only_heads_the_tag(&config, &proxy, &cache, &pause);

    // The identity as a regular expression, and the exact one, instead of the policy.
    let done = verify_image(
        &config,
        &cache,
        &[
            "--certificate-identity-regexp",
            "^krel-trust@.+$",
            "--certificate-oidc-issuer",
            GOOGLE,
            PAUSE,
        ],
    );
    assert_eq!(code(&done), Some(0), "{}", combined(&done));
    assert_the_issuer_regexp_matches_whole(&config, &cache);
    assert_arch_takes_the_platform_signature(&config, &cache, &pause);

    // Offline, from what the cache saw.
    let done = verify_image(&config, &cache, &["--offline", PAUSE, &by_digest]);
    assert_eq!(code(&done), Some(0), "{}", combined(&done));
    assert_eq!(
        out(&done).matches(" verified: ").count(),
        2,
        "{}",
        out(&done)
    );
}

/// By digest, cold `cache`: the `.sig` tag and its one payload, nothing of the image.
fn assert_by_digest_fetches_only_the_signature(
    config: &Path,
    proxy: &FaultProxy,
    cache: &Path,
    pause: &Image,
) {
    let hex = pause.digest.trim_start_matches("sha256:");
    let sig_tag = format!("sha256-{hex}.sig");
    let by_digest = format!("registry.k8s.io/pause@{}", pause.digest);
    let before = proxy.log().len();
    let done = verify_image(config, cache, &[&by_digest]);
    assert_eq!(code(&done), Some(0), "{}", combined(&done));
    let line = out(&done);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.starts_with(&format!(
            "{by_digest} {} verified: {TRUST} via {GOOGLE}",
            pause.digest
        )),
        "{line}"
    );
    assert!(line.contains(&sig_tag), "{line}");
    let requests = seen(proxy, before);
    let manifests: Vec<_> = requests
        .iter()
        .filter(|r| r.contains("/manifests/"))
        .collect();
    assert!(
        !manifests.is_empty() && manifests.iter().all(|r| r.ends_with(&sig_tag)),
        "only the .sig tag's manifest may be fetched: {requests:#?}"
    );
    let blobs: Vec<_> = requests.iter().filter(|r| r.contains("/blobs/")).collect();
    assert_eq!(blobs.len(), 1, "the signature payload only: {requests:#?}");
    let cached = fs::read_dir(cache.join("blobs/sha256")).unwrap().count();
    assert_eq!(cached, 2, "the .sig manifest and its payload");
    assert!(!cache.join("blobs/sha256").join(hex).exists());
    for manifest in pause.manifests.values() {
        let platform = manifest.trim_start_matches("sha256:");
        assert!(!cache.join("blobs/sha256").join(platform).exists());
    }
}

/// By tag: the tag's digest by HEAD, then the same signature; still no image manifest body.
fn assert_by_tag_only_heads_the_tag(
    config: &Path,
    proxy: &FaultProxy,
    cache: &Path,
    pause: &Image,
) {
    let hex = pause.digest.trim_start_matches("sha256:");
    let before = proxy.log().len();
    let done = verify_image(config, cache, &[PAUSE]);
    assert_eq!(code(&done), Some(0), "{}", combined(&done));
    assert!(
        out(&done).starts_with(&format!("{PAUSE} {} verified: {TRUST}", pause.digest)),
        "{}",
        out(&done)
    );
    let requests = seen(proxy, before);
    assert!(
        requests
            .iter()
            .any(|r| r.starts_with("HEAD ") && r.ends_with("/manifests/3.10")),
        "{requests:#?}"
    );
    assert!(
        !requests
            .iter()
            .any(|r| r.starts_with("GET ") && r.ends_with("/manifests/3.10")),
        "the tag's manifest is not downloaded: {requests:#?}"
    );
    assert!(!cache.join("blobs/sha256").join(hex).exists());
}

/// The issuer as a regular expression too: the whole issuer must match, not a part of it, and a
/// malformed one is a usage error naming it.
fn assert_the_issuer_regexp_matches_whole(config: &Path, cache: &Path) {
    let issuer_regexp = |re: &str| {
        verify_image(
            config,
            cache,
            &[
                "--certificate-identity",
                TRUST,
                "--certificate-oidc-issuer-regexp",
                re,
                PAUSE,
            ],
        )
    };
    let done = issuer_regexp("https://accounts[.]google[.]com|https://token[.]actions.+");
    assert_eq!(code(&done), Some(0), "{}", combined(&done));
    let done = issuer_regexp("https://accounts");
    assert_eq!(code(&done), Some(1), "{}", combined(&done));
    assert!(
        combined(&done).contains("an issuer matching /https://accounts/"),
        "{}",
        combined(&done)
    );
    let done = issuer_regexp("(");
    assert_eq!(code(&done), Some(2), "{}", combined(&done));
    assert!(
        combined(&done).contains("--certificate-oidc-issuer-regexp \"(\""),
        "{}",
        combined(&done)
    );
}

/// --arch: the index is fetched and the platform manifest's own signature taken, as build.
fn assert_arch_takes_the_platform_signature(config: &Path, cache: &Path, pause: &Image) {
    let done = verify_image(config, cache, &["--arch", "arm64", "--json", PAUSE]);
    assert_eq!(code(&done), Some(0), "{}", combined(&done));
    let report: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    let entry = &report["images"][0];
    assert_eq!(report["arch"], "linux/arm64");
    assert_eq!(
        entry["platform_manifest"], pause.manifests["arm64"],
        "{entry:#}"
    );
    assert_eq!(
        entry["signed_digest"], pause.manifests["arm64"],
        "{entry:#}"
    );
}

#[test]
fn json_names_the_digest_the_signature_tag_and_registry_the_signer_and_the_log_entry() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let pause = world.image(PAUSE).clone();
    let cache = dir.path().join("cache");
    let done = verify_image(world.config_path(), &cache, &["--json", PAUSE, PAUSE]);
    assert_eq!(code(&done), Some(0), "{}", combined(&done));
    let report: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(report["format"], 1);
    assert_eq!(report["arch"], serde_json::Value::Null);
    let images = report["images"].as_array().unwrap();
    assert_eq!(images.len(), 1, "the same image named twice is judged once");
    let e = &images[0];
    assert_eq!(e["reference"], PAUSE);
    assert_eq!(e["digest"], pause.digest);
    assert_eq!(e["verdict"], "verified");
    assert_eq!(e["signed_digest"], pause.digest);
    let tag = format!("sha256-{}.sig", pause.digest.trim_start_matches("sha256:"));
    assert_eq!(e["signature"]["tag"], tag.as_str());
    assert_eq!(e["tags"], serde_json::json!([tag]));
    let manifest = e["signature"]["manifest"].as_str().unwrap();
    let kept = cache
        .join("blobs/sha256")
        .join(manifest.trim_start_matches("sha256:"));
    assert!(
        kept.is_file(),
        "the .sig manifest named is the one fetched: {e:#}"
    );
    assert_eq!(e["registry"], world.registry_host(), "{e:#}");
    assert_eq!(e["identity"], TRUST);
    assert_eq!(e["issuer"], GOOGLE);
    assert!(e["log_index"].as_i64().is_some(), "{e:#}");
    assert!(
        e["integrated_time"].as_i64().unwrap() > 1_600_000_000,
        "{e:#}"
    );
    assert!(e.get("error").is_none(), "{e:#}");
}

#[test]
fn an_unsigned_image_is_reported_and_fails_only_under_enforce() {
    let world = World::start(Options {
        unsigned: vec![PAUSE.into()],
        ..Options::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let digest = &world.image(PAUSE).digest;
    let done = verify_image(world.config_path(), &cache, &[PAUSE]);
    assert_eq!(code(&done), Some(0), "{}", combined(&done));
    assert!(
        out(&done).starts_with(&format!("{PAUSE} {digest} UNSIGNED: no sha256-")),
        "{}",
        out(&done)
    );
    assert!(stderr(&done).contains("UNSIGNED"), "{}", stderr(&done));

    let done = verify_image(world.config_path(), &cache, &["--enforce", "--json", PAUSE]);
    assert_eq!(code(&done), Some(1), "{}", combined(&done));
    let report: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(report["images"][0]["verdict"], "unsigned");
    assert!(
        report["images"][0]["error"]
            .as_str()
            .unwrap()
            .contains("--enforce"),
        "{report:#}"
    );
    let err = stderr(&done);
    assert!(
        err.contains(&format!("{PAUSE}: UNSIGNED")) && err.contains("hint:"),
        "{err}"
    );
    assert!(
        err.contains("1 of 1 image(s) failed the signature check"),
        "{err}"
    );

    // Offline, by digest: the cache holds no signature, and the line says where it looked.
    let by_digest = format!("registry.k8s.io/pause@{digest}");
    let done = verify_image(world.config_path(), &cache, &["--offline", &by_digest]);
    assert_eq!(code(&done), Some(0), "{}", combined(&done));
    assert!(
        out(&done).ends_with(" in the cache (--offline)\n"),
        "{}",
        out(&done)
    );
}

/// Signed by krel-trust, asked for mallory: both identities named, with a hint.
fn assert_another_signer_is_named(world: &World, cache: &Path) {
    let done = verify_image(
        world.config_path(),
        cache,
        &[
            "--certificate-identity",
            "mallory@example.com",
            "--certificate-oidc-issuer",
            GOOGLE,
            PAUSE,
        ],
    );
    assert_eq!(code(&done), Some(1), "{}", combined(&done));
    let err = stderr(&done);
    assert!(
        err.contains("fails the identity check")
            && err.contains(&format!("signed by {TRUST}"))
            && err.contains("wants mallory@example.com"),
        "{err}"
    );
    assert!(
        err.contains("hint: it is signed, but not by the signer asked for"),
        "{err}"
    );
    assert!(
        out(&done).starts_with(&format!(
            "{PAUSE} {} FAILED: the signature of",
            world.image(PAUSE).digest
        )),
        "{}",
        out(&done)
    );
}

#[test]
fn another_signer_or_a_tampered_signature_fails_naming_the_check() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let config = world.config_path();
    assert_another_signer_is_named(&world, &cache);

    // The index's signature replaced by one whose SET has a flipped bit.
    let etcd = world
        .images()
        .iter()
        .find(|i| i.repository == "registry.k8s.io/etcd")
        .expect("the world publishes etcd")
        .clone();
    let spoiled = SignOptions {
        flip_set: true,
        ..SignOptions::default()
    };
    let layer = world
        .sigstore()
        .sign(&etcd.repository, &etcd.digest, &spoiled);
    world.push_signature(&etcd.repository, &etcd.digest, &[layer]);
    let reference = etcd.reference.split('@').next().unwrap().to_owned();
    let done = verify_image(config, &cache, &[&reference, PAUSE]);
    assert_eq!(code(&done), Some(1), "{}", combined(&done));
    let err = stderr(&done);
    assert!(
        err.contains(&format!(
            "the signature of {} fails the Rekor signed entry timestamp check",
            etcd.digest
        )),
        "{err}"
    );
    assert!(err.contains("hint: the signature was altered"), "{err}");
    assert!(err.contains("1 of 2 image(s) failed"), "{err}");
    // The other image still verified, each on its own line in the order given.
    let lines: Vec<String> = out(&done).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!(
            "{reference} {} FAILED: the signature of",
            etcd.digest
        )),
        "{lines:?}"
    );
    assert!(lines[1].contains(" verified: "), "{lines:?}");

    // A tag the registry does not have: failed, with no digest to show.
    let done = verify_image(config, &cache, &["registry.k8s.io/pause:9.99"]);
    assert_eq!(code(&done), Some(1), "{}", combined(&done));
    assert!(
        out(&done).starts_with("registry.k8s.io/pause:9.99 - FAILED: "),
        "{}",
        out(&done)
    );
    assert!(stderr(&done).contains("hint:"), "{}", stderr(&done));
}

#[test]
fn a_registry_that_wants_credentials_gets_them_from_the_auth_file_as_for_build() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let front = TokenFront::start(
        &world.registry_host(),
        FrontAuth::Password {
            user: "cks".into(),
            password: "right-horse".into(),
        },
    );
    fs::copy(
        world.trusted_root_path(),
        dir.path().join("trusted_root.json"),
    )
    .unwrap();
    let host = front.host();
    let config = hostile::config_via(
        &world,
        dir.path(),
        &world.registry_url(),
        &format!("http://{host}"),
    );
    let cache = dir.path().join("cache");
    let by_digest = format!("registry.k8s.io/pause@{}", world.image(PAUSE).digest);

    let anonymous = verify_image(&config, &cache, &[&by_digest]);
    assert_eq!(code(&anonymous), Some(1), "{}", combined(&anonymous));
    assert!(out(&anonymous).contains(" FAILED: "), "{}", out(&anonymous));
    assert!(stderr(&anonymous).contains(&host), "{}", stderr(&anonymous));

    let authfile = dir.path().join("auth.json");
    let basic = cks_iso_testworld::http::base64(b"cks:right-horse");
    fs::write(
        &authfile,
        format!(r#"{{"auths":{{"{host}":{{"auth":"{basic}"}}}}}}"#),
    )
    .unwrap();
    let signed_in = verify_image(&config, &cache, &["--authfile", p(&authfile), &by_digest]);
    assert_eq!(code(&signed_in), Some(0), "{}", combined(&signed_in));
    assert!(
        out(&signed_in).contains(&format!(" verified: {TRUST} ")),
        "{}",
        out(&signed_in)
    );
    assert!(front.token_requests() > 0, "the front issued no token");
}

/// Nothing listens at this registry: exit 2 proves no request was made.
const NOWHERE: &str = "127.0.0.1:9/library/app:1";

/// Bad usages of `verify-image`, with a word the refusal must say.
fn bad_usages() -> Vec<(Vec<&'static str>, &'static str)> {
    vec![
        (vec![], "IMAGE"),
        (
            vec!["--certificate-oidc-issuer", GOOGLE, PAUSE],
            "--certificate-identity",
        ),
        (
            vec!["--certificate-identity", "me@example.com", PAUSE],
            "--certificate-oidc-issuer",
        ),
        (
            vec![
                "--certificate-identity",
                "a",
                "--certificate-identity-regexp",
                "b",
                "--certificate-oidc-issuer",
                GOOGLE,
                PAUSE,
            ],
            "cannot be used with",
        ),
        (
            vec![
                "--signature-policy",
                "policy.yaml",
                "--certificate-identity",
                "a",
                "--certificate-oidc-issuer",
                GOOGLE,
                PAUSE,
            ],
            "cannot be used with",
        ),
        (vec!["--arch", "sparc", PAUSE], "sparc"),
        (
            vec!["--signature-policy", "/nonexistent/policy.yaml", PAUSE],
            "cannot read the signature policy",
        ),
        (
            vec![NOWHERE],
            "no signature policy rule says who must have signed",
        ),
        (
            vec![
                "--certificate-identity-regexp",
                "(",
                "--certificate-oidc-issuer",
                GOOGLE,
                NOWHERE,
            ],
            "--certificate-identity-regexp",
        ),
        (
            vec!["--trusted-root", "/nonexistent/root.json", PAUSE],
            "cannot read the trusted root",
        ),
        (vec!["registry.k8s.io/Pause:3.10"], "Pause"),
    ]
}

#[test]
fn bad_usage_exits_2_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let run = |args: &[&str]| -> Output {
        let mut cmd: Command = cks_iso();
        cmd.args(["verify-image", "--cache-dir", p(&cache)])
            .args(args)
            .output()
            .unwrap()
    };
    for (args, wanted) in bad_usages() {
        let done = run(&args);
        let said = combined(&done);
        assert_eq!(code(&done), Some(2), "{args:?}: {said}");
        assert!(
            said.contains(wanted),
            "{args:?}: {wanted:?} missing in {said}"
        );
        assert!(done.stdout.is_empty(), "{args:?}: {said}");
    }
    let done = run(&[NOWHERE]);
    let err = stderr(&done);
    assert!(err.contains(NOWHERE.split('/').next().unwrap()), "{err}");
    assert!(
        err.contains("hint:") && err.contains("--signature-policy"),
        "{err}"
    );
}
