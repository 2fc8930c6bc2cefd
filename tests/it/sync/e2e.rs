//! `cks-iso sync` (docs/guide/sync.md) against the test world and the CloudStack stand-in, the
//! publish directory served over HTTP as CloudStack's secondary storage downloads it: a first sync
//! builds, publishes and registers every minor × arch (Ready in both zones); a second one builds
//! nothing, downloads nothing (the world's registry and download-server logs show no request but
//! the label's), sends no state-changing call and says "nothing to do"; after `stable-1.33` moves to
//! the next patch, `--plan` names the build and the retirement and changes nothing, and a sync
//! builds, gates (the cluster on the older patch passes upgrade-check), registers and retires the
//! old patch except where the cluster runs it. Two syncs started together end in one state, and a
//! sync finding the lock held says who holds it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use cks_iso_testworld::cloudstack::Options as CloudOptions;
use cks_iso_testworld::world::{Options, World};

use crate::support::cloud::{Cloud, sha256_of, small_iso};
use crate::support::sync::{changing, json, move_label, sync, versions_of, write_desired};
use crate::support::*;

/// The sync's last line says the zone already matches.
const NOTHING_TO_DO: &str = "nothing to do: the zone matches the desired state\n";

/// The first sync builds, publishes and registers both arches in both zones, at the checksum and
/// URL of the published file, and leaves no staging file. The publish directory's listing.
fn first_sync_registers_both_arches(world: &World, cloud: &Cloud) -> Vec<String> {
    let first = ok(sync(world, cloud, &["--json"]).output().unwrap());
    let doc = json(&first);
    assert_eq!(
        (doc["format"].as_u64(), &doc["acted"], &doc["ok"]),
        (Some(1), &true.into(), &true.into()),
        "{doc}"
    );
    let items = doc["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{doc}");
    for item in items {
        let done: Vec<&str> = item["done"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap())
            .collect();
        assert_eq!(&done[..3], ["built", "verified", "published"], "{item}");
        assert!(
            done[3].starts_with("registered (zone-a Ready, zone-b Ready)"),
            "{item}"
        );
        let file = cloud
            .published
            .join(format!("{}.iso", item["name"].as_str().unwrap()));
        assert_eq!(item["sha256"], sha256_of(&file).as_str());
        assert_eq!(item["before"]["published"], "absent");
    }
    let v0 = versions_of(cloud, "1.33.0");
    assert_eq!(v0.len(), 4, "one per arch and zone: {v0:?}");
    assert!(
        v0.iter().all(|v| v.2 == "Enabled" && v.3 == "Ready"),
        "{v0:?}"
    );
    for v in cloud.api.versions() {
        let iso = cloud.published.join(format!("{}.iso", v["name"]));
        assert_eq!(v["checksum"], format!("{{SHA-256}}{}", sha256_of(&iso)));
        assert_eq!(v["url"], format!("{}/{}.iso", cloud.host.url(), v["name"]));
    }
    let listing = names(&cloud.published);
    assert!(
        !listing.iter().any(|n| n.starts_with(".sync-staging-")),
        "{listing:?}"
    );
    listing
}

/// Again, nothing changed upstream: nothing built, nothing sent, "nothing to do"; and nothing
/// downloaded, as the world's own logs say: no registry request at all, and of the download
/// server only the label.
fn second_sync_does_nothing(world: &World, cloud: &Cloud, listing: &[String]) {
    cloud.api.clear_seen();
    let (registry_before, upstream_before) =
        (world.registry_log().len(), world.upstream().served().len());
    let second = ok(sync(world, cloud, &[]).output().unwrap());
    let registry: Vec<_> = world.registry_log().split_off(registry_before);
    assert!(registry_before > 0 && registry.is_empty(), "{registry:?}");
    let fetched = world.upstream().served().split_off(upstream_before);
    let label = |path: &str| {
        path.split('?')
            .next()
            .unwrap()
            .ends_with("/release/stable-1.33.txt")
    };
    assert!(
        !fetched.is_empty() && fetched.iter().all(|s| label(&s.path)),
        "{fetched:?}"
    );
    let (out, _) = text(&second);
    assert!(out.ends_with(NOTHING_TO_DO), "{}", combined(&second));
    assert!(changing(cloud).is_empty(), "{:?}", changing(cloud));
    assert_eq!(names(&cloud.published), listing);
}

/// A cluster runs the amd64 1.33.0 in zone-a; the label moves to 1.33.1: the plan names the
/// builds, the registrations and the retirements, and changes nothing. The cluster's version's id.
fn plan_after_the_label_moves(world: &World, cloud: &Cloud, listing: &[String]) -> String {
    let amd = (cloud.api.versions().into_iter())
        .find(|v| v["arch"] == "x86_64")
        .unwrap();
    cloud.api.add_cluster("prod", &amd["id"]);
    move_label(world, "1.33.1");
    cloud.api.clear_seen();
    let plan = ok(sync(world, cloud, &["--plan", "--json"]).output().unwrap());
    let doc = json(&plan);
    assert_eq!(
        (&doc["plan"], &doc["acted"], &doc["ok"]),
        (&true.into(), &true.into(), &true.into()),
        "{doc}"
    );
    for item in doc["items"].as_array().unwrap() {
        assert_eq!(item["kubernetes"], "1.33.1", "{item}");
        let done = item["done"].to_string();
        assert!(
            done.contains("\"build\"") && done.contains("\"register\""),
            "{item}"
        );
        assert!(done.contains("retire setup-v1.33.0-"), "{item}");
    }
    assert!(doc.to_string().contains("in use by cluster prod"), "{doc}");
    assert!(changing(cloud).is_empty(), "{:?}", changing(cloud));
    assert_eq!(names(&cloud.published), listing);
    amd["id"].clone()
}

/// The sync builds 1.33.1, gates it on the cluster (passes), registers it, and retires 1.33.0
/// but the cluster's version, `kept`.
fn sync_follows_the_label_keeping_the_clusters(world: &World, cloud: &Cloud, kept: &str) {
    let third = ok(sync(world, cloud, &["--json"]).output().unwrap());
    let doc = json(&third);
    assert_eq!(doc["ok"], true, "{doc}");
    let v1 = versions_of(cloud, "1.33.1");
    assert_eq!(v1.len(), 4, "{v1:?}");
    assert!(
        v1.iter().all(|v| v.2 == "Enabled" && v.3 == "Ready"),
        "{v1:?}"
    );
    let still: Vec<_> = (cloud.api.versions().into_iter())
        .filter(|v| v["semanticversion"] == "1.33.0" && v["state"] == "Enabled")
        .map(|v| v["id"].clone())
        .collect();
    assert_eq!(still, [kept], "only the cluster's version stays: {doc}");
    let text_doc = doc.to_string();
    assert!(
        text_doc.contains("cluster prod on v1.33.0: upgrade-check passed"),
        "{doc}"
    );
    assert!(text_doc.contains("in use by cluster prod"), "{doc}");
}

/// Runs `step`, printing how long it took as `what`.
fn timed<T>(what: &str, step: impl FnOnce() -> T) -> T {
    let started = std::time::Instant::now();
    let result = step();
    eprintln!("{what} {:.2} s", started.elapsed().as_secs_f64());
    result
}

#[test]
fn sync_registers_every_arch_then_does_nothing_then_follows_the_label() {
    let world = World::start(Options {
        also_kubernetes: vec!["1.33.0".into()],
        ..Options::default()
    });
    let cloud = Cloud::start(CloudOptions::default());
    move_label(&world, "1.33.0");
    let listing = timed("first sync", || {
        first_sync_registers_both_arches(&world, &cloud)
    });
    timed("no-change sync", || {
        second_sync_does_nothing(&world, &cloud, &listing)
    });
    let kept = plan_after_the_label_moves(&world, &cloud, &listing);
    timed("one-patch sync", || {
        sync_follows_the_label_keeping_the_clusters(&world, &cloud, &kept)
    });
    // And then, nothing to do, the cluster's version kept without a word sent.
    cloud.api.clear_seen();
    let fourth = ok(sync(&world, &cloud, &[]).output().unwrap());
    assert!(
        text(&fourth).0.ends_with(NOTHING_TO_DO),
        "{}",
        combined(&fourth)
    );
    assert!(changing(&cloud).is_empty(), "{:?}", changing(&cloud));
}

#[test]
fn two_syncs_end_in_one_state_and_a_held_lock_is_named() {
    let world = World::start(Options::default());
    let cloud = Cloud::start(CloudOptions::default());
    // Every ISO signed with the desired state's key.
    let (key, public) = crate::iso::signing::openssl_keys(cloud.dir.path(), "sync");
    let d = write_desired(&world, &cloud, "[amd64, arm64]");
    let yaml = fs::read_to_string(&d).unwrap();
    fs::write(&d, format!("{yaml}sign-key: {}\n", key.display())).unwrap();
    // Held by someone else: exit 1 naming the lock and its holder.
    let lock_path = {
        let mut name = cloud.published.as_os_str().to_owned();
        name.push(".sync-lock");
        PathBuf::from(name)
    };
    let held = hold(&lock_path, "cks-iso sync, pid 4242, since yesterday");
    fails(
        &mut sync(&world, &cloud, &[]),
        1,
        &["another sync holds", "pid 4242", "--wait"],
    );
    drop(held);
    assert!(cloud.api.versions().is_empty());
    // Two started together (the second waits): one registration per name and zone.
    let start = || {
        let mut cmd = sync(&world, &cloud, &["--wait"]);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.spawn().unwrap()
    };
    let (a, b) = (start(), start());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(
        a.status.success() && b.status.success(),
        "{}\n{}",
        combined(&a),
        combined(&b)
    );
    // One acted, the other waited and found nothing to do.
    let verdicts = [text(&a).0, text(&b).0];
    let nothing = "nothing to do: the zone matches the desired state\n";
    assert_eq!(
        verdicts.iter().filter(|v| v.ends_with(nothing)).count(),
        1,
        "{verdicts:?}"
    );
    let v = versions_of(&cloud, "1.33.1");
    assert_eq!(v.len(), 4, "{v:?}");
    let adds = (cloud.api.commands().into_iter())
        .filter(|c| c == "addKubernetesSupportedVersion")
        .count();
    assert_eq!(adds, 4);
    for arch in ["x86_64", "aarch64"] {
        let iso = cloud.published.join(format!("setup-v1.33.1-{arch}.iso"));
        ok(cks_iso()
            .args(["verify", p(&iso), "--iso-signature", "--key", p(&public)])
            .output()
            .unwrap());
    }
}

/// With `iso-signer-policy:` naming another key than the one the ISOs are signed with, sync
/// builds and publishes but sends CloudStack nothing, naming the signer found and the one
/// expected; with the policy naming the right key, the same ISOs are registered.
#[test]
fn a_signer_policy_keeps_isos_of_another_signer_out_of_cloudstack() {
    let world = World::start(Options::default());
    let cloud = Cloud::start(CloudOptions::default());
    let (key, _) = crate::iso::signing::openssl_keys(cloud.dir.path(), "ours");
    crate::iso::signing::openssl_keys(cloud.dir.path(), "theirs");
    let policy = cloud.dir.path().join("signers.yaml");
    fs::write(&policy, "keys: [theirs.pub]\n").unwrap();
    let d = write_desired(&world, &cloud, "[amd64]");
    let yaml = fs::read_to_string(&d).unwrap();
    let signed = format!(
        "{yaml}sign-key: {}\niso-signer-policy: {}\n",
        key.display(),
        policy.display()
    );
    fs::write(&d, signed).unwrap();

    let out = sync(&world, &cloud, &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", combined(&out));
    let all = combined(&out);
    for needle in ["not registered", "signer found", "theirs.pub"] {
        assert!(all.contains(needle), "{needle:?} in:\n{all}");
    }
    assert!(
        !cloud
            .api
            .commands()
            .iter()
            .any(|c| c == "addKubernetesSupportedVersion"),
        "an ISO of another signer reached CloudStack: {:?}",
        cloud.api.commands()
    );
    assert!(cloud.published.join("setup-v1.33.1-x86_64.iso").exists());

    // The policy names the key the ISOs are signed with: registered in both zones.
    fs::write(&policy, "keys: [ours.pub]\n").unwrap();
    ok(sync(&world, &cloud, &[]).output().unwrap());
    let v = versions_of(&cloud, "1.33.1");
    assert_eq!(v.len(), 2, "{v:?}");
}

/// Holds an exclusive flock on `path` (writing `holder` into it) until dropped.
fn hold(path: &Path, holder: &str) -> fs::File {
    fs::write(path, holder).unwrap();
    let file = fs::File::open(path).unwrap();
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    file
}

#[test]
fn an_arch_that_cannot_be_built_fails_alone_and_a_failed_gate_is_not_registered() {
    let world = World::start(Options {
        without_arm64: Some("registry.k8s.io/pause:3.10".into()),
        ..Options::default()
    });
    // arm64 cannot be built (pause has no arm64): amd64 is registered, the run exits 1 naming
    // the image and the arch.
    let cloud = Cloud::start(CloudOptions::default());
    let out = sync(&world, &cloud, &["--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", combined(&out));
    let doc = json(&out);
    assert_eq!(
        (&doc["ok"], &doc["acted"]),
        (&false.into(), &true.into()),
        "{doc}"
    );
    let item = |arch: &str| {
        (doc["items"].as_array().unwrap().iter())
            .find(|i| i["arch"] == arch)
            .unwrap()
            .clone()
    };
    let (amd, arm) = (item("x86_64"), item("aarch64"));
    assert_eq!(
        (&amd["state"], &arm["state"]),
        (&"acted".into(), &"failed".into()),
        "{doc}"
    );
    let why = arm["why"].to_string();
    assert!(
        why.contains("registry.k8s.io/pause:3.10") && why.contains("arm64"),
        "{why}"
    );
    let v = versions_of(&cloud, "1.33.1");
    assert_eq!(v.len(), 2, "amd64 in both zones: {v:?}");
    assert!(v.iter().all(|v| v.1 == "x86_64" && v.3 == "Ready"), "{v:?}");
    assert!(
        !names(&cloud.published)
            .iter()
            .any(|n| n.contains("aarch64"))
    );

    // A cluster runs a version whose published ISO is for another arch than its listing says:
    // upgrade-check refuses the candidate, which stays published but is not registered.
    let cloud = Cloud::start(CloudOptions::default());
    write_desired(&world, &cloud, "[amd64]");
    let legacy = |arch: &str, filler: u8| {
        let dir = cloud.dir.path().join(format!("legacy-{arch}"));
        fs::create_dir_all(&dir).unwrap();
        small_iso(&dir, "legacy-v1.33.0-x86_64.iso", "1.33.0", arch, filler)
    };
    let served = cloud.publish(&legacy("amd64", 1));
    ok(cloud
        .register(&[&served], &["--zone", "zone-a"])
        .output()
        .unwrap());
    let id = cloud.api.versions()[0]["id"].clone();
    cloud.api.add_cluster("legacy", &id);
    fs::copy(legacy("arm64", 2), &served).unwrap();
    let out = sync(&world, &cloud, &["--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", combined(&out));
    let doc = json(&out);
    let item = &doc["items"][0];
    assert_eq!(item["state"], "gated", "{doc}");
    let why = item["why"].to_string();
    assert!(
        why.contains("cluster legacy on v1.33.0 would not upgrade")
            && why.contains("architecture: mixed architectures"),
        "{why}"
    );
    assert!(versions_of(&cloud, "1.33.1").is_empty());
    assert!(cloud.published.join("setup-v1.33.1-x86_64.iso").is_file());
}

/// Kills `child` (SIGKILL) once `ready` holds, polled every 5 ms; panics after two minutes or
/// when the child ended first.
fn kill_when(mut child: std::process::Child, what: &str, ready: impl Fn() -> bool) {
    let started = std::time::Instant::now();
    while !ready() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the sync ended ({status}) before {what}");
        }
        assert!(
            started.elapsed().as_secs() < 120,
            "no {what} after two minutes"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_sync_killed_at_three_points_converges_on_the_next_run() {
    let world = World::start(Options::default());
    let staging = |cloud: &Cloud| {
        let published = cloud.published.clone();
        move || {
            (fs::read_dir(&published).unwrap().flatten())
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(".sync-staging-")
                })
                .any(|e| fs::read_dir(e.path()).is_ok_and(|mut d| d.next().is_some()))
        }
    };
    let mut finals = Vec::new();
    for point in [
        "during the build",
        "once an ISO is published",
        "while waiting for Ready",
    ] {
        let cloud = Cloud::start(CloudOptions {
            step_ms: 400,
            ..CloudOptions::default()
        });
        let mut cmd = sync(&world, &cloud, &[]);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let child = cmd.spawn().unwrap();
        let served = cloud.published.join("setup-v1.33.1-x86_64.iso");
        match point {
            "during the build" => kill_when(child, point, staging(&cloud)),
            "once an ISO is published" => kill_when(child, point, || served.is_file()),
            _ => kill_when(child, point, || {
                cloud
                    .api
                    .commands()
                    .iter()
                    .any(|c| c == "addKubernetesSupportedVersion")
            }),
        }
        let again = ok(sync(&world, &cloud, &[]).output().unwrap());
        assert!(text(&again).0.contains("acted") || text(&again).0.contains("nothing to do"));
        // One registration per name and zone, Ready, with the published ISO's checksum.
        let v = versions_of(&cloud, "1.33.1");
        assert_eq!(v.len(), 4, "{point}: {v:?}");
        assert!(
            v.iter().all(|v| v.2 == "Enabled" && v.3 == "Ready"),
            "{point}: {v:?}"
        );
        for v in cloud.api.versions() {
            let iso = cloud.published.join(format!("{}.iso", v["name"]));
            assert_eq!(
                v["checksum"],
                format!("{{SHA-256}}{}", sha256_of(&iso)),
                "{point}"
            );
        }
        let listing = names(&cloud.published);
        assert!(
            !listing.iter().any(|n| n.starts_with('.')),
            "{point}: {listing:?}"
        );
        let sums: Vec<String> = (listing.iter())
            .filter(|n| n.ends_with(".iso"))
            .map(|n| format!("{n} {}", sha256_of(&cloud.published.join(n))))
            .collect();
        finals.push((listing, sums));
        // And then nothing to do.
        cloud.api.clear_seen();
        let third = ok(sync(&world, &cloud, &[]).output().unwrap());
        assert!(
            text(&third)
                .0
                .ends_with("nothing to do: the zone matches the desired state\n"),
            "{point}"
        );
        assert!(
            changing(&cloud).is_empty(),
            "{point}: {:?}",
            changing(&cloud)
        );
    }
    assert!(finals.windows(2).all(|w| w[0] == w[1]), "{finals:#?}");
}
