//! The tool as operators get it: what the published crate holds, the completions and the man page.
//! (The `.deb` itself is checked in `debian_package`, by `make test-deb`, which needs a release
//! build.)

use std::process::Command;

use crate::support::run;

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
        "src/cli/mod.rs",
    ] {
        assert!(
            files.contains(&required),
            "{required} not packaged:\n{list}"
        );
    }
    let allowed_top = [
        "build.rs",
        "Cargo.toml",
        "Cargo.toml.orig",
        "Cargo.lock",
        "LICENSE",
        "THIRD-PARTY-NOTICES",
        "README.md",
        "CHANGELOG.md",
        ".cargo_vcs_info.json",
    ];
    for file in &files {
        assert!(
            (file.starts_with("src/") && file.ends_with(".rs")) || allowed_top.contains(file),
            "{file} should not be in the published crate:\n{list}"
        );
        // Whatever is packaged must be small source text, never a blob (the licence texts of
        // some 240 crates are the one larger text).
        let limit = match *file {
            "THIRD-PARTY-NOTICES" => 1024 * 1024,
            _ => 256 * 1024,
        };
        if let Ok(meta) = std::fs::metadata(std::path::Path::new(root).join(file)) {
            assert!(meta.len() < limit, "{file} is {} bytes", meta.len());
        }
    }
}

/// The leaf crates (the ISO writer, the image model and archives, the signature checks, their file
/// plumbing) and the pure domain (the contract's paths, the lock, `versions.txt`, manifest edits,
/// SBOMs, diffs) cannot touch the network: nothing in their dependency tree is an HTTP client, TLS
/// stack or async runtime, so "archives, ISOs and signature checks never reach the network" is
/// the compiler's rule, not a promise. (`ring`, the signature checks' crypto, is no network code.)
/// `cargo tree` of the normal (shipped) dependencies, one package a line, with `args`.
fn normal_tree(args: &[&str]) -> String {
    let out = run(Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--locked",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(args));
    String::from_utf8(out.stdout).expect("UTF-8 tree")
}

#[test]
fn leaf_crates_depend_on_no_network_stack() {
    for leaf in [
        "cks-iso-domain",
        "cks-iso-io",
        "cks-iso-iso9660",
        "cks-iso-oci",
        "cks-iso-sigstore",
    ] {
        let tree = normal_tree(&["-p", leaf]);
        assert!(
            tree.lines().count() > 3,
            "{leaf}: no dependency tree:\n{tree}"
        );
        for line in tree.lines() {
            let name = line.split_whitespace().next().unwrap_or_default();
            assert!(
                !["reqwest", "hyper", "h2", "tokio", "rustls", "cks-iso"].contains(&name),
                "{leaf} depends on {name}, a network crate or the network side:\n{tree}"
            );
        }
    }
}

/// The crates linked into the binary for the Linux targets the package is built for (normal
/// dependencies: no dev- or build-only crates), as `name version` with each one's licence
/// expression.
fn shipped_crates() -> std::collections::BTreeMap<String, String> {
    let mut crates = std::collections::BTreeMap::new();
    for target in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        let tree = normal_tree(&["--format", "{p}|{l}", "-p", "cks-iso", "--target", target]);
        for line in tree.lines() {
            let (package, licence) = line.split_once('|').expect("{p}|{l}");
            let mut words = package.split_whitespace();
            let (name, version) = (words.next().unwrap(), words.next().unwrap());
            let licence = licence.trim_end_matches(" (*)").trim();
            crates.insert(
                format!("{name} {}", version.trim_start_matches('v')),
                licence.to_owned(),
            );
        }
    }
    assert!(crates.len() > 100, "too few crates: {crates:?}");
    crates
}

/// about.toml's `accepted` list: the licences cargo-about (`make notices`) takes.
fn accepted_licences() -> Vec<String> {
    let about =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/about.toml")).unwrap();
    let list = about
        .split_once("accepted = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("about.toml has an accepted = [...] list")
        .0;
    let accepted: Vec<String> = list
        .lines()
        .map(|l| l.trim().trim_end_matches(',').trim_matches('"'))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    assert!(accepted.contains(&"Apache-2.0".to_owned()), "{accepted:?}");
    accepted
}

/// Every crate built into the binary has a licence expression the allow-list satisfies: a new
/// dependency under a licence nobody accepted (GPL, say, or none at all) fails `make test`.
#[test]
fn every_shipped_crate_has_a_licence_on_the_allow_list() {
    let accepted = accepted_licences();
    let mut refused = Vec::new();
    for (krate, licence) in shipped_crates() {
        let allowed = spdx::Expression::parse_mode(&licence, spdx::ParseMode::LAX).is_ok_and(|e| {
            e.evaluate(|req| match &req.license {
                spdx::LicenseItem::Spdx { id, .. } => accepted.iter().any(|a| a == id.name),
                spdx::LicenseItem::Other(_) => false,
            })
        });
        if !allowed {
            refused.push(format!("{krate}: {licence:?}"));
        }
    }
    assert!(
        refused.is_empty(),
        "licences not on about.toml's accepted list: {refused:#?}\n\
         hint: accept the licence in about.toml if it is fit to ship, or drop the dependency"
    );
}

/// THIRD-PARTY-NOTICES (committed, embedded in the binary, shipped in the .deb) names exactly the
/// crates built into the binary, at their locked versions: a Cargo.lock change that adds, drops or
/// upgrades one fails until `make notices` has regenerated it.
#[test]
fn third_party_notices_match_cargo_lock() {
    let notices =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/THIRD-PARTY-NOTICES"))
            .unwrap();
    let listed: std::collections::BTreeSet<String> = notices
        .split("Used by:\n")
        .skip(1)
        .flat_map(|section| {
            section
                .lines()
                .take_while(|l| l.starts_with("  "))
                .map(|l| l.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    let shipped: std::collections::BTreeSet<String> = shipped_crates().into_keys().collect();
    let missing: Vec<_> = shipped.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&shipped).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "THIRD-PARTY-NOTICES does not match Cargo.lock: missing {missing:?}, no longer shipped \
         {stale:?}\nhint: run `make notices`"
    );
}

/// `cks-iso licenses` prints the notices the binary embeds, which hold real licence texts.
#[test]
fn licenses_prints_the_embedded_notices() {
    let printed = stdout_of(&["licenses"]);
    let file = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/THIRD-PARTY-NOTICES"))
        .unwrap();
    assert_eq!(printed, file);
    for text in [
        "Apache License",
        "Permission is hereby granted, free of charge",
        "ISC",
    ] {
        assert!(printed.contains(text), "{text} is not in the notices");
    }
    assert!(printed.contains("  reqwest "), "reqwest is not listed");
}

/// `--version` names the commit the binary was built from, when built from a git checkout.
#[test]
fn version_names_the_git_commit() {
    let version = stdout_of(&["--version"]);
    let commit = Command::new("git")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let want = match commit {
        Some(commit) => format!("cks-iso {} ({commit})\n", env!("CARGO_PKG_VERSION")),
        None => format!("cks-iso {}\n", env!("CARGO_PKG_VERSION")),
    };
    assert_eq!(version, want);
}

/// Runs `cks-iso ARGS…` and returns its stdout, failing on a non-zero exit or any stderr.
fn stdout_of(args: &[&str]) -> String {
    let out = run(crate::support::cks_iso().args(args));
    assert!(
        out.stderr.is_empty(),
        "cks-iso {args:?} wrote to stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Sources the bash completion and drives its function the way readline does for `line`, whose
/// last word is the one completed; returns COMPREPLY.
pub(super) fn bash_complete(script: &std::path::Path, line: &str) -> Vec<String> {
    crate::support::require("bash");
    let driver = r#"
        source "$1" || exit 1
        fn=$(complete -p cks-iso | sed -E 's/.*-F ([^ ]+).*/\1/')
        [ -n "$fn" ] || { echo "no completion registered for cks-iso" >&2; exit 1; }
        read -r -a COMP_WORDS <<< "$2"
        case "$2" in *' ') COMP_WORDS+=("") ;; esac
        COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}
        prev=""; [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
        "$fn" cks-iso "${COMP_WORDS[COMP_CWORD]}" "$prev"
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let out = run(Command::new("bash")
        .args(["--norc", "--noprofile", "-c", driver, "bash"])
        .arg(script)
        .arg(line));
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completion_completes_subcommands_and_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("cks-iso.bash");
    std::fs::write(&script, stdout_of(&["completions", "bash"])).unwrap();

    assert_eq!(bash_complete(&script, "cks-iso bu"), ["build"]);
    let all = bash_complete(&script, "cks-iso ");
    for sub in [
        "iso",
        "verify",
        "verify-bundle",
        "verify-image",
        "resolve",
        "pull",
        "build",
        "completions",
        "man",
    ] {
        assert!(all.iter().any(|w| w == sub), "{sub} not offered: {all:?}");
    }
    // A subcommand's own flags: broken upstream for hyphenated binaries (clap-rs/clap#6421).
    assert_eq!(
        bash_complete(&script, "cks-iso build --kub"),
        ["--kubernetes"]
    );
    let shells = bash_complete(&script, "cks-iso completions ");
    for shell in ["bash", "zsh", "fish"] {
        assert!(shells.iter().any(|w| w == shell), "{shell}: {shells:?}");
    }
    assert_eq!(bash_complete(&script, "cks-iso completions z"), ["zsh"]);
}

#[test]
fn zsh_and_fish_completions_are_valid_scripts_of_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let zsh = dir.path().join("_cks-iso");
    std::fs::write(&zsh, stdout_of(&["completions", "zsh"])).unwrap();
    let fish = dir.path().join("cks-iso.fish");
    std::fs::write(&fish, stdout_of(&["completions", "fish"])).unwrap();

    let zsh_text = std::fs::read_to_string(&zsh).unwrap();
    assert!(zsh_text.starts_with("#compdef cks-iso"), "{zsh_text:.200}");
    let fish_text = std::fs::read_to_string(&fish).unwrap();
    for sub in [
        "build",
        "pull",
        "verify",
        "verify-bundle",
        "verify-image",
        "man",
    ] {
        assert!(zsh_text.contains(&format!("'{sub}:")), "zsh lacks {sub}");
        assert!(
            fish_text.contains(&format!("-a \"{sub}\"")),
            "fish lacks {sub}"
        );
    }
    // Each shell parses its script without running it.
    crate::support::run_tool("zsh", &["-n", zsh.to_str().unwrap()]);
    crate::support::run_tool("fish", &["--no-execute", fish.to_str().unwrap()]);
}

/// `man -l` renders the page with no groff warning, holding the sections operators look for.
fn render_man(args: &[&str]) -> String {
    crate::support::require("man");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.1");
    std::fs::write(&page, stdout_of(args)).unwrap();
    let out = run(Command::new("man")
        .args(["--warnings", "-l"])
        .arg(&page)
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .env("LC_ALL", "C.UTF-8"));
    assert!(
        out.stderr.is_empty(),
        "man warned:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Strip overstriking (bold as `X\bX`), as `col -b` would.
    let text = String::from_utf8_lossy(&out.stdout);
    let mut plain = String::new();
    for c in text.chars() {
        if c == '\u{8}' {
            plain.pop();
        } else {
            plain.push(c);
        }
    }
    plain
}

#[test]
fn man_page_renders_with_every_subcommand_variable_and_exit_code() {
    let text = render_man(&["man"]);
    for want in [
        "NAME",
        "Builds the Apache CloudStack Kubernetes Service",
        "SYNOPSIS",
        "--quiet",
        "SUBCOMMANDS",
        "cks-iso-build(1)",
        "cks-iso-completions(1)",
        "ENVIRONMENT",
        "SOURCE_DATE_EPOCH",
        "REGISTRY_AUTH_FILE",
        "EXIT STATUS",
        "130",
        concat!("v", env!("CARGO_PKG_VERSION")),
    ] {
        assert!(
            text.contains(want),
            "{want:?} missing from the page:\n{text}"
        );
    }
    let export = render_man(&["man", "cache", "export"]);
    assert!(export.contains("cks-iso-cache-export"), "{export}");
    let build = render_man(&["man", "build"]);
    for want in [
        "cks-iso-build",
        "--kubernetes",
        "--locked",
        "--registry-mirror",
    ] {
        assert!(build.contains(want), "{want:?} missing:\n{build}");
    }
    let bundle = render_man(&["man", "verify-bundle"]);
    for want in [
        "cks-iso-verify-bundle",
        "--certificate-identity",
        "--certificate-oidc-issuer",
        "--kubernetes-binary",
        "--signature",
    ] {
        assert!(bundle.contains(want), "{want:?} missing:\n{bundle}");
    }
    let image = render_man(&["man", "verify-image"]);
    for want in [
        "cks-iso-verify-image",
        "--certificate-identity",
        "--certificate-identity-regexp",
        "--certificate-oidc-issuer",
        "--signature-policy",
        "--trusted-root",
        "--enforce",
        "--offline",
        "--arch",
        "--json",
    ] {
        assert!(image.contains(want), "{want:?} missing:\n{image}");
    }
}

#[test]
fn man_for_an_unknown_subcommand_is_a_usage_error_listing_them() {
    let out = crate::support::cks_iso()
        .args(["man", "bulid"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"bulid\"") && err.contains("hint:") && err.contains("build"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
