//! Errors are types: no function of the workspace (the crates' `src/` and tests, the test world,
//! the fuzz targets) returns `Result<_, String>`. A string error cannot be matched on, has no
//! source chain and no hint; STYLE.md says each error is an enum variant that names the item. A
//! test helper's findings are an enum too, rendered where the assertion prints them.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The Rust source directories of the workspace: the main crate's code and tests, each crate's
/// under `crates/`, the test world's, the fuzz targets.
fn source_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![
        root.join("src"),
        root.join("tests"),
        root.join("testworld/src"),
        root.join("fuzz/fuzz_targets"),
    ];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .flat_map(|e| {
            let krate = e.expect("crates/ entry").path();
            [krate.join("src"), krate.join("tests")]
        })
        .filter(|dir| dir.is_dir())
        .collect();
    crates.sort();
    dirs.extend(crates);
    dirs
}

/// The type arguments of the generic whose `<` is at `open` in `text`, split at the top level;
/// `None` when it does not close. `->` inside (a closure type) is not a closing bracket.
fn arguments(text: &str, open: usize) -> Option<Vec<String>> {
    let bytes = text.as_bytes();
    let (mut depth, mut start, mut out) = (0usize, open + 1, Vec::new());
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' | b')' | b']' => {
                depth -= 1;
                if depth == 0 {
                    out.push(text[start..i].trim().to_owned());
                    return Some(out);
                }
            }
            b',' if depth == 1 => {
                out.push(text[start..i].trim().to_owned());
                start = i + 1;
            }
            b';' | b'{' => return None,
            _ => {}
        }
    }
    None
}

/// `file:line: Result<…>` for each `Result<_, String>` in `text` (comments skipped).
fn string_errors(name: &str, text: &str) -> Vec<String> {
    let code: String = (text.lines())
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    for (at, _) in code.match_indices("Result<") {
        let preceded = code[..at].chars().next_back();
        if preceded.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(args) = arguments(&code, at + "Result".len()) else {
            continue;
        };
        if args.len() == 2 && ["String", "std::string::String"].contains(&args[1].as_str()) {
            let line = code[..at].matches('\n').count() + 1;
            found.push(format!("{name}:{line}: Result<{}, {}>", args[0], args[1]));
        }
    }
    found
}

#[test]
fn no_function_returns_a_string_error() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in source_dirs() {
        rust_files(&dir, &mut files);
    }
    assert!(files.len() > 300, "files found: {}", files.len());
    let mut found = Vec::new();
    // This file's self-test holds the pattern it looks for, as text.
    let this = root.join(file!());
    for path in files.iter().filter(|f| **f != this) {
        let text = std::fs::read_to_string(path).expect("a source file");
        let name = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        found.extend(string_errors(&name, &text));
    }
    assert!(
        found.is_empty(),
        "`Result<_, String>` (make the error an enum that names the item, as STYLE.md says):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_rule_finds_a_string_error_and_passes_a_typed_one() {
    let text = "fn a() -> Result<(), String> {}\n\
                // fn b() -> Result<(), String>\n\
                fn c() -> Result<BTreeMap<String, String>, Error> {}\n\
                type G = dyn Fn(&Path) -> Result<Report,\n    String>;\n\
                fn d() -> io::Result<String> {}\n";
    assert_eq!(
        string_errors("x.rs", text),
        [
            "x.rs:1: Result<(), String>",
            "x.rs:4: Result<Report, String>"
        ]
    );
}
