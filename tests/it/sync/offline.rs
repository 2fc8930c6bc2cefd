//! `cks-iso sync` across an air gap (docs/guide/sync.md, "Across an air gap"), in the test world
//! with two CloudStack stand-ins: a connected zone kept by a plain `sync`, and a far zone whose
//! publish directory already holds the previous patch's ISO. After the label moves, the connected
//! side writes the far zone's locks with `sync --plan --write-locks` (asking its CloudStack
//! nothing) and exports `--minus` the far side's ISO; the world is stopped; the far side imports
//! the delta into an empty cache and `sync --locks --offline` registers the very checksum the
//! connected run registered. A lock of another request than the desired state's is refused, and
//! a minor no carried lock is of fails alone.

use std::fs;
use std::path::Path;
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

    // 1. The connected zone on 1.33.0; the far one holds that ISO from an earlier carry.
    ok(sync(&world, &near, &[]).output().unwrap());
    let old = "setup-v1.33.0-x86_64.iso";
    fs::copy(near.published.join(old), far.published.join(old)).unwrap();

    // 2. The label moves. The connected side writes the far zone's lock, asking no CloudStack
    // and touching no publish directory.
    move_label(&world, "1.33.1");
    let near_cache = near.dir.path().join("cache");
    let locks = near.dir.path().join("locks");
    let out = ok(write_locks(&world, &far, &near_cache, &locks)
        .output()
        .unwrap());
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
    assert_eq!(names(&far.published), [old]);

    // 3. Only what the far side's ISO lacks is carried.
    let delta = near.dir.path().join("delta");
    let out = ok(cks_iso()
        .args(["cache", "export", "--locked", p(&lock)])
        .args(["--minus", p(&far.published.join(old)), "-o", p(&delta)])
        .args(["--cache-dir", p(&near_cache)])
        .output()
        .unwrap());
    assert!(
        text(&out).0.starts_with("exported a delta to "),
        "{}",
        combined(&out)
    );

    // 4. The connected run of 1.33.1: the checksum to match.
    ok(sync(&world, &near, &[]).output().unwrap());
    let connected = checksums(&near, "1.33.1");
    assert_eq!(connected.len(), 2, "{connected:?}");

    // 5. The world stops; its configuration and trusted root outlive it, their URLs now dead.
    let kept = far.dir.path().join("config");
    fs::create_dir_all(&kept).unwrap();
    let config = kept.join("cks-iso.yaml");
    fs::copy(world.config_path(), &config).unwrap();
    fs::copy(world.trusted_root_path(), kept.join("trusted_root.json")).unwrap();
    drop(world);

    // 6. The far side: the delta into an empty cache, then an offline sync from the lock.
    let far_cache = far.dir.path().join("cache");
    ok(cks_iso()
        .args(["cache", "import", p(&delta), "--locked", p(&lock)])
        .args(["--cache-dir", p(&far_cache)])
        .output()
        .unwrap());
    let started = std::time::Instant::now();
    let out = ok(sync_with(
        &config,
        &far,
        &["--locks", p(&locks), "--offline", "--json"],
    )
    .output()
    .unwrap());
    eprintln!("offline sync {:.2} s", started.elapsed().as_secs_f64());
    let doc = json(&out);
    let item = &doc["items"][0];
    assert_eq!(
        (&item["kubernetes"], &item["state"]),
        (&"1.33.1".into(), &"acted".into()),
        "{doc}"
    );
    assert_eq!(checksums(&far, "1.33.1"), connected, "{doc}");
    let new = "setup-v1.33.1-x86_64.iso";
    assert_eq!(
        sha256_of(&far.published.join(new)),
        sha256_of(&near.published.join(new))
    );
    let v = versions_of(&far, "1.33.1");
    assert!(v.len() == 2 && v.iter().all(|v| v.3 == "Ready"), "{v:?}");

    // 7. Again: nothing to do. A desired state that asks for other content refuses the lock.
    let again = ok(
        sync_with(&config, &far, &["--locks", p(&locks), "--offline"])
            .output()
            .unwrap(),
    );
    assert!(
        text(&again)
            .0
            .ends_with("nothing to do: the zone matches the desired state\n"),
        "{}",
        combined(&again)
    );
    let yaml = fs::read_to_string(&far_desired).unwrap();
    fs::write(
        &far_desired,
        format!("{yaml}images: [docker.io/library/busybox:1.36]\n"),
    )
    .unwrap();
    let out = sync_with(&config, &far, &["--locks", p(&locks), "--offline"])
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
    // A minor no carried lock is of fails alone, naming the command that writes its lock.
    fs::write(
        &far_desired,
        yaml.replace("[\"1.33\"]", "[\"1.33\", \"1.32\"]"),
    )
    .unwrap();
    let out = sync_with(
        &config,
        &far,
        &["--locks", p(&locks), "--offline", "--json"],
    )
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
