//! The files that decide what a build trusts and who it is to a registry: the
//! configuration file, the trusted root, the signature policy and the auth files are held to the
//! cache directory's rule — refused when someone else owns them or others can write them — and
//! must be regular files of a bounded size (a FIFO hung the run, `/dev/zero` filled memory). And a
//! password in `--rekor-url` is used, never recorded: not in the cache index, `cache ls`, a carry
//! or the logs.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use cks_iso_testworld::registry::{FrontAuth, TokenFront, world};

use crate::support::hostile::*;
use crate::support::*;

/// `cks-iso pull` of pause into `dir` (nothing listens on its registry: every refusal here comes
/// before the network), with `extra`.
fn pull_in(dir: &Path, extra: &[&str]) -> Command {
    let mut cmd = cks_iso();
    cmd.args(["pull", "registry.k8s.io/pause:3.10", "--arch", "amd64"])
        .args([
            "--out",
            p(&dir.join("out")),
            "--cache-dir",
            p(&dir.join("cache")),
        ])
        .args(["--registry-mirror", "registry.k8s.io=http://127.0.0.1:1"])
        .args(extra)
        .env("HOME", dir);
    cmd
}

fn mode(path: &Path, m: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(m)).unwrap();
}

/// Runs `cmd` (bounded: a FIFO must not hang it) and expects exit `code` with `needles`.
fn refused(cmd: &mut Command, code: i32, needles: &[&str]) -> String {
    let out = output_within(cmd, 60).expect("it hung on the file");
    let all = combined(&out);
    assert_eq!(out.status.code(), Some(code), "{cmd:?}:\n{all}");
    for needle in needles {
        assert!(all.contains(needle), "{needle:?} missing in:\n{all}");
    }
    all
}

/// Makes a FIFO at `path`: a reader that opens it waits for a writer that never comes.
fn fifo_at(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// `file`, read by `pull` with `args` and named `what` in errors: refused (exit 2) when its group
/// or others can write it, and (as root, on nobody's file) when another user owns it.
fn assert_refused_unless_only_ours(d: &Path, file: &Path, args: &[&str], what: &str) {
    let named = format!("{what} {}", file.display());
    for (m, who) in [(0o664, "group-writable"), (0o646, "world-writable")] {
        mode(file, m);
        let shown = format!("others can write to it (mode {m:04o}, {who})");
        refused(
            &mut pull_in(d, args),
            2,
            &[&named, &shown, "hint:", "chmod go-w"],
        );
    }
    mode(file, 0o644);
    if root_or_skip("a file owned by another user") {
        std::os::unix::fs::chown(file, Some(65534), Some(65534)).unwrap();
        refused(
            &mut pull_in(d, args),
            2,
            &[&named, "owned by uid 65534", "hint:"],
        );
        std::os::unix::fs::chown(file, Some(0), Some(0)).unwrap();
    }
}

/// `doctor` fails its configuration check for a configuration others can write.
fn assert_doctor_fails_a_writable_configuration(d: &Path, config: &Path) {
    let mut doctor = cks_iso();
    doctor.args([
        "doctor",
        "--config",
        p(config),
        "--cache-dir",
        p(&d.join("cache")),
    ]);
    mode(config, 0o666);
    refused(
        &mut doctor,
        1,
        &["FAIL", "others can write to it", "chmod go-w"],
    );
    mode(config, 0o644);
}

/// The configuration, trusted root and policy: each refused, naming it, when others can write
/// it and when another user owns it (as root, on nobody's file); `doctor` fails its
/// configuration check the same way.
#[test]
fn configuration_trust_root_and_policy_files_others_could_write_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let config = d.join("config.yaml");
    fs::write(&config, "jobs: 2\n").unwrap();
    let root = d.join("trusted_root.json");
    // Refused before it is parsed: what it holds does not matter.
    fs::write(&root, "{}").unwrap();
    let policy = d.join("policy.yaml");
    fs::write(&policy, "rules: []\n").unwrap();
    let configured = ["--config", p(&config)];
    assert_refused_unless_only_ours(
        d,
        &config,
        &configured,
        "cannot read the configuration file",
    );
    let trusted = ["--signatures", "verify", "--trusted-root", p(&root)];
    assert_refused_unless_only_ours(d, &root, &trusted, "cannot read the trusted root");
    let policed = ["--signatures", "verify", "--signature-policy", p(&policy)];
    assert_refused_unless_only_ours(d, &policy, &policed, "cannot read the signature policy");
    assert_doctor_fails_a_writable_configuration(d, &config);
}

/// The configuration, trusted root and policy: each refused, naming it, when a FIFO (which hung
/// the run), `/dev/zero` (which filled memory) or an oversized file stands in its place.
#[test]
fn configuration_trust_root_and_policy_that_are_not_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("fifo");
    fifo_at(&fifo);
    let big = d.join("big.yaml");
    fs::write(&big, format!("# {}\n", "x".repeat(5 << 20))).unwrap();
    let zero = PathBuf::from("/dev/zero");
    for flag in ["--config", "--trusted-root", "--signature-policy"] {
        for (file, said) in [
            (&fifo, "a FIFO"),
            (&zero, "a character device"),
            (&big, "larger than"),
        ] {
            let args = ["--signatures", "verify", flag, p(file)];
            let all = refused(&mut pull_in(d, &args), 2, &[p(file), said, "hint:"]);
            assert!(!all.contains("panicked"), "{all}");
        }
    }
}

/// `--ca-file` decides whom the client trusts, so it is held to the same rule: refused, naming
/// it, when others can write it, and when a FIFO or `/dev/zero` stands in its place (which hung
/// or filled memory before); a readable PEM of our own still works.
#[test]
fn ca_files_others_could_write_or_that_are_not_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = d.join("ca.pem");
    // Refused before it is parsed: what it holds does not matter.
    fs::write(&ca, "not yet PEM\n").unwrap();
    let named = format!("cannot use the CA file {}", ca.display());
    for (m, who) in [(0o664, "group-writable"), (0o646, "world-writable")] {
        mode(&ca, m);
        let shown = format!("others can write to it (mode {m:04o}, {who})");
        let all = refused(
            &mut pull_in(d, &["--ca-file", p(&ca)]),
            1,
            &[&named, &shown, "hint:", "chmod go-w"],
        );
        assert!(
            !all.contains("127.0.0.1:1"),
            "it went on to the network:\n{all}"
        );
    }
    mode(&ca, 0o644);
    // Its own: it is read, and what it holds is judged.
    refused(
        &mut pull_in(d, &["--ca-file", p(&ca)]),
        1,
        &[&named, "no PEM certificate", "hint:"],
    );
    let fifo = d.join("fifo");
    fifo_at(&fifo);
    for (file, said) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a character device"),
    ] {
        refused(
            &mut pull_in(d, &["--ca-file", p(file)]),
            1,
            &[p(file), said, "hint:", "regular file"],
        );
    }
}

/// Auth files, named with `--authfile` or found where Docker keeps them: refused when others
/// can write them or a FIFO stands in their place, before any credential is sent.
#[test]
fn auth_files_others_could_write_or_that_are_not_files_are_refused() {
    let world = world();
    let front = TokenFront::start(&world.registry.host(), FrontAuth::Anonymous);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docker = d.join("docker");
    fs::create_dir_all(&docker).unwrap();
    let authfile = docker.join("config.json");
    fs::write(&authfile, r#"{"auths":{}}"#).unwrap();
    let pause = world.corpus.get("registry.k8s.io/pause:3.10").reference();
    let pull = |explicit: bool| {
        let mut cmd = cks_iso();
        cmd.args(["pull", &pause, "--arch", "amd64"])
            .args(world.mirror_args(&front.url()))
            .args([
                "--out",
                p(&d.join("out")),
                "--cache-dir",
                p(&d.join("cache")),
            ])
            .env("HOME", d)
            .env("DOCKER_CONFIG", &docker);
        if explicit {
            cmd.args(["--authfile", p(&authfile)]);
        }
        cmd
    };
    mode(&authfile, 0o664);
    let shown = "others can write to it (mode 0664, group-writable)";
    let named = format!("cannot read --authfile {}", authfile.display());
    // Like a missing --authfile: the image that needed it fails (exit 1), naming the file.
    refused(&mut pull(true), 1, &[&named, shown, "chmod go-w"]);
    let named = format!("cannot read the auth file {}", authfile.display());
    refused(&mut pull(false), 1, &[&named, shown, "chmod go-w"]);
    mode(&authfile, 0o600);
    let _ = fs::remove_dir_all(d.join("out"));
    run(&mut pull(true));

    fs::remove_file(&authfile).unwrap();
    fifo_at(&authfile);
    for explicit in [true, false] {
        refused(&mut pull(explicit), 1, &[p(&authfile), "a FIFO", "hint:"]);
    }
}

/// A password in `--rekor-url` goes with the Rekor requests, and nowhere it is recorded or
/// printed: the cache index, `cache ls`, a carry written by `cache export`, the logs at `-vv`.
#[test]
fn a_password_in_the_rekor_url_is_used_but_never_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    const SECRET: &str = "rekor-s3cret-horse";
    let rekor = world.rekor().url();
    let with_password = rekor.replacen("http://", &format!("http://cks:{SECRET}@"), 1);
    let (out, cache, lock) = (d.join("out"), d.join("cache"), d.join("run.lock"));
    let mut args = world_args(&world, world.dashboard_url());
    args.extend([
        "--output",
        p(&out),
        "--cache-dir",
        p(&cache),
        "--lock-file",
        p(&lock),
    ]);
    args.extend(["--rekor-url", &with_password, "-vv"]);
    let built = run(&mut build(&config, d, &args));
    let logs = combined(&built);
    assert!(
        !logs.contains(SECRET),
        "the password is in the logs:\n{logs}"
    );
    let mut ls = cks_iso();
    ls.args(["cache", "ls", "--cache-dir", p(&cache)]);
    let listed = combined(&run(&mut ls));
    assert!(
        !listed.contains(SECRET),
        "`cache ls` shows the password:\n{listed}"
    );
    assert!(
        listed.contains(&format!("rekor:{rekor}:sha256:")),
        "{listed}"
    );
    let carry = d.join("carry");
    let mut export = cks_iso();
    export.args(["cache", "export", "--cache-dir", p(&cache)]);
    export.args(["--locked", p(&lock), "-o", p(&carry)]);
    run(&mut export);
    for root in [&cache, &carry] {
        for file in files_under(root) {
            let bytes = fs::read(root.join(&file)).unwrap();
            let found = bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
            assert!(!found, "{} records the password", root.join(file).display());
        }
    }
}
