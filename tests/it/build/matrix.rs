//! `cks-iso build` of several Kubernetes releases in one run, as a user sees it: the summary on
//! stdout, the exit code and message naming the release that failed, `--json`'s one document,
//! the configuration's `kubernetes:` list, and `resolve` of several releases. What the builds
//! make (bytes, shared blobs) is judged in process, in `pipeline/matrix.rs`.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support::*;
use cks_iso_testworld::world::World;

/// The arguments of a build of the world's release and 1.32.9 (which it does not publish) into
/// `out`, with `--json` if asked, then `extra`.
fn two_release_args(world: &World, out: &Path, json: bool, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["--kubernetes", world.kubernetes(), "--kubernetes", "1.32.9"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(
        [
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
        ]
        .map(String::from),
    );
    args.extend([
        "--output".into(),
        out.display().to_string(),
        "--no-progress".into(),
    ]);
    if json {
        args.push("--json".into());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// The run exited 1 having built `iso`, summarised it and the failed 1.32.9 on stdout, named
/// 1.32.9 in its error with the count and a hint, and wrote nothing of 1.32.9.
fn assert_one_built_and_the_failed_release_named(done: &Output, iso: &Path, out: &Path) {
    let (stdout, stderr) = text(done);
    assert_eq!(done.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(iso.exists(), "{stdout}\n{stderr}");
    assert!(stdout.contains(&iso.display().to_string()), "{stdout}");
    assert!(
        stdout.contains("1.32.9 FAILED: cannot download"),
        "{stdout}"
    );
    assert!(
        stderr.contains("error: 1.32.9: cannot download"),
        "{stderr}"
    );
    assert!(stderr.contains("1 of 2 builds failed: 1.32.9"), "{stderr}");
    assert!(
        stderr.contains("hint: each error above names its release"),
        "{stderr}"
    );
    assert!(
        !fs::read_dir(out)
            .unwrap()
            .any(|e| e.unwrap().path().to_string_lossy().contains("1.32.9"))
    );
}

/// `--json`'s one document lists the built release with its ISO and the failed one, which is no
/// usage error.
fn assert_json_lists_built_and_failed(done: &Output, iso: &Path, kube: &str) {
    assert_eq!(done.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(doc["format"], 1);
    assert_eq!(doc["builds"][0]["asked"], kube);
    assert_eq!(doc["builds"][0]["versions"]["kubernetes"], kube);
    assert_eq!(
        doc["builds"][0]["isos"][0]["iso"],
        iso.display().to_string()
    );
    assert_eq!(doc["failed"][0]["asked"], "1.32.9");
    assert_eq!(doc["failed"][0]["usage"], false);
}

/// No `--kubernetes`: the configuration's list, built as the flags would be.
fn build_the_configurations_list(world: &World, dir: &Path) -> Output {
    let kube = world.kubernetes();
    let yaml = world.config_yaml().replace(
        "trusted-root: trusted_root.json",
        &format!("trusted-root: {}", world.trusted_root_path().display()),
    );
    let config = dir.join("listed.yaml");
    fs::write(
        &config,
        format!("{yaml}kubernetes: [\"{kube}\", \"1.32.9\"]\n"),
    )
    .unwrap();
    let args = two_release_args(world, &dir.join("out"), true, &[]);
    build_in(&config, &dir.join("tmp"))
        .args(&args[4..])
        .args(["--cache-dir", p(&dir.join("cache"))])
        .output()
        .unwrap()
}

/// A release the world publishes and one it does not: the first is built and summarised, the
/// run exits 1 naming the second; `--json` lists both, and `--name` with two is a usage error.
#[test]
fn a_failed_release_exits_1_naming_it_and_the_other_is_built() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let kube = world.kubernetes();
    let run = |json: bool, extra: &[&str]| {
        let args = two_release_args(&world, &out, json, extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        build_in_world(&world, dir.path(), &args)
    };
    let iso = out.join(format!("setup-v{kube}-x86_64.iso"));
    assert_one_built_and_the_failed_release_named(&run(false, &[]), &iso, &out);
    assert_json_lists_built_and_failed(&run(true, &[]), &iso, kube);
    let refused = run(false, &["--name", "mine"]);
    let (_, stderr) = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--name is for one build, and 2 were asked for"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: leave --name out"), "{stderr}");
    let listed = build_the_configurations_list(&world, dir.path());
    let doc: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.status.code(), Some(1), "{}", text(&listed).1);
    assert_eq!(doc["builds"][0]["asked"], kube);
    assert_eq!(doc["failed"][0]["asked"], "1.32.9");
}

/// `resolve` of two releases: one JSON document listing each release's resolution in the order
/// given, or the two tables; `--lock` prints one lock, so two releases are a usage error.
#[test]
fn resolve_lists_several_releases_in_one_document() {
    let world = World::start(cks_iso_testworld::world::Options {
        also_kubernetes: vec!["1.32.4".into()],
        ..Default::default()
    });
    let kube = world.kubernetes();
    let resolve = |extra: &[&str]| {
        cks_iso()
            .env("CKS_ISO_CONFIG", world.config_path())
            .args(["resolve", "--kubernetes", kube, "--kubernetes", "1.32.4"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = ok(resolve(&["--json"]));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["format"], 1);
    let listed: Vec<&str> = (doc["resolutions"].as_array().unwrap().iter())
        .map(|r| r["kubernetes"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [kube, "1.32.4"]);
    assert_eq!(doc["resolutions"][1]["versions"]["crictl"], "1.32.0");
    let (tables, _) = text(&ok(resolve(&[])));
    let first = tables.find(&format!("v{kube} (amd64")).unwrap();
    let second = tables.find("v1.32.4 (amd64").unwrap();
    assert!(first < second, "{tables}");
    let refused = resolve(&["--lock"]);
    let (_, stderr) = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("resolve --lock prints one lock"),
        "{stderr}"
    );
}
