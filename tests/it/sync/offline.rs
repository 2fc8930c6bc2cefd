//! `cks-iso sync` across an air gap (docs/guide/sync.md, "Across an air gap"), in the test world
//! with two CloudStack stand-ins: a connected zone kept by a plain `sync`, and a far zone whose
//! publish directory already holds the previous patch's ISO. After the label moves, the connected
//! side writes the far zone's locks with `sync --plan --write-locks` (asking its CloudStack
//! nothing) and exports `--minus` the far side's ISO; the world is stopped; the far side imports
//! the delta into an empty cache and `sync --locks --offline` registers the very checksum the
//! connected run registered. A lock of another request than the desired state's is refused, and
//! a minor no carried lock is of fails alone.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use cks_iso_testworld::cloudstack::Options as CloudOptions;
use cks_iso_testworld::world::{Options, World};

use crate::support::cloud::{Cloud, sha256_of};
use crate::support::sync::{json, move_label, sync, sync_with, versions_of, write_desired};
use crate::support::*;

/// `cks-iso sync --desired <far's> --plan --write-locks LOCKS` on the connected side: the world's
/// configuration, the connected side's cache.
fn write_locks(world: &World, far: &Cloud, cache: &Path, locks: &Path) -> Command {
    let tmp = far.dir.path().join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let desired = far.dir.path().join("desired.yaml");
    let mut cmd = far.cks(&["sync", "--desired", p(&desired), "--plan", "--json"]);
    cmd.env("CKS_ISO_CONFIG", world.config_path())
        .env("TMPDIR", &tmp)
        .env_remove("SOURCE_DATE_EPOCH")
        .args(["--write-locks", p(locks), "--cache-dir", p(cache)]);
    cmd
}

/// The checksum CloudStack holds for each version of `semver`.
fn checksums(cloud: &Cloud, semver: &str) -> Vec<String> {
    (cloud.api.versions().into_iter())
        .filter(|v| v["semanticversion"] == semver)
        .map(|v| v["checksum"].clone())
        .collect()
}

/// The ISO the far zone holds from an earlier carry.
const OLD: &str = "setup-v1.33.0-x86_64.iso";
/// The ISO of the patch the label moves to.
const NEW: &str = "setup-v1.33.1-x86_64.iso";

/// The connected side after the label moved: its cache, the far zone's locks and its lock.
struct Connected {
    cache: PathBuf,
    locks: PathBuf,
    lock: PathBuf,
}

/// The connected side writes the far zone's lock, asking no CloudStack and touching no publish
/// directory.
fn write_the_far_zones_lock(world: &World, near: &Cloud, far: &Cloud) -> Connected {
    let cache = near.dir.path().join("cache");
    let locks = near.dir.path().join("locks");
    let out = ok(write_locks(world, far, &cache, &locks).output().unwrap());
    let doc = json(&out);
    assert_eq!(
        (&doc["plan"], &doc["ok"]),
        (&true.into(), &true.into()),
        "{doc}"
    );
    let lock = locks.join("1.33.1.lock");
    assert_eq!(
        doc["items"][0]["done"][0],
        format!("locked {}", lock.display()),
        "{doc}"
    );
    assert!(far.api.seen().is_empty(), "{:?}", far.api.commands());
    assert_eq!(names(&far.published), [OLD]);
    Connected { cache, locks, lock }
}

/// Only what the far side's ISO lacks is carried: the delta's directory.
fn export_what_the_far_iso_lacks(near: &Cloud, far: &Cloud, c: &Connected) -> PathBuf {
    let delta = near.dir.path().join("delta");
    let out = ok(cks_iso()
        .args(["cache", "export", "--locked", p(&c.lock)])
        .args(["--minus", p(&far.published.join(OLD)), "-o", p(&delta)])
        .args(["--cache-dir", p(&c.cache)])
        .output()
        .unwrap());
    assert!(
        text(&out).0.starts_with("exported a delta to "),
        "{}",
        combined(&out)
    );
    delta
}

/// The world's configuration and trusted root, kept on the far side to outlive the world (their
/// URLs then dead).
fn keep_the_configuration(world: &World, far: &Cloud) -> PathBuf {
    let kept = far.dir.path().join("config");
    fs::create_dir_all(&kept).unwrap();
    let config = kept.join("cks-iso.yaml");
    fs::copy(world.config_path(), &config).unwrap();
    fs::copy(world.trusted_root_path(), kept.join("trusted_root.json")).unwrap();
    config
}

/// The far side: the delta into an empty cache, then an offline sync from the lock registers the
/// checksums `connected` and publishes the connected side's ISO; a second one has nothing to do.
fn offline_sync_registers_the_same(
    (config, delta): (&Path, &Path),
    (near, far): (&Cloud, &Cloud),
    c: &Connected,
    connected: &[String],
) {
    let far_cache = far.dir.path().join("cache");
    ok(cks_iso()
        .args(["cache", "import", p(delta), "--locked", p(&c.lock)])
        .args(["--cache-dir", p(&far_cache)])
        .output()
        .unwrap());
    let started = std::time::Instant::now();
    let args = ["--locks", p(&c.locks), "--offline", "--json"];
    let out = ok(sync_with(config, far, &args).output().unwrap());
    eprintln!("offline sync {:.2} s", started.elapsed().as_secs_f64());
    let doc = json(&out);
    let item = &doc["items"][0];
    assert_eq!(
        (&item["kubernetes"], &item["state"]),
        (&"1.33.1".into(), &"acted".into()),
        "{doc}"
    );
    assert_eq!(checksums(far, "1.33.1"), connected, "{doc}");
    assert_eq!(
        sha256_of(&far.published.join(NEW)),
        sha256_of(&near.published.join(NEW))
    );
    let v = versions_of(far, "1.33.1");
    assert!(v.len() == 2 && v.iter().all(|v| v.3 == "Ready"), "{v:?}");
    let again = ok(sync_with(config, far, &args[..3]).output().unwrap());
    assert!(
        text(&again)
            .0
            .ends_with("nothing to do: the zone matches the desired state\n"),
        "{}",
        combined(&again)
    );
}

/// A desired state that asks for other content refuses the lock; a minor no carried lock is of
/// fails alone, naming the command that writes its lock.
fn assert_other_requests_refused(config: &Path, far: &Cloud, far_desired: &Path, locks: &Path) {
    let yaml = fs::read_to_string(far_desired).unwrap();
    fs::write(
        far_desired,
        format!("{yaml}images: [docker.io/library/busybox:1.36]\n"),
    )
    .unwrap();
    let out = sync_with(config, far, &["--locks", p(locks), "--offline"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", combined(&out));
    let all = combined(&out);
    for needle in [
        "1.33.1.lock was written for another request",
        "images: the lock has {}",
    ] {
        assert!(all.contains(needle), "{needle:?} in:\n{all}");
    }
    fs::write(
        far_desired,
        yaml.replace("[\"1.33\"]", "[\"1.33\", \"1.32\"]"),
    )
    .unwrap();
    let out = sync_with(config, far, &["--locks", p(locks), "--offline", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", combined(&out));
    let doc = json(&out);
    let states: Vec<_> = (doc["items"].as_array().unwrap().iter())
        .map(|i| format!("{} {}", i["minor"], i["state"]))
        .collect();
    assert_eq!(
        states,
        ["\"1.33\" \"current\"", "\"1.32\" \"failed\""],
        "{doc}"
    );
    let why = doc["items"][1]["why"].to_string();
    assert!(
        why.contains("no lock of Kubernetes stable-1.32 in") && why.contains("--write-locks"),
        "{why}"
    );
}

#[test]
fn an_offline_sync_from_carried_locks_registers_what_a_connected_sync_registers() {
    let world = World::start(Options {
        also_kubernetes: vec!["1.33.0".into()],
        ..Options::default()
    });
    move_label(&world, "1.33.0");
    let near = Cloud::start(CloudOptions::default());
    let far = Cloud::start(CloudOptions::default());
    write_desired(&world, &near, "[amd64]");
    let far_desired = write_desired(&world, &far, "[amd64]");

    // The connected zone on 1.33.0; the far one holds that ISO from an earlier carry.
    ok(sync(&world, &near, &[]).output().unwrap());
    fs::copy(near.published.join(OLD), far.published.join(OLD)).unwrap();
    move_label(&world, "1.33.1");
    let connected_side = write_the_far_zones_lock(&world, &near, &far);
    let delta = export_what_the_far_iso_lacks(&near, &far, &connected_side);
    // The connected run of 1.33.1: the checksum to match.
    ok(sync(&world, &near, &[]).output().unwrap());
    let connected = checksums(&near, "1.33.1");
    assert_eq!(connected.len(), 2, "{connected:?}");
    let config = keep_the_configuration(&world, &far);
    drop(world);
    offline_sync_registers_the_same(
        (&config, &delta),
        (&near, &far),
        &connected_side,
        &connected,
    );
    assert_other_requests_refused(&config, &far, &far_desired, &connected_side.locks);
}
