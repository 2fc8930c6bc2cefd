//! Helpers the build suites that run `cks-iso build` in a whole world share (`e2e`, `bad_input`,
//! `rare_paths`): the command with its private TMPDIR, the usual flags, the work directories, a
//! configuration edited for one test, and the readers that judge what a build left.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;
use cks_iso_testworld::world::World;

/// `cks-iso build` inside `world`, with `tmp` as TMPDIR (to prove the work dir goes away).
pub fn build(world: &World, tmp: &Path, args: &[&str]) -> Command {
    let mut cmd = build_in(world.config_path(), tmp);
    cmd.args(args);
    cmd
}

/// The flags of a default build of the world's release into `out` with `cache`.
pub fn flags<'a>(world: &'a World, out: &'a str, cache: &'a str) -> Vec<&'a str> {
    vec![
        "--kubernetes",
        world.kubernetes(),
        "--network",
        world.network_url(),
        "--dashboard",
        world.dashboard_url(),
        "--headlamp",
        world.headlamp_url(),
        "--output",
        out,
        "--cache-dir",
        cache,
    ]
}

/// `out`, `cache` and `tmp` (the build's `TMPDIR`, created) under `dir`.
pub fn work_dirs(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    (dir.join("out"), dir.join("cache"), tmp)
}

/// The world's configuration with each line passed through `edit` (which returns the lines to
/// keep, newline-terminated), written to `dir/name` beside a copy of the world's Sigstore root,
/// which the configuration names relative to itself.
pub fn edited_config(
    world: &World,
    dir: &Path,
    name: &str,
    edit: impl Fn(&str) -> String,
) -> (PathBuf, String) {
    let yaml: String = world.config_yaml().lines().map(edit).collect();
    let config = dir.join(name);
    fs::write(&config, &yaml).unwrap();
    fs::copy(world.trusted_root_path(), dir.join("trusted_root.json")).unwrap();
    (config, yaml)
}

/// Image tags the cache's index recorded: one per image resolved at a registry. (Downloaded files
/// are kept in the cache too, verified, so counting blobs would not tell.)
pub fn images_resolved_into(cache: &Path) -> usize {
    let Ok(entries) = fs::read_dir(cache.join("index")) else {
        return 0;
    };
    entries
        .map(|e| fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .filter(|text| {
            text.lines()
                .nth(1)
                .is_some_and(|key| key.starts_with("tag:"))
        })
        .count()
}

/// Extracts an ISO with bsdtar, as an operator inspecting it would.
pub fn extract(iso: &Path, into: &Path) {
    fs::create_dir_all(into).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(into)]);
}

/// `cks-iso verify ISO` accepts the ISO.
pub fn assert_verify_accepts(iso: &Path) {
    let verify = cks_iso().args(["verify", p(iso)]).output().unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

/// The two ISOs of a default two-arch build of Kubernetes 1.33.1.
pub const ISOS: [&str; 2] = ["setup-v1.33.1-x86_64.iso", "setup-v1.33.1-aarch64.iso"];

/// `cks-iso build --no-progress` with `config` as the configuration and `tmp` as TMPDIR (no
/// epoch: the callers that want one set it).
pub fn build_with_config(config: &Path, tmp: &Path, args: &[&str]) -> Command {
    let mut cmd = cks_iso();
    cmd.env("CKS_ISO_CONFIG", config)
        .env("TMPDIR", tmp)
        .arg("build")
        .arg("--no-progress")
        .args(args);
    cmd
}

/// `--locked LOCK`, then `extra`, then `--output OUT --cache-dir CACHE`.
pub fn locked_args<'a>(
    lock: &'a Path,
    extra: &[&'a str],
    out: &'a Path,
    cache: &'a Path,
) -> Vec<&'a str> {
    let mut args = vec!["--locked", p(lock)];
    args.extend(extra);
    args.extend(["--output", p(out), "--cache-dir", p(cache)]);
    args
}

/// `dir/name`, created.
pub fn tmp_in(dir: &Path, name: &str) -> PathBuf {
    let tmp = dir.join(name);
    fs::create_dir_all(&tmp).unwrap();
    tmp
}

/// Nothing is in `out` (or it does not exist).
pub fn assert_no_isos(out: &Path) {
    let left: Vec<String> = fs::read_dir(out)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left in {}: {left:?}", out.display());
}
