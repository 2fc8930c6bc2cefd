//! Deltas across the air gap, in the local world (Kubernetes 1.32.4, 1.33.0 and 1.33.1 sharing
//! everything else): `cache export --locked NEW --minus OLD` carries only what OLD lacks and says
//! what it assumes in `delta.json`; with the world stopped, importing only the delta and
//! `build --locked NEW --offline --from-iso OLD.iso` give NEW's ISO byte for byte (`cmp`), and
//! without the delta the build fails naming what is missing and the export that brings it;
//! `cache import` of a delta checks what it assumes. The delta's share of a full export is
//! printed for a patch and a minor upgrade (docs/guide/upgrades.md has the figures).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::hostile::bytes_under;
use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// `cks-iso cache ARGS… --cache-dir CACHE`.
fn cache_cmd(cache: &Path, args: &[&str]) -> Output {
    cks_iso()
        .arg("cache")
        .args(args)
        .args(["--cache-dir", p(cache)])
        .output()
        .unwrap()
}

/// A `--locked` build with no world: offline, the world's trusted root, into `out`.
fn offline_build(dir: &Path, lock: &Path, cache: &Path, out: &Path, from_iso: &[&Path]) -> Command {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = cks_iso();
    cmd.env("TMPDIR", &tmp)
        .args(["build", "--no-progress", "--locked", p(lock), "--offline"])
        .args(["--trusted-root", p(&dir.join("trusted_root.json"))])
        .args(["--output", p(out), "--cache-dir", p(cache)]);
    for iso in from_iso {
        cmd.args(["--from-iso", p(iso)]);
    }
    cmd
}

/// Online builds of each version (amd64) in one world and cache; their ISOs and locks.
fn build_online(dir: &Path, versions: &[&str]) -> Vec<(PathBuf, PathBuf)> {
    let world = World::start(Options {
        also_kubernetes: vec!["1.33.0".into(), "1.32.4".into()],
        ..Options::default()
    });
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut out = Vec::new();
    for v in versions {
        let lock = dir.join(format!("{v}.lock"));
        ok(build_in(world.config_path(), &tmp)
            .args(["--kubernetes", v, "--arch", "amd64", "--no-progress"])
            .args(["--network", world.network_url()])
            .args(["--dashboard", world.dashboard_url()])
            .args(["--output", p(&dir.join(v))])
            .args(["--cache-dir", p(&dir.join("online"))])
            .args(["--lock-file", p(&lock)])
            .output()
            .unwrap());
        out.push((dir.join(v).join(format!("setup-v{v}-x86_64.iso")), lock));
    }
    // The world's Sigstore root, which its signatures chain to, outlives the world.
    fs::copy(
        world.config_path().with_file_name("trusted_root.json"),
        dir.join("trusted_root.json"),
    )
    .unwrap();
    out
}

/// Exports NEW minus OLD and in full; returns (delta bytes, full bytes) of blobs.
fn export_both(dir: &Path, new_lock: &Path, minus: &Path, name: &str) -> (u64, u64) {
    let (delta, full) = (
        dir.join(format!("{name}-delta")),
        dir.join(format!("{name}-full")),
    );
    let online = dir.join("online");
    ok(cache_cmd(
        &online,
        &["export", "--locked", p(new_lock), "-o", p(&full)],
    ));
    let out = ok(cache_cmd(
        &online,
        &[
            "export",
            "--locked",
            p(new_lock),
            "--minus",
            p(minus),
            "-o",
            p(&delta),
        ],
    ));
    let (stdout, _) = text(&out);
    assert!(stdout.starts_with("exported a delta to "), "{stdout}");
    let (d, f) = (
        bytes_under(&delta.join("blobs")),
        bytes_under(&full.join("blobs")),
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(delta.join("delta.json")).unwrap()).unwrap();
    assert_eq!(manifest["format"], 1);
    assert_eq!(manifest["carried"]["bytes"], d, "{manifest:#}");
    assert_eq!(manifest["full"]["bytes"], f, "{manifest:#}");
    let assumes = manifest["assumes"].as_array().unwrap();
    assert!(!assumes.is_empty(), "{manifest:#}");
    let iso_name = minus.file_name().unwrap().to_str().unwrap();
    assert!(
        assumes.iter().all(|a| a["from"] == iso_name),
        "{manifest:#}"
    );
    // What the delta leaves out plus what it carries is the full export, blob for blob.
    assert_eq!(
        manifest["carried"]["blobs"].as_u64().unwrap() + assumes.len() as u64,
        manifest["full"]["blobs"].as_u64().unwrap()
    );
    // Only what changed travels: the new Kubernetes (binaries, control-plane images and their
    // signatures) and the manifests as taken (the ISO holds them edited).
    for c in manifest["carries"].as_array().unwrap() {
        let what = c["what"].as_str().unwrap();
        let new_kubernetes = what.starts_with("file k8s/")
            || (what.starts_with("image registry.k8s.io/kube-") && what.contains(":v1.33.1 "));
        assert!(
            new_kubernetes
                || what.starts_with("manifest ")
                || (name == "minor" && !what.contains("csi")),
            "{name}: the delta carries {what}"
        );
    }
    let bytes_of = |pred: &dyn Fn(&str) -> bool| -> u64 {
        manifest["carries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| pred(c["what"].as_str().unwrap()))
            .map(|c| c["size"].as_u64().unwrap_or(0))
            .sum()
    };
    eprintln!(
        "{name}: of the delta, k8s/ binaries {} bytes, kube-* images {} bytes, manifests {} bytes",
        bytes_of(&|w| w.starts_with("file k8s/")),
        bytes_of(&|w| w.starts_with("image registry.k8s.io/kube-")),
        bytes_of(&|w| w.starts_with("manifest ")),
    );
    eprintln!(
        "{name}: delta {d} bytes of a full export of {f} bytes ({:.1}%), {} blob(s) of {} \
         carried",
        d as f64 * 100.0 / f as f64,
        manifest["carried"]["blobs"],
        manifest["full"]["blobs"]
    );
    (d, f)
}

/// Without the delta (an empty cache), the offline build names what is missing and the export
/// that brings it, and writes no ISO.
fn assert_missing_blobs_named_with_the_export(dir: &Path, new_lock: &Path, old_iso: &Path) {
    let bare = dir.join("bare");
    let out = offline_build(dir, new_lock, &bare, &dir.join("none"), &[old_iso])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for want in [
        "cannot build ",
        "blob(s) it needs are neither in the cache",
        "file k8s/kubeadm (amd64) from https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm",
        "hint: where the lock was written, run `cks-iso cache export --locked 1.33.1.lock \
         --minus setup-v1.33.0-x86_64.iso -o DELTA`",
    ] {
        assert!(stderr.contains(want), "{want:?} not in:\n{stderr}");
    }
    assert!(!dir.join("none").join("setup-v1.33.1-x86_64.iso").exists());
}

/// `cache import` of the patch delta into `into` with `--locked LOCK` and `extra`.
fn import_patch_delta(dir: &Path, into: &str, lock: &Path, extra: &[&str]) -> Output {
    let delta = dir.join("patch-delta");
    let mut args = vec!["import", p(&delta), "--locked", p(lock)];
    args.extend(extra);
    cache_cmd(&dir.join(into), &args)
}

/// A delta for another lock is refused at import; with its own lock, the import says what it
/// expects from the old ISO, and checks it when given (the new ISO is no stand-in for the old
/// one: what the delta assumes is not all in it). Returns the far cache the delta went into.
fn import_the_delta_checking_what_it_assumes(
    dir: &Path,
    (old_iso, old_lock): (&Path, &Path),
    (new_iso, new_lock): (&Path, &Path),
) -> PathBuf {
    let out = import_patch_delta(dir, "wrong", old_lock, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("is a delta for another lock than"),
        "{}",
        text(&out).1
    );
    let out = ok(import_patch_delta(dir, "far", new_lock, &[]));
    assert!(
        text(&out)
            .1
            .contains("build with `--from-iso setup-v1.33.0-x86_64.iso`"),
        "{}",
        text(&out).1
    );
    ok(import_patch_delta(
        dir,
        "far-checked",
        new_lock,
        &["--from-iso", p(old_iso)],
    ));
    let stand_in = built_minor_stand_in(dir, new_iso);
    let out = import_patch_delta(
        dir,
        "far-wrong-iso",
        new_lock,
        &["--from-iso", p(&stand_in)],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out).1);
    assert!(
        text(&out).1.contains("assumes the far side holds"),
        "{}",
        text(&out).1
    );
    dir.join("far")
}

/// The offline build from the far cache takes the rest from the old ISO, saying so, and gives
/// the new ISO byte for byte.
fn assert_rebuilt_from_the_old_iso(
    dir: &Path,
    far: &Path,
    old_iso: &Path,
    (new_iso, new_lock): (&Path, &Path),
) {
    let rebuilt = dir.join("rebuilt");
    let out = ok(offline_build(dir, new_lock, far, &rebuilt, &[old_iso])
        .output()
        .unwrap());
    assert!(text(&out).1.contains("blob(s)"), "{}", text(&out).1);
    assert!(
        text(&out)
            .1
            .contains(&format!("from {} into the cache", old_iso.display())),
        "{}",
        text(&out).1
    );
    let again = rebuilt.join("setup-v1.33.1-x86_64.iso");
    assert!(
        same_bytes(new_iso, &again),
        "{} differs from {}",
        again.display(),
        new_iso.display()
    );
}

#[test]
fn a_patch_delta_is_small_and_rebuilds_new_offline_from_the_old_iso_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let built = build_online(dir, &["1.33.0", "1.33.1"]);
    let [(old_iso, old_lock), (new_iso, new_lock)] = [built[0].clone(), built[1].clone()];
    let (delta, full) = export_both(dir, &new_lock, &old_iso, "patch");
    assert!(
        delta < full,
        "a patch delta of {delta} bytes is no smaller than {full}"
    );
    // The world is stopped: everything below runs with no server.
    assert_missing_blobs_named_with_the_export(dir, &new_lock, &old_iso);
    let old = (old_iso.as_path(), old_lock.as_path());
    let new = (new_iso.as_path(), new_lock.as_path());
    let far = import_the_delta_checking_what_it_assumes(dir, old, new);
    assert_rebuilt_from_the_old_iso(dir, &far, &old_iso, new);
}

/// An ISO holding only part of what the old one holds: NEW's tree without its archives.
fn built_minor_stand_in(dir: &Path, iso: &Path) -> PathBuf {
    let tree = dir.join("stand-in");
    fs::create_dir_all(&tree).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(&tree)]);
    fs::remove_dir_all(tree.join("docker")).unwrap();
    let out = dir.join("stand-in.iso");
    build_iso(&tree, &out);
    out
}

#[test]
fn a_delta_minus_a_lock_is_checked_against_the_cache_at_import() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let built = build_online(dir, &["1.32.4", "1.33.1"]);
    let [(minor_iso, minor_lock), (new_iso, new_lock)] = [built[0].clone(), built[1].clone()];
    // A minor upgrade: the figure, and the offline rebuild from the old ISO.
    let (delta, full) = export_both(dir, &new_lock, &minor_iso, "minor");
    assert!(delta < full);
    let far = dir.join("far");
    ok(cache_cmd(
        &far,
        &[
            "import",
            p(&dir.join("minor-delta")),
            "--locked",
            p(&new_lock),
        ],
    ));
    let rebuilt = dir.join("rebuilt");
    ok(offline_build(dir, &new_lock, &far, &rebuilt, &[&minor_iso])
        .output()
        .unwrap());
    assert!(same_bytes(
        &new_iso,
        &rebuilt.join("setup-v1.33.1-x86_64.iso")
    ));

    // Minus a lock: the far side is assumed to hold that lock's carry in its cache.
    let online = dir.join("online");
    let delta = dir.join("lock-delta");
    ok(cache_cmd(
        &online,
        &[
            "export",
            "--locked",
            p(&new_lock),
            "--minus",
            p(&minor_lock),
            "-o",
            p(&delta),
        ],
    ));
    let empty = dir.join("empty");
    let out = cache_cmd(&empty, &["import", p(&delta), "--locked", p(&new_lock)]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("assumes the far side holds"), "{stderr}");
    assert!(stderr.contains("held by 1.32.4.lock"), "{stderr}");
    assert!(
        stderr.contains("hint: import the carry of 1.32.4.lock first"),
        "{stderr}"
    );
    // With the old carry in place, the delta imports and the build needs nothing else.
    let carried = dir.join("carried");
    ok(cache_cmd(
        &online,
        &[
            "export",
            "--locked",
            p(&minor_lock),
            "-o",
            p(&dir.join("old-full")),
        ],
    ));
    ok(cache_cmd(
        &carried,
        &[
            "import",
            p(&dir.join("old-full")),
            "--locked",
            p(&minor_lock),
        ],
    ));
    ok(cache_cmd(
        &carried,
        &["import", p(&delta), "--locked", p(&new_lock)],
    ));
    let again = dir.join("again");
    ok(offline_build(dir, &new_lock, &carried, &again, &[])
        .output()
        .unwrap());
    assert!(same_bytes(
        &new_iso,
        &again.join("setup-v1.33.1-x86_64.iso")
    ));
}
