//! Running `cks-iso pull` against the registry world, and checking what it leaves behind.

use std::path::Path;
use std::process::{Command, Output};

use cks_iso_testworld::http::sha256;

use super::cks_iso;

/// `cks-iso pull` with `args`, the cache in `cache`, archives into `out`, isolated from the
/// user's credentials (HOME is the cache's parent, no DOCKER_CONFIG or REGISTRY_AUTH_FILE).
pub fn pull_cmd(args: &[String], cache: &Path, out: &Path) -> Command {
    let mut cmd = cks_iso();
    cmd.arg("pull")
        .args(args)
        .arg("--cache-dir")
        .arg(cache)
        .arg("--out")
        .arg(out)
        .env("HOME", cache.parent().unwrap())
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("XDG_CACHE_HOME");
    cmd
}

/// Runs a pull and returns its output, whatever the outcome.
pub fn pull(args: &[String], cache: &Path, out: &Path) -> Output {
    pull_cmd(args, cache, out).output().expect("run cks-iso")
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts that the pull succeeded, and returns its stdout lines split in three.
pub fn succeeded(out: &Output) -> Vec<(String, String, String)> {
    assert!(
        out.status.success(),
        "cks-iso pull failed with {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        stderr(out)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let parts: Vec<&str> = line.splitn(3, ' ').collect();
            assert_eq!(parts.len(), 3, "stdout line {line:?}");
            (parts[0].into(), parts[1].into(), parts[2].into())
        })
        .collect()
}

/// Every file in the cache is a verified blob: no temporary file, each named by its digest.
pub fn assert_cache_verified(cache: &Path) {
    let dir = cache.join("blobs/sha256");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with('.'),
            "unverified file left in the cache: {name}"
        );
        let bytes = std::fs::read(entry.path()).unwrap();
        assert_eq!(
            sha256(&bytes),
            format!("sha256:{name}"),
            "cache file {name}"
        );
    }
}

/// Asserts `dir` holds no file at all (no archive, no temporary file).
pub fn assert_empty(dir: &Path) {
    let names = super::names(dir);
    assert!(
        names.is_empty(),
        "left behind in {}: {names:?}",
        dir.display()
    );
}
