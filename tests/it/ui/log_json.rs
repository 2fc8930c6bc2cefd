//! `--log-format json`: every line cks-iso writes on stderr is one JSON object (log records,
//! progress events, the error report), stdout is what it is in text mode. Judged by parsing every
//! stderr line of real runs: `iso`, a whole `build` in the local world (cold cache, then warm),
//! and failures at run time and at parse time.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};
use serde_json::Value;

/// Every stderr line parsed, each checked against the documented record shape: `timestamp`,
/// `level`, `target`, and `fields` holding at least `message`.
fn parse_stderr(out: &Output) -> Vec<Value> {
    let stderr = String::from_utf8(out.stderr.clone()).expect("UTF-8 stderr");
    assert!(!stderr.is_empty(), "nothing on stderr");
    stderr
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}\nstderr:\n{stderr}"));
            let ts = v["timestamp"]
                .as_str()
                .unwrap_or_else(|| panic!("no timestamp: {line}"));
            assert!(ts.ends_with('Z') && ts.len() == 27, "timestamp {ts:?}");
            assert!(
                ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"]
                    .contains(&v["level"].as_str().unwrap_or("")),
                "level: {line}"
            );
            assert!(
                v["target"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("cks_iso")),
                "target: {line}"
            );
            assert!(v["fields"]["message"].is_string(), "message: {line}");
            v
        })
        .collect()
}

fn progress(records: &[Value]) -> Vec<&Value> {
    records
        .iter()
        .filter(|r| r["target"] == "cks_iso::progress")
        .map(|r| &r["fields"])
        .collect()
}

fn errors(records: &[Value]) -> Vec<&Value> {
    records.iter().filter(|r| r["level"] == "ERROR").collect()
}

#[test]
fn iso_logs_and_progress_are_json_lines_and_stdout_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("docker")).unwrap();
    fs::write(src.join("docker/big.tar"), noise(7, 3 << 20)).unwrap();
    fs::write(src.join("a.yaml"), "a: 1\n").unwrap();

    let text_iso = dir.path().join("text.iso");
    let text = run(cks_iso().args(["iso", p(&src), "-o", p(&text_iso)]));
    let json_iso = dir.path().join("json.iso");
    let json = run(cks_iso().args(["iso", p(&src), "-o", p(&json_iso), "--log-format", "json"]));
    assert_eq!(
        String::from_utf8_lossy(&json.stdout),
        String::from_utf8_lossy(&text.stdout).replace("text.iso", "json.iso"),
        "stdout differs between the formats"
    );
    assert_eq!(
        fs::read(&text_iso).unwrap().len(),
        fs::read(&json_iso).unwrap().len()
    );

    let records = parse_stderr(&json);
    let events = progress(&records);
    let start = events
        .iter()
        .find(|e| e["event"] == "start")
        .expect("a start event");
    assert_eq!(start["phase"], "writing ISO");
    let finish = events
        .iter()
        .find(|e| e["event"] == "finish")
        .expect("a finish event");
    assert_eq!(finish["bytes_done"], finish["bytes_total"]);
    assert!(finish["bytes_total"].as_u64().unwrap() > 3 << 20);
    assert!(
        records.iter().any(|r| r["level"] == "INFO"
            && r["fields"]["message"]
                .as_str()
                .unwrap()
                .starts_with("wrote ")),
        "no log record of the ISO written"
    );
    assert!(errors(&records).is_empty());

    // --no-progress drops the events, keeps the log records.
    let quiet = run(cks_iso().args([
        "iso",
        p(&src),
        "-o",
        p(&json_iso),
        "--log-format=json",
        "--no-progress",
    ]));
    let records = parse_stderr(&quiet);
    assert!(progress(&records).is_empty());
    assert!(!records.is_empty());
}

#[test]
fn failures_are_one_json_error_record_with_causes_and_hint() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let out = cks_iso()
        .args([
            "iso",
            p(&missing),
            "-o",
            p(&dir.path().join("x.iso")),
            "--log-format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let records = parse_stderr(&out);
    let [error] = errors(&records)[..] else {
        panic!("one error record expected: {records:?}")
    };
    let fields = &error["fields"];
    assert!(
        fields["message"].as_str().unwrap().contains(p(&missing)),
        "{fields}"
    );
    assert!(
        fields["causes"].as_array().is_some_and(|c| !c.is_empty()),
        "{fields}"
    );
    assert!(fields["hint"].is_string(), "{fields}");

    // A usage error found by the parser is a JSON record too, when JSON was asked for.
    let out = cks_iso()
        .args(["iso", "--bogus", "--log-format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let records = parse_stderr(&out);
    assert_eq!(errors(&records).len(), 1);
    assert!(
        records[0]["fields"]["message"]
            .as_str()
            .unwrap()
            .contains("--bogus")
    );
}

fn build_json(world: &World, out: &Path, cache: &Path, tmp: &Path, dashboard: &str) -> Output {
    cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .env("TMPDIR", tmp)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args(["build", "--kubernetes", world.kubernetes()])
        .args(["--network", world.network_url(), "--dashboard", dashboard])
        .args([
            "--output",
            p(out),
            "--cache-dir",
            p(cache),
            "--log-format",
            "json",
        ])
        .output()
        .unwrap()
}

/// The progress items of `events` that came from `source` (`network`, `cache`).
fn items_from<'a>(events: &[&'a Value], source: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["event"] == "item" && e["source"] == source)
        .copied()
        .collect()
}

/// A cold build's progress: blobs and files come from the network, each downloaded once (a layer
/// shared by several images is downloaded for the first and taken from the cache for the
/// others); every item names itself, its size and its phase, and image blobs are among them.
fn assert_cold_progress_is_followable(events: &[&Value]) {
    let network = items_from(events, "network");
    assert!(network.len() > 10, "{} network items", network.len());
    let mut downloaded: Vec<&str> = network
        .iter()
        .map(|e| e["item"].as_str().unwrap().rsplit(' ').next().unwrap())
        .collect();
    let count = downloaded.len();
    downloaded.sort_unstable();
    downloaded.dedup();
    assert_eq!(downloaded.len(), count, "an item was downloaded twice");
    for e in events.iter().filter(|e| e["event"] == "item") {
        assert!(
            e["item"].as_str().is_some_and(|i| !i.is_empty()) && e["bytes"].is_u64(),
            "{e}"
        );
        assert!(e["phase"].is_string(), "{e}");
    }
    let phases: Vec<&str> = events.iter().filter_map(|e| e["phase"].as_str()).collect();
    assert!(
        phases.contains(&"pulling images for linux/amd64"),
        "{phases:?}"
    );
    assert!(
        phases.iter().any(|p| p.starts_with("writing ")),
        "{phases:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "item" && e["item"].as_str().unwrap().contains("sha256:")),
        "no image blob among the items"
    );
}

/// A warm build's progress: every image blob from the cache (files are fetched again unless
/// `--locked`/`--offline`: their published checksums may have moved).
fn assert_warm_blobs_come_from_the_cache(events: &[&Value]) {
    let blobs = |source: &str| {
        items_from(events, source)
            .iter()
            .filter(|e| e["phase"].as_str().unwrap().starts_with("pulling images"))
            .count()
    };
    assert!(
        blobs("cache") > 10,
        "{} blobs from the cache",
        blobs("cache")
    );
    assert_eq!(blobs("network"), 0, "a warm build downloaded a blob");
}

#[test]
fn a_whole_build_is_followable_from_its_json_stderr() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (out, cache, tmp) = (
        dir.path().join("out"),
        dir.path().join("cache"),
        dir.path().join("tmp"),
    );
    fs::create_dir_all(&tmp).unwrap();

    let cold = build_json(&world, &out, &cache, &tmp, world.dashboard_url());
    assert!(
        cold.status.success(),
        "{}",
        String::from_utf8_lossy(&cold.stderr)
    );
    let iso = out.join(format!("setup-v{}-x86_64.iso", world.kubernetes()));
    assert!(
        String::from_utf8_lossy(&cold.stdout).contains(p(&iso)),
        "summary on stdout"
    );
    let records = parse_stderr(&cold);
    assert!(errors(&records).is_empty());
    assert_cold_progress_is_followable(&progress(&records));

    fs::remove_dir_all(&out).unwrap();
    let warm = build_json(&world, &out, &cache, &tmp, world.dashboard_url());
    assert!(
        warm.status.success(),
        "{}",
        String::from_utf8_lossy(&warm.stderr)
    );
    assert_warm_blobs_come_from_the_cache(&progress(&parse_stderr(&warm)));

    // A failing build: JSON to the last line, one error record naming the URL.
    let missing = world
        .dashboard_url()
        .replace("recommended.yaml", "missing.yaml");
    let failed = build_json(&world, &dir.path().join("out2"), &cache, &tmp, &missing);
    assert_eq!(failed.status.code(), Some(1));
    let records = parse_stderr(&failed);
    let [error] = errors(&records)[..] else {
        panic!("{records:?}")
    };
    assert!(error.to_string().contains("missing.yaml"), "{error}");
}
