//! Reproducible by default: an unlocked build given no epoch dates its ISOs by what they contain
//! (the newest `created` of kubeadm's linux/amd64 image configs, `lock::epoch`), never by the
//! clock. The same request built on two days — the second run three days later under libfaketime,
//! with a fresh cache and another set of architectures — gives the same ISO, `.sha256` and SBOMs;
//! the lock says which config gave the date, and skopeo, reading the world's registry, finds that
//! date to be the newest.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

const ARM64: &str = "setup-v1.33.1-aarch64.iso";

/// `cks-iso build` in `world`, no epoch given, for `arches`, into `dir/out`, with `dir/cache`,
/// writing `dir/run.lock`; `faketime` runs it that far from now (`+3d`).
fn unlocked(world: &World, dir: &Path, arches: &[&str], faketime: Option<&str>) -> Command {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = match faketime {
        Some(offset) => {
            let mut cmd = Command::new("faketime");
            cmd.args(["-f", offset, env!("CARGO_BIN_EXE_cks-iso")]);
            cmd
        }
        None => cks_iso(),
    };
    cmd.env_remove("SOURCE_DATE_EPOCH")
        .env("CKS_ISO_CONFIG", world.config_path())
        .env("TMPDIR", &tmp)
        .args(["build", "--no-progress", "--kubernetes", "1.33.1"])
        .args(["--network", world.network_url()])
        .args(["--dashboard", world.dashboard_url()])
        .args(["--output", p(&dir.join("out"))])
        .args(["--cache-dir", p(&dir.join("cache"))])
        .args(["--lock-file", p(&dir.join("run.lock"))]);
    for arch in arches {
        cmd.args(["--arch", arch]);
    }
    cmd
}

/// The newest `created` among the world's kubeadm images for linux/amd64, as skopeo reads their
/// configs from the world's registry: `(image, created)`.
fn newest_by_skopeo(world: &World) -> (String, String) {
    let mut dated = Vec::new();
    for image in world.images().iter().filter(|i| i.source == "kubeadm") {
        let name = image.reference.split('@').next().unwrap();
        let at = format!("docker://{}/{}", world.registry_host(), image.repository);
        let at = match &image.tag {
            Some(tag) => format!("{at}:{tag}"),
            None => format!("{at}@{}", image.digest),
        };
        let out = run(Command::new("skopeo").args([
            "inspect",
            "--tls-verify=false",
            "--override-os",
            "linux",
            "--override-arch",
            "amd64",
            "--config",
            &at,
        ]));
        let config: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let created = config["created"]
            .as_str()
            .expect("a created date")
            .to_owned();
        dated.push((created, name.to_owned()));
    }
    assert!(dated.len() >= 5, "kubeadm's images: {dated:?}");
    // The world's dates are all `…Z` with nanoseconds: text order is time order.
    let (created, image) = dated.into_iter().max().unwrap();
    (image, created)
}

#[test]
fn unlocked_builds_on_different_days_are_byte_identical_and_dated_by_their_images() {
    require("faketime");
    require("skopeo");
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let world = World::start(Options::default());

    run(&mut unlocked(&world, &a, &["arm64"], None));
    run(&mut unlocked(&world, &b, &["amd64", "arm64"], Some("+3d")));

    for name in [
        ARM64.to_owned(),
        format!("{ARM64}.sha256"),
        format!("{ARM64}.cdx.json"),
        format!("{ARM64}.spdx.json"),
    ] {
        let (x, y) = (a.join("out").join(&name), b.join("out").join(&name));
        assert!(x.exists(), "{} was not written", x.display());
        assert!(same_bytes(&x, &y), "{name} differs between the two days");
    }

    let lock: serde_json::Value =
        serde_json::from_slice(&fs::read(a.join("run.lock")).unwrap()).unwrap();
    let (image, created) = newest_by_skopeo(&world);
    let from = &lock["epoch_from"];
    assert_eq!(from["rule"], "image-created", "{lock:#}");
    assert_eq!(from["image"], image.as_str());
    assert_eq!(from["created"], created.as_str());
    let expected = cks_iso_io::date::parse_rfc3339(&created).unwrap();
    assert_eq!(lock["epoch"], expected);
    let other: serde_json::Value =
        serde_json::from_slice(&fs::read(b.join("run.lock")).unwrap()).unwrap();
    assert_eq!(other["epoch"], lock["epoch"]);
    assert_eq!(other["epoch_from"], lock["epoch_from"]);

    // The ISO's volume is dated so too: xorriso reports its creation time.
    let (report, _) = tool(
        "xorriso",
        ["-indev", p(&a.join("out").join(ARM64)), "-pvd_info"],
    );
    let ymd = cks_iso_io::date::rfc3339(expected)[..10].replace('-', "");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("Creation Time:") && l.contains(&ymd)),
        "the volume is not dated {ymd}:\n{report}"
    );

    // A given epoch still wins, and the lock then names no rule.
    let c = dir.path().join("c");
    run(unlocked(&world, &c, &["arm64"], None).env("SOURCE_DATE_EPOCH", EPOCH));
    let given: serde_json::Value =
        serde_json::from_slice(&fs::read(c.join("run.lock")).unwrap()).unwrap();
    assert_eq!(given["epoch"], 1_700_000_000);
    assert!(given.get("epoch_from").is_none(), "{given:#}");
    assert!(!same_bytes(
        &a.join("out").join(ARM64),
        &c.join("out").join(ARM64)
    ));
}
