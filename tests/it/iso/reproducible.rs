//! The same tree and epoch give a byte-identical ISO, whether the epoch comes from the flag or
//! from `SOURCE_DATE_EPOCH`, and whatever the host's mtimes, owners and modes say.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use crate::support::*;

#[test]
fn same_tree_and_epoch_give_identical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    cks_tree(&src);
    let (a, b, c) = (
        dir.path().join("a.iso"),
        dir.path().join("b.iso"),
        dir.path().join("c.iso"),
    );
    build_iso(&src, &a);
    // Touch every file and loosen modes: none of it may reach the image.
    run(Command::new("touch")
        .arg("-d")
        .arg("2001-02-03")
        .arg(src.join("versions.txt")));
    fs::set_permissions(src.join("network.yaml"), fs::Permissions::from_mode(0o600)).unwrap();
    build_iso(&src, &b);
    assert!(same_bytes(&a, &b), "two builds with the same epoch differ");
    run(cks_iso()
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args(["iso", "-o", p(&c), p(&src)]));
    assert!(
        same_bytes(&a, &c),
        "SOURCE_DATE_EPOCH and --source-date-epoch must agree"
    );
}

#[test]
fn another_epoch_dates_the_image_differently() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    cks_tree(&src);
    let (a, b) = (dir.path().join("a.iso"), dir.path().join("b.iso"));
    build_iso(&src, &a);
    run(cks_iso().args([
        "iso",
        "--source-date-epoch",
        "1800000000",
        "-o",
        p(&b),
        p(&src),
    ]));
    assert!(!same_bytes(&a, &b));
    let (out, _) = tool("isoinfo", ["-R", "-l", "-i", p(&b)]);
    assert!(
        out.contains("Jan 15 2027"),
        "entries dated by the epoch:\n{out}"
    );
}

fn utc_now() -> String {
    let out = run(Command::new("date").args(["-u", "+%Y%m%d%H%M%S"])).stdout;
    String::from_utf8_lossy(&out).trim().to_owned()
}

#[test]
fn without_an_epoch_entries_are_dated_at_the_start_of_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    cks_tree(&src);
    let iso = dir.path().join("now.iso");
    run(Command::new("touch")
        .arg("-d")
        .arg("1999-12-31")
        .arg(src.join("versions.txt")));
    let before = utc_now();
    run(cks_iso().args(["iso", "-o", p(&iso), p(&src)]));
    let after = utc_now();
    let (out, _) = tool(
        "xorriso",
        ["-indev", p(&iso), "-pvd_info", "-lsdl", "/versions.txt"],
    );
    let created = out
        .lines()
        .find_map(|l| l.strip_prefix("Creation Time: "))
        .unwrap_or_else(|| panic!("no creation time in\n{out}"));
    let created = &created[..14];
    assert!(
        before.as_str() <= created && created <= after.as_str(),
        "{before} <= {created} <= {after}"
    );
    assert!(!out.contains("1999"), "the host mtime leaked:\n{out}");
}
