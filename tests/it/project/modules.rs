//! The main crate's module tree walked as rustc finds its files: from a root file through each
//! `mod x;` (`x.rs`, `x/mod.rs`, or its `#[path]`), inline `mod a { mod b; }` nesting the
//! directory. `layers` and `file_rules` both walk it, each reading every file its own way.

use std::path::{Path, PathBuf};

use super::lexer::{Token, lex, path_attributes};

/// The `mod x;` declarations of a file, each with the inline modules around it.
pub type Declared = Vec<(Vec<String>, String)>;

/// What reads one file of the tree: its path, its module path and its tokens; the modules it
/// declares.
pub type Visit<'a> = dyn FnMut(&Path, &[String], &[Token]) -> Declared + 'a;

/// The file of module `name` declared in a file of `dir` (`name.rs` or `name/mod.rs` under
/// `children`, or its `#[path]`, relative to `dir`).
pub fn module_file(children: &Path, name: &str, given: Option<&String>, dir: &Path) -> PathBuf {
    if let Some(path) = given {
        return dir.join(path);
    }
    let flat = children.join(format!("{name}.rs"));
    match flat.exists() {
        true => flat,
        false => children.join(name).join("mod.rs"),
    }
}

/// Walks the module in `file` (path `module`), whose declared modules live in `children`, then
/// the files of the modules it declares, recursively. `visit` reads each file (its path, its
/// module path and its tokens) and returns the `mod x;` declarations it found, each with the
/// inline modules around it.
pub fn walk(file: &Path, children: &Path, module: Vec<String>, visit: &mut Visit) {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let declared = visit(file, &module, &lex(&text));
    let paths = path_attributes(&text);
    let dir = file.parent().expect("a file in a directory");
    for (inline, name) in declared {
        // Inline modules nest the directory: `mod a { mod b; }` is `a/b.rs`.
        let base = inline
            .iter()
            .fold(children.to_owned(), |base, part| base.join(part));
        let child = module_file(&base, &name, paths.get(&name), dir);
        let mut path = module.clone();
        path.extend(inline);
        path.push(name.clone());
        walk(&child, &base.join(&name), path, visit);
    }
}
