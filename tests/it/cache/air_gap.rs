//! The whole air-gap trip in the local world: an online build writes its lock, the cache is
//! exported for it and imported into an empty cache, every server stops, and `build --locked
//! --offline` from that cache makes the same ISO byte for byte. On the way, a corrupt blob removed
//! by `verify --fix` is fetched again by the next build.

use std::fs;
use std::path::{Path, PathBuf};

use super::common::{cache_cmd, contents, ls_json, text};
use crate::support::{cks_iso, ok, p};
use cks_iso::cache::Cache;
use cks_iso::image::Digest;
use cks_iso_testworld::world::{Options, World};

/// The online build of the world's release (amd64) into `at("online")` with `at("cache")`,
/// writing the lock `at("cks-iso.lock")`.
fn build_online(world: &World, at: &dyn Fn(&str) -> PathBuf) {
    ok(cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .env("TMPDIR", at("tmp"))
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args([
            "build",
            "--arch",
            "amd64",
            "--kubernetes",
            world.kubernetes(),
        ])
        .args([
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
        ])
        .args(["--headlamp", world.headlamp_url()])
        .args(["--output", p(&at("online")), "--cache-dir", p(&at("cache"))])
        .args(["--lock-file", p(&at("cks-iso.lock"))])
        .output()
        .unwrap());
}

/// `cache export` for the lock, then `cache import` of it into `at("carried")`: the carried
/// cache holds what the export holds, and misses nothing the lock needs.
fn carry_the_cache(at: &dyn Fn(&str) -> PathBuf, lock: &Path) {
    ok(cache_cmd(
        &at("cache"),
        &["export", "--locked", p(lock), "-o", p(&at("export"))],
    ));
    ok(cache_cmd(
        &at("carried"),
        &["import", p(&at("export")), "--locked", p(lock)],
    ));
    assert_eq!(contents(&at("carried")), contents(&at("export")));
    let listed = ls_json(&at("carried"), lock);
    assert_eq!(listed["locks"][0]["missing"], 0, "{listed:#}");
}

/// A flipped byte in the biggest blob of `cache`: verify names it, `--fix` removes it. The blob.
fn corrupt_and_fix_the_biggest_blob(cache: &Path) -> Digest {
    let (blobs, _) = Cache::new(cache).blob_files().unwrap();
    let biggest = blobs.iter().max_by_key(|b| b.size).unwrap().digest.clone();
    let path = cache.join("blobs/sha256").join(biggest.hex());
    let mut bytes = fs::read(&path).unwrap();
    bytes[7] ^= 0x20;
    fs::write(&path, bytes).unwrap();
    let out = cache_cmd(cache, &["verify"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains(&format!("corrupt {biggest}")));
    ok(cache_cmd(cache, &["verify", "--fix"]));
    assert!(!path.exists());
    biggest
}

/// The next locked build fetches the removed blob again, into `at("refetched")`.
fn rebuild_fetching_it_again(world: &World, at: &dyn Fn(&str) -> PathBuf, biggest: &Digest) {
    ok(cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .env("TMPDIR", at("tmp"))
        .args([
            "build",
            "--locked",
            p(&at("cks-iso.lock")),
            "--output",
            p(&at("refetched")),
        ])
        .args(["--cache-dir", p(&at("cache"))])
        .output()
        .unwrap());
    assert_eq!(
        Cache::new(at("cache")).rehash(biggest).unwrap().actual,
        *biggest
    );
}

/// With no world, the locked offline build from the carried cache and the world's trusted root
/// `root`, into `at("offline")`.
fn build_offline_from_the_carried_cache(at: &dyn Fn(&str) -> PathBuf, root: &Path) -> String {
    let out = ok(cks_iso()
        .env_remove("CKS_ISO_CONFIG")
        .env("TMPDIR", at("tmp"))
        .args(["build", "--locked", p(&at("cks-iso.lock")), "--offline"])
        .args(["--trusted-root", p(root)])
        .args([
            "--output",
            p(&at("offline")),
            "--cache-dir",
            p(&at("carried")),
        ])
        .output()
        .unwrap());
    text(&out.stderr)
}

/// The online, offline and refetched ISOs are one ISO, byte for byte, and nothing is left in
/// TMPDIR.
fn assert_one_iso_everywhere(at: &dyn Fn(&str) -> PathBuf, stderr: &str) {
    let isos = |dir: &str| -> Vec<String> {
        crate::support::names(&at(dir))
            .into_iter()
            .filter(|n| n.ends_with(".iso"))
            .collect()
    };
    assert_eq!(isos("online").len(), 1, "{stderr}");
    assert_eq!(isos("online"), isos("offline"));
    let name = &isos("online")[0];
    let (online, offline) = (at("online").join(name), at("offline").join(name));
    assert!(
        fs::read(&online).unwrap() == fs::read(&offline).unwrap(),
        "{name} differs between the online build and the offline one from the carried cache"
    );
    assert!(
        fs::read(&online).unwrap() == fs::read(at("refetched").join(name)).unwrap(),
        "{name} differs after the corrupt blob was fetched again"
    );
    assert!(
        crate::support::names(&at("tmp")).is_empty(),
        "nothing left behind"
    );
}

#[test]
fn a_cache_exported_for_a_build_rebuilds_it_offline_elsewhere() {
    let world = World::start(Options::default());
    let tmp = tempfile::tempdir().unwrap();
    let at = |rel: &str| tmp.path().join(rel);
    fs::create_dir_all(at("tmp")).unwrap();
    build_online(&world, &at);
    carry_the_cache(&at, &at("cks-iso.lock"));
    let biggest = corrupt_and_fix_the_biggest_blob(&at("cache"));
    rebuild_fetching_it_again(&world, &at, &biggest);
    // The world's Sigstore root, which its signatures chain to, outlives the world.
    let root = at("trusted_root.json");
    fs::copy(
        world.config_path().with_file_name("trusted_root.json"),
        &root,
    )
    .unwrap();
    drop(world);
    let stderr = build_offline_from_the_carried_cache(&at, &root);
    assert_one_iso_everywhere(&at, &stderr);
}
