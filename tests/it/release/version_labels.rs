//! Kubernetes version labels through the binary against the local world, whose dl.k8s.io serves
//! `release/stable-1.33.txt` and the others: `stable-1.33` (or `1.33`) builds the ISO its release
//! builds, byte for byte; the label is printed, recorded in the run's lock and never read again by
//! `--locked`; `--offline` reads it from the cache; `latest-1.34`, which names a release
//! candidate, is refused; `resolve` shows the label and its release.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// How often the world was asked for `path` (after its host; the origin answers a release
/// download with a redirect to its CDN).
fn served(world: &World, path: &str) -> usize {
    world
        .upstream()
        .served()
        .iter()
        .filter(|s| s.server == "origin" && s.path.ends_with(path))
        .count()
}

/// The release's amd64 ISO, as every build here names it.
const ISO: &str = "setup-v1.33.1-x86_64.iso";

/// `build --kubernetes KUBERNETES --output OUT` with the world's manifests, then `extra`.
fn build_release(
    world: &World,
    dir: &Path,
    out: &Path,
    kubernetes: &str,
    extra: &[&str],
) -> Output {
    let mut args = vec!["--kubernetes", kubernetes, "--output", p(out)];
    args.extend([
        "--network",
        world.network_url(),
        "--dashboard",
        world.dashboard_url(),
    ]);
    args.extend(extra);
    build_in_world(world, dir, &args)
}

/// `stable-1.33` builds what 1.33.1 builds, saying which release the label names on stderr and
/// stdout, and the lock `lock` records both.
fn assert_label_builds_its_release(world: &World, dir: &Path, lock: &Path) {
    let (plain, labelled) = (dir.join("plain"), dir.join("labelled"));
    ok(build_release(world, dir, &plain, "1.33.1", &[]));
    let out = ok(build_release(
        world,
        dir,
        &labelled,
        "stable-1.33",
        &["--lock-file", p(lock)],
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "stable-1.33 is Kubernetes v1.33.1 (https://dl.k8s.io/release/stable-1.33.txt)"
        ),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(kubernetes from stable-1.33)"), "{stdout}");
    assert!(
        same_bytes(&plain.join(ISO), &labelled.join(ISO)),
        "stable-1.33 and 1.33.1 build different ISOs"
    );
    let doc: serde_json::Value = serde_json::from_slice(&fs::read(lock).unwrap()).unwrap();
    assert_eq!(doc["request"]["kubernetes"], "1.33.1");
    assert_eq!(doc["request"]["kubernetes_label"], "stable-1.33");
}

/// A locked rebuild never reads the label again, and the label may be repeated; another label
/// contradicts the lock. How often the label was read.
fn assert_locked_rebuild_does_not_reread(world: &World, dir: &Path, lock: &Path) -> usize {
    let before = served(world, "/release/stable-1.33.txt");
    assert_eq!(before, 1);
    let again = dir.join("again");
    let args = [
        "--locked",
        p(lock),
        "--kubernetes",
        "stable-1.33",
        "--output",
        p(&again),
    ];
    ok(build_in_world(world, dir, &args));
    assert_eq!(served(world, "/release/stable-1.33.txt"), before);
    assert!(same_bytes(&dir.join("plain").join(ISO), &again.join(ISO)));
    let other = build_in_world(
        world,
        dir,
        &["--locked", p(lock), "--kubernetes", "stable-1.32"],
    );
    assert_eq!(
        other.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
    before
}

/// Offline, the label comes from the cache (`before` reads of it stay as they were); `1.33` is
/// `stable-1.33`. (Offline the autoscaler must be pinned, which the lock inside the ISO records.)
fn assert_offline_label_comes_from_the_cache(world: &World, dir: &Path, before: usize) {
    let (pinned, offline) = (dir.join("pinned"), dir.join("offline"));
    let autoscaler = world.autoscaler_version().unwrap().to_owned();
    ok(build_release(
        world,
        dir,
        &pinned,
        "1.33.1",
        &["--autoscaler-version", &autoscaler],
    ));
    ok(build_release(
        world,
        dir,
        &offline,
        "1.33",
        &["--offline", "--autoscaler-version", &autoscaler],
    ));
    assert!(same_bytes(&pinned.join(ISO), &offline.join(ISO)));
    assert_eq!(served(world, "/release/stable-1.33.txt"), before);
}

#[test]
fn stable_1_33_builds_the_iso_of_the_release_it_names_and_is_locked_not_reread() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("labelled.lock");
    assert_label_builds_its_release(&world, dir.path(), &lock);
    let before = assert_locked_rebuild_does_not_reread(&world, dir.path(), &lock);
    assert_offline_label_comes_from_the_cache(&world, dir.path(), before);
    // The positional form takes a label too and names the ISO after the release.
    let positional = dir.path().join("positional");
    ok(build_in_world(
        &world,
        dir.path(),
        &[
            p(&positional),
            "stable-1.33",
            "1.6.2",
            "1.33.0",
            world.network_url(),
            world.dashboard_url(),
            "setup-v1.33.1",
        ],
    ));
    assert!(same_bytes(
        &dir.path().join("plain").join(ISO),
        &positional.join(ISO)
    ));
}

#[test]
fn a_latest_label_that_names_a_release_candidate_fails_suggesting_stable() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let out = build_in_world(
        &world,
        dir.path(),
        &[
            "--kubernetes",
            "latest-1.34",
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
            "--output",
            p(&dir.path().join("out")),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for want in [
        "the label latest-1.34 names v1.34.0-rc.1, a pre-release",
        "hint: use stable-1.34",
    ] {
        assert!(err.contains(want), "{want:?} not in:\n{err}");
    }
    assert!(!dir.path().join("out").exists(), "no ISO, no output dir");
    // A final one is fine: latest-1.33 names v1.33.1.
    let resolve = cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .args(["resolve", "--kubernetes", "latest-1.33", "--json"])
        .output()
        .unwrap();
    assert!(
        resolve.status.success(),
        "{}",
        String::from_utf8_lossy(&resolve.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&resolve.stdout).unwrap();
    assert_eq!(doc["kubernetes"], "1.33.1");
    assert_eq!(doc["kubernetes_label"], "latest-1.33");
}

#[test]
fn resolve_shows_the_label_and_the_release_it_names() {
    let world = World::start(Options::default());
    let out = cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .args(["resolve", "--kubernetes", "stable"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(
            "v1.33.1 (amd64, x86_64), from stable (https://dl.k8s.io/release/stable.txt)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm"),
        "{stdout}"
    );
}
