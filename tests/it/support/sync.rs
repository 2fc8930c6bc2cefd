//! `cks-iso sync`'s test helpers: a desired state for a test world and a CloudStack stand-in,
//! the command run in them, and what the stand-in saw and holds.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cks_iso_testworld::world::World;
use serde_json::Value;

use super::cloud::Cloud;
use super::{combined, p};

/// The desired state for `world` and `cloud`: 1.33 tracked, both arches, both zones, keep 1
/// (written once: syncs running together read it).
pub fn desired(world: &World, cloud: &Cloud) -> PathBuf {
    let path = cloud.dir.path().join("desired.yaml");
    match path.exists() {
        true => path,
        false => write_desired(world, cloud, "[amd64, arm64]"),
    }
}

/// Writes the desired state for `world` and `cloud` with `arches` (a YAML list), 1.33 tracked.
pub fn write_desired(world: &World, cloud: &Cloud, arches: &str) -> PathBuf {
    write_desired_of(world, cloud, "[\"1.33\"]", arches)
}

/// Writes the desired state for `world` and `cloud` with `kubernetes` and `arches` (YAML lists).
pub fn write_desired_of(world: &World, cloud: &Cloud, kubernetes: &str, arches: &str) -> PathBuf {
    let path = cloud.dir.path().join("desired.yaml");
    let text = format!(
        "kubernetes: {kubernetes}\narches: {arches}\n\
         publish:\n  dir: {}\n  url: {}\n\
         cloudstack:\n  release: \"4.22\"\n  zones: [zone-a, zone-b]\n\
         network: {}\ndashboard: {}\nkeep: 1\n",
        cloud.published.display(),
        cloud.host.url(),
        world.network_url(),
        world.dashboard_url()
    );
    fs::write(&path, text).unwrap();
    path
}

/// `cks-iso sync --desired D ARGS` in `world`, with a private TMPDIR and cache.
pub fn sync(world: &World, cloud: &Cloud, args: &[&str]) -> Command {
    desired(world, cloud);
    sync_with(world.config_path(), cloud, args)
}

/// `cks-iso sync --desired D ARGS` with the configuration file `config` (the world's, or a copy
/// of it that outlives the world), the desired state already written, and a private TMPDIR and
/// cache in `cloud`'s directory.
pub fn sync_with(config: &Path, cloud: &Cloud, args: &[&str]) -> Command {
    let tmp = cloud.dir.path().join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let d = cloud.dir.path().join("desired.yaml");
    let cache = cloud.dir.path().join("cache");
    let mut cmd = cloud.cks(&["sync", "--desired", p(&d), "--poll-interval", "0.1"]);
    cmd.env("CKS_ISO_CONFIG", config)
        .env("TMPDIR", &tmp)
        .env_remove("SOURCE_DATE_EPOCH")
        .args(["--cache-dir", p(&cache)])
        .args(args);
    cmd
}

/// The `--json` report on stdout.
pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", combined(out)))
}

/// `stable-1.33` names `version` from now on.
pub fn move_label(world: &World, version: &str) {
    world.upstream().put(
        "dl.k8s.io/release/stable-1.33.txt",
        format!("v{version}"),
        "text/plain",
    );
}

/// The commands that change CloudStack's state among those the stand-in saw.
pub fn changing(cloud: &Cloud) -> Vec<String> {
    (cloud.api.seen().into_iter())
        .filter(|s| !s.command.starts_with("list") && s.command != "queryAsyncJobResult")
        .map(|s| s.command)
        .collect()
}

/// The versions of `semver` by state, and every one's checksum.
pub fn versions_of(cloud: &Cloud, semver: &str) -> Vec<(String, String, String, String)> {
    let mut out: Vec<_> = (cloud.api.versions().into_iter())
        .filter(|v| v["semanticversion"] == semver)
        .map(|v| {
            (
                v["name"].clone(),
                v["arch"].clone(),
                v["state"].clone(),
                v["isostate"].clone(),
            )
        })
        .collect();
    out.sort();
    out
}
