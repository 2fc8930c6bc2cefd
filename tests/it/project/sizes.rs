//! Files stay readable: no Rust file of the workspace (the crates' `src/`, the test world, the
//! tests) is over 600 lines. Past that a file is split by responsibility into sibling files of
//! its module, each opening with why it exists (STYLE.md). Functions have clippy's
//! `too_many_lines` (80, clippy.toml); files have this.

use std::path::{Path, PathBuf};

/// The most lines a Rust file may have.
const MAX_LINES: usize = 600;

/// Every `.rs` file under `dir`, skipping build output.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_rust_file_is_over_600_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "crates", "testworld", "tests", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 500, "files found: {}", files.len());
    let mut long: Vec<String> = (files.iter())
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path)
                .expect("a source file")
                .lines()
                .count();
            let name = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string();
            (lines > MAX_LINES).then(|| format!("{name}: {lines} lines"))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them by responsibility, STYLE.md):\n{}",
        long.join("\n")
    );
}
