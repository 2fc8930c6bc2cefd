//! `cks-iso sync` when a side cannot be had, and a pinned minor (docs/guide/sync.md): CloudStack
//! unreachable, the download server unreachable, the registry unreachable — each run exits 1
//! naming which, with no state-changing call in the CloudStack stand-in's request log and nothing
//! in the publish directory; a minor pinned to a patch stays on it when its label moves, the label
//! not even read.

use std::fs;
use std::path::PathBuf;

use cks_iso_testworld::cloudstack::Options as CloudOptions;
use cks_iso_testworld::world::{Options, World};

use crate::support::cloud::Cloud;
use crate::support::sync::{
    changing, json, move_label, sync, sync_with, versions_of, write_desired, write_desired_of,
};
use crate::support::*;

/// Where nobody listens (`support::no_internet`'s port).
const DEAD: &str = "127.0.0.1:9";

/// A copy of the world's configuration (and its trusted root) with `from` replaced by `to`.
fn config_with(world: &World, cloud: &Cloud, name: &str, from: &str, to: &str) -> PathBuf {
    let dir = cloud.dir.path().join(name);
    fs::create_dir_all(&dir).unwrap();
    let yaml = fs::read_to_string(world.config_path()).unwrap();
    assert!(yaml.contains(from), "{from} not in:\n{yaml}");
    fs::write(dir.join("cks-iso.yaml"), yaml.replace(from, to)).unwrap();
    fs::copy(world.trusted_root_path(), dir.join("trusted_root.json")).unwrap();
    dir.join("cks-iso.yaml")
}

#[test]
fn an_unreachable_side_is_named_and_nothing_is_changed() {
    let world = World::start(Options::default());
    let cloud = Cloud::start(CloudOptions::default());
    write_desired(&world, &cloud, "[amd64]");

    // CloudStack: the credentials' endpoint answers nothing.
    let cmk = cloud.home.join(".cmk/config");
    let good = fs::read_to_string(&cmk).unwrap();
    let endpoint = cloud.api.endpoint();
    let dead = format!("http://{DEAD}/client/api");
    fs::write(&cmk, good.replace(&endpoint, &dead)).unwrap();
    let out = sync(&world, &cloud, &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", combined(&out));
    let stderr = text(&out).1;
    assert!(
        stderr.contains(&format!("cannot reach the CloudStack API at {dead}")),
        "{stderr}"
    );
    assert!(names(&cloud.published).is_empty());
    assert!(cloud.api.seen().is_empty());
    fs::write(&cmk, &good).unwrap();

    // The download server (dl.k8s.io's label): the minor fails naming the label's URL.
    let upstream = world.upstream().url();
    let config = config_with(
        &world,
        &cloud,
        "no-upstream",
        &upstream,
        &format!("http://{DEAD}"),
    );
    let out = sync_with(&config, &cloud, &["--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", combined(&out));
    let doc = json(&out);
    let why = doc["items"][0]["why"].to_string();
    assert_eq!(doc["items"][0]["state"], "failed", "{doc}");
    assert!(why.contains("dl.k8s.io/release/stable-1.33.txt"), "{why}");
    assert!(changing(&cloud).is_empty(), "{:?}", changing(&cloud));
    assert!(names(&cloud.published).is_empty());

    // The registry: the label reads, the build cannot resolve an image; no staging left.
    let registry = world.registry_host();
    let config = config_with(&world, &cloud, "no-registry", &registry, DEAD);
    let out = sync_with(&config, &cloud, &["--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", combined(&out));
    let doc = json(&out);
    let item = &doc["items"][0];
    assert_eq!(
        (&item["kubernetes"], &item["state"]),
        (&"1.33.1".into(), &"failed".into()),
        "{doc}"
    );
    let why = item["why"].to_string();
    // Every image met the one dead registry: said once, with the image that met it first.
    assert!(
        why.contains("images failed for one cause: ") && why.contains(DEAD),
        "{why}"
    );
    assert_eq!(why.matches("Connection refused").count(), 1, "{why}");
    assert!(changing(&cloud).is_empty(), "{:?}", changing(&cloud));
    assert!(
        names(&cloud.published).is_empty(),
        "{:?}",
        names(&cloud.published)
    );
}

#[test]
fn a_pinned_minor_stays_on_its_pin_when_the_label_moves() {
    let world = World::start(Options {
        also_kubernetes: vec!["1.33.0".into()],
        ..Options::default()
    });
    let cloud = Cloud::start(CloudOptions::default());
    move_label(&world, "1.33.0");
    write_desired_of(&world, &cloud, "[\"1.33.0\"]", "[amd64]");
    let doc = json(&ok(sync(&world, &cloud, &["--json"]).output().unwrap()));
    let item = &doc["items"][0];
    assert_eq!(
        (&item["kubernetes"], &item["from"]),
        (&"1.33.0".into(), &"pinned".into()),
        "{doc}"
    );
    assert_eq!(versions_of(&cloud, "1.33.0").len(), 2, "{doc}");

    // The label moves: the plan and the run keep the pin, reading no label.
    move_label(&world, "1.33.1");
    cloud.api.clear_seen();
    let served = world.upstream().served().len();
    let doc = json(&ok(sync(&world, &cloud, &["--plan", "--json"])
        .output()
        .unwrap()));
    let item = &doc["items"][0];
    assert_eq!(
        (&item["kubernetes"], &item["state"]),
        (&"1.33.0".into(), &"current".into()),
        "{doc}"
    );
    let out = ok(sync(&world, &cloud, &[]).output().unwrap());
    assert!(
        text(&out)
            .0
            .ends_with("nothing to do: the zone matches the desired state\n"),
        "{}",
        combined(&out)
    );
    assert!(changing(&cloud).is_empty(), "{:?}", changing(&cloud));
    assert!(versions_of(&cloud, "1.33.1").is_empty());
    let read = world.upstream().served().split_off(served);
    assert!(read.is_empty(), "{read:?}");
}
