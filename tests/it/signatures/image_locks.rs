//! Image signatures in the lock: the lock names each image's signature manifest, so a locked
//! rebuild (online, offline, or from an exported cache on another machine) after Kubernetes
//! signed an image again takes it by digest and makes the same ISO, while an unlocked build takes
//! the new signature; a lock naming a manifest the registry no longer has stops the build.
//! `--signatures off` is recorded as not checked, and `verify --signatures` says why an ISO has
//! no evidence to re-verify (built with `off`, or before binaries were checked).

use std::fs;
use std::path::Path;
use std::process::Command;

use super::common::{PAUSE, build, extract, fails_with, read_json, sha256_hex};
use crate::support::{cks_iso, ok, p, run, stderr};
use cks_iso_testworld::sigstore::SignOptions;
use cks_iso_testworld::world::{Options, World};

const AMD64: [&str; 2] = ["--arch", "amd64"];

/// The lock's entry for `reference` in linux/amd64.
fn locked_image<'a>(lock: &'a serde_json::Value, reference: &str) -> &'a serde_json::Value {
    lock["arches"]["amd64"]["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["reference"] == reference)
        .unwrap()
}

#[test]
fn image_signatures_are_locked_and_an_iso_without_evidence_says_why() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lock = d.join("run.lock");
    let with_lock = [&AMD64[..], &["--lock-file", p(&lock)]].concat();
    ok(build(&world, d, "out", &with_lock).output().unwrap());
    let iso_name = format!("setup-v{}-x86_64.iso", world.kubernetes());
    let tree = d.join("tree");
    extract(&d.join("out").join(&iso_name), &tree);
    let locked_sig = assert_signature_manifest_locked_by_its_tag(&lock, &tree);

    sign_pause_again(&world);
    let first = fs::read(d.join("out").join(&iso_name)).unwrap();
    assert_locked_rebuilds_are_identical(&world, d, &lock, &iso_name, &first);
    assert_an_unlocked_build_takes_the_new_signature(&world, d, &iso_name, &first, &locked_sig);
    assert_an_exported_cache_rebuilds_offline(&world, d, &lock, &iso_name, &first);
    assert_a_lost_signature_manifest_stops_the_build(&world, d, &lock, &locked_sig);

    let off_iso = build_with_signatures_off(&world, d, &iso_name);
    let said = verify_signatures_refuses(&world, &off_iso);
    assert!(
        said.contains("built with --signatures off") && said.contains("--signatures verify"),
        "{said}"
    );
    assert!(!said.contains("not reported"), "{said}");
    let said = verify_signatures_refuses(&world, &iso_without_binaries(d, &tree));
    assert!(
        said.contains("reports no binaries") && said.contains("k8s/kubeadm"),
        "{said}"
    );
    assert!(!said.contains("not reported"), "{said}");
}

/// Each verified image's signature manifest is locked, by the tag that held it, and the ISO
/// stores it under that digest. Returns the locked digest of pause's.
fn assert_signature_manifest_locked_by_its_tag(lock: &Path, tree: &Path) -> String {
    let first = read_json(lock);
    let pause = locked_image(&first, PAUSE).clone();
    let hex = pause["manifest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    assert_eq!(
        pause["signature"]["tag"],
        format!("sha256-{hex}.sig"),
        "{pause:#}"
    );
    let locked_sig = pause["signature"]["manifest"].as_str().unwrap().to_owned();
    assert!(
        locked_sig.starts_with("sha256:") && locked_sig.len() == 71,
        "{pause:#}"
    );
    let stored = fs::read(tree.join(format!(
        "signatures/images/{}.json",
        locked_sig.trim_start_matches("sha256:")
    )))
    .unwrap();
    assert_eq!(format!("sha256:{}", sha256_hex(&stored)), locked_sig);
    locked_sig
}

/// Kubernetes signs pause again: cosign moves every `.sig` tag to a new manifest.
fn sign_pause_again(world: &World) {
    let image = world.image(PAUSE);
    let mut digests = vec![image.digest.clone()];
    digests.extend(image.manifests.values().cloned());
    for digest in digests {
        let layer = world
            .sigstore()
            .sign(&image.repository, &digest, &SignOptions::default());
        world.push_signature(&image.repository, &digest, &[layer]);
    }
}

/// `--locked`, online and with an empty cache, takes the locked manifest by digest: the same
/// ISO byte for byte; so does `--locked --offline` from the first build's cache.
fn assert_locked_rebuilds_are_identical(
    world: &World,
    dir: &Path,
    lock: &Path,
    iso_name: &str,
    first: &[u8],
) {
    let again = tempfile::tempdir().unwrap();
    let out = ok(build(world, again.path(), "out", &["--locked", p(lock)])
        .output()
        .unwrap());
    let b = fs::read(again.path().join("out").join(iso_name)).unwrap();
    assert!(first == b, "the locked rebuild differs:\n{}", stderr(&out));
    let offline = ["--locked", p(lock), "--offline"];
    ok(build(world, dir, "offline", &offline).output().unwrap());
    let c = fs::read(dir.join("offline").join(iso_name)).unwrap();
    assert!(first == c, "the locked offline rebuild differs");
}

/// Without the lock the new signature is taken: other evidence, another ISO, another lock.
fn assert_an_unlocked_build_takes_the_new_signature(
    world: &World,
    dir: &Path,
    iso_name: &str,
    first: &[u8],
    locked_sig: &str,
) {
    let relock = dir.join("new.lock");
    let args = [&AMD64[..], &["--lock-file", p(&relock)]].concat();
    ok(build(world, dir, "new", &args).output().unwrap());
    let d = fs::read(dir.join("new").join(iso_name)).unwrap();
    assert!(first != d, "an unlocked build took the old signature");
    let renewed = read_json(&relock);
    let new_sig = &locked_image(&renewed, PAUSE)["signature"]["manifest"];
    assert_ne!(new_sig.as_str().unwrap(), locked_sig, "{renewed:#}");
}

/// `cache export --locked` carries the locked signature manifest, though the cache's record of
/// the tag now names the new one: another machine builds the same ISO offline from it.
fn assert_an_exported_cache_rebuilds_offline(
    world: &World,
    dir: &Path,
    lock: &Path,
    iso_name: &str,
    first: &[u8],
) {
    let export = dir.join("export");
    let cache = dir.join("cache");
    run(cks_iso()
        .args(["cache", "export", "--locked", p(lock), "-o", p(&export)])
        .args(["--cache-dir", p(&cache)]));
    let other = tempfile::tempdir().unwrap();
    let other_cache = other.path().join("cache");
    run(cks_iso().args([
        "cache",
        "import",
        p(&export),
        "--cache-dir",
        p(&other_cache),
    ]));
    let offline = ["--locked", p(lock), "--offline"];
    ok(build(world, other.path(), "out", &offline)
        .output()
        .unwrap());
    let e = fs::read(other.path().join("out").join(iso_name)).unwrap();
    assert!(
        first == e,
        "the offline rebuild from an exported cache differs"
    );
}

/// A lock naming a signature manifest the registry no longer has: the build stops; offline, a
/// cache without it says so.
fn assert_a_lost_signature_manifest_stops_the_build(
    world: &World,
    dir: &Path,
    lock: &Path,
    locked_sig: &str,
) {
    let gone = format!("sha256:{}", sha256_hex(b"never pushed"));
    let text = fs::read_to_string(lock).unwrap().replace(locked_sig, &gone);
    let bad_lock = dir.join("gone.lock");
    fs::write(&bad_lock, text).unwrap();
    let empty = tempfile::tempdir().unwrap();
    fails_with(
        world,
        empty.path(),
        &["--locked", p(&bad_lock)],
        &[PAUSE, &gone, "signed again since it was locked", "hint: "],
    );
    fails_with(
        world,
        dir,
        &["--locked", p(&bad_lock), "--offline"],
        &[PAUSE, &gone, "--offline", "cache export"],
    );
}

/// `--signatures off` is recorded as not checked (no evidence, versions.txt and both SBOMs say
/// so) and `verify` still passes. Returns the ISO.
fn build_with_signatures_off(world: &World, dir: &Path, iso_name: &str) -> std::path::PathBuf {
    let off = [&AMD64[..], &["--signatures", "off"]].concat();
    ok(build(world, dir, "off", &off).output().unwrap());
    let off_iso = dir.join("off").join(iso_name);
    let off_tree = dir.join("off-tree");
    extract(&off_iso, &off_tree);
    assert!(!off_tree.join("signatures").exists());
    let versions = fs::read_to_string(off_tree.join("versions.txt")).unwrap();
    assert!(
        versions.ends_with("# signatures off: not checked\n"),
        "{versions}"
    );
    let bom = read_json(&off_tree.join("sbom.cdx.json"));
    let noted = bom["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["bom-ref"] == "docker/pause:3.10.tar")
        .and_then(|c| c["properties"].as_array())
        .and_then(|ps| ps.iter().find(|p| p["name"] == "cks-iso:signature"))
        .map(|p| p["value"].as_str().unwrap().to_owned());
    assert_eq!(
        noted.as_deref(),
        Some("not checked (--signatures off)"),
        "{bom:#}"
    );
    let spdx = fs::read_to_string(off_tree.join("sbom.spdx.json")).unwrap();
    assert!(
        spdx.contains("signature not checked (--signatures off)"),
        "SPDX"
    );
    run(cks_iso().args(["verify", p(&off_iso)]));
    off_iso
}

/// `verify --signatures` of `iso` against the world's root exits 1; returns what it said.
fn verify_signatures_refuses(world: &World, iso: &Path) -> String {
    let out = cks_iso()
        .args(["verify", "--signatures", "--trusted-root"])
        .arg(world.trusted_root_path())
        .arg(iso)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An ISO whose report holds no binaries (built before binaries were checked), re-authored from
/// the extracted `tree`.
fn iso_without_binaries(dir: &Path, tree: &Path) -> std::path::PathBuf {
    let old = dir.join("old-tree");
    run(Command::new("cp").args(["-a", p(tree), p(&old)]));
    let mut report = read_json(&old.join("signatures/report.json"));
    report.as_object_mut().unwrap().remove("binaries");
    fs::write(
        old.join("signatures/report.json"),
        serde_json::to_vec_pretty(&report).unwrap(),
    )
    .unwrap();
    fs::remove_dir_all(old.join("signatures/binaries")).unwrap();
    let old_iso = dir.join("old.iso");
    run(cks_iso().args(["iso", p(&old), "-o", p(&old_iso)]));
    old_iso
}
