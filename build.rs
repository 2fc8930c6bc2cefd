//! Records the git commit the binary is built from, for `cks-iso --version`.
//! Outside a git checkout (a published crate, a source tarball) there is none and the version
//! stands alone.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}

fn main() {
    // Rebuild when HEAD moves: a commit, a checkout or a reset all append to logs/HEAD.
    for path in ["HEAD", "logs/HEAD"] {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets it");
    let version = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(commit) => format!("{version} ({commit})"),
        None => version,
    };
    println!("cargo:rustc-env=CKS_ISO_VERSION={version}");
}
