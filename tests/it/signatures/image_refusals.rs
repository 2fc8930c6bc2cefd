//! Image signatures refused: one world for the negative matrix, where each spoiled signature of
//! pause (another identity or issuer, a leaf of a CA the root does not name, a flipped SET, a
//! signature copied from etcd) fails the build with its own error before any ISO is written; an
//! unsigned image warned about under verify and refused under enforce, an index-only signature
//! accepted, a policy covering an unsigned image, `pull --signatures enforce`; and signature
//! fetches that a fault proxy spoils, retried and never taken corrupt.

use std::fs;
use std::path::Path;

use super::common::{GOOGLE, PAUSE, build, config_through, fails_with, isos, sha256_hex, spoil};
use crate::support::{cks_iso, image_entry, ok, p, signature_report, stderr};
use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
use cks_iso_testworld::sigstore::{IssuerForm, SignOptions};
use cks_iso_testworld::world::{Options, World};

const AMD64: [&str; 2] = ["--arch", "amd64"];
const ETCD: &str = "registry.k8s.io/etcd:3.5.21-0";

#[test]
fn bad_or_missing_signatures_fail_the_build_before_writing() {
    let world = World::start(Options {
        unsigned: vec![PAUSE.into()],
        ..Options::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let enforce = [&AMD64[..], &["--signatures", "enforce"]].concat();
    assert_unsigned_warned_then_refused_under_enforce(&world, d, &enforce);
    assert_an_index_signature_is_accepted(&world, d, &enforce);
    assert_each_spoiled_signature_fails_naming_its_check(&world, d);
    assert_a_signature_copied_from_etcd_fails(&world, d);

    // Signed properly again: the same world builds.
    spoil(&world, &SignOptions::default(), None);
    ok(build(&world, d, "good", &enforce).output().unwrap());

    // A policy file covering an image nobody signed: enforce refuses it by name, after `pull`
    // refused a spoiled image.
    let other = world
        .images()
        .iter()
        .find(|i| i.source == "network")
        .expect("the CNI manifest names images");
    let policy = d.join("policy.yaml");
    fs::write(
        &policy,
        format!(
            "rules:\n  - match: \"{}\"\n    identity: release@cni.example\n    issuer: {GOOGLE}\n",
            other.repository
        ),
    )
    .unwrap();
    let with_policy = [&enforce[..], &["--signature-policy", p(&policy)]].concat();
    assert_pull_writes_only_the_good_image(&world, d);
    fails_with(
        &world,
        d,
        &with_policy,
        &[&other.repository, "no signature"],
    );
}

/// Unsigned: a loud warning under verify (and recorded), an error under enforce.
fn assert_unsigned_warned_then_refused_under_enforce(world: &World, dir: &Path, enforce: &[&str]) {
    let out = ok(build(world, dir, "out", &AMD64).output().unwrap());
    assert!(
        stderr(&out).contains(&format!("{PAUSE}: UNSIGNED")),
        "{}",
        stderr(&out)
    );
    fails_with(world, dir, enforce, &[PAUSE, "no signature", "enforce"]);
}

/// Only the index signed (as before recursive signing, 2023): accepted through the index.
fn assert_an_index_signature_is_accepted(world: &World, dir: &Path, enforce: &[&str]) {
    let image = world.image(PAUSE);
    let layer = world
        .sigstore()
        .sign(&image.repository, &image.digest, &SignOptions::default());
    world.push_signature(&image.repository, &image.digest, &[layer]);
    let out = ok(build(world, dir, "index", enforce).output().unwrap());
    let iso = dir.join(format!("index/setup-v{}-x86_64.iso", world.kubernetes()));
    let report = signature_report(&iso, &dir.join("tree-index"));
    let entry = image_entry(&report, PAUSE);
    assert_eq!(entry["verdict"], "verified", "{}", stderr(&out));
    assert_eq!(entry["signed_digest"], image.digest.as_str(), "{entry:#}");
}

/// The spoiled signatures of the matrix, with the words each failure must say.
fn spoiled_cases() -> Vec<(&'static str, SignOptions, Vec<&'static str>)> {
    let actions = "https://token.actions.githubusercontent.com";
    vec![
        (
            "wrong identity",
            SignOptions {
                identity: "mallory@example.com".into(),
                ..SignOptions::default()
            },
            vec!["fails the identity check", "mallory@example.com"],
        ),
        (
            "wrong issuer (.1.8)",
            SignOptions {
                issuer: actions.into(),
                issuer_form: IssuerForm::V2,
                ..SignOptions::default()
            },
            vec!["fails the issuer check", "token.actions"],
        ),
        (
            "wrong issuer (.1.1)",
            SignOptions {
                issuer: actions.into(),
                issuer_form: IssuerForm::V1,
                ..SignOptions::default()
            },
            vec!["fails the issuer check", "token.actions"],
        ),
        (
            "leaf from a CA not in the root",
            SignOptions {
                rogue_ca: true,
                ..SignOptions::default()
            },
            vec![
                "fails the certificate chain check",
                "not issued by a CA of the trusted root",
            ],
        ),
        (
            "flipped bit in the SET",
            SignOptions {
                flip_set: true,
                ..SignOptions::default()
            },
            vec!["fails the Rekor signed entry timestamp check"],
        ),
    ]
}

/// Each spoiled signature fails the build naming its check, pause and its amd64 manifest.
fn assert_each_spoiled_signature_fails_naming_its_check(world: &World, dir: &Path) {
    let pause = world.image(PAUSE).manifests["amd64"].clone();
    for (what, opts, mut wanted) in spoiled_cases() {
        spoil(world, &opts, None);
        wanted.extend([PAUSE, pause.as_str()]);
        eprintln!("case: {what}");
        fails_with(world, dir, &AMD64, &wanted);
    }
}

/// A valid signature of etcd, copied to pause's tags, fails the signed digest check.
fn assert_a_signature_copied_from_etcd_fails(world: &World, dir: &Path) {
    let etcd = world.image(ETCD);
    spoil(
        world,
        &SignOptions::default(),
        Some((&etcd.repository, &etcd.digest)),
    );
    fails_with(
        world,
        dir,
        &AMD64,
        &[
            "fails the signed digest check",
            "copied from another image",
            &etcd.digest,
        ],
    );
}

/// `pull` checks too when asked: pause, signed by mallory, is named and not written; etcd is.
fn assert_pull_writes_only_the_good_image(world: &World, dir: &Path) {
    spoil(
        world,
        &SignOptions {
            identity: "mallory@example.com".into(),
            ..SignOptions::default()
        },
        None,
    );
    let pulled = dir.join("pulled");
    let out = cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .args(["pull", PAUSE, ETCD, "--arch", "amd64"])
        .args(["--signatures", "enforce", "--out", p(&pulled)])
        .args(["--cache-dir", p(&dir.join("cache"))])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("fails the identity check"), "{err}");
    let written: Vec<String> = fs::read_dir(&pulled)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written, ["etcd:3.5.21-0.tar"], "{err}");
}

#[test]
fn signature_fetches_are_retried_and_never_accepted_corrupt() {
    let world = World::start(Options::default());
    let proxy = FaultProxy::start(&world.registry_url());
    let dir = tempfile::tempdir().unwrap();
    let config = config_through(&world, &proxy, dir.path());
    // pause's signatures again, with a payload whose digest the test knows.
    let image = world.image(PAUSE);
    let platform = image.manifests["amd64"].clone();
    let layer = world
        .sigstore()
        .sign(&image.repository, &platform, &SignOptions::default());
    world.push_signature(&image.repository, &platform, std::slice::from_ref(&layer));
    let payload = format!("sha256:{}", sha256_hex(&layer.payload));
    let tag = format!("/manifests/{}.sig", platform.replace(':', "-"));
    let run = |out: &str, args: &[&str]| {
        build(&world, dir.path(), out, args)
            .env("CKS_ISO_CONFIG", &config)
            .output()
            .unwrap()
    };

    // 503s on the .sig tag and the payload: retried, then verified.
    proxy.add(Rule::path_contains(&tag).times(2).fault(Fault::Status(503)));
    proxy.add(
        Rule::path_contains(&payload)
            .times(1)
            .fault(Fault::Status(503)),
    );
    ok(run(
        "out",
        &[&AMD64[..], &["--signatures", "enforce"]].concat(),
    ));
    assert!(proxy.requests_to(&tag).len() >= 3);

    // A payload that always arrives with a flipped byte is never taken.
    proxy.clear_rules();
    proxy.add(Rule::path_contains(&payload).fault(Fault::FlipByte { offset: 5 }));
    fs::remove_dir_all(dir.path().join("cache")).unwrap();
    let out = run("bad", &AMD64);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("signature payload") && err.contains(&payload),
        "{err}"
    );
    assert!(isos(&dir.path().join("bad")).is_empty());

    // The binaries' Rekor entries: a 503 is retried, a flipped byte in one is fetched again (with
    // its .sig and .cert), and the build verifies them.
    proxy.clear_rules();
    let rekor = FaultProxy::start(&world.rekor().url());
    let yaml = fs::read_to_string(&config)
        .unwrap()
        .replace(&world.rekor().url(), &rekor.url());
    fs::write(&config, yaml).unwrap();
    let entries = "/api/v1/log/entries/";
    rekor.add(
        Rule::path_contains(entries)
            .times(1)
            .fault(Fault::Status(503)),
    );
    rekor.add(
        Rule::path_contains(entries)
            .times(1)
            .fault(Fault::FlipByte { offset: 120 }),
    );
    let out = run("rekor", &AMD64);
    let err = stderr(&out);
    ok(out);
    assert!(err.contains("fetching its signature again"), "{err}");
    assert!(rekor.requests_to(entries).len() >= 5, "{err}");
}
