//! The log lines of several builds at once interleave on stderr; each says whose it is: text
//! lines start with `[RELEASE] `, JSON records carry `span.kubernetes`. A single build's lines
//! are as they always were.

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// The second release the world publishes.
const OTHER: &str = "1.32.4";

/// `build --kubernetes WORLD --kubernetes OTHER --arch amd64 EXTRA…` into `dir`.
fn build_two(world: &World, dir: &std::path::Path, extra: &[&str]) -> (String, String) {
    let out = dir.join("out");
    let mut args = vec![
        "--kubernetes",
        world.kubernetes(),
        "--kubernetes",
        OTHER,
        "--network",
        world.network_url(),
        "--dashboard",
        world.dashboard_url(),
        "--output",
        p(&out),
        "--no-progress",
    ];
    args.extend(extra);
    let done = build_in_world(world, dir, &args);
    let (stdout, stderr) = text(&done);
    assert!(done.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn each_line_of_a_build_of_several_releases_names_its_release() {
    let world = World::start(Options {
        also_kubernetes: vec![OTHER.into()],
        ..Options::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr) = build_two(&world, dir.path(), &[]);
    for release in [world.kubernetes(), OTHER] {
        let tag = format!("[{release}] ");
        let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&tag)).collect();
        assert!(
            lines.iter().any(|l| l.contains("pulling")),
            "{release}'s image pull is tagged:\n{stderr}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!("setup-v{release}-x86_64.iso"))),
            "{release}'s ISO writer logs in its span:\n{stderr}"
        );
    }
    // The same run again (warm) with JSON logs: the release is the span's field.
    let (_, json_lines) = build_two(&world, dir.path(), &["--log-format", "json"]);
    let records: Vec<serde_json::Value> = (json_lines.lines())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for release in [world.kubernetes(), OTHER] {
        assert!(
            records.iter().any(|r| r["span"]["name"] == "build"
                && r["span"]["kubernetes"] == release
                && r["fields"]["message"].is_string()),
            "a record in {release}'s build span:\n{json_lines}"
        );
    }
}
