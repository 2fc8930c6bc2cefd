//! The layers of the main crate as the compiler holds them: which top-level module (`fetch`,
//! `registry`, `resolve`, …) uses which, read from `src/**/*.rs`, and no cycle between them. A
//! cycle means neither module can be understood, tested or moved into a crate of its own without
//! the other; the leaf crates' rule is `leaf_crates_depend_on_no_network_stack` in `packaging`,
//! this is the same rule for the modules of the main crate.
//!
//! The sources are read by `lexer` (why not `syn`: its module doc) and walked by `modules`, as
//! `file_rules` reads them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::lexer::{Token, group_heads, lex, path_at, relative};
use super::modules::{module_file, walk};

/// Uses that close a cycle known to be on its way out, each with why it is still here: the test
/// leaves these edges out of the graph before it looks for cycles. An entry whose use is gone
/// fails the test too (delete it then), so the list only shrinks.
const ALLOWED: &[(&str, &str, &str)] = &[
    // (from, to, why): none left. The plan ↔ lock cycle was the last, until the ISO names moved
    // under `lock`.
];

/// Where one module uses another: the first place found, as `file:line`.
type Edges = BTreeMap<(String, String), String>;

/// The edges between the top-level modules declared in `src/lib.rs`.
fn module_graph(src: &Path) -> (BTreeSet<String>, Edges) {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let tokens = lex(&lib);
    let mut names = BTreeSet::new();
    for (i, token) in tokens.iter().enumerate() {
        if token.ident() == Some("mod")
            && let Some(name) = tokens.get(i + 1).and_then(Token::ident)
            && tokens.get(i + 2).is_some_and(|t| t.is(';'))
        {
            names.insert(name.to_owned());
        }
    }
    let mut edges = Edges::new();
    for name in &names {
        let file = module_file(src, name, None, src);
        let mut read = |file: &Path, module: &[String], tokens: &[Token]| {
            read_tokens(file, tokens, module, &names, &mut edges)
        };
        walk(&file, &src.join(name), vec![name.clone()], &mut read);
    }
    (names, edges)
}

/// Records in `edges` the top-level modules the tokens of `file` (module `module`) use; returns
/// the `mod x;` declarations, each with the inline modules around it.
fn read_tokens(
    file: &Path,
    tokens: &[Token],
    module: &[String],
    names: &BTreeSet<String>,
    edges: &mut Edges,
) -> Vec<(Vec<String>, String)> {
    let mut declared = Vec::new();
    // Inline modules open here: (name, the brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
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
            let mut record = |segments: &[String], line: usize| {
                let Some(target) = top_of(&here, segments) else {
                    return;
                };
                if target != module[0] && names.contains(&target) {
                    let at = format!("{}:{line}", relative(file));
                    edges.entry((module[0].clone(), target)).or_insert(at);
                }
            };
            let (segments, next) = path_at(tokens, i, first);
            match tokens.get(next) {
                // `prefix::{a, b::C}`: each item's first segment after the prefix.
                Some(t) if t.is('{') => {
                    for (item, line) in group_heads(tokens, next) {
                        let mut full = segments.clone();
                        full.push(item);
                        record(&full, line);
                    }
                }
                _ => record(&segments, token.line()),
            }
            i = next;
            continue;
        }
        i += 1;
    }
    declared
}

/// The top-level module a path written in `module` starts in: `crate::x…` is `x`, `super::…`
/// climbs from `module`, `self::…` stays; `None` for a path that starts elsewhere (a local name,
/// another crate, `crate::*`).
fn top_of(module: &[String], segments: &[String]) -> Option<String> {
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
    at.first().or(rest.first()).cloned()
}

/// The strongly connected components of more than one module (each holds a cycle).
fn cycles(names: &BTreeSet<String>, edges: &Edges) -> Vec<BTreeSet<String>> {
    let next = |from: &str| -> Vec<&str> {
        edges
            .keys()
            .filter(|(f, _)| f == from)
            .map(|(_, t)| t.as_str())
            .collect()
    };
    // Two modules are in one component when each reaches the other.
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(m) = todo.pop() {
            for n in next(&m) {
                if seen.insert(n.to_owned()) {
                    todo.push(n.to_owned());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        names.iter().map(|n| (n, reach(n))).collect();
    let mut components: Vec<BTreeSet<String>> = Vec::new();
    for name in names {
        if !reached[name].contains(name) || components.iter().any(|c| c.contains(name)) {
            continue;
        }
        let component = reached[name]
            .iter()
            .filter(|other| reached[*other].contains(name))
            .cloned()
            .collect();
        components.push(component);
    }
    components
}

/// One cycle through `component`, as `a → b (where) → … → a`, naming where each use is.
fn one_cycle(component: &BTreeSet<String>, edges: &Edges) -> String {
    let start = component.first().expect("a component has a module").clone();
    // Breadth-first within the component, back to the start.
    let mut came_from: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.clone()]);
    'search: while let Some(m) = queue.pop_front() {
        for (from, to) in edges
            .keys()
            .filter(|(f, t)| *f == m && component.contains(t))
        {
            if to == &start {
                came_from.insert(start.clone(), from.clone());
                break 'search;
            }
            if !came_from.contains_key(to) {
                came_from.insert(to.clone(), from.clone());
                queue.push_back(to.clone());
            }
        }
    }
    let mut path = vec![start.clone()];
    let mut at = came_from[&start].clone();
    while at != start {
        path.push(at.clone());
        at = came_from[&at].clone();
    }
    path.push(start);
    path.reverse();
    path.windows(2)
        .map(|w| {
            format!(
                "{} → {} ({})",
                w[0],
                w[1],
                edges[&(w[0].clone(), w[1].clone())]
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn no_cycle_between_the_top_level_modules_of_the_main_crate() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (names, edges) = module_graph(&src);
    // The reader must see the crate: the command layer wires the fetch layer, and the fetch layer
    // is used by the registry client, also through `super::` and inside macros.
    assert!(names.len() > 20, "top-level modules found: {names:?}");
    for (from, to) in [("app", "cli"), ("registry", "fetch"), ("upstream", "fetch")] {
        assert!(
            edges.contains_key(&(from.to_owned(), to.to_owned())),
            "{from} → {to} not seen; edges: {edges:#?}"
        );
    }
    println!("{} edges between {} modules:", edges.len(), names.len());
    for ((from, to), at) in &edges {
        println!("  {from} → {to}  ({at})");
    }
    let mut failures = Vec::new();
    let mut judged = edges.clone();
    for (from, to, why) in ALLOWED {
        if judged
            .remove(&((*from).to_owned(), (*to).to_owned()))
            .is_none()
        {
            failures.push(format!(
                "the allowed use {from} → {to} ({why}) is gone: delete its entry in ALLOWED"
            ));
        }
    }
    for component in cycles(&names, &judged) {
        failures.push(format!(
            "modules {component:?} depend on each other: {}",
            one_cycle(&component, &judged)
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_reader_resolves_crate_super_groups_macros_and_attributes_but_not_comments() {
    let text = r##"
        //! Uses [`crate::comment_only`] in a doc link.
        use crate::{alpha::A, beta};
        use super::gamma::G;
        #[error("{0}", shown = crate::delta::f(x))]
        struct E<'a>(&'a str);
        fn f() {
            let _ = format!("{}", crate::epsilon::g());
            let _ = "crate::in_a_string::h";
            let _ = r#"crate::in_a_raw_string"#;
            let _ = ('"', b'"', 1u8);
            /* crate::in_a_block /* nested */ comment */
            // crate::in_a_comment
        }
        mod tests {
            use super::*;
            use super::super::zeta::Z;
            use crate::eta::{self, H};
        }
        fn after() -> crate::theta::T { todo!() }
    "##;
    let names: BTreeSet<String> = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "own",
        "comment_only",
        "in_a_string",
        "in_a_raw_string",
        "in_a_block",
        "in_a_comment",
    ]
    .map(str::to_owned)
    .into();
    let mut edges = Edges::new();
    let module = ["own".to_owned(), "inner".to_owned()];
    let declared = read_tokens(
        Path::new("src/own/inner.rs"),
        &lex(text),
        &module,
        &names,
        &mut edges,
    );
    assert!(declared.is_empty());
    let targets: BTreeSet<&str> = edges.keys().map(|(_, to)| to.as_str()).collect();
    // `super::gamma` from `own::inner` is `own::gamma`: the module's own, no edge; `super::super::
    // zeta` from `own::inner::tests` is `own::zeta`, likewise.
    assert_eq!(
        targets,
        BTreeSet::from(["alpha", "beta", "delta", "epsilon", "eta", "theta"]),
        "{edges:#?}"
    );
    assert_eq!(
        edges[&("own".to_owned(), "delta".to_owned())],
        "src/own/inner.rs:5"
    );
    assert_eq!(
        top_of(&["own".into()], &["super".into(), "zeta".into()]),
        Some("zeta".into())
    );
    let declared = read_tokens(
        Path::new("src/own/mod.rs"),
        &lex("mod a; mod b { mod c; } #[cfg(test)] mod d;"),
        &["own".to_owned()],
        &names,
        &mut edges,
    );
    assert_eq!(
        declared,
        [
            (vec![], "a".to_owned()),
            (vec!["b".to_owned()], "c".to_owned()),
            (vec![], "d".to_owned())
        ]
    );
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn one_module_style() {
    // A module with submodules is `x/mod.rs`, never `x.rs` beside `x/` (STYLE.md).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "crates", "testworld/src", "tests"] {
        rust_files(&root.join(dir), &mut files);
    }
    let both: Vec<String> = files
        .iter()
        .filter(|f| {
            !["mod.rs", "lib.rs", "main.rs"].contains(&f.file_name().unwrap().to_str().unwrap())
        })
        .filter(|f| f.with_extension("").is_dir())
        .map(|f| relative(f))
        .collect();
    assert!(files.len() > 100, "found only {} files", files.len());
    assert!(
        both.is_empty(),
        "a module file beside its folder (move it to the folder's mod.rs): {both:?}"
    );
}
