//! Signing the ISOs cks-iso writes (`build --sign-key`, `cks-iso sign`) and judging them
//! (`verify --iso-signature`, `register` with a signer policy), against real readers: keys made by
//! `openssl genpkey`/`ecparam`, signatures checked by `openssl dgst -sha256 -verify`, the
//! CloudStack stand-in's request log showing that a refused ISO sends no add.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use base64::Engine as _;
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

#[test]
fn build_sign_key_writes_a_sig_openssl_accepts_and_a_bundle_verify_accepts() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = openssl_keys(dir.path(), "iso");
    let (_, stranger) = openssl_keys(dir.path(), "stranger");
    let request = |out: &Path| {
        vec![
            "--kubernetes".to_owned(),
            world.kubernetes().to_owned(),
            "--network".to_owned(),
            world.network_url().to_owned(),
            "--dashboard".to_owned(),
            world.dashboard_url().to_owned(),
            "--output".to_owned(),
            p(out).to_owned(),
        ]
    };
    let build_with = |cache_home: &Path, out: &Path, extra: &[&str]| {
        let mut args = request(out);
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let start = Instant::now();
        let o = ok(build_in_world(&world, cache_home, &args));
        (o, start.elapsed().as_secs_f64())
    };
    let build = |out: &Path, extra: &[&str]| build_with(dir.path(), out, extra);
    // Warm the cache, then time unsigned and signed builds of the same request, alternating
    // (medians of three each: a warm world build takes a fraction of a second, so one pair is
    // noise). Printed for the record; signing's own work is one ECDSA signature and two writes.
    // Cold: each with a cache of its own (the first fills the one the others then use).
    let (_, cold_unsigned) = build(&dir.path().join("warm"), &[]);
    let cold = dir.path().join("cold");
    fs::create_dir_all(&cold).unwrap();
    let (_, cold_signed) = build_with(&cold, &cold.join("out"), &["--sign-key", p(&key)]);
    eprintln!(
        "build (cold cache): unsigned {cold_unsigned:.3} s, signed {cold_signed:.3} s, ratio {:.3}",
        cold_signed / cold_unsigned
    );
    let (mut unsigned, mut signed) = (Vec::new(), Vec::new());
    let mut signed_out = None;
    for round in 0..3 {
        unsigned.push(build(&dir.path().join(format!("unsigned{round}")), &[]).1);
        let (o, t) = build(
            &dir.path().join(format!("signed{round}")),
            &["--sign-key", p(&key)],
        );
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
    let signed_out = signed_out.unwrap();
    let signed_dir = dir.path().join("signed2");
    let iso = only_iso(&signed_dir);
    let logged = stderr(&signed_out);
    let line = logged
        .lines()
        .find(|l| l.contains("signed ") && l.contains(" s)"));
    eprintln!(
        "signing itself ({} bytes of ISO): {}",
        fs::metadata(&iso).unwrap().len(),
        line.unwrap_or_else(|| panic!("no signing line in:\n{logged}"))
    );
    let sig = beside(&iso, ".sig");
    // The same ISO bytes as the unsigned build's: signing adds files, changes none.
    assert!(same_bytes(&iso, &only_iso(&dir.path().join("unsigned2"))));
    assert!(openssl_accepts(&public, &sig, &iso), "openssl refuses");
    let verify = |iso: &Path, public: &Path| {
        cks_iso()
            .arg("verify")
            .arg(iso)
            .args(["--iso-signature", "--key", p(public)])
            .output()
            .unwrap()
    };
    let good = ok(verify(&iso, &public));
    let said = combined(&good);
    assert!(said.contains("signed by the key sha256:"), "{said}");
    assert!(said.contains(p(&public)), "{said}");

    // One flipped byte: both refuse.
    let flipped_dir = dir.path().join("flipped");
    fs::create_dir_all(&flipped_dir).unwrap();
    let flipped = flipped_dir.join(iso.file_name().unwrap());
    let mut bytes = fs::read(&iso).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    fs::write(&flipped, bytes).unwrap();
    for suffix in [".sig", ".sigstore.json"] {
        fs::copy(beside(&iso, suffix), beside(&flipped, suffix)).unwrap();
    }
    assert!(!openssl_accepts(
        &public,
        &beside(&flipped, ".sig"),
        &flipped
    ));
    let out = verify(&flipped, &public);
    let said = combined(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("its signature is refused: the bundle signs sha256:"),
        "{said}"
    );

    // Another ISO's signature beside this one: both refuse.
    let other = small_iso(dir.path(), "other.iso", "1.33.1", "amd64", 7);
    ok(cks_iso()
        .args(["sign", p(&other), "--key", p(&key)])
        .output()
        .unwrap());
    assert!(!openssl_accepts(&public, &beside(&other, ".sig"), &iso));
    let swapped_dir = dir.path().join("swapped");
    fs::create_dir_all(&swapped_dir).unwrap();
    let swapped = swapped_dir.join(iso.file_name().unwrap());
    fs::copy(&iso, &swapped).unwrap();
    fs::copy(
        beside(&other, ".sigstore.json"),
        beside(&swapped, ".sigstore.json"),
    )
    .unwrap();
    let out = verify(&swapped, &public);
    let said = combined(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("the bundle signs sha256:"), "{said}");

    // A wrong key, named.
    let out = verify(&iso, &stranger);
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
        dir.path(),
        &[&combined(&signed_out), &combined(&good)],
    );
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

/// A keyless bundle beside an ISO (a Fulcio-like leaf for a CI identity, its Rekor v2 entry and
/// RFC 3161 timestamp, made by the test world's Sigstore as `cosign sign-blob --bundle` makes
/// them): `verify --iso-signature` accepts it under the identity and issuer, exact or by regexp,
/// naming both and the time, and refuses another identity, a bundle of another ISO and a bundle
/// of another Sigstore (another CA and Rekor than the root given); `register` takes the same
/// rules from a signer policy file.
#[test]
fn keyless_bundles_verify_against_the_identity_and_the_root_given() {
    use cks_iso_testworld::rekor_v2::BundleOptions;
    use cks_iso_testworld::sigstore::{SignOptions, Sigstore};
    const ID: &str = "release@acme.example";
    const ISSUER: &str = "https://issuer.acme.example";
    let dir = tempfile::tempdir().unwrap();
    let store = Sigstore::generate();
    let root = dir.path().join("root.json");
    fs::write(&root, store.trusted_root()).unwrap();
    let iso = small_iso(dir.path(), "setup-v1.33.1-x86_64.iso", "1.33.1", "amd64", 4);
    let opts = BundleOptions {
        signer: SignOptions {
            identity: ID.into(),
            issuer: ISSUER.into(),
            ..SignOptions::default()
        },
        ..BundleOptions::default()
    };
    let bundle = store
        .rekor_v2()
        .sign(&store, &fs::read(&iso).unwrap(), &opts);
    fs::write(beside(&iso, ".sigstore.json"), &bundle).unwrap();
    let verify = |iso: &Path, root: &Path, signer: &[&str]| {
        cks_iso()
            .arg("verify")
            .arg(iso)
            .args(["--iso-signature", "--signer-trusted-root", p(root)])
            .args(signer)
            .output()
            .unwrap()
    };
    // (A small ISO breaks the contract's rules, which verify also reports; the signature's
    // verdict is its own line.)
    let accepted = |out: std::process::Output| {
        let said = combined(&out);
        assert!(!said.contains("its signature is refused"), "{said}");
        assert!(
            said.contains(&format!("signed by {ID} via {ISSUER}, at 20")),
            "{said}"
        );
    };
    let exact = [
        "--certificate-identity",
        ID,
        "--certificate-oidc-issuer",
        ISSUER,
    ];
    accepted(verify(&iso, &root, &exact));
    let regexp = [
        "--certificate-identity-regexp",
        r"^release@acme\.example$",
        "--certificate-oidc-issuer",
        ISSUER,
    ];
    accepted(verify(&iso, &root, &regexp));

    let refused = |out: std::process::Output, needle: &str| {
        let said = combined(&out);
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains("its signature is refused"), "{said}");
        assert!(said.contains(needle), "{needle:?} missing:\n{said}");
    };
    let other_id = ["--certificate-identity", "mallory@acme.example"];
    let other_id = [&other_id[..], &["--certificate-oidc-issuer", ISSUER]].concat();
    refused(verify(&iso, &root, &other_id), "identity");
    let partial = [
        "--certificate-identity-regexp",
        "acme",
        "--certificate-oidc-issuer",
        ISSUER,
    ];
    refused(verify(&iso, &root, &partial), "identity");
    // Another Sigstore's root: its CA and Rekor sign nothing here.
    let stranger_root = dir.path().join("stranger.json");
    fs::write(&stranger_root, Sigstore::generate().trusted_root()).unwrap();
    refused(verify(&iso, &stranger_root, &exact), "fails the");
    // The bundle of another ISO.
    let other = small_iso(dir.path(), "other.iso", "1.33.1", "amd64", 5);
    fs::copy(
        beside(&iso, ".sigstore.json"),
        beside(&other, ".sigstore.json"),
    )
    .unwrap();
    refused(verify(&other, &root, &exact), "sha256:");

    // register, with the rule in a signer policy file (matched against the ISO's name).
    let cloud = Cloud::start(cks_iso_testworld::cloudstack::Options::default());
    let published = cloud.publish(&iso);
    fs::copy(
        beside(&iso, ".sigstore.json"),
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
        p(&root),
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
