//! Test support: a synthetic image world in a temporary blob cache, the real tools that judge
//! archives, and a private containerd.
//!
//! The images are small but real: gzip tar layers made with `tar` + `flate2`, configs whose
//! `rootfs.diff_ids` are the layers' uncompressed digests (containerd checks them when it
//! unpacks), OCI indexes with buildx attestation entries, a Docker manifest list with arm64
//! `variant: v8`, base layers shared across images, and an amd64-only image.

#![allow(dead_code)]

pub mod containerd;
pub mod world;

use std::path::Path;
use std::process::{Command, Output};

/// Fails (never skips) when a tool the tests judge with is missing.
pub fn require_tool(tool: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()));
    assert!(
        found,
        "`{tool}` is not installed; run `make deps` to install the test tools"
    );
}

/// Runs `program args…`, failing the test with its output when it fails.
pub fn run(program: &str, args: &[&str]) -> Output {
    require_tool(program);
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {} failed ({}):\nstdout: {}\nstderr: {}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The names of the files in `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
