//! STYLE.md in practice: errors the user can act on end with a `hint:`, in `pull` as in `build`.

mod support;

use support::*;

/// A failing run: its arguments, environment, exit code, and what its first line must name.
type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, i32, &'a str);

/// Runs cks-iso with `args` (and `env`), expecting `code`; returns stderr.
fn fails(args: &[&str], env: &[(&str, &str)], code: i32) -> String {
    let out = cks_iso()
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}:\n{err}");
    assert!(out.stdout.is_empty(), "{args:?} printed data on failure");
    err
}

#[test]
fn pull_errors_name_the_item_and_end_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let out = file.join("docker");
    let cases: Vec<Case> = vec![
        (
            vec![
                "pull",
                "pause",
                "--arch",
                "amd64",
                "--out",
                p(&out),
                "--cache-dir",
                p(&cache),
            ],
            vec![],
            1,
            "cannot create the output directory",
        ),
        (
            vec![
                "pull",
                "pause",
                "--arch",
                "amd64",
                "--out",
                p(dir.path()),
                "--cache-dir",
                p(&cache),
            ],
            vec![("SOURCE_DATE_EPOCH", "yesterday")],
            2,
            "SOURCE_DATE_EPOCH=\"yesterday\"",
        ),
        (
            vec!["pull", "pause", "--arch", "s390x", "--out", p(dir.path())],
            vec![],
            2,
            "\"s390x\"",
        ),
    ];
    for (args, env, code, names) in cases {
        let err = fails(&args, &env, code);
        let lines: Vec<&str> = err.lines().collect();
        assert!(
            lines[0].starts_with("error: ") && lines[0].contains(names),
            "{err}"
        );
        assert!(
            lines.last().unwrap().starts_with("hint: "),
            "no hint:\n{err}"
        );
    }
}
