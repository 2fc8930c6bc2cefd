//! `cks-iso verify-bundle` with dl.k8s.io's form of a signature, a `.sig` and a `.cert` beside
//! the file, whose Rekor entry is looked up in the test world's Rekor the way `build` does
//! (and taken from the cache with `--offline`); the built-in Kubernetes rule; the digest form;
//! and the command line's usage errors. Bundles made by the real Sigstore are judged in
//! `tests/it/signatures/conformance.rs`.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support::{cks_iso, open_tempdir};
use cks_iso_testworld::rekor::RekorServer;
use cks_iso_testworld::sigstore::{GOOGLE_ISSUER, K8S_BINARY_IDENTITY, SignOptions, Sigstore};
use sha2::{Digest as _, Sha256};

/// A file signed by `opts`'s signer and logged in `rekor`, written with its `.sig`, `.cert` and
/// the world's trusted root into `dir`.
fn signed_file(dir: &Path, store: &Sigstore, rekor: &RekorServer, opts: &SignOptions) -> String {
    let file = b"#!/bin/sh\necho kubeadm\n".repeat(100);
    let digest = hex::encode(Sha256::digest(&file));
    let blob = store.sign_blob(&file, rekor.next_index(), None, opts);
    fs::write(dir.join("kubeadm.sig"), &blob.sig).unwrap();
    fs::write(dir.join("kubeadm.cert"), &blob.cert).unwrap();
    rekor.add(store, blob, &digest);
    fs::write(dir.join("kubeadm"), &file).unwrap();
    fs::write(dir.join("root.json"), store.trusted_root()).unwrap();
    digest
}

fn verify_pair(dir: &Path, rekor: &str, args: &[&str], artifact: &str) -> Output {
    cks_iso()
        .current_dir(dir)
        .args([
            "verify-bundle",
            "--signature",
            "kubeadm.sig",
            "--certificate",
            "kubeadm.cert",
        ])
        .args(["--trusted-root", "root.json", "--rekor-url", rekor])
        .args(["--cache-dir", "cache"])
        .args(args)
        .arg(artifact)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}stderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn binary_signer() -> SignOptions {
    SignOptions {
        identity: K8S_BINARY_IDENTITY.into(),
        ..SignOptions::default()
    }
}

#[test]
fn a_sig_and_cert_verify_through_rekor_then_offline_from_the_cache() {
    let dir = open_tempdir();
    let store = Sigstore::generate();
    let rekor = RekorServer::start();
    let digest = signed_file(dir.path(), &store, &rekor, &binary_signer());
    let identity = ["--certificate-identity", K8S_BINARY_IDENTITY];
    let issuer = ["--certificate-oidc-issuer", GOOGLE_ISSUER];
    let flags = [identity, issuer].concat();
    let out = verify_pair(dir.path(), &rekor.url(), &flags, "kubeadm");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("sha256:{digest}")), "{stdout}");
    assert!(stdout.contains(K8S_BINARY_IDENTITY), "{stdout}");
    // The same by its digest.
    let by_digest = format!("sha256:{digest}");
    let out = verify_pair(dir.path(), &rekor.url(), &flags, &by_digest);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Rekor gone: --offline takes the entry the cache kept; a fresh cache has none.
    let url = rekor.url();
    drop(rekor);
    let offline = [flags.as_slice(), &["--offline"]].concat();
    let out = verify_pair(dir.path(), &url, &offline, "kubeadm");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    fs::remove_dir_all(dir.path().join("cache")).unwrap();
    let out = verify_pair(dir.path(), &url, &offline, "kubeadm");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("offline"), "{}", text(&out));
}

#[test]
fn the_kubernetes_rule_accepts_krel_staging_only() {
    let dir = open_tempdir();
    let store = Sigstore::generate();
    let rekor = RekorServer::start();
    signed_file(dir.path(), &store, &rekor, &binary_signer());
    let out = verify_pair(
        dir.path(),
        &rekor.url(),
        &["--kubernetes-binary"],
        "kubeadm",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Signed by someone else: the identity check names both.
    let other = open_tempdir();
    let mallory = SignOptions {
        identity: "mallory@example.com".into(),
        ..SignOptions::default()
    };
    signed_file(other.path(), &store, &rekor, &mallory);
    let out = verify_pair(
        other.path(),
        &rekor.url(),
        &["--kubernetes-binary"],
        "kubeadm",
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = text(&out);
    assert!(err.contains("fails the identity check"), "{err}");
    assert!(err.contains("mallory@example.com"), "{err}");
    assert!(err.contains(K8S_BINARY_IDENTITY), "{err}");
    assert!(
        err.contains("hint: it is signed, but not by the signer given"),
        "{err}"
    );
    assert!(
        !err.contains("ISO"),
        "a hint for build, not for this command: {err}"
    );
}

#[test]
fn a_file_rekor_never_logged_is_refused_naming_rekor() {
    let dir = open_tempdir();
    let store = Sigstore::generate();
    let rekor = RekorServer::start();
    signed_file(dir.path(), &store, &rekor, &binary_signer());
    fs::write(dir.path().join("kubeadm"), b"another file").unwrap();
    let out = verify_pair(
        dir.path(),
        &rekor.url(),
        &["--kubernetes-binary"],
        "kubeadm",
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("has no entry that logs"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains(&rekor.url()), "{}", text(&out));
}

/// The entry is found by one search of Rekor for this file, signature and certificate (as
/// cosign finds it), whatever Rekor's index by hash lists: here a UUID the log does not serve
/// (answered 404, which failed the lookup when the index was followed) and a hundred entries of
/// other files logged under this file's hash (each fetched in turn when the index was followed),
/// before the real one.
#[test]
fn the_entry_is_one_search_away_whatever_the_index_lists() {
    let dir = open_tempdir();
    let store = Sigstore::generate();
    let rekor = RekorServer::start();
    let file = b"#!/bin/sh\necho kubeadm\n".repeat(100);
    let digest = hex::encode(Sha256::digest(&file));
    rekor.index(&digest, &"ab".repeat(32));
    for i in 0..100u32 {
        let other = format!("decoy {i}").into_bytes();
        let blob = store.sign_blob(&other, rekor.next_index(), None, &binary_signer());
        rekor.add(&store, blob, &digest);
    }
    let blob = store.sign_blob(&file, rekor.next_index(), None, &binary_signer());
    fs::write(dir.path().join("kubeadm.sig"), &blob.sig).unwrap();
    fs::write(dir.path().join("kubeadm.cert"), &blob.cert).unwrap();
    rekor.add(&store, blob, &digest);
    fs::write(dir.path().join("kubeadm"), &file).unwrap();
    fs::write(dir.path().join("root.json"), store.trusted_root()).unwrap();
    let out = verify_pair(
        dir.path(),
        &rekor.url(),
        &["--kubernetes-binary"],
        "kubeadm",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        rekor.requests(),
        ["POST /api/v1/log/entries/retrieve"],
        "{}",
        text(&out)
    );
}

/// An answer larger than any real one (a padded entry: a hostile or broken log) is refused at
/// the cap, naming it, not read whole.
#[test]
fn an_oversized_rekor_answer_is_refused_at_the_cap() {
    let dir = open_tempdir();
    let store = Sigstore::generate();
    let rekor = RekorServer::start();
    signed_file(dir.path(), &store, &rekor, &binary_signer());
    rekor.pad(200 << 10);
    let out = verify_pair(
        dir.path(),
        &rekor.url(),
        &["--kubernetes-binary"],
        "kubeadm",
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("cannot look the signature up in Rekor"),
        "{said}"
    );
    assert!(said.contains("larger than 128"), "{said}");
    assert!(said.contains("/api/v1/log/entries/retrieve"), "{said}");
}

#[test]
fn usage_errors_exit_2_and_say_what_is_missing() {
    let dir = open_tempdir();
    fs::write(dir.path().join("a.txt"), b"a").unwrap();
    let cases: &[(&[&str], &str)] = &[
        // Neither material nor signer.
        (&["a.txt"], "--bundle"),
        // A bundle but no signer.
        (&["--bundle", "b.json", "a.txt"], "--certificate-identity"),
        // Both forms of material.
        (
            &[
                "--bundle",
                "b.json",
                "--signature",
                "s",
                "--certificate",
                "c",
                "--kubernetes-binary",
                "a.txt",
            ],
            "--signature",
        ),
        // A signer given twice over.
        (
            &[
                "--bundle",
                "b.json",
                "--kubernetes-binary",
                "--certificate-identity",
                "x",
                "a.txt",
            ],
            "--certificate-identity",
        ),
        // A missing artifact.
        (
            &["--bundle", "b.json", "--kubernetes-binary", "missing.txt"],
            "missing.txt",
        ),
    ];
    for (args, named) in cases {
        let out = cks_iso()
            .current_dir(dir.path())
            .arg("verify-bundle")
            .args(*args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(named), "{args:?}: {}", text(&out));
    }
}

/// Without `--trusted-root`, the configuration file's `trusted-root:` is the root verified
/// against, as its `--help` says and as `build` does; with neither, the embedded public-good
/// root, which never signed the test world's file.
#[test]
fn the_configuration_file_names_the_trusted_root_when_the_flag_does_not() {
    let dir = open_tempdir();
    let store = Sigstore::generate();
    let rekor = RekorServer::start();
    signed_file(dir.path(), &store, &rekor, &binary_signer());
    fs::write(dir.path().join("config.yaml"), "trusted-root: root.json\n").unwrap();
    let run = |config: bool| {
        let mut cmd = cks_iso();
        cmd.current_dir(dir.path()).args([
            "verify-bundle",
            "--signature",
            "kubeadm.sig",
            "--certificate",
            "kubeadm.cert",
            "--kubernetes-binary",
            "--rekor-url",
            &rekor.url(),
            "--cache-dir",
            "cache",
        ]);
        if config {
            cmd.args(["--config", "config.yaml"]);
        }
        cmd.arg("kubeadm").output().unwrap()
    };
    let out = run(true);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = run(false);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}
