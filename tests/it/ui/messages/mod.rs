//! STYLE.md in practice: errors the user can act on end with a `hint:`, and the same situation
//! reads the same in every subcommand (`build`, `pull`, `iso`, `resolve`, `doctor`).

use crate::support::*;

mod first_hour;

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
            "cannot write to the output directory",
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

/// The `error:` line of `err` and what follows it (info lines may come before).
fn report(err: &str) -> Vec<&str> {
    let lines: Vec<&str> = err.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line:\n{err}"));
    lines[start..].to_vec()
}

/// The `hint:` line of a report.
fn hint<'a>(report: &[&'a str]) -> &'a str {
    let last = report.last().unwrap();
    assert!(
        last.starts_with("hint: "),
        "no hint:\n{}",
        report.join("\n")
    );
    last
}

/// `build` arguments that get past the version checks without the network (it stops earlier).
const BUILD: [&str; 6] = [
    "build",
    "--kubernetes",
    "1.33.1",
    "--network",
    "https://x.invalid/network.yaml",
    "--dashboard",
];

fn build_args<'a>(rest: &[&'a str]) -> Vec<&'a str> {
    let mut args: Vec<&str> = BUILD.to_vec();
    args.push("https://x.invalid/dashboard.yaml");
    args.extend_from_slice(rest);
    args
}

/// An output directory that cannot be created reads the same in `build`, `pull` and `iso`: the
/// directory as given, the system's reason once, and a hint naming each one's flag.
#[test]
fn unwritable_output_dir_reads_the_same_in_build_pull_and_iso() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("a"), "a").unwrap();
    let out = file.join("out");
    let iso = out.join("x.iso");
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            build_args(&["--output", p(&out), "--cache-dir", p(&cache)]),
            "--output",
            p(&out),
        ),
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
            "--out",
            p(&out),
        ),
        (vec!["iso", "-o", p(&iso), p(&src)], "-o", p(&out)),
    ];
    for (args, flag, named) in cases {
        let err = fails(&args, &[], 1);
        let report = report(&err);
        assert_eq!(
            report[0],
            format!("error: cannot write to the output directory {named}"),
            "{err}"
        );
        assert!(
            report[1].starts_with("  caused by: ") && report.len() == 3,
            "the cause once:\n{err}"
        );
        assert!(
            hint(&report).starts_with(&format!("hint: pass {flag} a ")),
            "{err}"
        );
    }
}

/// A malformed `SOURCE_DATE_EPOCH` gives one error and one hint, word for word, in `build`,
/// `pull` and `iso`.
#[test]
fn malformed_source_date_epoch_reads_the_same_in_build_pull_and_iso() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("a"), "a").unwrap();
    let out = dir.path().join("out");
    let iso = dir.path().join("x.iso");
    let runs: Vec<Vec<&str>> = vec![
        build_args(&["--output", p(&out), "--cache-dir", p(&cache)]),
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
        vec!["iso", "-o", p(&iso), p(&src)],
    ];
    for args in runs {
        let err = fails(&args, &[("SOURCE_DATE_EPOCH", "1.5e9")], 2);
        assert_eq!(
            report(&err),
            [
                "error: SOURCE_DATE_EPOCH=\"1.5e9\" is not a whole number of seconds",
                "hint: set SOURCE_DATE_EPOCH to seconds since 1970-01-01 UTC, e.g. $(git log -1 \
                 --format=%ct), or unset it",
            ],
            "{args:?}"
        );
    }
}

/// An architecture cks-iso does not build for gives one error and one hint, word for word, in
/// `build`, `pull`, `resolve` and `doctor`.
#[test]
fn unknown_architecture_reads_the_same_in_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let out = dir.path().join("out");
    let runs: Vec<Vec<&str>> = vec![
        build_args(&[
            "--arch",
            "ppc64le",
            "--output",
            p(&out),
            "--cache-dir",
            p(&cache),
        ]),
        vec![
            "pull",
            "pause",
            "--arch",
            "ppc64le",
            "--out",
            p(&out),
            "--cache-dir",
            p(&cache),
        ],
        vec!["resolve", "--kubernetes", "1.33.1", "--arch", "ppc64le"],
        vec!["doctor", "--arch", "ppc64le"],
    ];
    for args in runs {
        let err = fails(&args, &[], 2);
        assert_eq!(
            report(&err),
            [
                "error: --arch \"ppc64le\" is not an architecture cks-iso builds for",
                "hint: use amd64 (x86_64) or arm64 (aarch64)",
            ],
            "{args:?}"
        );
    }
}

/// A file an `--offline` build lacks: the URL in full, and the hint that says how to fill the
/// cache. (`pull` has no `--offline`.)
#[test]
fn offline_miss_names_the_url_and_how_to_fill_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let (out, cache) = (dir.path().join("out"), dir.path().join("cache"));
    let args = build_args(&[
        "--arch",
        "amd64",
        "--cni",
        "1.6.2",
        "--crictl",
        "1.33.0",
        "--etcd",
        "3.5.21",
        "--autoscaler-version",
        "1.33.0",
        "--ccm-version",
        "v1.1.0",
        "--csi-version",
        "v0.6.0",
        "--offline",
        "--output",
        p(&out),
        "--cache-dir",
        p(&cache),
    ]);
    let err = fails(&args, &[], 1);
    let report = report(&err);
    assert!(
        report.iter().any(|l| l.contains(
            "cannot fetch https://github.com/cloudstack/cloudstack-csi-driver/releases/download/\
             v0.6.0/manifest.yaml with --offline: it is not in the cache"
        )),
        "{err}"
    );
    assert_eq!(
        hint(&report),
        "hint: run the same build once with network and this --cache-dir, or bring the cache \
         over with `cks-iso cache export --locked LOCK` and `cks-iso cache import --locked LOCK` \
         (a carried download comes in only with the lock that names it)"
    );
}

/// A blob the registry always sends corrupt reads the same in `build` and `pull`: the image in
/// full, the blob, both digests, and the same hint naming --registry-mirror.
#[test]
fn digest_mismatch_reads_the_same_in_build_and_pull() {
    use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
    use cks_iso_testworld::world::{Options, World};

    const PAUSE: &str = "registry.k8s.io/pause:3.10";
    let world = World::start(Options::default());
    let proxy = FaultProxy::start(&world.registry_url());
    let dir = tempfile::tempdir().unwrap();
    let env = world_env(&world, &proxy.url(), dir.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let repository = world.image(PAUSE).repository.clone();
    proxy.add(
        Rule::path_contains(&format!("{repository}/blobs/")).fault(Fault::FlipByte { offset: 5 }),
    );
    let d = |name: &str| dir.path().join(name);
    let (out_build, cache_build, out_pull, cache_pull) = (
        d("out-build"),
        d("cache-build"),
        d("out-pull"),
        d("cache-pull"),
    );
    let runs: Vec<Vec<&str>> = vec![
        world_build(
            &world,
            &[
                "--retries",
                "2",
                "--output",
                p(&out_build),
                "--cache-dir",
                p(&cache_build),
            ],
        ),
        vec![
            "pull",
            PAUSE,
            "--arch",
            "amd64",
            "--retries",
            "2",
            "--out",
            p(&out_pull),
            "--cache-dir",
            p(&cache_pull),
        ],
    ];
    for args in runs {
        let err = fails(&args, &env, 1);
        let line = err
            .lines()
            .find(|l| l.contains(&format!("{PAUSE}: ")) && l.contains(" does not match: "))
            .unwrap_or_else(|| panic!("no line names {PAUSE} and the mismatch:\n{err}"));
        let digests: Vec<&str> = line.matches("sha256:").collect();
        assert!(
            line.contains(" does not match: expected sha256:")
                && line.contains(", got sha256:")
                && digests.len() >= 2,
            "{line}"
        );
        assert!(
            err.lines().any(|l| l
                == "hint: the registry or a proxy on the way serves corrupt bytes; try again \
                    later, or pull through another registry mirror (--registry-mirror \
                    REGISTRY=URL)"),
            "{args:?}:\n{err}"
        );
    }
}

/// A registry that cannot be reached gives the same hint in `build`, `pull` and `doctor`: the
/// network, the proxy variables, and the flags that point elsewhere.
#[test]
fn unreachable_registry_gives_the_same_hint_in_build_pull_and_doctor() {
    use cks_iso_testworld::world::{Options, World};

    const HINT: &str = "hint: check the network and HTTPS_PROXY/NO_PROXY, or point --mirror \
                        (files) or --registry-mirror (images) at a reachable copy";
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    // Port 9 (discard) on the loopback: nothing listens, the connection is refused at once.
    let dead = "http://127.0.0.1:9";
    let env = world_env(&world, dead, dir.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let d = |name: &str| dir.path().join(name);
    let (out, cache) = (d("out"), d("cache"));
    let build = world_build(
        &world,
        &[
            "--retries",
            "2",
            "--output",
            p(&out),
            "--cache-dir",
            p(&cache),
        ],
    );
    let err = fails(&build, &env, 1);
    assert!(
        err.contains("cannot fetch the registry's API root") && err.contains(dead),
        "{err}"
    );
    assert_eq!(hint(&report(&err)), HINT, "{err}");

    let pull = [
        "pull",
        "registry.k8s.io/pause:3.10",
        "--arch",
        "amd64",
        "--retries",
        "1",
        "--out",
        p(&out),
        "--cache-dir",
        p(&cache),
    ];
    let err = fails(&pull, &env, 1);
    let first = report(&err);
    assert!(
        first[0]
            .starts_with("error: registry.k8s.io/pause:3.10: cannot fetch the registry's API root"),
        "{err}"
    );
    assert!(err.lines().any(|l| l == HINT), "{err}");

    // doctor reports on stdout, one line per check, with the hint under a failed one.
    let out = cks_iso()
        .args(["doctor", "--retries", "1", "--cache-dir", p(&cache)])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    let fail = lines
        .iter()
        .position(|l| l.starts_with("FAIL  registry ") && l.contains(dead))
        .unwrap_or_else(|| panic!("no failed registry check names {dead}:\n{stdout}"));
    assert_eq!(lines[fail + 1], format!("      {HINT}"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        report(&stderr)
            .last()
            .unwrap()
            .starts_with("hint: each FAIL line above"),
        "{stderr}"
    );
}

/// Writes a configuration for `world` whose registry is reached at `url` (a proxy, a token front,
/// a dead port) into `dir`, with the world's trusted root beside it; returns the environment a
/// run in `dir` needs.
fn world_env(
    world: &cks_iso_testworld::world::World,
    url: &str,
    dir: &std::path::Path,
) -> Vec<(String, String)> {
    let yaml = world
        .config_yaml()
        .replace(&world.registry_url(), url)
        .replace(&world.registry_host(), url.trim_start_matches("http://"));
    let config = dir.join("cks-iso.yaml");
    std::fs::write(&config, yaml).unwrap();
    std::fs::copy(world.trusted_root_path(), dir.join("trusted_root.json")).unwrap();
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    vec![
        ("CKS_ISO_CONFIG".into(), p(&config).into()),
        ("TMPDIR".into(), p(&tmp).into()),
        ("HOME".into(), p(dir).into()),
    ]
}

/// `build` of the world for amd64 with `rest`.
fn world_build<'a>(world: &'a cks_iso_testworld::world::World, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "build",
        "--kubernetes",
        world.kubernetes(),
        "--network",
        world.network_url(),
        "--dashboard",
        world.dashboard_url(),
        "--arch",
        "amd64",
    ];
    args.extend_from_slice(rest);
    args
}

/// A registry that refuses anonymous pulls gives the same hint in `build` and `pull`: log in, or
/// pass --authfile.
#[test]
fn auth_failure_gives_the_same_hint_in_build_and_pull() {
    use cks_iso_testworld::registry::{FrontAuth, TokenFront};
    use cks_iso_testworld::world::{Options, World};

    const HINT: &str = "hint: log in with `docker login` or `podman login`, or pass --authfile \
                        FILE with credentials for this registry";
    let world = World::start(Options::default());
    let front = TokenFront::start(
        &world.registry_host(),
        FrontAuth::Password {
            user: "cks".into(),
            password: "right-horse".into(),
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let env = world_env(&world, &front.url(), dir.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let d = |name: &str| dir.path().join(name);
    let (out, cache) = (d("out"), d("cache"));
    // A refusal is not retried; the default retries absorb a slow machine's timeouts elsewhere.
    let common = ["--cache-dir", p(&cache)];
    let mut build = world_build(&world, &["--output", p(&out)]);
    build.extend_from_slice(&common);
    let mut pull = vec![
        "pull",
        "registry.k8s.io/pause:3.10",
        "--arch",
        "amd64",
        "--out",
        p(&out),
    ];
    pull.extend_from_slice(&common);
    for args in [build, pull] {
        let err = fails(&args, &env, 1);
        let line = err
            .lines()
            .find(|l| l.contains("refused access"))
            .unwrap_or_else(|| {
                panic!("{args:?}: no line says the registry refused access:\n{err}")
            });
        assert!(line.contains(&front.host()), "{line}");
        assert!(err.lines().any(|l| l == HINT), "{args:?}:\n{err}");
        // One refusing registry is one cause, said once, not once per image.
        assert_eq!(err.matches("refused access").count(), 1, "{args:?}:\n{err}");
    }
}
