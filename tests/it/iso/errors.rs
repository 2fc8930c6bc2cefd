//! Bad input gets a clear error naming the culprit, the right exit code, and leaves nothing behind:
//! no ISO, no temporary file — also when the run is interrupted.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::*;

/// Runs `cmd`, expecting exit `code` and an error that mentions every word in `names`.
fn fails(cmd: &mut Command, code: i32, names: &[&str]) -> String {
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(err.starts_with("error: "), "{err}");
    for name in names {
        assert!(err.contains(name), "{name:?} not named in:\n{err}");
    }
    assert!(out.stdout.is_empty(), "no data on stdout after a failure");
    err
}

fn assert_empty(dir: &Path) {
    assert_eq!(
        names(dir),
        Vec::<String>::new(),
        "left behind in {}",
        dir.display()
    );
}

#[test]
fn missing_source_dir_is_named() {
    let out = tempfile::tempdir().unwrap();
    let missing = out.path().join("no-such-staging");
    let iso = out.path().join("a.iso");
    let err = fails(
        cks_iso().args(["iso", "-o", p(&iso), p(&missing)]),
        1,
        &["no-such-staging"],
    );
    assert!(err.contains("hint:"), "{err}");
    assert_empty(out.path());
}

#[test]
fn source_that_is_a_file_is_named() {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("versions.txt");
    fs::write(&file, "x").unwrap();
    fails(
        cks_iso().args(["iso", "-o", p(&out.path().join("a.iso")), p(&file)]),
        1,
        &["versions.txt", "not a directory"],
    );
    assert_eq!(names(out.path()), ["versions.txt"]);
}

#[test]
fn unreadable_file_is_named_and_nothing_is_written() {
    let dir = open_tempdir();
    let src = dir.path().join("src");
    cks_tree(&src);
    fs::set_permissions(&src, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(src.join("names"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(src.join("k8s/kubelet"), fs::Permissions::from_mode(0o000)).unwrap();
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = cks_iso();
    cmd.args(["iso", "-o", p(&out.join("a.iso")), p(&src)]);
    fails(
        &mut as_nobody(cmd),
        1,
        &["k8s/kubelet", "Permission denied"],
    );
    assert_empty(&out);
}

#[test]
fn missing_output_dir_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    cks_tree(&src);
    let iso = dir.path().join("no-such-out/a.iso");
    fails(
        cks_iso().args(["iso", "-o", p(&iso), p(&src)]),
        1,
        &["no-such-out", "output directory"],
    );
}

#[test]
fn read_only_output_dir_is_named() {
    let dir = open_tempdir();
    let src = dir.path().join("src");
    cks_tree(&src);
    fs::set_permissions(&src, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(src.join("names"), fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.path().join("readonly");
    fs::create_dir(&out).unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o555)).unwrap();
    let mut cmd = cks_iso();
    cmd.args(["iso", "-o", p(&out.join("a.iso")), p(&src)]);
    fails(&mut as_nobody(cmd), 1, &["readonly", "Permission denied"]);
    assert_empty(&out);
}

#[test]
fn invalid_volume_id_is_a_usage_error_naming_the_id() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    cks_tree(&src);
    for bad in ["cdrom", "CD-ROM", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456"] {
        let err = fails(
            cks_iso().args([
                "iso",
                "--volume-id",
                bad,
                "-o",
                p(&dir.path().join("a.iso")),
                p(&src),
            ]),
            2,
            &[bad, "volume ID"],
        );
        assert!(
            err.contains("hint: CloudStack nodes look for the label \"CDROM\""),
            "{err}"
        );
    }
    assert_eq!(names(dir.path()), ["src"]);
}

#[test]
fn malformed_source_date_epoch_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    cks_tree(&src);
    fails(
        cks_iso().env("SOURCE_DATE_EPOCH", "yesterday").args([
            "iso",
            "-o",
            p(&dir.path().join("a.iso")),
            p(&src),
        ]),
        2,
        &["SOURCE_DATE_EPOCH", "yesterday"],
    );
}

#[test]
fn full_file_system_is_named_and_leaves_nothing() {
    require("unshare");
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    cks_tree(&src);
    fs::write(src.join("docker/big.tar"), noise(9, 3 << 20)).unwrap();
    let small = dir.path().join("small");
    fs::create_dir(&small).unwrap();
    // A 2 MiB tmpfs in a private mount namespace: no root needed where user namespaces work.
    let script = format!(
        "mount -t tmpfs -o size=2m cks-iso-test '{small}' && \
         '{bin}' iso --source-date-epoch 1 -o '{small}/setup.iso' '{src}'; rc=$?; \
         echo \"left: $(ls -A '{small}')\"; exit $rc",
        small = p(&small),
        bin = env!("CARGO_BIN_EXE_cks-iso"),
        src = p(&src),
    );
    let out = crate::support::no_internet(&mut Command::new("unshare"))
        .args(["-r", "-m", "sh", "-c", &script])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no space left") && err.contains("setup.iso"),
        "{err}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("left: \n"),
        "{:?}",
        out
    );
}

/// Starts a build big enough to be interrupted, waits for its temporary file, and sends `signal`.
fn interrupted_by(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    cks_tree(&src);
    // Sparse, so creating it is instant; writing 6 GiB into the ISO takes seconds.
    let f = fs::File::create(src.join("docker/huge.tar")).unwrap();
    f.set_len(6 << 30).unwrap();
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    let mut child = cks_iso()
        .args(["iso", "-o", p(&out.join("setup.iso")), p(&src)])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while names(&out).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no temporary file appeared"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let partial = names(&out);
    assert!(
        partial[0].starts_with(".setup.iso.") && partial[0].ends_with(".partial"),
        "{partial:?}"
    );
    run(Command::new("kill").args([signal, &child.id().to_string()]));
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{signal} ends the run with 130");
    assert_empty(&out);
}

#[test]
fn ctrl_c_leaves_neither_iso_nor_temp_file() {
    interrupted_by("-INT");
}

#[test]
fn sigterm_leaves_neither_iso_nor_temp_file() {
    interrupted_by("-TERM");
}
