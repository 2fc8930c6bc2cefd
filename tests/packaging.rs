//! The tool as operators get it: what the published crate holds, the completions and the man page.
//! (The `.deb` itself is checked by `make test-deb`, which needs a release build.)

mod support;

use std::process::Command;

use support::run;

/// `cargo package --list` holds the sources, the manifest, the lock, the README, the changelog
/// and the licence, and nothing else: no tests, test data, test world, benches or scripts.
#[test]
fn crate_package_holds_sources_and_licence_only() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = run(Command::new(env!("CARGO")).current_dir(root).args([
        "package",
        "--list",
        "--allow-dirty",
        "--locked",
        "-p",
        "cks-iso",
    ]));
    let list = String::from_utf8(out.stdout).expect("UTF-8 list");
    let files: Vec<&str> = list.lines().collect();
    for required in [
        "Cargo.toml",
        "Cargo.lock",
        "LICENSE",
        "README.md",
        "CHANGELOG.md",
        "src/main.rs",
        "src/lib.rs",
        "src/cli.rs",
    ] {
        assert!(
            files.contains(&required),
            "{required} not packaged:\n{list}"
        );
    }
    let allowed_top = [
        "Cargo.toml",
        "Cargo.toml.orig",
        "Cargo.lock",
        "LICENSE",
        "README.md",
        "CHANGELOG.md",
        ".cargo_vcs_info.json",
    ];
    for file in &files {
        assert!(
            (file.starts_with("src/") && file.ends_with(".rs")) || allowed_top.contains(file),
            "{file} should not be in the published crate:\n{list}"
        );
        // Whatever is packaged must be small source text, never a blob.
        if let Ok(meta) = std::fs::metadata(std::path::Path::new(root).join(file)) {
            assert!(meta.len() < 256 * 1024, "{file} is {} bytes", meta.len());
        }
    }
}
