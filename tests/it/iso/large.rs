//! Files of 4 GiB and more: ISO level 3 stores them in several extents, and the writer streams
//! them, so memory stays flat however large the files are.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::process::Command;

use crate::support::*;

const BIG: u64 = 4 * 1024 * 1024 * 1024 + 3 * 1024 * 1024 + 17;

/// sha256 of a command's stdout, streamed through `sha256sum`.
fn sha256_of(shell: &str) -> String {
    let out = run(Command::new("bash").args(["-o", "pipefail", "-c", shell]));
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// Peak resident set size in KiB of the command, as GNU time reports it.
fn peak_rss_kib(cmd: &mut Command) -> u64 {
    require("/usr/bin/time");
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("rss");
    let mut timed = Command::new("/usr/bin/time");
    timed
        .args(["-f", "%M", "-o", p(&report)])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => timed.env(k, v),
            None => timed.env_remove(k),
        };
    }
    run(&mut timed);
    std::fs::read_to_string(&report)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn file_over_4_gib_round_trips_with_size_and_hash_in_flat_memory() {
    require("xorriso");
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("docker")).unwrap();
    // Sparse, so the test stays quick, but with data at the start, across 4 GiB and at the end.
    let big = src.join("docker/huge:v1.tar");
    let mut f = File::create(&big).unwrap();
    f.write_all(&noise(7, 1 << 20)).unwrap();
    for at in [(4u64 << 30) - 4096, BIG - 4096] {
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&noise(at, 4096)).unwrap();
    }
    f.set_len(BIG).unwrap();
    drop(f);
    std::fs::write(src.join("small.yaml"), b"a: b\n").unwrap();

    let iso = dir.path().join("big.iso");
    let rss = peak_rss_kib(
        cks_iso()
            .args(["iso", "--source-date-epoch", "1", "-o", p(&iso)])
            .arg(&src),
    );
    assert!(
        rss < 32 * 1024,
        "peak RSS {rss} KiB for a 4 GiB file: memory must stay flat"
    );

    // isoinfo shows only a file's first extent; xorriso and bsdtar join them all.
    let (listing, _) = tool(
        "xorriso",
        ["-indev", p(&iso), "-lsdl", "/docker/huge:v1.tar"],
    );
    assert!(
        listing.contains(&format!(" {BIG} ")),
        "xorriso: size {BIG} not listed:\n{listing}"
    );
    let (listing, _) = tool("bsdtar", ["-t", "-v", "-f", p(&iso), "docker/huge:v1.tar"]);
    assert!(
        listing.contains(&format!(" {BIG} ")),
        "bsdtar: size {BIG} not listed:\n{listing}"
    );
    let want = sha256_of(&format!("sha256sum < '{}'", p(&big)));
    let got = sha256_of(&format!(
        "bsdtar -x -O -f '{}' docker/huge:v1.tar | sha256sum",
        p(&iso)
    ));
    assert_eq!(got, want, "the 4 GiB file read back through bsdtar differs");
}
