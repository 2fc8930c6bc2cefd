//! Key signatures entered in Rekor (`build --sign-key … --tlog`, `cks-iso sign --key … --tlog`):
//! the bundle carries the Rekor entry of a `hashedrekord` with the public key, judged by readers
//! that are not cks-iso's: openssl for the signature, the world's Rekor serving the entry back by
//! its UUID through its API, and sigstore-python's own log-entry verifier (its inclusion proof,
//! checkpoint and signed entry timestamp against the world's trusted root). sigstore-python 4.x
//! reads no bundle without a certificate (`Bundle` refuses one: "expected certificate in
//! bundle") and `sigstore verify` has no key mode, so the oracle takes the entry from the bundle
//! and verifies it with the client's `TransparencyLogEntry` and the signature with
//! `cryptography`. Then `verify --iso-signature --key` must accept it naming the log's time, and
//! refuse an entry from a Rekor the trusted root does not name and an entry of another hash;
//! without `--tlog` no Rekor is asked, and an unreachable one fails `--tlog` leaving nothing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use base64::Engine as _;
use cks_iso_testworld::rekor::RekorServer;
use cks_iso_testworld::sigstore::Sigstore;
use cks_iso_testworld::world::{Options, World};
use serde_json::Value;
use sha2::Digest as _;

use super::signing::openssl_keys;
use crate::support::*;

/// sigstore-python's log entry verifier and `cryptography`'s ECDSA, on a key bundle: argv is the
/// bundle, the trusted root, the file and the PEM public key. Prints `ok` or raises.
const ORACLE: &str = r#"
import base64, hashlib, json, sys
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils
from sigstore._internal.trust import KeyringPurpose
from sigstore.models import TransparencyLogEntry, TrustedRoot
from sigstore_models.rekor.v1 import TransparencyLogEntry as Inner

bundle = json.load(open(sys.argv[1]))
root = TrustedRoot.from_file(sys.argv[2])
digest = hashlib.sha256(open(sys.argv[3], "rb").read()).digest()
key = serialization.load_pem_public_key(open(sys.argv[4], "rb").read())
[raw] = bundle["verificationMaterial"]["tlogEntries"]
entry = TransparencyLogEntry(Inner.from_dict(raw))
entry._verify(root.rekor_keyring(KeyringPurpose.VERIFY))
body = json.loads(base64.b64decode(raw["canonicalizedBody"]))
assert body["kind"] == "hashedrekord", body
assert body["spec"]["data"]["hash"]["value"] == digest.hex(), "the entry logs another hash"
signature = base64.b64decode(bundle["messageSignature"]["signature"])
assert base64.b64decode(body["spec"]["signature"]["content"]) == signature
logged = serialization.load_pem_public_key(
    base64.b64decode(body["spec"]["signature"]["publicKey"]["content"]))
spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
assert logged.public_bytes(*spki) == key.public_bytes(*spki), "the entry logs another key"
key.verify(signature, digest, ec.ECDSA(utils.Prehashed(hashes.SHA256())))
print("ok")
"#;

/// The oracle's verdict: success and what it said.
fn python_accepts(bundle: &Path, root: &Path, file: &Path, public: &Path) -> (bool, String) {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-sbom/bin/python");
    assert!(python.exists(), "no .venv-sbom: run `make deps` first");
    let mut cmd = Command::new(python);
    no_internet(&mut cmd);
    let o = cmd
        .args(["-c", ORACLE])
        .args([p(bundle), p(root), p(file), p(public)])
        .output()
        .unwrap();
    (o.status.success(), combined(&o))
}

fn beside(iso: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", iso.display()))
}

fn bundle_json(iso: &Path) -> Value {
    serde_json::from_slice(&fs::read(beside(iso, ".sigstore.json")).unwrap()).unwrap()
}

/// The entry's UUID as Rekor names it: the hex of its RFC 6962 leaf hash.
fn uuid_of(entry: &Value) -> String {
    let body = base64::engine::general_purpose::STANDARD
        .decode(entry["canonicalizedBody"].as_str().unwrap())
        .unwrap();
    hex::encode(sha2::Sha256::digest([&[0u8][..], &body].concat()))
}

/// `GET /api/v1/log/entries/<uuid>` of the world's Rekor, with curl: the entry it serves.
fn served(rekor: &str, uuid: &str) -> Value {
    require("curl");
    let url = format!("{rekor}/api/v1/log/entries/{uuid}");
    let out = ok(Command::new("curl")
        .args(["-sf", "--noproxy", "*", &url])
        .output()
        .unwrap());
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    all[uuid].clone()
}

fn entries_posted(rekor: &RekorServer) -> usize {
    (rekor.requests().iter())
        .filter(|r| *r == "POST /api/v1/log/entries")
        .count()
}

fn verify_key(iso: &Path, public: &Path, root: &Path) -> (Option<i32>, String) {
    verify_iso(
        iso,
        &[
            "--iso-signature",
            "--key",
            p(public),
            "--signer-trusted-root",
            p(root),
        ],
    )
}

/// Builds in one world into `dir/<out>`: the command's output, its wall time, the directory.
struct Builds<'a> {
    world: &'a World,
    dir: &'a Path,
}

impl Builds<'_> {
    fn build(&self, out: &str, extra: &[&str]) -> (std::process::Output, f64, PathBuf) {
        let world = self.world;
        let out = self.dir.join(out);
        let mut args = vec![
            "--kubernetes",
            world.kubernetes(),
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
            "--output",
            p(&out),
        ];
        args.extend(extra);
        let start = Instant::now();
        let o = ok(build_in_world(world, self.dir, &args));
        (o, start.elapsed().as_secs_f64(), out)
    }
}

/// The line `signed …` of a build's stderr.
fn signing_line(o: &std::process::Output) -> String {
    let all = stderr(o);
    let line = all
        .lines()
        .find(|l| l.starts_with("signed "))
        .map(str::to_owned);
    line.unwrap_or_else(|| panic!("no signing line in:\n{all}"))
}

/// `--sign-key` alone and with `--tlog`, alternating, three of each on a warm cache (the medians
/// printed); only `--tlog` posts an entry, one per build. The `--tlog` builds' outputs.
fn time_key_and_tlog_builds(b: &Builds<'_>, key: &Path) -> Vec<(std::process::Output, PathBuf)> {
    b.build("warm", &[]);
    let rekor = b.world.rekor();
    let (mut offline, mut logged, mut runs) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..3 {
        let before = entries_posted(rekor);
        let (o, t, _) = b.build(&format!("key{round}"), &["--sign-key", p(key)]);
        eprintln!("--sign-key: {}", signing_line(&o));
        assert_eq!(entries_posted(rekor), before, "no --tlog, no entry");
        offline.push(t);
        let (o, t, out) = b.build(&format!("tlog{round}"), &["--sign-key", p(key), "--tlog"]);
        logged.push(t);
        eprintln!("--sign-key --tlog: {}", signing_line(&o));
        runs.push((o, out));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[1]
    };
    let (offline, logged) = (median(&mut offline), median(&mut logged));
    eprintln!(
        "build --sign-key (warm cache, median of 3): {offline:.3} s; with --tlog {logged:.3} s; \
         ratio {:.3}",
        logged / offline
    );
    // One entry each (each build's ISO records the binaries' inclusion proofs, which grow with
    // the log: each ISO is new to it).
    assert_eq!(entries_posted(rekor), 3, "{:?}", rekor.requests());
    runs
}

/// The bundle beside `iso` holds one hashedrekord entry with its promise and proof, the very
/// entry the world's Rekor serves under its UUID.
fn assert_bundle_holds_the_served_entry(world: &World, iso: &Path) {
    let bundle = bundle_json(iso);
    let size = |suffix| fs::metadata(beside(iso, suffix)).unwrap().len();
    eprintln!(
        "bundle with its entry: {} bytes (the .sig: {} bytes)",
        size(".sigstore.json"),
        size(".sig")
    );
    let material = &bundle["verificationMaterial"];
    assert!(material["certificate"].is_null() && material["publicKey"]["hint"].is_string());
    let entries = material["tlogEntries"].as_array().unwrap();
    let [entry] = entries.as_slice() else {
        panic!("{bundle:#}")
    };
    assert_eq!(entry["kindVersion"]["kind"], "hashedrekord");
    assert!(entry["inclusionPromise"]["signedEntryTimestamp"].is_string());
    assert!(entry["inclusionProof"]["checkpoint"]["envelope"].is_string());
    let from_log = served(&world.rekor().url(), &uuid_of(entry));
    assert_eq!(from_log["body"], entry["canonicalizedBody"], "{from_log:#}");
    assert_eq!(
        from_log["logIndex"].to_string(),
        entry["logIndex"].as_str().unwrap()
    );
}

/// openssl accepts the `.sig`, sigstore-python the entry, and `verify` both, with the log's time.
fn assert_readers_accept(dir: &Path, iso: &Path, public: &Path, root: &Path) {
    let sig = base64::engine::general_purpose::STANDARD
        .decode(fs::read_to_string(beside(iso, ".sig")).unwrap().trim())
        .unwrap();
    let der = dir.join("iso.sig.der");
    fs::write(&der, sig).unwrap();
    ok(Command::new("openssl")
        .args([
            "dgst",
            "-sha256",
            "-verify",
            p(public),
            "-signature",
            p(&der),
        ])
        .arg(iso)
        .output()
        .unwrap());
    let bundle_path = beside(iso, ".sigstore.json");
    let (yes, said) = python_accepts(&bundle_path, root, iso, public);
    assert!(yes, "sigstore-python refuses the entry:\n{said}");
    let (code, said) = verify_key(iso, public, root);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("signed by the key sha256:") && said.contains(", at 20"),
        "{said}"
    );
}

/// `diff` names the signer of both ISOs, verified, with the log's time.
fn assert_diff_names_both_signers(a: &Path, b: &Path, public: &Path, root: &Path) {
    let o = cks_iso()
        .args(["diff", p(a), p(b), "--json", "--key", p(public)])
        .args(["--signer-trusted-root", p(root)])
        .output()
        .unwrap();
    let doc: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", combined(&o)));
    for side in ["a", "b"] {
        let signature = &doc[side]["signature"];
        assert_eq!(signature["status"], "verified", "{doc:#}");
        assert!(
            signature["time"]
                .as_str()
                .is_some_and(|t| t.starts_with("20")),
            "{doc:#}"
        );
    }
}

/// `--tlog` with `--offline`: a usage error before anything is fetched.
fn assert_tlog_offline_is_a_usage_error(world: &World, dir: &Path, key: &Path) {
    let mut args = vec![
        "--kubernetes",
        world.kubernetes(),
        "--offline",
        "--sign-key",
        p(key),
    ];
    args.extend([
        "--network",
        world.network_url(),
        "--dashboard",
        world.dashboard_url(),
    ]);
    args.extend(["--tlog", "--output", "offline"]);
    let o = build_in_world(world, dir, &args);
    let said = combined(&o);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(
        said.contains("--tlog enters each signature in Rekor, and --offline forbids"),
        "{said}"
    );
}

#[test]
fn build_sign_key_tlog_logs_the_signature_and_verify_proves_the_entry() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = openssl_keys(dir.path(), "iso");
    let builds = Builds {
        world: &world,
        dir: dir.path(),
    };
    let runs = time_key_and_tlog_builds(&builds, &key);
    let said = stderr(&runs[2].0);
    assert!(said.contains("logged at index"), "{said}");
    let iso = only_iso(&runs[2].1);
    assert_bundle_holds_the_served_entry(&world, &iso);
    let root = world.trusted_root_path();
    assert_readers_accept(dir.path(), &iso, &public, root);
    assert_diff_names_both_signers(&only_iso(&runs[1].1), &iso, &public, root);
    assert_tlog_offline_is_a_usage_error(&world, dir.path(), &key);
}

/// A Rekor with the world's Sigstore behind it, and nothing else: what `sign --tlog` needs.
struct Log {
    sigstore: Arc<Sigstore>,
    rekor: RekorServer,
}

impl Log {
    fn start() -> Self {
        let sigstore = Arc::new(Sigstore::generate());
        let rekor = RekorServer::start();
        rekor.accept_entries(sigstore.clone());
        Self { sigstore, rekor }
    }
}

fn sign(iso: &Path, key: &Path, extra: &[&str]) -> Command {
    let mut cmd = cks_iso();
    cmd.args(["sign", p(iso), "--key", p(key)]).args(extra);
    cmd
}

const ADD: &str = "addKubernetesSupportedVersion";

/// `register ISO --key PUB --signer-trusted-root ROOT` at `cloud`: its exit code, what it said,
/// and whether an add was sent.
fn register(
    cloud: &crate::support::cloud::Cloud,
    iso: &Path,
    public: &Path,
    root: &Path,
) -> (Option<i32>, String, bool) {
    let flags = ["--key", p(public), "--signer-trusted-root", p(root)];
    let o = cloud.register(&[iso], &flags).output().unwrap();
    let added = cloud.api.commands().iter().any(|c| c == ADD);
    (o.status.code(), combined(&o), added)
}

/// Without `--tlog` no Rekor is asked, even one named, and the bundle carries no entry.
fn assert_no_tlog_asks_no_rekor(log: &Log, iso: &Path, key: &Path, rekor: &[&str]) {
    ok(sign(iso, key, rekor).output().unwrap());
    assert!(
        log.rekor.requests().is_empty(),
        "{:?}",
        log.rekor.requests()
    );
    let entries = &bundle_json(iso)["verificationMaterial"]["tlogEntries"];
    assert_eq!(entries, &Value::Array(vec![]));
}

/// With `--tlog` and no Rekor to reach: refused naming it, nothing written beside the file.
fn assert_an_unreachable_rekor_leaves_nothing(dir: &Path, key: &Path) {
    let bare = dir.join("c.iso");
    fs::write(&bare, b"a third ISO").unwrap();
    let said = fails(
        &mut sign(&bare, key, &["--tlog", "--rekor-url", "http://127.0.0.1:9"]),
        1,
        &[
            "Rekor at http://127.0.0.1:9",
            "could not be asked",
            "hint: check that Rekor",
        ],
    );
    for suffix in [".sig", ".sigstore.json"] {
        assert!(!beside(&bare, suffix).exists(), "{said}");
    }
}

/// With `--tlog`: `iso`, `other`, then `iso` again logged; the third is the same signature, so
/// Rekor answers 409 naming the entry, which is fetched and bundled.
fn sign_logged(log: &Log, (iso, other): (&Path, &Path), key: &Path, tlog: &[&str]) {
    for file in [iso, other, iso] {
        let o = ok(sign(file, key, tlog).output().unwrap());
        assert!(stderr(&o).contains("logged at index"), "{}", combined(&o));
    }
    assert_eq!(entries_posted(&log.rekor), 3);
    let uuid = uuid_of(&bundle_json(iso)["verificationMaterial"]["tlogEntries"][0]);
    let fetched = format!("GET /api/v1/log/entries/{uuid}");
    assert!(
        log.rekor.requests().contains(&fetched),
        "{:?}",
        log.rekor.requests()
    );
}

/// The entry of `other` spliced into `iso`'s bundle: the signature still verifies under the key,
/// the entry logs another hash; `register` and sigstore-python refuse it.
fn assert_a_spliced_entry_is_refused(
    cloud: &crate::support::cloud::Cloud,
    (iso, other): (&Path, &Path),
    public: &Path,
    root: &Path,
) {
    let bundle = beside(iso, ".sigstore.json");
    let mut spliced = bundle_json(iso);
    spliced["verificationMaterial"]["tlogEntries"] =
        bundle_json(other)["verificationMaterial"]["tlogEntries"].clone();
    fs::write(&bundle, spliced.to_string()).unwrap();
    let (code, said, added) = register(cloud, iso, public, root);
    assert_eq!((code, added), (Some(1), false), "{said}");
    let digest = crate::support::cloud::sha256_of(other);
    assert!(said.contains("fails the Rekor entry check"), "{said}");
    assert!(
        said.contains(&format!("the entry logs sha256:{digest}")),
        "{said}"
    );
    let (yes, said) = python_accepts(&bundle, root, iso, public);
    assert!(!yes && said.contains("another hash"), "{said}");
}

#[test]
fn a_logged_key_bundle_is_refused_for_a_foreign_log_or_another_hash_and_offline_stays_offline() {
    use crate::support::cloud::{Cloud, small_iso};
    let log = Log::start();
    let cloud = Cloud::start(cks_iso_testworld::cloudstack::Options::default());
    let dir = cloud.dir.path();
    let (key, public) = openssl_keys(dir, "iso");
    let root = dir.join("root.json");
    fs::write(&root, log.sigstore.trusted_root()).unwrap();
    let iso = cloud.publish(&small_iso(
        dir,
        "setup-v1.33.1-x86_64.iso",
        "1.33.1",
        "amd64",
        6,
    ));
    let other = small_iso(dir, "other.iso", "1.33.1", "amd64", 7);
    let rekor = ["--rekor-url", &log.rekor.url(), "--trusted-root", p(&root)];
    let tlog = [&["--tlog"][..], &rekor[..]].concat();
    assert_no_tlog_asks_no_rekor(&log, &iso, &key, &rekor);
    assert_an_unreachable_rekor_leaves_nothing(dir, &key);
    sign_logged(&log, (&iso, &other), &key, &tlog);
    let bundle = beside(&iso, ".sigstore.json");
    let (yes, said) = python_accepts(&bundle, &root, &iso, &public);
    assert!(yes, "{said}");

    // The trusted root of another Sigstore: the log is not one of its logs.
    let stranger = dir.join("stranger.json");
    fs::write(&stranger, Sigstore::generate().trusted_root()).unwrap();
    let (code, said, added) = register(&cloud, &iso, &public, &stranger);
    assert_eq!((code, added), (Some(1), false), "{said}");
    assert!(
        said.contains("is not a transparency log of the trusted root"),
        "{said}"
    );
    let (yes, _) = python_accepts(&bundle, &stranger, &iso, &public);
    assert!(
        !yes,
        "sigstore-python accepts an entry of a log its root does not name"
    );

    let good = fs::read(&bundle).unwrap();
    assert_a_spliced_entry_is_refused(&cloud, (&iso, &other), &public, &root);
    // The bundle as signed, with the root of its log: registered, signed at the log's time.
    fs::write(&bundle, good).unwrap();
    let (code, said, added) = register(&cloud, &iso, &public, &root);
    assert_eq!((code, added), (Some(0), true), "{said}");
    assert!(
        said.contains("signed by the key sha256:") && said.contains(", at 20"),
        "{said}"
    );
}

fn only_iso(dir: &Path) -> PathBuf {
    let isos: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "iso"))
        .collect();
    let [iso] = isos.as_slice() else {
        panic!("{isos:?}")
    };
    iso.clone()
}
