//! `build --cloudstack` and `verify --cloudstack` through the binary against the local world: each
//! release's ISO name, dashboard and Headlamp manifests, etcd and CSI rules, recorded in
//! `versions.txt`, the lock and the SBOMs; from the flag, `CKS_ISO_CLOUDSTACK` and the
//! configuration file; and the usage hints for the positional form's documented mistakes.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// `build` with `extra` flags and environment, for Kubernetes and the manifests of `world`.
fn build_for(
    world: &World,
    dir: &Path,
    out: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    build_in(world.config_path(), &tmp)
        .envs(env.iter().copied())
        .args([
            "--kubernetes",
            world.kubernetes(),
            "--network",
            world.network_url(),
        ])
        .args(["--output", p(out), "--cache-dir", p(&dir.join("cache"))])
        .args(extra)
        .output()
        .unwrap()
}

fn usage_error(out: &Output, words: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for word in words {
        assert!(err.contains(word), "{word:?} not in:\n{err}");
    }
    assert!(err.contains("hint:"), "{err}");
}

/// `--dashboard` with the world's dashboard manifest, followed by `more`.
fn with_dashboard<'a>(world: &'a World, more: &[&'a str]) -> Vec<&'a str> {
    [&["--dashboard", world.dashboard_url()][..], more].concat()
}

/// `iso` extracted with bsdtar into `root`.
fn extract(iso: &Path, root: &Path) {
    fs::create_dir_all(root).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(root)]);
}

/// 4.20: NAME.iso, no CSI pair (4.20 does not copy it), the release recorded in `versions.txt`,
/// the lock and both SBOMs, which validate; `verify` takes the release the ISO records.
fn assert_4_20_names_the_iso_alone_and_records_the_release(world: &World, dir: &Path) {
    let out = dir.join("4.20");
    let extra = with_dashboard(world, &["--cloudstack", "4.20"]);
    ok(build_for(world, dir, &out, &extra, &[]));
    let iso = out.join(format!("setup-v{}.iso", world.kubernetes()));
    let root = dir.join("x-4.20");
    extract(&iso, &root);
    assert!(!root.join("manifest.yaml").exists() && !root.join("snapshot-crds.yaml").exists());
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    assert!(versions.contains("\ncloudstack 4.20\n"), "{versions}");
    assert!(!versions.contains("csi-driver"), "{versions}");
    let lock: serde_json::Value =
        serde_json::from_slice(&fs::read(root.join("cks-iso.lock")).unwrap()).unwrap();
    assert_eq!(lock["request"]["cloudstack"], "4.20");
    let cdx = fs::read_to_string(root.join("sbom.cdx.json")).unwrap();
    let spdx = fs::read_to_string(root.join("sbom.spdx.json")).unwrap();
    for sbom in [&cdx, &spdx] {
        assert!(sbom.contains("for CloudStack 4.20"), "{sbom}");
    }
    validate_sboms(
        &[&root.join("sbom.cdx.json")],
        &[&root.join("sbom.spdx.json")],
    );
    let (code, report) = verify_iso(&iso, &[]);
    assert_eq!(
        code,
        Some(0),
        "verify takes the release the ISO records: {report}"
    );
    // Two arches would both be NAME.iso.
    let two = with_dashboard(
        world,
        &["--cloudstack", "4.20", "--arch", "amd64", "--arch", "arm64"],
    );
    usage_error(
        &build_for(world, dir, &out, &two, &[]),
        &["CloudStack 4.20's script names the ISO", "two --arch"],
    );
}

/// 4.21 from the configuration file: NAME-<uname>.iso, still no CSI pair, and it verifies for
/// 4.21.
fn assert_4_21_from_the_configuration_names_the_iso_by_arch(world: &World, dir: &Path) {
    let config = dir.join("cks-iso.yaml");
    fs::write(
        &config,
        format!("{}cloudstack: 4.21\n", world.config_yaml()),
    )
    .unwrap();
    fs::copy(world.trusted_root_path(), dir.join("trusted_root.json")).unwrap();
    let out = dir.join("4.21");
    let dash = with_dashboard(world, &[]);
    ok(build_for(
        world,
        dir,
        &out,
        &dash,
        &[("CKS_ISO_CONFIG", p(&config))],
    ));
    let iso = out.join(format!("setup-v{}-x86_64.iso", world.kubernetes()));
    let (listing, _) = tool("bsdtar", ["-t", "-f", p(&iso)]);
    assert!(!listing.contains("manifest.yaml"), "{listing}");
    let (code, report) = verify_iso(&iso, &["--cloudstack", "4.21"]);
    assert_eq!(code, Some(0), "{report}");
}

/// 4.21 and later etcd nodes extract only etcd/etcd-linux-amd64.tar.gz, whatever their arch: an
/// arm64 ISO for them (4.22 from `CKS_ISO_CLOUDSTACK`) carries the arm64 etcd under that name,
/// and verifies for each of those releases.
fn assert_later_etcd_nodes_get_the_amd64_name(world: &World, dir: &Path) {
    let out = dir.join("etcd");
    let extra = with_dashboard(world, &["--arch", "arm64", "--etcd", "3.5.21"]);
    ok(build_for(
        world,
        dir,
        &out,
        &extra,
        &[("CKS_ISO_CLOUDSTACK", "4.22")],
    ));
    let iso = out.join(format!("setup-v{}-aarch64.iso", world.kubernetes()));
    let (listing, _) = tool("bsdtar", ["-t", "-f", p(&iso)]);
    assert!(
        listing.contains("etcd/etcd-linux-amd64.tar.gz")
            && !listing.contains("etcd/etcd-linux-arm64.tar.gz"),
        "{listing}"
    );
    for release in [
        &[][..],
        &["--cloudstack", "4.21"],
        &["--cloudstack", "4.23"],
    ] {
        let (code, report) = verify_iso(&iso, release);
        assert_eq!(code, Some(0), "{release:?}: {report}");
    }
}

/// 4.20 etcd nodes read no ISO: its arm64 ISO keeps the arm64 name, as it always had, which
/// verify names for a release whose etcd nodes read the ISO.
fn assert_4_20_etcd_keeps_the_arm64_name(world: &World, dir: &Path) {
    let out = dir.join("etcd-4.20");
    let extra = with_dashboard(
        world,
        &[
            "--arch",
            "arm64",
            "--etcd",
            "3.5.21",
            "--cloudstack",
            "4.20",
        ],
    );
    ok(build_for(world, dir, &out, &extra, &[]));
    let iso = out.join(format!("setup-v{}.iso", world.kubernetes()));
    let (code, report) = verify_iso(&iso, &[]);
    assert_eq!(code, Some(0), "{report}");
    let (code, report) = verify_iso(&iso, &["--cloudstack", "4.23"]);
    assert_eq!(code, Some(1), "{report}");
    assert!(
        report.contains("etcd/etcd-linux-arm64.tar.gz: CloudStack 4.23 etcd nodes extract only"),
        "{report}"
    );
}

/// 4.22 applies dashboard.yaml: a Headlamp version alone cannot make its ISO; 4.19 is no
/// release cks-iso builds for. Both are usage errors naming what is accepted.
fn assert_4_22_needs_a_dashboard_and_4_19_is_refused(world: &World, dir: &Path) {
    let out = dir.join("4.22");
    let headlamp = [
        "--headlamp-version",
        world.headlamp_version(),
        "--cloudstack",
        "4.22",
    ];
    usage_error(
        &build_for(world, dir, &out, &headlamp, &[]),
        &["CloudStack 4.22 applies dashboard.yaml", "--dashboard"],
    );
    let old = with_dashboard(world, &["--cloudstack", "4.19"]);
    usage_error(
        &build_for(world, dir, &out, &old, &[]),
        &["--cloudstack \"4.19\"", "4.20, 4.21, 4.22, 4.23 or 24"],
    );
}

#[test]
fn each_release_gets_its_iso_name_manifests_etcd_and_csi_and_records_it() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_4_20_names_the_iso_alone_and_records_the_release(&world, d);
    assert_4_21_from_the_configuration_names_the_iso_by_arch(&world, d);
    assert_later_etcd_nodes_get_the_amd64_name(&world, d);
    assert_4_20_etcd_keeps_the_arm64_name(&world, d);
    assert_4_22_needs_a_dashboard_and_4_19_is_refused(&world, d);
}

/// CloudStack 24 (the release after 4.23) builds and verifies as 4.23 does; a release newer than
/// any cks-iso knows builds with the newest rules and one warning, and is recorded as given.
#[test]
fn cloudstack_24_reads_as_4_23_and_a_newer_release_builds_with_one_warning() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let k = world.kubernetes().to_owned();
    // A Headlamp version without --dashboard: only 4.23's rules can use such an ISO.
    let headlamp = ["--headlamp-version", world.headlamp_version()];
    for (given, recorded, warns) in [("24.0.0", "24.0", false), ("25", "25.0", true)] {
        let out = dir.path().join(given);
        let run = build_for(
            &world,
            dir.path(),
            &out,
            &[&headlamp[..], &["--cloudstack", given]].concat(),
            &[],
        );
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        ok(run);
        let newer = format!("CloudStack {recorded} is newer than any release cks-iso knows");
        assert_eq!(
            stderr.matches(&newer).count(),
            usize::from(warns),
            "{stderr}"
        );
        let iso = out.join(format!("setup-v{k}-x86_64.iso"));
        let root = dir.path().join(format!("x-{given}"));
        extract(&iso, &root);
        assert!(root.join("headlamp.yaml").exists() && !root.join("dashboard.yaml").exists());
        let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
        assert!(
            versions.contains(&format!("\ncloudstack {recorded}\n")),
            "{versions}"
        );
        let (code, report) = verify_iso(&iso, &[]);
        assert_eq!(code, Some(0), "{report}");
        // Read with 4.22's rules the same ISO lacks the dashboard those nodes apply.
        let (code, report) = verify_iso(&iso, &["--cloudstack", "4.22"]);
        assert_eq!(code, Some(1), "{report}");
    }
}

#[test]
fn the_documented_argument_mistakes_get_what_was_meant() {
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "build",
        "out",
        "1.33.1",
        "1.6.2",
        "1.33.0",
        "https://example.org/net.yaml",
        "https://example.org/dash.yaml",
    ];
    // The arm64 example: ARCH where BUILD_NAME goes.
    let out = cks_iso()
        .current_dir(dir.path())
        .args(base)
        .arg("aarch64")
        .output()
        .unwrap();
    usage_error(
        &out,
        &[
            "argument 7 is BUILD_NAME, but \"aarch64\" is an architecture",
            "setup-v1.33.1 aarch64",
        ],
    );
    // The etcd example: the etcd version where ARCH goes.
    let out = cks_iso()
        .current_dir(dir.path())
        .args(base)
        .args(["setup-v1.33.1", "3.5.21"])
        .output()
        .unwrap();
    usage_error(
        &out,
        &[
            "argument 8 is ARCH, but \"3.5.21\" is a version",
            "amd64 3.5.21",
        ],
    );
    assert!(!dir.path().join("out").exists());
}
