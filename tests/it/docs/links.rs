//! The documentation's links hold: every relative link in README.md, STYLE.md, CHANGELOG.md and
//! docs/**/*.md names a file or directory of the repository, every `#anchor` names a heading of
//! its target page as GitHub renders it, and docs/README.md lists every page under docs/. The
//! README was cut into docs/ pages; a page renamed or a heading reworded must not leave a
//! newcomer on a dead link. Paths written in backticks are held by `paths.rs`.
//!
//! Markdown is read with pulldown-cmark (CommonMark plus GitHub's tables), so links in tables count
//! and text in code spans and fenced blocks does not.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// README.md and every Markdown file under docs/, sorted.
pub(super) fn pages(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut out = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut out);
    out.sort();
    out
}

/// What the link checks read: the pages, and STYLE.md and CHANGELOG.md beside them, which cite
/// the pages and the code as much as the pages do.
pub(super) fn documents(root: &Path) -> Vec<PathBuf> {
    let mut out = pages(root);
    out.extend(["STYLE.md", "CHANGELOG.md"].map(|name| root.join(name)));
    out
}

pub(super) fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES
}

/// The link and image destinations of a page, in order.
fn links(markdown: &str) -> Vec<String> {
    Parser::new_ext(markdown, options())
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.into_string())
            }
            _ => None,
        })
        .collect()
}

/// GitHub's anchor for a heading's text (github-slugger): lower case, every character that is not
/// a letter, digit, `-` or `_` dropped, each space a `-`; a repeated slug gets `-1`, `-2`, ….
fn slug(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a page's headings get, duplicates numbered as GitHub numbers them.
pub(super) fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(markdown, options()) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(text) | Event::Code(text) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&text);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let mut anchor = base.clone();
                let mut n = 0;
                while !seen.insert(anchor.clone()) {
                    n += 1;
                    anchor = format!("{base}-{n}");
                }
            }
            _ => {}
        }
    }
    seen
}

/// `path` with `.` and `..` resolved lexically; `None` when it climbs above the start.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// Every broken relative link of `pages` (each under `root`), as `page: link: problem`, and the
/// number of relative links checked.
fn broken_links(root: &Path, pages: &[PathBuf]) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in pages {
        let text = std::fs::read_to_string(page).unwrap();
        let name = page.strip_prefix(root).unwrap().display().to_string();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = match link.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                page.clone()
            } else if file.starts_with('/') {
                problems.push(format!(
                    "{name}: {link}: an absolute path; write it relative"
                ));
                continue;
            } else {
                match normalise(&page.parent().unwrap().join(file)) {
                    Some(t) if t.starts_with(root) => t,
                    _ => {
                        problems.push(format!("{name}: {link}: leads out of the repository"));
                        continue;
                    }
                }
            };
            if !target.exists() {
                problems.push(format!("{name}: {link}: no such file or directory"));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if target.extension().is_some_and(|e| e == "md") {
                let headings = anchors(&std::fs::read_to_string(&target).unwrap());
                if !headings.contains(anchor) {
                    problems.push(format!(
                        "{name}: {link}: no heading with anchor #{anchor} in {}",
                        target.strip_prefix(root).unwrap().display()
                    ));
                }
            }
        }
    }
    (problems, checked)
}

#[test]
fn every_relative_link_in_readme_style_changelog_and_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = documents(root);
    assert!(
        pages.len() > 10,
        "README.md and docs/ should hold the documentation: {pages:?}"
    );
    let (problems, checked) = broken_links(root, &pages);
    assert!(
        problems.is_empty(),
        "broken links (GitHub's anchors: lower case, punctuation dropped, spaces as -):\n{}",
        problems.join("\n")
    );
    // The README and the docs map link every page: far more than this many links.
    assert!(checked > 100, "only {checked} relative links found");
}

#[test]
fn every_docs_page_is_reachable_from_the_readme() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut reached = BTreeSet::new();
    let mut queue = vec![root.join("README.md")];
    while let Some(page) = queue.pop() {
        if !reached.insert(page.clone()) {
            continue;
        }
        let text = std::fs::read_to_string(&page).unwrap();
        for link in links(&text) {
            let file = link.split('#').next().unwrap_or_default();
            if link.contains("://") || file.is_empty() || !file.ends_with(".md") {
                continue;
            }
            if let Some(target) = normalise(&page.parent().unwrap().join(file))
                && target.starts_with(root.join("docs"))
                && target.exists()
            {
                queue.push(target);
            }
        }
    }
    let orphans: Vec<String> = pages(root)
        .into_iter()
        .filter(|p| !reached.contains(p))
        .map(|p| p.strip_prefix(root).unwrap().display().to_string())
        .collect();
    assert!(
        orphans.is_empty(),
        "pages no link from README.md leads to: {orphans:?}"
    );
}

/// The pages under `root`'s docs/ that docs/README.md, the map of the documentation, does not
/// link (each as a path under the repository), and how many pages it links.
fn unlisted_pages(root: &Path) -> (Vec<String>, usize) {
    let map = root.join("docs/README.md");
    let text = std::fs::read_to_string(&map).unwrap_or_else(|e| panic!("{}: {e}", map.display()));
    let listed: BTreeSet<PathBuf> = links(&text)
        .iter()
        .filter(|link| !link.contains("://"))
        .filter_map(|link| normalise(&root.join("docs").join(link.split('#').next().unwrap())))
        .collect();
    let unlisted = pages(root)
        .into_iter()
        .filter(|p| p.starts_with(root.join("docs")) && *p != map && !listed.contains(p))
        .map(|p| p.strip_prefix(root).unwrap().display().to_string())
        .collect();
    (unlisted, listed.len())
}

#[test]
fn every_docs_page_is_listed_in_the_docs_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (unlisted, listed) = unlisted_pages(root);
    assert!(
        unlisted.is_empty(),
        "pages docs/README.md does not list: {unlisted:?}\n\
         hint: add a row for each to its section's table in docs/README.md"
    );
    assert!(listed > 25, "docs/README.md links only {listed} pages");
}

#[test]
fn the_docs_map_check_names_a_page_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("docs/guide")).unwrap();
    std::fs::write(root.join("README.md"), "[docs](docs/README.md)\n").unwrap();
    for page in ["docs/guide/a.md", "docs/guide/b.md", "docs/c.md"] {
        std::fs::write(root.join(page), "# page\n").unwrap();
    }
    std::fs::write(
        root.join("docs/README.md"),
        "| page | what |\n|---|---|\n| [A](guide/a.md#page) | a |\n\n`[not a link](c.md)`\n",
    )
    .unwrap();
    let (unlisted, listed) = unlisted_pages(root);
    assert_eq!(unlisted, ["docs/c.md", "docs/guide/b.md"]);
    assert_eq!(listed, 1);
}

/// The checker itself finds what it is for: a missing file, a missing anchor, a path out of the
/// tree; and accepts GitHub's anchors for headings with code, punctuation and repeats.
#[test]
fn the_link_check_catches_dead_links_and_accepts_githubs_anchors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("docs/guide")).unwrap();
    std::fs::write(
        root.join("docs/guide/a.md"),
        "# A\n\n## `cks-iso build`\n\n## 5. Image archives (`docker/*.tar`)\n\n## Notes\n\n## Notes\n\n\
         ```\n[not a link](missing.md)\n```\n",
    )
    .unwrap();
    std::fs::write(
        root.join("README.md"),
        "[ok](docs/guide/a.md#cks-iso-build) [ok](docs/guide/a.md#5-image-archives-dockertar) \
         [ok](docs/guide/a.md#notes-1) [ok](docs/guide/) [ext](https://example.org/x.md)\n\n\
         | a | b |\n|---|---|\n| [gone](docs/gone.md) | [bad anchor](docs/guide/a.md#nope) |\n\n\
         [out](../outside.md) [code is no link]: `[x](y.md)`\n",
    )
    .unwrap();
    let (problems, checked) = broken_links(root, &pages(root));
    assert_eq!(checked, 7, "{problems:?}");
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems[0].contains("docs/gone.md: no such file"),
        "{problems:?}"
    );
    assert!(
        problems[1].contains("no heading with anchor #nope"),
        "{problems:?}"
    );
    assert!(
        problems[2].contains("leads out of the repository"),
        "{problems:?}"
    );
}
