//! Add-ons across the air gap: what a locked build's extras need travels through `cache export
//! --locked` and `cache import`, and an offline build on the far side makes the same ISO.

use std::fs;
use std::path::Path;

use super::content::{build, deployment, extract, image_lines, push, serve_manifest};
use crate::support::{EPOCH, cks_iso, names, ok, p, same_bytes};
use cks_iso_testworld::world::{Options, World};

/// Add-ons across the air gap: `cache export --locked` carries what the lock's extras need (the
/// extra images' blobs and the extra manifest's body) beside the core content, `cache import`
/// takes it into an empty cache, and with every server stopped `build --locked --offline` from
/// that cache makes the same ISO byte for byte.
#[test]
fn extras_cross_the_air_gap_through_cache_export_and_import() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    push(&world, "quay.io/acme/agent", "2.1", &["amd64", "arm64"]);
    push(&world, "ghcr.io/two/tool", "1.0", &["amd64"]);
    let url = serve_manifest(
        &world,
        "acme/addon/v1/deploy/addon.yaml",
        &deployment(&["ghcr.io/two/tool:1.0"]),
    );
    let lock = d.join("cks-iso.lock");
    let online = d.join("online");
    let manifest = format!("addon.yaml={url}");
    ok(
        build(&world, d, &online, &["--image", "quay.io/acme/agent:2.1"])
            .args(["--manifest", &manifest, "--lock-file", p(&lock)])
            .output()
            .unwrap(),
    );
    let cache = |cache: &Path, args: &[&str]| {
        ok(cks_iso()
            .arg("cache")
            .args(args)
            .args(["--cache-dir", p(cache)])
            .output()
            .unwrap())
    };
    let export = d.join("export");
    cache(
        &d.join("cache"),
        &["export", "--locked", p(&lock), "-o", p(&export)],
    );
    let carried = d.join("carried");
    cache(&carried, &["import", p(&export), "--locked", p(&lock)]);
    // The world's Sigstore root, which its signatures chain to, outlives the world.
    let root = d.join("trusted_root.json");
    fs::copy(
        world.config_path().with_file_name("trusted_root.json"),
        &root,
    )
    .unwrap();
    drop(world);

    let offline = d.join("offline");
    let tmp = d.join("tmp-offline");
    fs::create_dir_all(&tmp).unwrap();
    let out = ok(cks_iso()
        .env_remove("CKS_ISO_CONFIG")
        .env("TMPDIR", &tmp)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .args(["build", "--no-progress", "--locked", p(&lock), "--offline"])
        .args(["--trusted-root", p(&root)])
        .args(["--output", p(&offline), "--cache-dir", p(&carried)])
        .output()
        .unwrap());
    let isos: Vec<String> = names(&online)
        .into_iter()
        .filter(|n| n.ends_with(".iso"))
        .collect();
    assert_eq!(isos.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let (first, again) = (online.join(&isos[0]), offline.join(&isos[0]));
    assert!(
        same_bytes(&first, &again),
        "the offline build from the carried cache differs"
    );
    // The add-ons are in it: both extra images' archives and the extra manifest.
    let root_dir = d.join("root");
    extract(&again, &root_dir);
    let versions = fs::read_to_string(root_dir.join("versions.txt")).unwrap();
    let lines = image_lines(&versions);
    for name in ["quay.io/acme/agent:2.1", "ghcr.io/two/tool:1.0"] {
        assert!(lines.contains_key(name), "{name} not bundled:\n{versions}");
    }
    assert!(root_dir.join("addon.yaml").is_file());
    assert!(names(&tmp).is_empty(), "nothing left behind");
}
