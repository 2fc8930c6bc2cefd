//! The rules inside the main crate's modules, read with `layers`' lexer: a command module
//! (`src/app/<command>`) imports no other command; no glob import of our own modules outside a
//! test module; and no two files of one module that use each other. STYLE.md ("Where code goes")
//! says why; each rule has a self-test that shows it fails on a bad example.
//!
//! Paths are resolved as rustc resolves `crate::`, `super::` and `self::` (inline modules
//! included); what a `use super::Item` reaches through a re-export in `mod.rs` is not followed,
//! so a file that names its sibling through the parent's re-export is not counted (the rule is
//! about the paths a reader follows).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::layers::{Token, group_heads, lex, module_file, path_at, path_attributes, relative};

/// The modules of `src/app/` that are not commands: CLI glue several commands share. Every other
/// module of `app` is a command (one per subcommand, or a family such as `docs`).
const APP_SUPPORT: &[&str] = &["error", "net", "request", "cloudstack_api", "sides"];

/// One path a file names: absolute (from the crate root), where, and how.
#[derive(Debug, Clone)]
struct Use {
    segments: Vec<String>,
    line: usize,
    /// Inside a test module (an inline `mod tests`, or a file `tests.rs` / `*_tests.rs`).
    in_test: bool,
    /// `prefix::*`.
    glob: bool,
}

/// A file of the crate: its module path and the paths it names.
#[derive(Debug)]
struct File {
    name: String,
    module: Vec<String>,
    uses: Vec<Use>,
}

fn is_test_module(name: &str) -> bool {
    name == "tests" || name.ends_with("_tests")
}

/// `segments` written in `module`, made absolute; `None` for a path that starts elsewhere.
fn absolute(module: &[String], segments: &[String]) -> Option<Vec<String>> {
    let mut at = module.to_vec();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            at.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// The `mod x;` declarations (with the inline modules around them) and the paths of `tokens`,
/// written in module `module`.
fn scan(tokens: &[Token], module: &[String]) -> (Vec<(Vec<String>, String)>, Vec<Use>) {
    let (mut declared, mut uses) = (Vec::new(), Vec::new());
    let mut inline: Vec<(String, usize)> = Vec::new();
    let (mut depth, mut i) = (0, 0);
    let file_test = module.last().is_some_and(|m| is_test_module(m));
    while i < tokens.len() {
        let token = &tokens[i];
        if token.is('{') {
            depth += 1;
        } else if token.is('}') {
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            depth -= 1;
        } else if token.ident() == Some("mod")
            && let Some(name) = tokens.get(i + 1).and_then(Token::ident)
        {
            let here: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
            match tokens.get(i + 2) {
                Some(t) if t.is(';') => declared.push((here, name.to_owned())),
                Some(t) if t.is('{') => {
                    inline.push((name.to_owned(), depth + 1));
                    depth += 1;
                    i += 3;
                    continue;
                }
                _ => {}
            }
        } else if let Some(first @ ("crate" | "super" | "self")) = token.ident()
            && !(i >= 1 && tokens[i - 1].is(':'))
            && tokens.get(i + 1).is_some_and(|t| t.is(':'))
        {
            let mut here = module.to_vec();
            here.extend(inline.iter().map(|(n, _)| n.clone()));
            let in_test = file_test || inline.iter().any(|(n, _)| is_test_module(n));
            let (segments, next) = path_at(tokens, i, first);
            let mut record = |segments: &[String], line: usize, glob: bool| {
                if let Some(segments) = absolute(&here, segments) {
                    uses.push(Use {
                        segments,
                        line,
                        in_test,
                        glob,
                    });
                }
            };
            match tokens.get(next) {
                Some(t) if t.is('{') => {
                    for (item, line) in group_heads(tokens, next) {
                        let mut full = segments.clone();
                        full.push(item);
                        record(&full, line, false);
                    }
                }
                Some(t) if t.is('*') => record(&segments, token.line(), true),
                _ => record(&segments, token.line(), false),
            }
            i = next;
            continue;
        }
        i += 1;
    }
    (declared, uses)
}

/// Every file of the crate whose root is `src/lib.rs`, found as rustc finds them.
fn files(src: &Path) -> Vec<File> {
    let mut found = Vec::new();
    let lib = src.join("lib.rs");
    let root = if lib.exists() {
        lib
    } else {
        src.join("main.rs")
    };
    walk(&root, src, Vec::new(), &mut found);
    found
}

fn walk(file: &Path, children: &Path, module: Vec<String>, found: &mut Vec<File>) {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let (declared, uses) = scan(&lex(&text), &module);
    let paths = path_attributes(&text);
    let dir = file.parent().expect("a file in a directory");
    found.push(File {
        name: relative(file),
        module: module.clone(),
        uses,
    });
    for (inline, name) in declared {
        let base = inline
            .iter()
            .fold(children.to_owned(), |base, part| base.join(part));
        let child = module_file(&base, &name, paths.get(&name), dir);
        let mut path = module.clone();
        path.extend(inline);
        path.push(name.clone());
        walk(&child, &base.join(&name), path, found);
    }
}

/// Rule (a): `app::<command>` naming `app::<other command>`.
fn command_imports(files: &[File]) -> Vec<String> {
    let app: BTreeSet<&str> = files
        .iter()
        .filter(|f| f.module.len() == 2 && f.module[0] == "app")
        .map(|f| f.module[1].as_str())
        .collect();
    let command = |name: &str| app.contains(name) && !APP_SUPPORT.contains(&name);
    let mut found = Vec::new();
    for f in files
        .iter()
        .filter(|f| f.module.len() >= 2 && f.module[0] == "app")
    {
        let own = f.module[1].as_str();
        if !command(own) {
            continue;
        }
        for u in &f.uses {
            if let [top, other, ..] = u.segments.as_slice()
                && top == "app"
                && other != own
                && command(other)
            {
                found.push(format!(
                    "{}:{}: command {own} uses command {other}",
                    f.name, u.line
                ));
            }
        }
    }
    found
}

/// Rule (b): a glob of our own modules outside a test module.
fn globs(files: &[File]) -> Vec<String> {
    let mut found = Vec::new();
    for f in files {
        for u in f.uses.iter().filter(|u| u.glob && !u.in_test) {
            found.push(format!(
                "{}:{}: `{}::*`",
                f.name,
                u.line,
                shown(&u.segments)
            ));
        }
    }
    found
}

fn shown(segments: &[String]) -> String {
    match segments.is_empty() {
        true => "crate".into(),
        false => format!("crate::{}", segments.join("::")),
    }
}

/// Rule (c): files of one module (siblings) that use each other, outside tests: each pair once,
/// with where each use is.
fn circles(files: &[File]) -> Vec<String> {
    let modules: BTreeSet<&[String]> = files.iter().map(|f| f.module.as_slice()).collect();
    // (from, to) → where, between siblings only.
    let mut edges: BTreeMap<(Vec<String>, Vec<String>), String> = BTreeMap::new();
    for f in files.iter().filter(|f| !f.module.is_empty()) {
        let parent = &f.module[..f.module.len() - 1];
        for u in f.uses.iter().filter(|u| !u.in_test) {
            if u.segments.len() <= parent.len() || !u.segments.starts_with(parent) {
                continue;
            }
            let sibling = &u.segments[..=parent.len()];
            if sibling != f.module.as_slice()
                && modules.contains(sibling)
                && !is_test_module(sibling.last().expect("a module"))
            {
                let at = format!("{}:{}", f.name, u.line);
                edges
                    .entry((f.module.clone(), sibling.to_vec()))
                    .or_insert(at);
            }
        }
    }
    let mut found = Vec::new();
    for ((a, b), at) in &edges {
        if a < b
            && let Some(back) = edges.get(&(b.clone(), a.clone()))
        {
            found.push(format!(
                "{} ↔ {}: {at} and {back}",
                a.join("::"),
                b.join("::")
            ));
        }
    }
    found
}

fn main_crate() -> Vec<File> {
    let found = files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(found.len() > 150, "files found: {}", found.len());
    found
}

/// The crates under `crates/` (libraries, and the image writer's program), each its own tree.
fn other_crates() -> Vec<Vec<File>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("crates/")
        .map(|e| e.expect("crates/ entry").path().join("src"))
        .filter(|src| src.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 4, "crates found: {dirs:?}");
    dirs.iter().map(|src| files(src)).collect()
}

#[test]
fn no_command_imports_another_command() {
    let found = command_imports(&main_crate());
    assert!(
        found.is_empty(),
        "a command module uses another (move what they share down into the library, or into an \
         app support module listed in APP_SUPPORT):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_glob_of_our_own_modules_outside_tests() {
    let mut found = globs(&main_crate());
    for krate in other_crates() {
        found.extend(globs(&krate));
    }
    assert!(
        found.is_empty(),
        "glob imports of the crate's own modules (name what is used; `use super::*;` is for \
         test modules only):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_two_files_of_a_module_use_each_other() {
    let found = circles(&main_crate());
    assert!(
        found.is_empty(),
        "files of one module that use each other (move what both need into one of them, or \
         into a third they both use):\n{}",
        found.join("\n")
    );
}

/// The files of a made-up crate, each given as (module path, text).
fn made_up(sources: &[(&str, &str)]) -> Vec<File> {
    sources
        .iter()
        .map(|(module, text)| {
            let module: Vec<String> = module.split("::").map(str::to_owned).collect();
            let (_, uses) = scan(&lex(text), &module);
            File {
                name: format!("src/{}.rs", module.join("/")),
                module,
                uses,
            }
        })
        .collect()
}

#[test]
fn the_rules_fail_on_bad_examples() {
    // (a) `build` names `register` (through `super::` and through `crate::app::`); using the
    // support module `net` and its own submodule is fine.
    let app = made_up(&[
        (
            "app::build",
            "use super::{net, register::after}; fn f() { crate::app::register::x(); }",
        ),
        (
            "app::build::summary",
            "use super::super::register::line; use super::Built;",
        ),
        ("app::register", "use super::net;"),
        ("app::net", "use super::register::helper;"),
    ]);
    let found = command_imports(&app);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].starts_with("src/app/build.rs:1: command build uses command register"));
    assert!(
        found.iter().all(|f| !f.contains("src/app/net.rs")),
        "{found:#?}"
    );
    // (b) globs: `crate::x::*` and `super::*` in code count; in a test module they do not.
    let globbed = made_up(&[
        (
            "fetch::sink",
            "use super::*; use crate::image::*; use std::io::*;",
        ),
        (
            "fetch::retry",
            "fn f() {} #[cfg(test)] mod tests { use super::*; }",
        ),
        ("cache::tests", "use super::*;"),
    ]);
    let found = globs(&globbed);
    assert_eq!(
        found,
        [
            "src/fetch/sink.rs:1: `crate::fetch::*`",
            "src/fetch/sink.rs:1: `crate::image::*`"
        ]
    );
    // (c) checks uses render and render uses checks: a circle; mod.rs (the parent) and a test
    // module using both are not.
    let circled = made_up(&[
        ("verify", "mod checks; mod render; use self::checks::Ctx;"),
        (
            "verify::checks",
            "use super::render::line;\nfn f(c: &super::Ctx) {}",
        ),
        ("verify::render", "use super::checks::Ctx;"),
        ("verify::lock", "use super::checks::Ctx;"),
        ("verify::tests", "use super::lock::x; use super::checks::y;"),
    ]);
    assert_eq!(
        circles(&circled),
        ["verify::checks ↔ verify::render: src/verify/checks.rs:1 and src/verify/render.rs:1"]
    );
}
