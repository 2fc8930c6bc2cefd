//! `cks-iso diff` naming who signed each ISO (the `.sigstore.json` or cosign `.sig` beside it):
//! keys made by `openssl`, ISOs signed by `cks-iso sign` (with a key, and keyless with the test
//! world's OIDC issuer, Fulcio and Rekor), fingerprints computed by `openssl pkey` and
//! `sha256sum`, and signatures that do not verify (another ISO's bundle, a flipped signature,
//! a damaged file) reported as such, never as signed. `upgrade-check`'s side of it is in
//! `upgrade_check.rs`, on the ISOs that suite builds.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::iso::signing::openssl_keys;
use crate::support::cloud::small_iso;
use crate::support::*;

fn beside(iso: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", iso.display()))
}

/// `sha256:` and the hex SHA-256 of the DER public key, as openssl and sha256sum make it.
fn fingerprint(public: &Path) -> String {
    let der = public.with_extension("der");
    run_tool(
        "openssl",
        &[
            "pkey",
            "-pubin",
            "-in",
            p(public),
            "-outform",
            "DER",
            "-out",
            p(&der),
        ],
    );
    let (out, _) = tool("sha256sum", [p(&der)]);
    format!("sha256:{}", out.split_whitespace().next().unwrap())
}

fn sign(iso: &Path, key: &Path) {
    ok(cks_iso()
        .args(["sign", p(iso), "--key", p(key)])
        .output()
        .unwrap());
}

fn diff(a: &Path, b: &Path, extra: &[&str]) -> Output {
    cks_iso()
        .arg("diff")
        .args([p(a), p(b)])
        .args(extra)
        .output()
        .unwrap()
}

/// `diff --json`'s document (exit 0 or 1: identical or not).
fn diff_json(a: &Path, b: &Path, extra: &[&str]) -> serde_json::Value {
    let out = diff(a, b, &[&["--json"], extra].concat());
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        combined(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn diff_names_the_key_that_signed_each_iso_and_checks_it_with_the_key_given() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = openssl_keys(dir.path(), "iso");
    let (_, stranger) = openssl_keys(dir.path(), "stranger");
    let a = small_iso(dir.path(), "a.iso", "1.33.1", "amd64", 1);
    let b = small_iso(dir.path(), "b.iso", "1.33.1", "amd64", 2);
    sign(&b, &key);
    let fp = fingerprint(&public);

    // No key given: the key is named by its bundle's fingerprint, the signature not checked.
    let out = diff(&a, &b, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", combined(&out));
    let (stdout, _) = text(&out);
    let expected = format!(
        "signature:\n  a: unsigned (no .sigstore.json or .sig beside it)\n  b: signed by the key \
         {fp} as {}.sigstore.json says, not checked: no public key was given to check it with \
         (pass --key PUB)\n",
        b.display()
    );
    assert!(stdout.contains(&expected), "{stdout}");
    let json = diff_json(&a, &b, &[]);
    assert_eq!(json["a"]["signature"]["status"], "unsigned");
    let sig = &json["b"]["signature"];
    assert_eq!(sig["status"], "unverified", "{sig:#}");
    assert_eq!(sig["kind"], "key");
    assert_eq!(sig["key"], fp.as_str());
    assert_eq!(sig["time"], serde_json::Value::Null);

    // Its public key given: verified, named with the key's file.
    let json = diff_json(&a, &b, &["--key", p(&public)]);
    let sig = &json["b"]["signature"];
    assert_eq!(sig["status"], "verified", "{sig:#}");
    assert_eq!(sig["key"], fp.as_str());
    let signer = sig["signer"].as_str().unwrap();
    assert!(
        signer.contains(&fp) && signer.contains(p(&public)),
        "{signer}"
    );
    let (stdout, _) = text(&diff(&a, &b, &["--key", p(&public)]));
    assert!(
        stdout.contains(&format!(
            "  b: signed by the key {fp} ({}), at a time",
            p(&public)
        )),
        "{stdout}"
    );

    // Another key given: still named by the bundle, and said not to be the one given.
    let json = diff_json(&a, &b, &["--key", p(&stranger)]);
    let sig = &json["b"]["signature"];
    assert_eq!(sig["status"], "unverified", "{sig:#}");
    assert!(
        sig["reason"]
            .as_str()
            .unwrap()
            .contains("not one of the keys given"),
        "{sig:#}"
    );

    // cosign's .sig alone names no key: checked only with one.
    fs::remove_file(beside(&b, ".sigstore.json")).unwrap();
    let json = diff_json(&a, &b, &[]);
    let sig = &json["b"]["signature"];
    assert_eq!(sig["status"], "unverified", "{sig:#}");
    assert_eq!(sig["file"], p(&beside(&b, ".sig")));
    let json = diff_json(&a, &b, &["--key", p(&public)]);
    assert_eq!(json["b"]["signature"]["status"], "verified");
    let json = diff_json(&a, &b, &["--key", p(&stranger)]);
    let reason = json["b"]["signature"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.contains("verifies under none of the keys given"),
        "{reason}"
    );

    // A key file that is no public key is a usage error naming it.
    fails(
        cks_iso().args(["diff", p(&a), p(&b), "--key", p(&key)]),
        2,
        &["iso.key", "PUBLIC KEY"],
    );
}

#[test]
fn the_same_content_signed_by_another_key_or_not_at_all_is_not_identical() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = openssl_keys(dir.path(), "iso");
    let (other_key, other_public) = openssl_keys(dir.path(), "other");
    let a = small_iso(dir.path(), "a.iso", "1.33.1", "amd64", 1);
    let copy = dir.path().join("copy");
    fs::create_dir_all(&copy).unwrap();
    let b = copy.join("a.iso");
    fs::copy(&a, &b).unwrap();
    // Unsigned both: identical, nothing printed.
    let out = ok(diff(&a, &b, &[]));
    assert!(out.stdout.is_empty(), "{}", combined(&out));
    // Signed by the same key each: identical still.
    sign(&a, &key);
    sign(&b, &key);
    let out = ok(diff(&a, &b, &["--key", p(&public)]));
    assert!(out.stdout.is_empty(), "{}", combined(&out));
    let json = diff_json(&a, &b, &["--key", p(&public)]);
    assert_eq!(json["identical"], true);
    assert_eq!(json["a"]["signature"]["status"], "verified");
    // Re-signed by another key: not identical, each signer named.
    sign(&b, &other_key);
    let out = diff(&a, &b, &["--key", p(&public), "--key", p(&other_public)]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("  a: signed by the key {}", fingerprint(&public)))
            && stdout.contains(&format!(
                "  b: signed by the key {}",
                fingerprint(&other_public)
            )),
        "{stdout}"
    );
    // Without the keys too: each bundle names its own key.
    let json = diff_json(&a, &b, &[]);
    assert_eq!(json["identical"], false);
    assert_ne!(json["a"]["signature"]["key"], json["b"]["signature"]["key"]);
}

#[test]
fn a_signature_that_does_not_verify_is_reported_as_such_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = openssl_keys(dir.path(), "iso");
    let a = small_iso(dir.path(), "a.iso", "1.33.1", "amd64", 1);
    let b = small_iso(dir.path(), "b.iso", "1.33.1", "amd64", 2);
    sign(&a, &key);
    // a's bundle beside b: it signs another ISO, seen even without the key.
    fs::copy(beside(&a, ".sigstore.json"), beside(&b, ".sigstore.json")).unwrap();
    let a_sha = format!("sha256:{}", crate::support::cloud::sha256_of(&a));
    let b_sha = format!("sha256:{}", crate::support::cloud::sha256_of(&b));
    let json = diff_json(&a, &b, &[]);
    let sig = &json["b"]["signature"];
    assert_eq!(sig["status"], "invalid", "{sig:#}");
    assert_eq!(
        sig["reason"],
        format!("it signs {a_sha}, the ISO hashes to {b_sha}").as_str()
    );
    let out = diff(&a, &b, &["--key", p(&public)]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains(&format!(
            "  b: {}.sigstore.json does not verify: the bundle signs {a_sha}, the file hashes to \
             {b_sha}; signer found: the key {}",
            b.display(),
            fingerprint(&public)
        )),
        "{stdout}"
    );
    // A flipped byte in the signature itself, with the key: does not verify under it.
    let mut bundle: serde_json::Value =
        serde_json::from_slice(&fs::read(beside(&a, ".sigstore.json")).unwrap()).unwrap();
    let signature = bundle["messageSignature"]["signature"].as_str().unwrap();
    let flipped = format!(
        "{}{}",
        if signature.starts_with('M') { "N" } else { "M" },
        &signature[1..]
    );
    bundle["messageSignature"]["signature"] = flipped.into();
    fs::write(
        beside(&a, ".sigstore.json"),
        serde_json::to_vec(&bundle).unwrap(),
    )
    .unwrap();
    let json = diff_json(&a, &b, &["--key", p(&public)]);
    let sig = &json["a"]["signature"];
    assert_eq!(sig["status"], "invalid", "{sig:#}");
    assert!(
        sig["reason"]
            .as_str()
            .unwrap()
            .contains("does not verify under the key"),
        "{sig:#}"
    );
    // A damaged file: invalid, saying why; never a crash or "signed".
    fs::write(beside(&b, ".sigstore.json"), b"{ not json").unwrap();
    let json = diff_json(&a, &b, &[]);
    let sig = &json["b"]["signature"];
    assert_eq!(sig["status"], "invalid", "{sig:#}");
    assert!(!sig["reason"].as_str().unwrap().is_empty());
}

/// A keyless bundle made by `cks-iso sign --identity-token` with the test world's OIDC issuer,
/// Fulcio and Rekor (the stand-ins `iso::keyless` proves against sigstore-python).
#[test]
fn diff_names_a_keyless_signer_and_its_time_only_under_the_root_that_vouches_for_it() {
    use cks_iso_testworld::fulcio::{FulcioServer, signing_config};
    use cks_iso_testworld::oidc::{Claims, OidcIssuer};
    use cks_iso_testworld::rekor::RekorServer;
    use cks_iso_testworld::sigstore::Sigstore;
    const RELEASER: &str = "release@cks.example";

    let sigstore = std::sync::Arc::new(Sigstore::generate());
    let rekor = RekorServer::start();
    rekor.accept_entries(sigstore.clone());
    let oidc = OidcIssuer::start();
    let fulcio = FulcioServer::start(sigstore.clone(), vec![oidc.url().to_owned()]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("signing_config.json");
    let services = signing_config(&fulcio.url(), &rekor.url(), oidc.url());
    fs::write(&config, services.to_string()).unwrap();
    let root = dir.path().join("root.json");
    fs::write(&root, sigstore.trusted_root()).unwrap();
    let a = small_iso(dir.path(), "a.iso", "1.33.1", "amd64", 1);
    let b = small_iso(dir.path(), "b.iso", "1.33.1", "amd64", 2);
    ok(cks_iso()
        .args(["sign", p(&b), "--signing-config", p(&config)])
        .args(["--trusted-root", p(&root)])
        .env("SIGSTORE_ID_TOKEN", oidc.mint(&Claims::email(RELEASER)))
        .output()
        .unwrap());

    let json = diff_json(&a, &b, &["--signer-trusted-root", p(&root)]);
    let sig = &json["b"]["signature"];
    assert_eq!(sig["status"], "verified", "{sig:#}");
    assert_eq!(sig["kind"], "certificate");
    assert_eq!(sig["identity"], RELEASER);
    assert_eq!(sig["issuer"], oidc.url());
    let time = sig["time"].as_str().unwrap();
    assert!(time.len() == 20 && time.ends_with('Z'), "{time}");
    let (stdout, _) = text(&diff(&a, &b, &["--signer-trusted-root", p(&root)]));
    assert!(
        stdout.contains(&format!(
            "  b: signed by {RELEASER} via {} at {time}\n",
            oidc.url()
        )),
        "{stdout}"
    );

    // Under Sigstore's public-good root the world's Fulcio is nobody: named, not verified.
    let json = diff_json(&a, &b, &[]);
    let sig = &json["b"]["signature"];
    assert_eq!(sig["status"], "invalid", "{sig:#}");
    assert_eq!(sig["identity"], RELEASER);
    assert!(
        sig["reason"].as_str().unwrap().starts_with("fails the "),
        "{sig:#}"
    );
    assert_eq!(sig["time"], serde_json::Value::Null);

    // b's keyless bundle beside a: the certificate vouches for b's digest only.
    fs::copy(beside(&b, ".sigstore.json"), beside(&a, ".sigstore.json")).unwrap();
    let json = diff_json(&a, &b, &["--signer-trusted-root", p(&root)]);
    let sig = &json["a"]["signature"];
    assert_eq!(sig["status"], "invalid", "{sig:#}");
    assert!(
        sig["reason"]
            .as_str()
            .unwrap()
            .contains("the file hashes to"),
        "{sig:#}"
    );
}
