//! Builds that are killed, and builds that run at once. SIGKILL cannot be cleaned up after, so a
//! killed build leaves its work dir and a half-written ISO, and the next build on the same output
//! dir and TMPDIR removes them (their writer is gone) and rebuilds byte for byte from the cache the
//! killed runs filled. Several builds on one cache and one output dir at once all succeed and equal
//! the same builds run one after the other.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

struct Dirs {
    out: PathBuf,
    cache: PathBuf,
    tmp: PathBuf,
}

fn dirs(root: &Path) -> Dirs {
    let d = Dirs {
        out: root.join("out"),
        cache: root.join("cache"),
        tmp: root.join("tmp"),
    };
    fs::create_dir_all(&d.tmp).unwrap();
    d
}

fn build(world: &World, d: &Dirs, name: &str, arches: &[&str]) -> Command {
    let mut cmd = build_in(world.config_path(), &d.tmp);
    cmd.args(["--no-progress", "--kubernetes", "1.33.1", "--name", name])
        .args([
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
        ])
        .arg("--output")
        .arg(&d.out)
        .arg("--cache-dir")
        .arg(&d.cache);
    for arch in arches {
        cmd.args(["--arch", arch]);
    }
    cmd
}

fn spawn(mut cmd: Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finished(child: Child) {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn iso_files(out: &Path) -> Vec<String> {
    names(out)
        .into_iter()
        .filter(|n| n.ends_with(".iso"))
        .collect()
}

#[test]
fn killed_builds_leave_what_the_next_build_sweeps_and_the_rebuild_is_identical() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let reference = dirs(&dir.path().join("reference"));
    run(&mut build(&world, &reference, "setup", &["amd64"]));
    let iso = "setup-x86_64.iso";

    let shared = dirs(&dir.path().join("shared"));
    let mut left_behind = 0;
    for delay in [400, 1200, 2500, 4000] {
        let mut child = spawn(build(&world, &shared, "setup", &["amd64"]));
        std::thread::sleep(Duration::from_millis(delay));
        let _ = child.kill(); // SIGKILL: no handler runs
        let _ = child.wait();
        left_behind = left_behind.max(names(&shared.tmp).len());
        let _ = fs::remove_file(shared.out.join(iso));
    }
    eprintln!("the killed builds left up to {left_behind} work dir(s) in TMPDIR");

    let out = build(&world, &shared, "setup", &["amd64"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        fs::read(shared.out.join(iso)).unwrap() == fs::read(reference.out.join(iso)).unwrap(),
        "the rebuild after the kills differs from the reference"
    );
    assert!(
        names(&shared.tmp).is_empty(),
        "work dirs of killed runs are swept: {:?}",
        names(&shared.tmp)
    );
    let partial: Vec<String> = names(&shared.out)
        .into_iter()
        .filter(|n| n.ends_with(".partial"))
        .collect();
    assert!(
        partial.is_empty(),
        "half-written ISOs are swept: {partial:?}"
    );
    // The cache the killed runs filled holds only verified blobs.
    let verify = cks_iso()
        .args(["cache", "verify", "--cache-dir"])
        .arg(&shared.cache)
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
}

#[test]
fn builds_at_once_on_one_cache_and_output_dir_equal_the_same_builds_one_after_another() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let jobs: [(&str, &[&str]); 3] = [
        ("one", &["amd64"]),
        ("two", &["arm64"]),
        ("three", &["arm64", "amd64"]),
    ];
    let sequential = dirs(&dir.path().join("sequential"));
    for (name, arches) in jobs {
        run(&mut build(&world, &sequential, name, arches));
    }
    let together = dirs(&dir.path().join("together"));
    let children: Vec<Child> = jobs
        .iter()
        .map(|(name, arches)| spawn(build(&world, &together, name, arches)))
        .collect();
    for child in children {
        finished(child);
    }
    let isos = iso_files(&sequential.out);
    assert_eq!(isos.len(), 4, "{isos:?}");
    assert_eq!(iso_files(&together.out), isos);
    for iso in &isos {
        assert!(
            fs::read(together.out.join(iso)).unwrap()
                == fs::read(sequential.out.join(iso)).unwrap(),
            "{iso} built alongside others differs from the one built alone"
        );
    }
    assert!(
        names(&together.tmp).is_empty(),
        "{:?}",
        names(&together.tmp)
    );
}
