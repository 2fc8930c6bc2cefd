//! Rootless CI containers: uid 65534 with `HOME=/nonexistent` and no `XDG_CACHE_HOME`. The default
//! cache cannot be created there, so the build falls back to one under TMPDIR with a warning naming
//! both; an unwritable `--cache-dir` given explicitly fails at once, before any request.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

#[test]
fn a_default_cache_that_cannot_be_written_falls_back_under_tmpdir_with_a_warning() {
    let world = World::start(Options::default());
    let dir = open_tempdir();
    let (out, tmp) = (dir.path().join("out"), dir.path().join("tmp"));
    for d in [&out, &tmp] {
        fs::create_dir_all(d).unwrap();
        fs::set_permissions(d, fs::Permissions::from_mode(0o777)).unwrap();
    }
    let mut cmd = cks_iso();
    cmd.env("CKS_ISO_CONFIG", world.config_path())
        .env("TMPDIR", &tmp)
        .env("HOME", "/nonexistent")
        .env_remove("XDG_CACHE_HOME")
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args(["build", "--no-progress", "--kubernetes", "1.33.1"])
        .args([
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
        ])
        .args(["--output", p(&out)]);
    let output = as_nobody(cmd).output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{err}");
    assert!(err.contains("the default cache cannot be used"), "{err}");
    assert!(err.contains("/nonexistent/.cache/cks-iso"), "{err}");
    let uid = if is_root() {
        65534
    } else {
        rustix::process::geteuid().as_raw()
    };
    let fallback = tmp.join(format!("cks-iso-cache-{uid}"));
    assert!(err.contains(p(&fallback)), "{err}");
    assert!(
        fallback.join("blobs/sha256").is_dir(),
        "the fallback cache was used"
    );
    assert_eq!(
        names(&out).iter().filter(|n| n.ends_with(".iso")).count(),
        1
    );
}

#[test]
fn an_unwritable_cache_dir_fails_at_once_naming_it_before_any_request() {
    let world = World::start(Options::default());
    let dir = open_tempdir();
    let blocker = dir.path().join("a-file");
    fs::write(&blocker, b"not a directory").unwrap();
    let cache = blocker.join("cache");
    let before = world.upstream().served().len();
    let output = cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .env("TMPDIR", dir.path())
        .args(["build", "--no-progress", "--kubernetes", "1.33.1"])
        .args([
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
        ])
        .args([
            "--output",
            p(&dir.path().join("out")),
            "--cache-dir",
            p(&cache),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "cannot write to the cache directory {}",
            p(&cache)
        )),
        "{err}"
    );
    assert!(err.contains("hint: pass --cache-dir a directory"), "{err}");
    assert_eq!(
        world.upstream().served().len(),
        before,
        "a request was made before the cache was checked"
    );
}
