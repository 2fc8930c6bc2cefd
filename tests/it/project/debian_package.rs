//! The Debian package `make deb` builds, judged as Debian and an operator would: lintian, the
//! files where Debian expects them, the packaged binary, its man pages and its bash completion.
//! Needs the release build `make deb` makes, too slow for `make test`: its test is ignored and run
//! by `make test-deb` (which `.ci/run` calls).

use std::path::Path;
use std::process::Command;

use super::packaging::bash_complete;
use crate::support::run;

/// The `.deb` that `make deb` wrote for this version, in the target dir this test was built in
/// (`CARGO_TARGET_DIR` or `target/`): the binary's is `<target dir>/debug/cks-iso`.
fn built_deb() -> std::path::PathBuf {
    let target_dir = std::path::Path::new(env!("CARGO_BIN_EXE_cks-iso"))
        .ancestors()
        .nth(2)
        .expect("the binary is in <target dir>/<profile>/");
    let dir = target_dir.join("debian");
    let prefix = format!("cks-iso_{}-", env!("CARGO_PKG_VERSION"));
    let debs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}: run `make test-deb`", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(&prefix) && name.ends_with(".deb")
        })
        .collect();
    assert_eq!(
        debs.len(),
        1,
        "one {prefix}*.deb expected in {}: {debs:?}",
        dir.display()
    );
    debs.into_iter().next().unwrap()
}

/// lintian with `--fail-on error` finds no error in `deb`.
fn assert_lintian_finds_no_error(deb: &Path) {
    crate::support::require("lintian");
    let lintian = Command::new("lintian")
        .args(["--fail-on", "error", "--tag-display-limit", "0"])
        .arg(deb)
        .output()
        .expect("run lintian");
    let report = String::from_utf8_lossy(&lintian.stdout);
    assert!(
        lintian.status.success(),
        "lintian found errors in {}:\n{report}{}",
        deb.display(),
        String::from_utf8_lossy(&lintian.stderr)
    );
    assert!(!report.lines().any(|l| l.starts_with("E:")), "{report}");
}

/// The package, unpacked in `root`, holds the binary, the man page, the three completions, README
/// and licence where Debian expects them; the README's links (into docs/, to LICENSE,
/// THIRD-PARTY-NOTICES, CHANGELOG.md) resolve in the installed doc directory, and docs/ is the
/// repository's whole.
fn assert_installed_where_debian_expects(root: &Path, deb: &Path) {
    for rel in [
        "usr/bin/cks-iso",
        "usr/share/man/man1/cks-iso.1.gz",
        "usr/share/bash-completion/completions/cks-iso",
        "usr/share/zsh/vendor-completions/_cks-iso",
        "usr/share/fish/vendor_completions.d/cks-iso.fish",
        "usr/share/doc/cks-iso/README.md",
        "usr/share/doc/cks-iso/LICENSE",
        "usr/share/doc/cks-iso/copyright",
        "usr/share/doc/cks-iso/THIRD-PARTY-NOTICES",
        "usr/share/doc/cks-iso/changelog.gz",
        "usr/share/doc/cks-iso/docs/guide/install.md",
    ] {
        assert!(
            root.join(rel).is_file(),
            "{rel} is not in {}",
            deb.display()
        );
    }
    let root_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let links = run(Command::new(root_dir.join(".venv-sbom/bin/python"))
        .arg(root_dir.join("scripts/check-doc-links.py"))
        .arg(root.join("usr/share/doc/cks-iso"))
        .arg("--docs-from")
        .arg(root_dir));
    assert!(
        String::from_utf8_lossy(&links.stdout).contains("every one resolves"),
        "{links:?}"
    );
    let licence = std::fs::read_to_string(root.join("usr/share/doc/cks-iso/LICENSE")).unwrap();
    assert!(licence.contains("Apache License") && licence.contains("Version 2.0"));
}

/// The pages `bin man ARGS…` names in its SEE ALSO, as subcommand paths (`cache-export`).
fn pages_named_by(bin: &Path, args: &[&str]) -> Vec<String> {
    let page = run(Command::new(bin).arg("man").args(args));
    String::from_utf8(page.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("cks\\-iso\\-")?.strip_suffix("(1)"))
        .map(|s| s.replace("\\-", "-"))
        .collect()
}

/// Every page reachable from `cks-iso(1)`: one per subcommand each page names
/// (cks-iso-cache-export(1) too).
fn every_man_page(bin: &Path) -> Vec<String> {
    let mut todo = pages_named_by(bin, &[]);
    assert!(todo.iter().any(|s| s == "build"), "{todo:?}");
    // A page is a top-level command (`verify-bundle`) or a path of them (`cache-export`).
    let top = todo.clone();
    let mut pages = vec!["cks-iso".to_owned()];
    while let Some(sub) = todo.pop() {
        let words: Vec<&str> = match top.contains(&sub) {
            true => vec![sub.as_str()],
            false => sub.split('-').collect(),
        };
        todo.extend(pages_named_by(bin, &words));
        pages.push(format!("cks-iso-{sub}"));
    }
    assert!(
        pages.iter().any(|p| p == "cks-iso-cache-export"),
        "{pages:?}"
    );
    pages
}

/// Each of `pages` is packaged under `root` and renders without a warning.
fn assert_man_pages_render(root: &Path, pages: &[String]) {
    for page in pages {
        let path = root.join(format!("usr/share/man/man1/{page}.1.gz"));
        assert!(path.is_file(), "{page}(1) is not packaged");
        let out = run(Command::new("man")
            .args(["--warnings", "-l"])
            .arg(&path)
            .env("MANPAGER", "cat")
            .env("LC_ALL", "C.UTF-8"));
        assert!(
            out.stderr.is_empty(),
            "{page}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("NAME"));
    }
}

/// The Debian package `make deb` builds: lintian finds no error, it holds the binary, every man
/// page, the three completions, README and licence where Debian expects them, and the packaged
/// binary runs. Needs the release build `make deb` makes, too slow for `make test`: run by
/// `make test-deb` (which `.ci/run` calls).
#[test]
#[ignore = "needs `make deb` (a release build); run by `make test-deb`"]
fn debian_package_passes_lintian_and_its_binary_runs() {
    let deb = built_deb();
    assert_lintian_finds_no_error(&deb);
    let root = tempfile::tempdir().unwrap();
    crate::support::run_tool(
        "dpkg-deb",
        &["-x", deb.to_str().unwrap(), root.path().to_str().unwrap()],
    );
    assert_installed_where_debian_expects(root.path(), &deb);
    let bin = root.path().join("usr/bin/cks-iso");
    let version = run(Command::new(&bin).arg("--version"));
    let version = String::from_utf8(version.stdout).unwrap();
    assert!(
        version.starts_with(&format!("cks-iso {}", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    assert_man_pages_render(root.path(), &every_man_page(&bin));
    // The packaged bash completion works as bash-completion would load it.
    let script = root
        .path()
        .join("usr/share/bash-completion/completions/cks-iso");
    assert_eq!(bash_complete(&script, "cks-iso bu"), ["build"]);
}
