//! Trustworthy rebuilds: the lock every build writes (inside each ISO and with `--lock-file`),
//! `--locked` builds that are byte-identical whatever the environment, `--offline` builds that
//! open not a single connection, and `verify` holding the embedded lock to the ISO. Against the
//! whole local world, judged with `cmp`-equal bytes and a listener that records every connection
//! on the world's ports. Drift and locks refused are in `lock_refusals`.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::common::{ISOS, assert_no_isos, build_with_config as build, locked_args, tmp_in};
use crate::support::*;
use cks_iso_testworld::world::{Options, World};

fn assert_same_bytes(a: &Path, b: &Path) {
    assert!(
        crate::support::same_bytes(a, b),
        "{} and {} differ",
        a.display(),
        b.display()
    );
}

/// Every `127.0.0.1:<port>` the configuration names.
fn ports(config: &str) -> Vec<u16> {
    let mut ports: Vec<u16> = config
        .split("127.0.0.1:")
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Listens on `ports` (no server behind) and counts every connection made.
fn record_connections(ports: &[u16]) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    for &port in ports {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("cannot listen on the world's port {port}: {e}"));
        let count = count.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                count.fetch_add(1, Ordering::SeqCst);
                drop(conn);
            }
        });
    }
    count
}

/// The world's configuration in `d`, beside its trust root (named relative to the configuration),
/// so that both outlive the world.
fn config_outliving(world: &World, d: &Path) -> PathBuf {
    let config = d.join("config.yaml");
    fs::write(&config, world.config_yaml()).unwrap();
    fs::copy(world.trusted_root_path(), d.join("trusted_root.json")).unwrap();
    config
}

/// Builds 1.33.1 for both arches into `d/out` with `d/cache`, writing the lock `d/run.lock`.
fn build_both_with_lock(world: &World, config: &Path, d: &Path) {
    let (out, cache, lock) = (d.join("out"), d.join("cache"), d.join("run.lock"));
    let args = [
        "--kubernetes",
        "1.33.1",
        "--arch",
        "amd64",
        "--arch",
        "arm64",
        "--network",
        world.network_url(),
        "--dashboard",
        world.dashboard_url(),
        "--output",
        p(&out),
        "--cache-dir",
        p(&cache),
        "--lock-file",
        p(&lock),
    ];
    run(build(config, &tmp_in(d, "tmp"), &args).env("SOURCE_DATE_EPOCH", EPOCH));
}

/// The lock beside the ISOs holds both arches and no host path; each ISO holds its own, which
/// `verify` holds them to.
fn assert_lock_beside_and_inside(d: &Path) {
    let (out, lock) = (d.join("out"), d.join("run.lock"));
    let written: serde_json::Value = serde_json::from_slice(&fs::read(&lock).unwrap()).unwrap();
    assert_eq!(written["version"], 1);
    assert_eq!(written["epoch"], 1_700_000_000);
    assert_eq!(
        written["request"]["arches"],
        serde_json::json!(["amd64", "arm64"])
    );
    let commit = written["autoscaler"]["commit"].as_str().unwrap();
    assert_eq!(commit.len(), 40, "the tag's commit is recorded");
    let amd = &written["arches"]["amd64"];
    assert!(amd["images"].as_array().unwrap().len() > 10);
    assert!(
        !String::from_utf8_lossy(&fs::read(&lock).unwrap()).contains(p(d)),
        "no host path in the lock"
    );
    let inside = d.join("inside");
    fs::create_dir_all(&inside).unwrap();
    let iso = out.join(ISOS[0]);
    tool(
        "bsdtar",
        ["-x", "-f", p(&iso), "-C", p(&inside), "cks-iso.lock"],
    );
    let own: serde_json::Value =
        serde_json::from_slice(&fs::read(inside.join("cks-iso.lock")).unwrap()).unwrap();
    assert_eq!(own["arches"].as_object().unwrap().len(), 1);
    assert_eq!(own["arches"]["amd64"], *amd);
    let verify = cks_iso()
        .arg("verify")
        .arg(out.join(ISOS[0]))
        .arg(out.join(ISOS[1]))
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", combined(&verify));
}

/// A fresh cache, online, in another environment: umask 077, TZ, LANG, TMPDIR, --jobs 1, the
/// arches in the other order; the same ISOs.
fn assert_locked_rebuild_elsewhere_is_identical(d: &Path, config: &Path) {
    let (out, lock, out2) = (d.join("out"), d.join("run.lock"), d.join("out2"));
    let mut cmd = Command::new("sh");
    crate::support::no_internet(&mut cmd)
        .arg("-c")
        .arg("umask 077; exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_cks-iso"))
        .args([
            "build",
            "--no-progress",
            "--locked",
            p(&lock),
            "--jobs",
            "1",
        ])
        .args(["--arch", "arm64", "--arch", "amd64"])
        .args(["--output", p(&out2), "--cache-dir", p(&d.join("cache2"))])
        .env("CKS_ISO_CONFIG", config)
        .env("TMPDIR", tmp_in(d, "tmp2"))
        .env("TZ", "Pacific/Kiritimati")
        .env("LANG", "de_DE.UTF-8")
        .env_remove("SOURCE_DATE_EPOCH");
    run(&mut cmd);
    for iso in ISOS {
        assert_same_bytes(&out.join(iso), &out2.join(iso));
    }
}

/// With no server, `--locked --offline` from the cache rebuilds both ISOs, and the ISO's own lock
/// rebuilds its arch alone.
fn assert_offline_rebuilds_are_identical(d: &Path, config: &Path) {
    let (out, cache, lock) = (d.join("out"), d.join("cache"), d.join("run.lock"));
    let out3 = d.join("out3");
    let args = locked_args(&lock, &["--offline"], &out3, &cache);
    run(&mut build(config, &tmp_in(d, "tmp3"), &args));
    for iso in ISOS {
        assert_same_bytes(&out.join(iso), &out3.join(iso));
    }
    let out4 = d.join("out4");
    let arm64 = out.join(ISOS[1]);
    let args = locked_args(&arm64, &["--offline"], &out4, &cache);
    run(&mut build(config, &tmp_in(d, "tmp4"), &args));
    assert_same_bytes(&arm64, &out4.join(ISOS[1]));
    assert_eq!(
        names(&out4).len(),
        4,
        "only the arm64 ISO, its .sha256 and its two SBOMs"
    );
}

/// Offline on an empty cache: exit 1 naming the first missing item, nothing left behind; without
/// a lock, offline cannot choose an autoscaler release.
fn assert_offline_misses_fail_leaving_nothing(d: &Path, config: &Path) {
    let (cache, lock) = (d.join("cache"), d.join("run.lock"));
    let (out5, tmp5, empty) = (d.join("out5"), tmp_in(d, "tmp5"), d.join("empty"));
    fails(
        &mut build(
            config,
            &tmp5,
            &locked_args(&lock, &["--offline"], &out5, &empty),
        ),
        1,
        &[
            "with --offline: it is not in the cache",
            "hint: run the same build once with network",
        ],
    );
    assert_no_isos(&out5);
    assert_no_isos(&tmp5);
    let args = [
        "--kubernetes",
        "1.33.1",
        "--network",
        "https://x.invalid/n.yaml",
        "--dashboard",
        "https://x.invalid/d.yaml",
        "--offline",
        "--output",
        p(&out5),
        "--cache-dir",
        p(&cache),
    ];
    fails(
        &mut build(config, &tmp5, &args),
        1,
        &["offline", "--autoscaler-version"],
    );
}

#[test]
fn locked_rebuilds_are_byte_identical_online_in_another_environment_and_offline_with_no_connection()
{
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let world = World::start(Options::default());
    let config = config_outliving(&world, d);
    build_both_with_lock(&world, &config, d);
    assert_lock_beside_and_inside(d);
    assert_locked_rebuild_elsewhere_is_identical(d, &config);

    // Every server stopped; only listeners that count connections on the world's ports.
    let world_ports = ports(world.config_yaml());
    assert!(world_ports.len() >= 3, "{world_ports:?}");
    drop(world);
    let connections = record_connections(&world_ports);
    assert_offline_rebuilds_are_identical(d, &config);
    assert_offline_misses_fail_leaving_nothing(d, &config);
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "an offline build connected to the world's ports"
    );
}

#[test]
fn verify_holds_the_embedded_lock_to_the_iso() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let world = World::start(Options::default());
    let (out, cache) = (d.join("out"), d.join("cache"));
    run(build(
        world.config_path(),
        &tmp_in(d, "tmp"),
        &[
            "--kubernetes",
            "1.33.1",
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
            "--output",
            p(&out),
            "--cache-dir",
            p(&cache),
        ],
    )
    .env("SOURCE_DATE_EPOCH", EPOCH));
    drop(world);
    let tree = d.join("tree");
    fs::create_dir_all(&tree).unwrap();
    tool(
        "bsdtar",
        ["-x", "-f", p(&out.join(ISOS[0])), "-C", p(&tree)],
    );
    let path = tree.join("cks-iso.lock");
    let mut lock: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    lock["arches"]["amd64"]["files"][0]["sha256"] = serde_json::json!("0".repeat(64));
    lock["request"]["crictl"] = serde_json::json!("1.99.0");
    fs::write(&path, serde_json::to_string_pretty(&lock).unwrap()).unwrap();
    let bad = d.join("bad.iso");
    run(cks_iso().args(["iso", p(&tree), "-o", p(&bad), "--source-date-epoch", EPOCH]));
    let report = fails(
        cks_iso().arg("verify").arg(&bad),
        1,
        &["cks-iso.lock", "crictl \"1.99.0\"", &"0".repeat(64)],
    );
    assert!(report.contains("versions.txt says"), "{report}");
}
