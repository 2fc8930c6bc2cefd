//! `cks-iso resolve --lock` against the whole local world: the lock it prints on stdout is the
//! lock `build` resolves and then realizes for the same flags (a version label and an add-on
//! manifest included) — every byte a build's lock holds
//! but what only the realization can know (each file's size once its body is staged, the
//! signature material that verified) — for the default architecture and for two in one lock; and
//! `build --locked` of it, `--offline` from the cache a first build warmed (so nothing can be
//! resolved a second time), writes ISOs `cmp`-equal to that build's and its very lock, byte for
//! byte. Flags only a lock uses are refused without `--lock`, and `--lock` with `--json`.

use std::fs;
use std::path::Path;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// The request both commands are given: `kubernetes`, the world's manifests, and `arches`.
fn request<'a>(world: &'a World, kubernetes: &'a str, arches: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--kubernetes",
        kubernetes,
        "--network",
        world.network_url(),
        "--dashboard",
        world.dashboard_url(),
    ];
    for arch in arches {
        args.extend(["--arch", arch]);
    }
    args
}

/// `cks-iso resolve --lock ARGS…` in `world` with its own cache and TMPDIR under `dir`, dated as
/// the tests' builds are: the lock printed on stdout, after checking stderr carried the log.
fn resolve_lock(world: &World, dir: &Path, args: &[&str]) -> Vec<u8> {
    let tmp = dir.join("resolve-tmp");
    fs::create_dir_all(&tmp).unwrap();
    let out = ok(cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .env("XDG_CACHE_HOME", dir.join("resolve-cache"))
        .env("TMPDIR", &tmp)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .args(["--no-progress", "resolve", "--lock"])
        .args(args)
        .output()
        .unwrap());
    assert!(
        stderr(&out).contains("resolving versions"),
        "the log goes to stderr:\n{}",
        stderr(&out)
    );
    assert!(names(&tmp).is_empty(), "left in TMPDIR: {:?}", names(&tmp));
    out.stdout
}

/// `cks-iso build ARGS…` in `world` with the cache `dir/cache`, writing the ISOs to `out` and
/// the run's lock to `lock`.
fn build(world: &World, dir: &Path, out: &Path, lock: &Path, args: &[&str]) {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    ok(build_in(world.config_path(), &tmp)
        .arg("--no-progress")
        .args(args)
        .args(["--cache-dir", p(&dir.join("cache"))])
        .args(["--output", p(out), "--lock-file", p(lock)])
        .output()
        .unwrap());
}

/// `lock` without what only realizing it tells: each file's size and signature, each image's
/// signature.
fn unrealized(lock: &serde_json::Value) -> serde_json::Value {
    let mut lock = lock.clone();
    for arch in lock["arches"].as_object_mut().unwrap().values_mut() {
        for file in arch["files"].as_array_mut().unwrap() {
            let file = file.as_object_mut().unwrap();
            file.remove("size");
            file.remove("signature");
        }
        for image in arch["images"].as_array_mut().unwrap() {
            image.as_object_mut().unwrap().remove("signature");
        }
    }
    lock
}

/// The lock `resolve --lock` printed against the one `build` wrote: equal but for what the
/// realization adds, which it does add (sizes, signatures), and which `resolve` leaves out.
fn assert_the_build_realizes(resolved: &[u8], built: &[u8]) {
    // stdout is the lock and nothing else: one JSON document, as `--lock-file` writes one.
    let resolved: serde_json::Value = serde_json::from_slice(resolved).unwrap();
    let built: serde_json::Value = serde_json::from_slice(built).unwrap();
    let pretty =
        |lock: &serde_json::Value| serde_json::to_string_pretty(&unrealized(lock)).unwrap();
    let (printed, realized) = (pretty(&resolved), pretty(&built));
    if let Some((line, (a, b))) =
        (printed.lines().zip(realized.lines()).enumerate()).find(|(_, (a, b))| a != b)
    {
        panic!("line {line} of the locks differs: resolve --lock {a:?}, build {b:?}");
    }
    assert_eq!(
        printed.len(),
        realized.len(),
        "one lock is the other's prefix"
    );
    let (mut signed, mut sized) = (0, 0);
    for (arch, entry) in resolved["arches"].as_object().unwrap() {
        let files = entry["files"].as_array().unwrap();
        for (file, realized) in files
            .iter()
            .zip(built["arches"][arch]["files"].as_array().unwrap())
        {
            let size = file["size"].as_u64().unwrap();
            assert!(
                size == 0 || size == realized["size"].as_u64().unwrap(),
                "{file}"
            );
            assert!(file.get("signature").is_none(), "{file}");
            sized += usize::from(size == 0 && realized["size"].as_u64().unwrap() > 0);
        }
        for image in entry["images"].as_array().unwrap() {
            assert!(image.get("signature").is_none(), "{image}");
        }
        let images = built["arches"][arch]["images"].as_array().unwrap();
        signed += images
            .iter()
            .filter(|i| i.get("signature").is_some())
            .count();
    }
    assert!(
        sized > 0,
        "the build staged the files and recorded their sizes"
    );
    assert!(
        signed > 0,
        "the build verified and recorded images' signatures"
    );
}

/// `resolve --lock ARGS…` in `world`, a build of the same request, and `build --locked` of the
/// printed lock `--offline` from the build's cache: the same ISOs (one per `unames`) and the same
/// lock. Returns the printed lock.
fn resolved_lock_rebuilds_what_the_build_built(
    world: &World,
    args: &[&str],
    unames: &[&str],
) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let resolved = resolve_lock(world, d, args);
    let (out, lock) = (d.join("out"), d.join("run.lock"));
    build(world, d, &out, &lock, args);
    let built = fs::read(&lock).unwrap();
    assert_the_build_realizes(&resolved, &built);

    let printed = d.join("cks-iso.lock");
    fs::write(&printed, &resolved).unwrap();
    let (out2, lock2) = (d.join("out2"), d.join("rebuilt.lock"));
    build(
        world,
        d,
        &out2,
        &lock2,
        &["--locked", p(&printed), "--offline"],
    );
    for uname in unames {
        let iso = format!("setup-v{}-{uname}.iso", world.kubernetes());
        assert!(
            same_bytes(&out.join(&iso), &out2.join(&iso)),
            "{iso} differs when built from the lock resolve printed"
        );
    }
    assert_eq!(names(&out), names(&out2));
    assert!(
        fs::read(&lock2).unwrap() == built,
        "the locked build's lock differs from the first build's"
    );
    serde_json::from_slice(&resolved).unwrap()
}

#[test]
fn resolve_lock_is_the_lock_build_realizes_for_the_default_arch_a_label_and_an_add_on() {
    let world = World::start(Options::default());
    // An add-on manifest naming an image the world's registry holds and no core manifest names.
    let image = format!(
        "ghcr.io/headlamp-k8s/headlamp:v{}",
        world.headlamp_version()
    );
    let path = "raw.githubusercontent.com/acme/addon/v1/addon.yaml";
    let text = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: addon\nspec:\n  containers:\n    - name: \
         addon\n      image: {image}\n"
    );
    world
        .upstream()
        .put(path, text.into_bytes(), "text/plain; charset=utf-8");
    let manifest = format!("addon.yaml=https://{path}");
    let mut args = request(&world, "stable-1.33", &[]);
    args.extend(["--manifest", &manifest]);
    let lock = resolved_lock_rebuilds_what_the_build_built(&world, &args, &["x86_64"]);
    assert_eq!(lock["request"]["kubernetes_label"], "stable-1.33");
    assert_eq!(lock["request"]["kubernetes"], world.kubernetes());
    let images = lock["arches"]["amd64"]["images"].as_array().unwrap();
    let addon = images.iter().find(|i| i["reference"] == image.as_str());
    let addon = addon.unwrap_or_else(|| panic!("{image} not locked: {images:?}"));
    assert_eq!(addon["extra"], "manifest:addon.yaml");
}

#[test]
fn resolve_lock_is_the_lock_build_realizes_for_two_arches_in_one_lock() {
    let world = World::start(Options::default());
    let args = request(&world, world.kubernetes(), &["amd64", "arm64"]);
    let lock = resolved_lock_rebuilds_what_the_build_built(&world, &args, &["x86_64", "aarch64"]);
    let arches: Vec<&String> = lock["arches"].as_object().unwrap().keys().collect();
    assert_eq!(arches, ["amd64", "arm64"]);
}

#[test]
fn lock_flags_need_lock_and_lock_is_not_json() {
    let resolve = |args: &[&str]| {
        let mut cmd = cks_iso();
        cmd.env_remove("CKS_ISO_CONFIG")
            .env_remove("CKS_ISO_CLOUDSTACK")
            .args(["resolve", "--kubernetes", "1.33.1"])
            .args(args);
        cmd
    };
    let err = fails(
        &mut resolve(&["--network", "calico.yaml"]),
        2,
        &["--network", "--lock"],
    );
    assert!(err.contains("hint:"), "{err}");
    fails(
        &mut resolve(&["--cloudstack", "4.22"]),
        2,
        &["--cloudstack", "--lock"],
    );
    fails(
        &mut resolve(&["--lock", "--json"]),
        2,
        &["--lock", "--json"],
    );
}
