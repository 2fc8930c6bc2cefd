//! Signing the ISOs cks-iso writes (`build --sign-key`, `cks-iso sign`) and judging them
//! (`verify --iso-signature`, `register` with a signer policy), against real readers: keys made by
//! `openssl genpkey`/`ecparam`, signatures checked by `openssl dgst -sha256 -verify`, the
//! CloudStack stand-in's request log showing that a refused ISO sends no add.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use base64::Engine as _;
use cks_iso_testworld::rekor_v2::BundleOptions;
use cks_iso_testworld::sigstore::{SignOptions, Sigstore};
use cks_iso_testworld::world::{Options, World};

use crate::support::cloud::{Cloud, small_iso};
use crate::support::*;

const ADD: &str = "addKubernetesSupportedVersion";

/// A P-256 key pair made by openssl: (private PKCS #8 PEM, public PEM).
pub(crate) fn openssl_keys(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    require("openssl");
    let key = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    run_tool(
        "openssl",
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            p(&key),
        ],
    );
    run_tool(
        "openssl",
        &["pkey", "-in", p(&key), "-pubout", "-out", p(&public)],
    );
    (key, public)
}

/// Whether `openssl dgst -sha256 -verify public -signature <decoded sig> file` accepts.
fn openssl_accepts(public: &Path, sig: &Path, file: &Path) -> bool {
    let der = base64::engine::general_purpose::STANDARD
        .decode(fs::read_to_string(sig).unwrap().trim())
        .expect("the .sig is base64");
    let der_path = sig.with_extension("der");
    fs::write(&der_path, der).unwrap();
    let out = Command::new("openssl")
        .args(["dgst", "-sha256", "-verify", p(public), "-signature"])
        .args([p(&der_path), p(file)])
        .output()
        .unwrap();
    let said = combined(&out);
    assert!(
        said.contains("Verified OK") || said.contains("Verification failure"),
        "{said}"
    );
    out.status.success()
}

fn beside(iso: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", iso.display()))
}

/// The base64 body of a PEM file, the part that must never show.
fn pem_body(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect()
}

/// Every file under `dir` and every output given: none holds `secret`.
fn nowhere(secret: &str, dir: &Path, outputs: &[&str]) {
    for out in outputs {
        assert!(!out.contains(secret), "the private key shows in:\n{out}");
    }
    for entry in walk(dir) {
        if entry.extension().is_some_and(|e| e == "key") {
            continue; // the key file itself
        }
        let bytes = fs::read(&entry).unwrap();
        assert!(
            !bytes
                .windows(secret.len().min(40))
                .any(|w| w == &secret.as_bytes()[..secret.len().min(40)]),
            "{} holds the private key",
            entry.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() && !path.is_symlink() {
            out.extend(walk(&path));
        } else if path.is_file() {
            out.push(path);
        }
    }
    out
}

fn only_iso(dir: &Path) -> PathBuf {
    let isos: Vec<_> = walk(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "iso"))
        .collect();
    let [iso] = isos.as_slice() else {
        panic!("{isos:?}");
    };
    iso.clone()
}

/// A build of the world's release into `out` with `cache_home`'s cache and `extra` flags; its
/// output and how many seconds it took.
fn timed_build(world: &World, cache_home: &Path, out: &Path, extra: &[&str]) -> (Output, f64) {
    let mut args = vec![
        "--kubernetes",
        world.kubernetes(),
        "--network",
        world.network_url(),
        "--dashboard",
        world.dashboard_url(),
        "--output",
        p(out),
    ];
    args.extend(extra);
    let start = Instant::now();
    let o = ok(build_in_world(world, cache_home, &args));
    (o, start.elapsed().as_secs_f64())
}

/// Warms the cache, then times unsigned and signed builds of the same request, alternating
/// (medians of three each: a warm world build takes a fraction of a second, so one pair is
/// noise). Printed for the record; signing's own work is one ECDSA signature and two writes.
/// Cold: each with a cache of its own (the first fills the one the others then use). The last
/// rounds write `dir/unsigned2` and `dir/signed2`; returns the last signed build's output.
fn time_unsigned_and_signed_builds(world: &World, dir: &Path, key: &Path) -> Output {
    let sign = ["--sign-key", p(key)];
    let (_, cold_unsigned) = timed_build(world, dir, &dir.join("warm"), &[]);
    let cold = dir.join("cold");
    fs::create_dir_all(&cold).unwrap();
    let (_, cold_signed) = timed_build(world, &cold, &cold.join("out"), &sign);
    eprintln!(
        "build (cold cache): unsigned {cold_unsigned:.3} s, signed {cold_signed:.3} s, ratio {:.3}",
        cold_signed / cold_unsigned
    );
    let (mut unsigned, mut signed) = (Vec::new(), Vec::new());
    let mut signed_out = None;
    for round in 0..3 {
        unsigned.push(timed_build(world, dir, &dir.join(format!("unsigned{round}")), &[]).1);
        let (o, t) = timed_build(world, dir, &dir.join(format!("signed{round}")), &sign);
        signed.push(t);
        signed_out = Some(o);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[1]
    };
    let (unsigned, signed) = (median(&mut unsigned), median(&mut signed));
    eprintln!(
        "build (warm cache, median of 3): unsigned {unsigned:.3} s, signed {signed:.3} s, \
         ratio {:.3}",
        signed / unsigned
    );
    signed_out.unwrap()
}

/// `verify --iso-signature --key public` of `iso`.
fn verify_with_key(iso: &Path, public: &Path) -> Output {
    cks_iso()
        .arg("verify")
        .arg(iso)
        .args(["--iso-signature", "--key", p(public)])
        .output()
        .unwrap()
}

/// `verify` of `iso` under `public` exits 1 saying `wanted`.
fn assert_verify_refuses(iso: &Path, public: &Path, wanted: &str) {
    let out = verify_with_key(iso, public);
    let said = combined(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains(wanted), "{said}");
}

#[test]
fn build_sign_key_writes_a_sig_openssl_accepts_and_a_bundle_verify_accepts() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (key, public) = openssl_keys(d, "iso");
    let (_, stranger) = openssl_keys(d, "stranger");
    let signed_out = time_unsigned_and_signed_builds(&world, d, &key);
    let iso = only_iso(&d.join("signed2"));
    let logged = stderr(&signed_out);
    let line = logged
        .lines()
        .find(|l| l.contains("signed ") && l.contains(" s)"));
    eprintln!(
        "signing itself ({} bytes of ISO): {}",
        fs::metadata(&iso).unwrap().len(),
        line.unwrap_or_else(|| panic!("no signing line in:\n{logged}"))
    );
    // The same ISO bytes as the unsigned build's: signing adds files, changes none.
    assert!(same_bytes(&iso, &only_iso(&d.join("unsigned2"))));
    assert!(
        openssl_accepts(&public, &beside(&iso, ".sig"), &iso),
        "openssl refuses"
    );
    let good = ok(verify_with_key(&iso, &public));
    let said = combined(&good);
    assert!(said.contains("signed by the key sha256:"), "{said}");
    assert!(said.contains(p(&public)), "{said}");
    assert_a_flipped_byte_is_refused_by_both(d, &iso, &public);
    assert_another_isos_signature_is_refused_by_both(d, &iso, &key, &public);

    // A wrong key, named.
    let out = verify_with_key(&iso, &stranger);
    let said = combined(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("does not verify under the key sha256:"),
        "{said}"
    );
    assert!(
        said.contains(p(&stranger)),
        "expected: names the key file\n{said}"
    );

    // The private key shows in no output and no file written.
    nowhere(
        &pem_body(&key),
        d,
        &[&combined(&signed_out), &combined(&good)],
    );
}

/// One flipped byte in a copy of `iso` beside its `.sig` and bundle: openssl and verify refuse.
fn assert_a_flipped_byte_is_refused_by_both(dir: &Path, iso: &Path, public: &Path) {
    let flipped_dir = dir.join("flipped");
    fs::create_dir_all(&flipped_dir).unwrap();
    let flipped = flipped_dir.join(iso.file_name().unwrap());
    let mut bytes = fs::read(iso).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    fs::write(&flipped, bytes).unwrap();
    for suffix in [".sig", ".sigstore.json"] {
        fs::copy(beside(iso, suffix), beside(&flipped, suffix)).unwrap();
    }
    assert!(!openssl_accepts(
        public,
        &beside(&flipped, ".sig"),
        &flipped
    ));
    assert_verify_refuses(
        &flipped,
        public,
        "its signature is refused: the bundle signs sha256:",
    );
}

/// Another ISO's signature (by the same key) beside this one: openssl and verify refuse.
fn assert_another_isos_signature_is_refused_by_both(
    dir: &Path,
    iso: &Path,
    key: &Path,
    public: &Path,
) {
    let other = small_iso(dir, "other.iso", "1.33.1", "amd64", 7);
    ok(cks_iso()
        .args(["sign", p(&other), "--key", p(key)])
        .output()
        .unwrap());
    assert!(!openssl_accepts(public, &beside(&other, ".sig"), iso));
    let swapped_dir = dir.join("swapped");
    fs::create_dir_all(&swapped_dir).unwrap();
    let swapped = swapped_dir.join(iso.file_name().unwrap());
    fs::copy(iso, &swapped).unwrap();
    fs::copy(
        beside(&other, ".sigstore.json"),
        beside(&swapped, ".sigstore.json"),
    )
    .unwrap();
    assert_verify_refuses(&swapped, public, "the bundle signs sha256:");
}

#[test]
fn sign_takes_sec1_keys_and_cosign_keys_with_their_password_only() {
    require("openssl");
    let dir = tempfile::tempdir().unwrap();
    let iso = small_iso(dir.path(), "a.iso", "1.33.1", "amd64", 1);
    let key = dir.path().join("sec1.key");
    let public = dir.path().join("sec1.pub");
    run_tool(
        "openssl",
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            p(&key),
        ],
    );
    run_tool(
        "openssl",
        &["ec", "-in", p(&key), "-pubout", "-out", p(&public)],
    );
    let out = ok(cks_iso()
        .args(["sign", p(&iso), "--key", p(&key)])
        .output()
        .unwrap());
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains(".iso.sig") && stdout.contains(".iso.sigstore.json"),
        "{stdout}"
    );
    assert!(openssl_accepts(&public, &beside(&iso, ".sig"), &iso));
    // A key `cosign generate-key-pair` wrote (empty password; the unit tests of
    // cks_iso_sigstore::keyed show where it comes from and that it signs).
    let cosign = dir.path().join("cosign.key");
    fs::write(&cosign, COSIGN_KEY).unwrap();
    let sign = |password: Option<&str>| {
        let mut cmd = cks_iso();
        cmd.env_remove("COSIGN_PASSWORD")
            .args(["sign", p(&iso), "--key", p(&cosign)]);
        if let Some(password) = password {
            cmd.env("COSIGN_PASSWORD", password);
        }
        cmd
    };
    fails(
        &mut sign(None),
        2,
        &[
            "cosign.key",
            "no password to open it",
            "hint: set COSIGN_PASSWORD",
        ],
    );
    let said = fails(
        &mut sign(Some("hunter2-not-it")),
        2,
        &["the password does not open it"],
    );
    assert!(
        !said.contains("hunter2-not-it"),
        "the password shows:\n{said}"
    );
    fs::remove_file(beside(&iso, ".sig")).unwrap();
    let out = ok(sign(Some("")).output().unwrap());
    assert!(beside(&iso, ".sig").exists(), "{}", combined(&out));
    let bundle: serde_json::Value =
        serde_json::from_slice(&fs::read(beside(&iso, ".sigstore.json")).unwrap()).unwrap();
    assert!(bundle["verificationMaterial"]["publicKey"]["hint"].is_string());
}

pub(crate) const COSIGN_KEY: &str = "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----
eyJrZGYiOnsibmFtZSI6InNjcnlwdCIsInBhcmFtcyI6eyJOIjo2NTUzNiwiciI6
OCwicCI6MX0sInNhbHQiOiJLYU9OQzduQVJLOVgxM1FoaWFucjAwTTBGYys2Sitr
dnAxN1FuanpiVk9nPSJ9LCJjaXBoZXIiOnsibmFtZSI6Im5hY2wvc2VjcmV0Ym94
Iiwibm9uY2UiOiJVOHZqWWtqMlZOUFZGdlZFZWZ3bXZ5VGloUERrelBoaCJ9LCJj
aXBoZXJ0ZXh0IjoidWNWMnQ4TTZVNFJvb29FOXc0d3dkc3E1RDYrS2RKY245dERT
KzFwRDRGN040SVJOWEgzSTBua3h1a3NackFOUHR1emIvTkVYQ201dUp3Zjh3Qzl1
VlprbXdwNU5jRUZ6b3ZNS3JCZmNvdXdjaEkrMzkrQ0NhbVZPbzBucmRnZjhvcmpK
dXdrWDBYL1phY0RUTERGaUxyc1laMWVMMmlqMGU1MVRpZmVQNTl4WXNPK1FnM1Jv
OURRVjNQMk9ndDFDaVFHeGg1VXhUZytGc3c9PSJ9
-----END ENCRYPTED SIGSTORE PRIVATE KEY-----
";

#[test]
fn register_with_a_signer_policy_sends_no_add_for_unsigned_or_foreign_isos() {
    let cloud = Cloud::start(cks_iso_testworld::cloudstack::Options::default());
    let dir = cloud.dir.path();
    let (key, public) = openssl_keys(dir, "ours");
    let (stranger_key, stranger_public) = openssl_keys(dir, "theirs");
    let iso = small_iso(dir, "setup-v1.33.1-x86_64.iso", "1.33.1", "amd64", 3);
    cloud.publish(&iso);
    let policy = dir.join("signers.yaml");
    fs::write(&policy, "keys: [ours.pub]\n").unwrap();
    fs::set_permissions(&policy, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let no_add = |cloud: &Cloud| !cloud.api.commands().contains(&ADD.to_owned());

    // Unsigned: refused, naming the ISO, what was found and who was expected.
    let said = fails(
        &mut cloud.register(&[&iso], &["--signer-policy", p(&policy)]),
        1,
        &[
            p(&iso),
            "signer found: none",
            "expected: the key sha256:",
            "ours.pub",
            "nothing was registered",
            "hint:",
        ],
    );
    assert!(no_add(&cloud), "{said}");

    // Signed by another key: refused, naming that key's hash.
    ok(cks_iso()
        .args(["sign", p(&iso), "--key", p(&stranger_key)])
        .output()
        .unwrap());
    let stranger_hash = {
        use sha2::Digest as _;
        let text = fs::read_to_string(&stranger_public).unwrap();
        let der = base64::engine::general_purpose::STANDARD
            .decode(pem_body(&stranger_public))
            .unwrap();
        assert!(text.contains("PUBLIC KEY"));
        hex::encode(sha2::Sha256::digest(der))
    };
    let said = fails(
        &mut cloud.register(&[&iso], &["--key", p(&public)]),
        1,
        &[
            &format!("signer found: a key whose SHA-256 is sha256:{stranger_hash}"),
            "does not verify under the key",
        ],
    );
    assert!(no_add(&cloud), "{said}");

    // Signed by ours: registered, through the configuration's iso-signer-policy.
    ok(cks_iso()
        .args(["sign", p(&iso), "--key", p(&key)])
        .output()
        .unwrap());
    let config = dir.join("config.yaml");
    fs::write(&config, "iso-signer-policy: signers.yaml\n").unwrap();
    let out = ok(cloud
        .register(&[&iso], &[])
        .env("CKS_ISO_CONFIG", &config)
        .output()
        .unwrap());
    let said = combined(&out);
    assert!(said.contains("signed by the key sha256:"), "{said}");
    assert!(!no_add(&cloud), "{said}");
    nowhere(&pem_body(&key), &cloud.published, &[&said]);
}

/// The keyless signer of the tests below, and its issuer.
const ID: &str = "release@acme.example";
const ISSUER: &str = "https://issuer.acme.example";
/// The flags naming that signer exactly.
const EXACT: [&str; 4] = [
    "--certificate-identity",
    ID,
    "--certificate-oidc-issuer",
    ISSUER,
];

/// A keyless bundle beside an ISO (a Fulcio-like leaf for a CI identity, its Rekor v2 entry and
/// RFC 3161 timestamp, made by the test world's Sigstore as `cosign sign-blob --bundle` makes
/// them): `verify --iso-signature` accepts it under the identity and issuer, exact or by regexp,
/// naming both and the time, and refuses another identity, a bundle of another ISO and a bundle
/// of another Sigstore (another CA and Rekor than the root given); `register` takes the same
/// rules from a signer policy file.
#[test]
fn keyless_bundles_verify_against_the_identity_and_the_root_given() {
    let dir = tempfile::tempdir().unwrap();
    let store = Sigstore::generate();
    let root = dir.path().join("root.json");
    fs::write(&root, store.trusted_root()).unwrap();
    let iso = small_iso(dir.path(), "setup-v1.33.1-x86_64.iso", "1.33.1", "amd64", 4);
    sign_keyless(&store, &iso);
    assert_accepted(verify_keyless(&iso, &root, &EXACT));
    let regexp = [
        "--certificate-identity-regexp",
        r"^release@acme\.example$",
        "--certificate-oidc-issuer",
        ISSUER,
    ];
    assert_accepted(verify_keyless(&iso, &root, &regexp));
    assert_other_signers_roots_and_isos_refused(dir.path(), &iso, &root);
    assert_register_takes_the_rule_from_a_signer_policy(&iso, &root);
}

/// Writes `iso`'s keyless bundle beside it, signed by `ID` via `ISSUER` on `store`'s Rekor v2.
fn sign_keyless(store: &Sigstore, iso: &Path) {
    let opts = BundleOptions {
        signer: SignOptions {
            identity: ID.into(),
            issuer: ISSUER.into(),
            ..SignOptions::default()
        },
        ..BundleOptions::default()
    };
    let bundle = store.rekor_v2().sign(store, &fs::read(iso).unwrap(), &opts);
    fs::write(beside(iso, ".sigstore.json"), &bundle).unwrap();
}

/// `verify --iso-signature` of `iso` against `root` for `signer`.
fn verify_keyless(iso: &Path, root: &Path, signer: &[&str]) -> Output {
    cks_iso()
        .arg("verify")
        .arg(iso)
        .args(["--iso-signature", "--signer-trusted-root", p(root)])
        .args(signer)
        .output()
        .unwrap()
}

/// The signature's verdict line names the signer, its issuer and the time. (A small ISO breaks
/// the contract's rules, which verify also reports; the signature's verdict is its own line.)
fn assert_accepted(out: Output) {
    let said = combined(&out);
    assert!(!said.contains("its signature is refused"), "{said}");
    assert!(
        said.contains(&format!("signed by {ID} via {ISSUER}, at 20")),
        "{said}"
    );
}

/// verify exits 1, the signature refused, saying `needle`.
fn assert_refused(out: Output, needle: &str) {
    let said = combined(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("its signature is refused"), "{said}");
    assert!(said.contains(needle), "{needle:?} missing:\n{said}");
}

/// Another identity, exact or a regexp matching part of it; another Sigstore's root, whose CA and
/// Rekor sign nothing here; the bundle of another ISO: each refused.
fn assert_other_signers_roots_and_isos_refused(dir: &Path, iso: &Path, root: &Path) {
    let other_id = ["--certificate-identity", "mallory@acme.example"];
    let other_id = [&other_id[..], &["--certificate-oidc-issuer", ISSUER]].concat();
    assert_refused(verify_keyless(iso, root, &other_id), "identity");
    let partial = [
        "--certificate-identity-regexp",
        "acme",
        "--certificate-oidc-issuer",
        ISSUER,
    ];
    assert_refused(verify_keyless(iso, root, &partial), "identity");
    let stranger_root = dir.join("stranger.json");
    fs::write(&stranger_root, Sigstore::generate().trusted_root()).unwrap();
    assert_refused(verify_keyless(iso, &stranger_root, &EXACT), "fails the");
    let other = small_iso(dir, "other.iso", "1.33.1", "amd64", 5);
    fs::copy(
        beside(iso, ".sigstore.json"),
        beside(&other, ".sigstore.json"),
    )
    .unwrap();
    assert_refused(verify_keyless(&other, root, &EXACT), "sha256:");
}

/// register, with the rule in a signer policy file (matched against the ISO's name): another
/// identity sends no add, the signer's own registers.
fn assert_register_takes_the_rule_from_a_signer_policy(iso: &Path, root: &Path) {
    let cloud = Cloud::start(cks_iso_testworld::cloudstack::Options::default());
    let published = cloud.publish(iso);
    fs::copy(
        beside(iso, ".sigstore.json"),
        beside(&published, ".sigstore.json"),
    )
    .unwrap();
    let policy = cloud.dir.path().join("signers.yaml");
    let rule = |id: &str| {
        format!(
            "rules:\n  - match: \"setup-v1.33.*\"\n    certificate-identity: {id}\n    \
             certificate-oidc-issuer: {ISSUER}\n"
        )
    };
    fs::write(&policy, rule("mallory@acme.example")).unwrap();
    let flags = [
        "--signer-policy",
        p(&policy),
        "--signer-trusted-root",
        p(root),
    ];
    fails(
        &mut cloud.register(&[&published], &flags),
        1,
        &["signer found: a Fulcio certificate", "mallory@acme.example"],
    );
    assert!(!cloud.api.commands().contains(&ADD.to_owned()));
    fs::write(&policy, rule(ID)).unwrap();
    ok(cloud.register(&[&published], &flags).output().unwrap());
    assert!(cloud.api.commands().contains(&ADD.to_owned()));
}
