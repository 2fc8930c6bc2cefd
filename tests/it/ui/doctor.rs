//! `cks-iso doctor` in the local world: healthy, every check `ok` and exit 0; then with a dead
//! download mirror and a dead registry mirror, each named in its `FAIL` line with a hint, exit 1.

use std::path::Path;
use std::process::Output;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

fn doctor(world: &World, cache: &Path, extra: &[&str]) -> Output {
    cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .args(["doctor", "--cache-dir", p(cache)])
        .args(extra)
        .output()
        .unwrap()
}

/// A local port nothing listens on.
fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// In the healthy world, every check of both arches is `ok`, each kind named, and doctor exits 0.
fn assert_every_check_ok(world: &World, cache: &Path) {
    let out = doctor(
        world,
        cache,
        &[
            "--kubernetes",
            world.kubernetes(),
            "--arch",
            "amd64",
            "--arch",
            "arm64",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for line in stdout.lines() {
        assert!(line.starts_with("ok    "), "not ok: {line}\n{stdout}");
    }
    for want in [
        "ok    configuration: ",
        "ok    cache dir: ",
        "ok    TMPDIR ",
        "ok    mirror ",
        "(for https://dl.k8s.io): reachable (HTTP 404 for the base URL itself",
        "ok    trusted root: ",
        "ok    git ",
        "cluster-autoscaler tags listed",
        "ok    registry registry.k8s.io: ",
        "ok    registry docker.io: ",
        "ok    resolve Kubernetes v",
        " for arm64: ",
        "ok    room in ",
    ] {
        assert!(stdout.contains(want), "{want:?} missing:\n{stdout}");
    }
}

/// The `FAIL` line of `lines` naming `needle` is followed by a hint.
fn assert_fails_with_a_hint(lines: &[&str], needle: &str) {
    let i = lines
        .iter()
        .position(|l| l.starts_with("FAIL  ") && l.contains(needle))
        .unwrap_or_else(|| panic!("no FAIL naming {needle}:\n{}", lines.join("\n")));
    assert!(
        lines
            .get(i + 1)
            .is_some_and(|l| l.trim_start().starts_with("hint: ")),
        "no hint after {}",
        lines[i]
    );
}

/// The same world with one dead download mirror and one dead registry mirror: each is named in a
/// `FAIL` line with a hint, nothing else fails, and doctor exits 1 counting them.
fn assert_dead_mirrors_named(world: &World, cache: &Path, dead_files: &str, dead_registry: &str) {
    let out = doctor(
        world,
        cache,
        &[
            "--mirror",
            &format!("https://dl.k8s.io={dead_files}/dl.k8s.io"),
            "--registry-mirror",
            &format!("quay.io={dead_registry}"),
            "--insecure-registry",
            dead_registry.trim_start_matches("http://"),
            "--connect-timeout",
            "2",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_fails_with_a_hint(
        &lines,
        &format!("mirror {dead_files}/dl.k8s.io (for https://dl.k8s.io)"),
    );
    assert_fails_with_a_hint(&lines, &dead_registry.replace("http://", ""));
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("FAIL")).count(),
        2,
        "only the two dead mirrors fail:\n{stdout}"
    );
    assert!(
        stdout.contains("ok    registry registry.k8s.io"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 of "));
    println!("{stdout}");
}

/// `--json`: the same checks as one object, the failure of the dead mirror with its hint.
fn assert_json_reports_the_failure(world: &World, cache: &Path, dead_files: &str) {
    let out = doctor(
        world,
        cache,
        &[
            "--json",
            "--mirror",
            &format!("https://dl.k8s.io={dead_files}/dl.k8s.io"),
            "--connect-timeout",
            "2",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    assert_eq!(report["format"], 1);
    assert_eq!(report["ok"], false);
    let checks = report["checks"].as_array().unwrap();
    assert_eq!(report["total"], checks.len(), "{report}");
    assert_eq!(report["failed"], 1, "{report}");
    let failed: Vec<&serde_json::Value> = checks.iter().filter(|c| c["ok"] == false).collect();
    assert!(
        failed[0]["check"]
            .as_str()
            .unwrap()
            .contains(&format!("mirror {dead_files}/dl.k8s.io"))
            && failed[0]["hint"].is_string(),
        "{report}"
    );
    assert!(
        checks
            .iter()
            .any(|c| c["check"] == "configuration" && c["ok"] == true),
        "{report}"
    );
}

#[test]
fn healthy_world_passes_every_check_and_a_dead_mirror_is_named() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    assert_every_check_ok(&world, &cache);
    let dead_files = format!("http://127.0.0.1:{}", dead_port());
    let dead_registry = format!("http://127.0.0.1:{}", dead_port());
    assert_dead_mirrors_named(&world, &cache, &dead_files, &dead_registry);
    assert_json_reports_the_failure(&world, &cache, &dead_files);
}

/// Neither `--config` nor `CKS_ISO_CONFIG`: `$XDG_CONFIG_HOME/cks-iso/config.yaml` is read, and
/// `doctor` and `-v` name it. The world's mirrors are only in that file, so a healthy run proves
/// it was used (without them every check would go to the real upstreams).
#[test]
fn default_configuration_file_is_read_and_named() {
    assert!(
        !std::path::Path::new("/etc/cks-iso/config.yaml").exists(),
        "a stray /etc/cks-iso/config.yaml on this machine would be read by these tests"
    );
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let config_home = dir.path().join("config");
    let file = config_home.join("cks-iso/config.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, world.config_yaml()).unwrap();
    std::fs::copy(
        world.trusted_root_path(),
        file.with_file_name("trusted_root.json"),
    )
    .unwrap();
    let out = cks_iso()
        .env_remove("CKS_ISO_CONFIG")
        .env("XDG_CONFIG_HOME", &config_home)
        .env("HOME", dir.path())
        .args(["doctor", "-v", "--cache-dir", p(&dir.path().join("cache"))])
        .args(["--kubernetes", world.kubernetes(), "--arch", "amd64"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("ok    configuration: {} parses", file.display())),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!("configuration from {}", file.display())),
        "{stderr}"
    );
}

/// Without `XDG_CONFIG_HOME`, `~/.config/cks-iso/config.yaml`; one that is invalid or cannot be
/// read is a configuration error naming it (exit 2), never ignored.
#[test]
fn default_configuration_file_that_is_bad_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".config/cks-iso/config.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let pull = || {
        cks_iso()
            .env_remove("CKS_ISO_CONFIG")
            .env_remove("XDG_CONFIG_HOME")
            .env("HOME", dir.path())
            .args(["pull", "registry.k8s.io/pause:3.10", "--arch", "amd64"])
            .args(["--out", p(&dir.path().join("out"))])
            .output()
            .unwrap()
    };
    std::fs::write(&file, "mirorrs:\n  https://a.example: http://b.example\n").unwrap();
    let out = pull();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("configuration file {}", file.display()))
            && stderr.contains("mirorrs"),
        "{stderr}"
    );

    // A directory where the file should be cannot be read.
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    let out = pull();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot read the configuration file {}",
            file.display()
        )) && stderr.contains("or pass --config FILE"),
        "{stderr}"
    );
}
