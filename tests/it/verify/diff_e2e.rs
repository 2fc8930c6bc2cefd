//! `cks-iso diff` on ISOs `cks-iso build` made in the local world: the default autoscaler against
//! one pinned with `AUTOSCALER_VERSION`, an ISO against itself, and the run's `--lock-file` (two
//! arches) against each of its ISOs.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// `cks-iso build` of amd64 (and whatever `--arch` is added) inside `world` into `out`.
fn build(world: &World, out: &Path, cache: &Path, tmp: &Path) -> Command {
    let mut cmd = build_in(world.config_path(), tmp);
    cmd.args(["--kubernetes", world.kubernetes()])
        .args(["--network", world.network_url()])
        .args(["--dashboard", world.dashboard_url()])
        .args([
            "--arch",
            "amd64",
            "--output",
            p(out),
            "--cache-dir",
            p(cache),
        ]);
    cmd
}

fn short(digest: &str) -> String {
    format!("sha256:{}", &digest.trim_start_matches("sha256:")[..12])
}

#[test]
fn another_autoscaler_is_named_with_its_image_digests_and_manifest_line() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (cache, tmp) = (dir.path().join("cache"), dir.path().join("tmp"));
    fs::create_dir_all(&tmp).unwrap();
    let k = world.kubernetes().to_owned();
    let default = world.autoscaler_version().unwrap().to_owned();
    let pinned = "1.33.1";
    assert_ne!(
        default, pinned,
        "the world's default must be another release"
    );

    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let lock = dir.path().join("a.lock");
    ok(build(&world, &a_dir, &cache, &tmp)
        .args(["--arch", "arm64", "--lock-file"])
        .arg(&lock)
        .output()
        .unwrap());
    let mut cmd = build(&world, &b_dir, &cache, &tmp);
    cmd.env("AUTOSCALER_VERSION", pinned);
    ok(cmd.output().unwrap());
    let name = format!("setup-v{k}-x86_64.iso");
    let (a, b) = (a_dir.join(&name), b_dir.join(&name));

    let o = cks_iso().args(["diff", p(&a), p(&b)]).output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    let image = |v: &str| format!("registry.k8s.io/autoscaling/cluster-autoscaler:v{v}");
    let digest = |v: &str| short(&world.image(&image(v)).digest);
    for want in [
        format!("~ autoscaler: {default} → {pinned}"),
        format!("- {}: {}", image(&default), digest(&default)),
        format!("+ {}: {}", image(pinned), digest(pinned)),
        "--- a/autoscaler.yaml".to_owned(),
    ] {
        assert!(out.contains(&want), "{want:?} not in:\n{out}");
    }
    // Same binaries, and the SBOMs, versions.txt, the lock and docker/ restate the sections.
    for noise in ["files (", "entries:", "build:"] {
        assert!(!out.contains(noise), "{noise:?} in:\n{out}");
    }
    // The manifest's line, as a unified diff (indented under its section) shows it.
    for (mark, v) in [('-', default.as_str()), ('+', pinned)] {
        let line = format!("image: {}", image(v));
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(mark) && l.trim_end().ends_with(&line)),
            "no {mark} line with {line:?} in:\n{out}"
        );
    }
    let json = cks_iso()
        .args(["diff", "--json", p(&a), p(&b)])
        .output()
        .unwrap();
    assert_eq!(json.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let images = json["arches"][0]["images"].as_array().unwrap();
    let removed = images
        .iter()
        .find(|i| i["name"] == image(&default))
        .unwrap();
    assert_eq!(removed["change"], "removed");
    assert_eq!(removed["a"]["digest"], world.image(&image(&default)).digest);
    let m = json["manifests"].as_array().unwrap();
    assert!(m.iter().any(|m| m["name"] == "autoscaler.yaml"), "{json:#}");

    // An ISO with itself, and the run's lock (both arches) with each of its ISOs: identical.
    let arm = a_dir.join(format!("setup-v{k}-aarch64.iso"));
    for (x, y) in [(&a, &a), (&lock, &a), (&arm, &lock)] {
        let o = cks_iso().args(["diff", p(x), p(y)]).output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.stdout.is_empty());
    }
}
