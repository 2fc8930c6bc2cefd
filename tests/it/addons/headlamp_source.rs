//! Where a Headlamp release's image comes from: registry.k8s.io serves v0.41.0–v0.43.0 as
//! `registry.k8s.io/headlamp/headlamp` (kubernetes/k8s.io PRs #9452 and #9616), signed as its
//! other images are; other releases only on `ghcr.io/headlamp-k8s/headlamp`, unsigned. A build
//! from a promoted release takes registry.k8s.io's copy, checks its signature under the built-in
//! rule and records the source in the lock; a locked rebuild takes the same; a release not
//! promoted is built from ghcr.io exactly as before, its lock without the new field.

use std::fs;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

fn headlamp_build(world: &World, dir: &std::path::Path, out: &str, extra: &[&str]) -> Vec<String> {
    let k = world.kubernetes().to_owned();
    let crictl = format!("1.{}.0", k.split('.').nth(1).unwrap());
    let mut args: Vec<String> = [
        "--kubernetes",
        &k,
        "--cni",
        "1.6.2",
        "--crictl",
        &crictl,
        "--network",
        world.network_url(),
        "--arch",
        "amd64",
        "--output",
        p(&dir.join(out)),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn lock_of(iso: &std::path::Path, tree: &std::path::Path) -> serde_json::Value {
    fs::create_dir_all(tree).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(tree)]);
    serde_json::from_slice(&fs::read(tree.join("cks-iso.lock")).unwrap()).unwrap()
}

fn images(lock: &serde_json::Value) -> Vec<String> {
    lock["arches"]["amd64"]["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["reference"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_promoted_headlamp_release_comes_signed_from_registry_k8s_io_and_others_from_ghcr() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let promoted = world.headlamp_promoted_version();
    let image = format!("registry.k8s.io/headlamp/headlamp:v{promoted}");
    let lock_file = dir.path().join("promoted.lock");
    let args = headlamp_build(
        &world,
        dir.path(),
        "promoted",
        &[
            "--headlamp-version",
            promoted,
            "--name",
            "setup-headlamp",
            "--lock-file",
            p(&lock_file),
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ok(build_in_world(&world, dir.path(), &args));
    let iso = dir.path().join("promoted/setup-headlamp-x86_64.iso");
    let tree = dir.path().join("tree-promoted");
    let lock = lock_of(&iso, &tree);
    assert_eq!(lock["request"]["headlamp"], promoted);
    assert_eq!(
        lock["request"]["headlamp_image"],
        image.as_str(),
        "the source"
    );
    assert!(images(&lock).contains(&image), "{:?}", images(&lock));
    assert!(
        !images(&lock)
            .iter()
            .any(|i| i.starts_with("ghcr.io/headlamp-k8s/")),
        "{:?}",
        images(&lock)
    );
    let yaml = fs::read_to_string(tree.join("headlamp.yaml")).unwrap();
    assert!(yaml.contains(&format!("image: {image}")), "{yaml}");
    // Checked by the built-in registry.k8s.io rule.
    let report = signature_report(&iso, &dir.path().join("tree-report"));
    let entry = image_entry(&report, &image);
    assert_eq!(entry["verdict"], "verified", "{entry:#}\n{}", stderr(&out));
    // A locked rebuild takes it from the same place and makes the same ISO.
    let again = dir.path().join("again");
    ok(build_in_world(
        &world,
        dir.path(),
        &["--locked", p(&lock_file), "--output", p(&again)],
    ));
    assert!(
        same_bytes(&iso, &again.join("setup-headlamp-x86_64.iso")),
        "a locked rebuild makes the same ISO"
    );

    // A release registry.k8s.io does not serve: ghcr.io, and no new field in the lock.
    let other = world.headlamp_version();
    let args = headlamp_build(
        &world,
        dir.path(),
        "ghcr",
        &["--headlamp-version", other, "--name", "setup-headlamp"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(build_in_world(&world, dir.path(), &args));
    let lock = lock_of(
        &dir.path().join("ghcr/setup-headlamp-x86_64.iso"),
        &dir.path().join("tree-ghcr"),
    );
    assert!(lock["request"].get("headlamp_image").is_none(), "{lock:#}");
    let ghcr = format!("ghcr.io/headlamp-k8s/headlamp:v{other}");
    assert!(images(&lock).contains(&ghcr), "{:?}", images(&lock));
}
