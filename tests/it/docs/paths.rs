//! Repository paths written in backticks hold: a code span of README.md, STYLE.md, CHANGELOG.md
//! or docs/**/*.md that reads as a path of this repository (`src/pipeline/build.rs`,
//! `Makefile:12`, `README.md#layout`) names a file or directory that exists, its `:LINE` lies
//! within the file and its `#anchor` is a heading of the page. Prose names files in backticks far
//! more often than it links them, and a file moved or rewritten left such names stale unseen
//! (STYLE.md cited `README.md#layout` and a `Makefile` line long after both had moved).
//!
//! What reads as a repository path, so that prose about other trees raises no false alarm: a
//! code span with no whitespace, glob, brace or placeholder, whose first component is an entry at
//! the repository's root (`src`, `crates`, `tests`, `docs`, `Makefile`, …) other than those
//! .gitignore anchors there (`target`, `.venv-sbom`), and whose later components are no
//! upper-case placeholders (`fuzz/corpus/TARGET`). A code span inside a link to another site names
//! a path of that site (upstream's scripts), so it is left alone; fenced blocks are too.

use std::collections::BTreeSet;
use std::path::Path;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use super::links::{anchors, documents, options};

/// A repository path a code span cites, with the line or heading it points at.
#[derive(Debug, PartialEq)]
struct Cited<'a> {
    path: &'a str,
    line: Option<usize>,
    anchor: Option<&'a str>,
}

/// The entries at `root` a cited path may start with: what is there, less the hidden ones and
/// what .gitignore anchors at the root (`/target`), which is no part of the repository.
fn root_entries(root: &Path) -> BTreeSet<String> {
    let ignore = std::fs::read_to_string(root.join(".gitignore")).unwrap_or_default();
    let ignored: BTreeSet<&str> = (ignore.lines())
        .filter_map(|l| l.trim().strip_prefix('/'))
        .map(|l| l.trim_end_matches('/'))
        .collect();
    let read = std::fs::read_dir(root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    (read.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()))
        .filter(|name| !name.starts_with('.') && !ignored.contains(name.as_str()))
        .collect()
}

/// What `span` cites when it reads as a path of the repository whose root holds `roots`.
fn cited<'a>(span: &'a str, roots: &BTreeSet<String>) -> Option<Cited<'a>> {
    let odd = |c: char| c.is_whitespace() || "*?{}[]<>$|\"'…=,;()".contains(c);
    if span.is_empty() || span.contains(odd) || span.contains("..") {
        return None;
    }
    let (rest, anchor) = match span.split_once('#') {
        Some((rest, anchor)) => (rest, Some(anchor)),
        None => (span, None),
    };
    let (path, line) = match rest.split_once(':') {
        Some((path, line)) => (path, Some(line.parse::<usize>().ok()?)),
        None => (rest, None),
    };
    let mut parts = path.split('/');
    if !roots.contains(parts.next()?) {
        return None;
    }
    let placeholder = |part: &str| {
        part.len() > 1
            && part
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c == '-')
    };
    if parts.any(placeholder) {
        return None;
    }
    Some(Cited { path, line, anchor })
}

/// What is wrong with `cited` under `root`, if anything.
fn judge(root: &Path, cited: &Cited) -> Option<String> {
    let target = root.join(cited.path);
    if !target.exists() {
        return Some("no such file or directory".into());
    }
    if let Some(line) = cited.line {
        let Ok(text) = std::fs::read_to_string(&target) else {
            return Some(format!("line {line} of what is no text file"));
        };
        let lines = text.lines().count();
        if line == 0 || line > lines {
            return Some(format!("line {line}, but {} has {lines} lines", cited.path));
        }
    }
    let anchor = cited.anchor.filter(|a| !a.is_empty())?;
    let markdown = std::fs::read_to_string(&target).ok()?;
    (!anchors(&markdown).contains(anchor))
        .then(|| format!("no heading with anchor #{anchor} in {}", cited.path))
}

/// Every stale path the code spans of `pages` (each under `root`) cite, as `page: span: problem`,
/// and how many cited paths were checked.
fn stale_paths(root: &Path, pages: &[std::path::PathBuf]) -> (Vec<String>, usize) {
    let roots = root_entries(root);
    let (mut problems, mut checked) = (Vec::new(), 0);
    for page in pages {
        let text = std::fs::read_to_string(page).unwrap();
        let name = page.strip_prefix(root).unwrap().display();
        let mut elsewhere = false;
        for event in Parser::new_ext(&text, options()) {
            let span = match event {
                Event::Start(Tag::Link { dest_url, .. }) => {
                    elsewhere = dest_url.contains("://");
                    continue;
                }
                Event::End(TagEnd::Link) => {
                    elsewhere = false;
                    continue;
                }
                Event::Code(span) if !elsewhere => span,
                _ => continue,
            };
            let Some(cited) = cited(&span, &roots) else {
                continue;
            };
            checked += 1;
            if let Some(problem) = judge(root, &cited) {
                problems.push(format!("{name}: `{span}`: {problem}"));
            }
        }
    }
    (problems, checked)
}

#[test]
fn every_repository_path_in_backticks_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (problems, checked) = stale_paths(root, &documents(root));
    assert!(
        problems.is_empty(),
        "paths in backticks that name nothing of the repository:\n{}\n\
         hint: write the path the file has now (and its line or heading), or drop the backticks \
         where the text means no file of this repository",
        problems.join("\n")
    );
    // The pages name nearly two hundred files in backticks.
    assert!(checked > 150, "only {checked} paths in backticks found");
}

/// The check finds a missing file, a line past the end and a missing heading, and leaves alone
/// what is no path of the repository: Rust paths, globs, placeholders, ignored trees, commands
/// and fenced blocks.
#[test]
fn the_path_check_catches_stale_paths_and_leaves_other_text_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in ["src", "docs", "target/debug", "fuzz"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join(".gitignore"), "/target\n").unwrap();
    std::fs::write(root.join("Makefile"), "a:\n\ttrue\n\nb:\n").unwrap();
    std::fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(root.join("target/debug/x"), "").unwrap();
    std::fs::write(
        root.join("README.md"),
        "# Intro\n\n`src/a.rs` `src/a.rs:1` `Makefile:4` `README.md#intro` `docs/` \
         [see `src/gone.rs`](x.md)\n\n`src/b.rs` `Makefile:12` `README.md#layout` `src/a.rs:0`\n\n\
         `target/debug/x` `crate::src::a` `docs/**/*.md` `fuzz/corpus/TARGET` `src/a.rs --x` \
         `other/a.rs` `https://src/a` `../src/gone.rs` [`src/theirs.rs`](https://example.org/src/theirs.rs)\n\n```text\nsrc/gone.rs\n```\n",
    )
    .unwrap();
    let (problems, checked) = stale_paths(root, &[root.join("README.md")]);
    assert_eq!(checked, 10, "{problems:#?}");
    assert_eq!(
        problems,
        [
            "README.md: `src/gone.rs`: no such file or directory",
            "README.md: `src/b.rs`: no such file or directory",
            "README.md: `Makefile:12`: line 12, but Makefile has 4 lines",
            "README.md: `README.md#layout`: no heading with anchor #layout in README.md",
            "README.md: `src/a.rs:0`: line 0, but src/a.rs has 1 lines",
        ]
    );
}
