//! The messages a new user meets in the first hour: the likely cause first (a release
//! that was never published, a copy cut short), one error with all that is missing, a "did you
//! mean", plain reasons, counts that read right, and `format` in every `--json`.

use std::fs;

use cks_iso_testworld::world::{Options, World};

use super::{fails, hint, report};
use crate::support::*;

/// `cks-iso resolve ARGS…` inside `world`.
fn resolve_in(world: &World, args: &[&str], code: i32) -> String {
    let config = p(world.config_path()).to_owned();
    let mut all = vec!["resolve", "--retries", "1"];
    all.extend_from_slice(args);
    fails(&all, &[("CKS_ISO_CONFIG", config.as_str())], code)
}

#[test]
fn a_release_that_was_never_published_is_named_so_with_the_nearest_that_exist() {
    let world = World::start(Options::default());
    // A patch past the newest of its minor: kubeadm's constants answer 404 at its tag.
    let err = resolve_in(&world, &["--kubernetes", "1.33.99"], 2);
    let lines = report(&err);
    assert!(
        lines[0].starts_with(
            "error: Kubernetes v1.33.99 is not a published release; the nearest that exist: \
             v1.33.1 (stable-1.33)"
        ),
        "{err}"
    );
    // The evidence follows as a cause; the hint names a release that exists, before mirrors.
    assert!(err.contains("caused by:") && err.contains("404"), "{err}");
    let h = hint(&lines);
    assert!(
        h.starts_with(
            "hint: pass a published release, e.g. --kubernetes 1.33.1 (or the label stable-1.33)"
        ),
        "{h}"
    );
    // A minor that does not exist: not the autoscaler's error, and no value that fails next.
    let err = resolve_in(&world, &["--kubernetes", "1.99.0"], 2);
    let lines = report(&err);
    assert!(
        lines[0].starts_with(
            "error: Kubernetes v1.99.0 is not a published release; the nearest that exist: \
             v1.33.1 (stable)"
        ),
        "{err}"
    );
    assert!(!hint(&lines).contains("AUTOSCALER_VERSION"), "{err}");
    // `latest` alone: the labels the flag takes.
    let err = resolve_in(&world, &["--kubernetes", "latest"], 2);
    let h = hint(&report(&err)).to_owned();
    for label in [
        "stable",
        "stable-1.33",
        "1.33",
        "latest-1.33",
        "pre-release",
    ] {
        assert!(h.contains(label), "{label:?} not in {h}");
    }
    // Several --arch, as build takes them: one run per architecture.
    let err = resolve_in(
        &world,
        &[
            "--kubernetes",
            "1.33.1",
            "--arch",
            "amd64",
            "--arch",
            "arm64",
        ],
        2,
    );
    assert!(err.contains("--arch amd64 --arch arm64"), "{err}");
    assert!(
        hint(&report(&err)).starts_with("hint: run it once per architecture"),
        "{err}"
    );
    // `resolve --json` is versioned like every other --json.
    let out = cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .args(["resolve", "--kubernetes", "1.33.1", "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&ok(out).stdout).unwrap();
    assert_eq!(doc["format"], 1, "{doc:#}");
}

#[test]
fn a_truncated_iso_is_reported_once_with_the_copy_hint() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("sub")).unwrap();
    fs::write(src.join("sub/big"), noise(7, 1 << 20)).unwrap();
    let iso = dir.path().join("trunc.iso");
    let said = ok(cks_iso()
        .args(["iso", p(&src), "-o", p(&iso)])
        .output()
        .unwrap());
    // One file, one directory: the counts read right.
    let log = stderr(&said);
    assert!(log.contains("1 file, 1 directory"), "{log}");
    let bytes = fs::read(&iso).unwrap();
    fs::write(&iso, &bytes[..100 * 1024]).unwrap();
    let out = cks_iso().args(["verify", p(&iso)]).output().unwrap();
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{err}");
    assert_eq!(
        stdout.trim_end(),
        format!(
            "{}: a truncated copy: the volume declares {}, the file has 100.00 KiB",
            p(&iso),
            // What the volume declares: the whole image.
            humanish(bytes.len() as u64)
        ),
        "one line, the path once"
    );
    let lines = report(&err);
    assert_eq!(
        hint(&lines),
        "hint: the file is damaged or incomplete: copy the ISO again and check it against its \
         .sha256 (sha256sum -c ISO.sha256)"
    );
    assert_eq!(err.matches("hint:").count(), 1, "{err}");
}

/// `1.03 MiB`, as indicatif's HumanBytes writes sizes of a MiB and more.
fn humanish(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / 1024.0 / 1024.0)
}

#[test]
fn an_unknown_configuration_key_gets_a_did_you_mean_and_the_keys_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.yaml");
    fs::write(
        &config,
        "mirorrs:\n  https://github.com: http://127.0.0.1:1/g\n",
    )
    .unwrap();
    let err = fails(
        &["resolve", "--kubernetes", "1.33.1", "--config", p(&config)],
        &[],
        2,
    );
    let lines = report(&err);
    assert!(lines[0].contains("unknown key `mirorrs`"), "{err}");
    let h = hint(&lines);
    assert!(h.starts_with("hint: did you mean `mirrors`?"), "{h}");
    assert_eq!(
        err.matches("registry-mirrors").count(),
        1,
        "the keys once:\n{err}"
    );
}

#[test]
fn every_missing_build_flag_is_named_in_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = fails(&["build", "--output", p(dir.path())], &[], 2);
    assert!(
        report(&err)[0].contains(
            "--kubernetes, --network and --dashboard (or --headlamp-version) are required"
        ),
        "{err}"
    );
}

#[test]
fn a_file_that_is_neither_an_iso_nor_a_lock_says_what_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    fs::write(&notes, "a few words, not a lock\n").unwrap();
    let err = fails(&["diff", p(&notes), p(&notes)], &[], 2);
    assert!(
        err.contains("is neither a cks-iso lock nor an ISO 9660 image (it does not start with `{`"),
        "{err}"
    );
    assert!(!err.contains("pointer"), "{err}");
}

#[test]
fn a_missing_image_is_one_error_with_its_own_hint() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let image = format!("{}/nobody/nothing:1", world.registry_host());
    let config = p(world.config_path()).to_owned();
    let err = fails(
        &[
            "pull",
            &image,
            "--arch",
            "amd64",
            "--out",
            p(&dir.path().join("out")),
            "--cache-dir",
            p(&dir.path().join("cache")),
        ],
        &[("CKS_ISO_CONFIG", config.as_str())],
        1,
    );
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    assert_eq!(err.matches("hint:").count(), 1, "{err}");
    assert!(!err.contains("pull again"), "{err}");
}

#[test]
fn doctor_checks_the_trusted_root_and_rekor_and_words_a_404_root_as_reachable() {
    let world = World::start(Options::default());
    let out = cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .args(["doctor"])
        .output()
        .unwrap();
    let (stdout, err) = text(&out);
    assert!(
        stdout.contains("ok    trusted root: ") && stdout.contains("trusted_root.json parses"),
        "{stdout}{err}"
    );
    assert!(stdout.contains("rekor http://"), "{stdout}");
    assert!(
        !stdout
            .lines()
            .any(|l| l.starts_with("ok") && l.contains("(HTTP 404)")),
        "{stdout}"
    );
}
