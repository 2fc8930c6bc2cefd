//! Hostile ISOs given to the commands that read ISOs (docs/concepts/security.md, "ISOs read"): a 1
//! MB ISO whose sibling directory records share one directory (30^6 paths, no loop to an ancestor)
//! ends `verify`, `diff`, `upgrade-check`, `cache export --minus`, `cache import --from-iso` and
//! `build --from-iso` with exit 1 within 5 s and 200 MB; 3,000 file records on one 16 MiB extent
//! cost `upgrade-check` at most 3× the same ISO unpatched; and a delta exported `--minus` an ISO
//! whose archive members have the right names but wrong bytes carries those blobs, so the far
//! side still builds. The ISOs are patched record by record from ones cks-iso wrote
//! ([`crate::support::iso_craft`]); one world build gives the lock, cache and good ISO.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use crate::support::hostile::*;
use crate::support::iso_craft::{self, Record};
use crate::support::*;

/// The most a run given a hostile ISO may hold in memory.
const PEAK_RSS: u64 = 200 << 20;

/// What one world build left: its ISO, lock, cache and trusted root, the world stopped.
struct Built {
    dir: PathBuf,
    iso: PathBuf,
    lock: PathBuf,
    cache: PathBuf,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-iso");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let (world, config) = world_in(&dir);
        let (out, cache, lock) = (dir.join("out"), dir.join("cache"), dir.join("run.lock"));
        let mut args = world_args(&world, world.dashboard_url());
        args.extend(["--output", p(&out), "--cache-dir", p(&cache)]);
        args.extend(["--lock-file", p(&lock)]);
        ok(build(&config, &dir, &args).output().unwrap());
        drop(world);
        let iso = fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "iso"))
            .expect("the build wrote no ISO");
        Built {
            dir,
            iso,
            lock,
            cache,
        }
    })
}

/// `cks-iso cache ARGS… --cache-dir CACHE`.
fn cache_cmd(cache: &Path, args: &[&str]) -> Command {
    let mut cmd = cks_iso();
    cmd.arg("cache").args(args).args(["--cache-dir", p(cache)]);
    cmd
}

/// `build --locked LOCK --offline --from-iso ISO` into `out` with `cache`.
fn offline_build(b: &Built, cache: &Path, out: &Path, iso: &Path) -> Command {
    let tmp = b.dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = cks_iso();
    cmd.env("TMPDIR", &tmp)
        .args([
            "build",
            "--no-progress",
            "--locked",
            p(&b.lock),
            "--offline",
        ])
        .args(["--trusted-root", p(&b.dir.join("trusted_root.json"))])
        .args(["--output", p(out), "--cache-dir", p(cache)])
        .args(["--from-iso", p(iso)]);
    cmd
}

/// How many paths lie below `dir`, directories sharing records counted once per path (by
/// extent, memoised: the count itself must not take the time the reader must not take).
fn paths_below(iso: &[u8], dir: &Record, memo: &mut HashMap<u32, u64>) -> u64 {
    if let Some(&n) = memo.get(&dir.extent) {
        return n;
    }
    let n = iso_craft::children(iso, dir)
        .iter()
        .map(|c| 1 + if c.dir { paths_below(iso, c, memo) } else { 0 })
        .sum();
    memo.insert(dir.extent, n);
    n
}

/// The bomb: an ISO of 30 directories 6 deep whose sibling records all share one directory, a
/// 1 MB file holding more than 30^6 paths, written into `d`.
fn bomb_iso(d: &Path) -> PathBuf {
    let tree = d.join("tree");
    iso_craft::bomb_tree(&tree, 30, 6);
    let bomb = d.join("bomb.iso");
    build_iso(&tree, &bomb);
    let mut bytes = fs::read(&bomb).unwrap();
    assert_eq!(iso_craft::share_directories(&mut bytes), 29 * 6);
    fs::write(&bomb, &bytes).unwrap();
    let paths = paths_below(&bytes, &iso_craft::root(&bytes), &mut HashMap::new());
    eprintln!("the bomb ISO: {} bytes, {paths} paths", bytes.len());
    assert!(bytes.len() < 2 << 20, "{} bytes", bytes.len());
    assert!(paths > 30u64.pow(6), "{paths} paths");
    bomb
}

/// `cache export --locked LOCK --minus MINUS -o OUT` of the built cache's arguments.
fn export_minus<'a>(b: &'a Built, minus: &'a Path, out: &'a Path) -> [&'a str; 7] {
    [
        "export",
        "--locked",
        p(&b.lock),
        "--minus",
        p(minus),
        "-o",
        p(out),
    ]
}

/// `cache import DELTA --locked LOCK --from-iso ISO`'s arguments.
fn import_from_iso<'a>(b: &'a Built, delta: &'a Path, iso: &'a Path) -> [&'a str; 6] {
    [
        "import",
        p(delta),
        "--locked",
        p(&b.lock),
        "--from-iso",
        p(iso),
    ]
}

/// Each command that reads an ISO, given `bomb` where it takes an ISO: `verify`, `diff` and
/// `upgrade-check` against the good ISO, `cache export --minus` into `delta2`, `cache import
/// --from-iso` of `delta`, `build --from-iso` into `out`.
fn commands_on(
    b: &Built,
    d: &Path,
    bomb: &Path,
    delta: &Path,
    delta2: &Path,
    out: &Path,
) -> Vec<(&'static str, Command)> {
    let good = p(&b.iso);
    let mut runs: Vec<(&str, Command)> = Vec::new();
    let mut cmd = cks_iso();
    cmd.args(["verify", p(bomb)]);
    runs.push(("verify", cmd));
    let mut cmd = cks_iso();
    cmd.args(["diff", good, p(bomb)]);
    runs.push(("diff", cmd));
    let mut cmd = cks_iso();
    cmd.args(["upgrade-check", good, p(bomb)]);
    runs.push(("upgrade-check", cmd));
    let export = export_minus(b, bomb, delta2);
    runs.push(("cache export --minus", cache_cmd(&b.cache, &export)));
    let import = import_from_iso(b, delta, bomb);
    runs.push((
        "cache import --from-iso",
        cache_cmd(&d.join("far"), &import),
    ));
    let far2 = d.join("far2");
    runs.push(("build --from-iso", offline_build(b, &far2, out, bomb)));
    runs
}

/// `cmd` (named `what`) given `bomb` ends within 5 s and [`PEAK_RSS`] with exit 1, naming the ISO
/// and the shared directory, and saying not to use it.
fn assert_ends_within_5_s(what: &str, cmd: &mut Command, bomb: &Path) {
    let started = Instant::now();
    let (done, rss) = output_within_rss(cmd, 5).unwrap_or_else(|| panic!("{what} ran past 5 s"));
    let said = combined(&done);
    eprintln!(
        "{what} on the bomb: exit {:?} in {:.2} s, peak RSS {} MiB",
        done.status.code(),
        started.elapsed().as_secs_f64(),
        rss >> 20
    );
    assert_eq!(done.status.code(), Some(1), "{what}: {said}");
    assert!(rss < PEAK_RSS, "{what}: peak RSS {rss} bytes");
    assert!(
        said.contains(p(bomb)),
        "{what} does not name the ISO: {said}"
    );
    assert!(said.contains("is the directory"), "{what}: {said}");
    assert!(said.contains("hint: do not use this ISO"), "{what}: {said}");
}

#[test]
fn an_iso_whose_directories_share_records_ends_every_iso_command_within_5_s() {
    let b = built();
    let d = b.dir.join("bomb");
    fs::create_dir_all(&d).unwrap();
    let bomb = bomb_iso(&d);
    // A delta minus the good ISO, for `cache import --from-iso BOMB`.
    let delta = d.join("delta");
    ok(cache_cmd(&b.cache, &export_minus(b, &b.iso, &delta))
        .output()
        .unwrap());

    let (delta2, out) = (d.join("delta2"), d.join("out"));
    for (what, mut cmd) in commands_on(b, &d, &bomb, &delta, &delta2, &out) {
        assert_ends_within_5_s(what, &mut cmd, &bomb);
    }
    // The output directory is made before the ISOs are read; nothing is left in it.
    assert!(
        files_under(&out).is_empty(),
        "build --from-iso left {:?}",
        files_under(&out)
    );
    assert!(!delta2.exists(), "cache export left {}", delta2.display());
}

#[test]
fn files_sharing_one_extent_cost_upgrade_check_at_most_three_times_a_normal_iso() {
    let b = built();
    let d = b.dir.join("shared-extent");
    let tree = d.join("tree");
    fs::create_dir_all(&tree).unwrap();
    tool("bsdtar", ["-x", "-f", p(&b.iso), "-C", p(&tree)]);
    fs::write(tree.join("docker/zz-big.tar"), noise(7, 16 << 20)).unwrap();
    for i in 0..3000 {
        fs::write(tree.join(format!("docker/zz-{i:04}.tar")), b"x").unwrap();
    }
    let normal = d.join("normal.iso");
    build_iso(&tree, &normal);
    let mut bytes = fs::read(&normal).unwrap();
    let docker = iso_craft::lookup(&bytes, "docker");
    let records = iso_craft::children(&bytes, &docker);
    let big = records.iter().find(|r| r.name == "zz-big.tar").unwrap();
    assert_eq!(big.len, 16 << 20);
    let small: Vec<&Record> = records.iter().filter(|r| r.len == 1).collect();
    assert_eq!(small.len(), 3000);
    for r in small {
        iso_craft::point(&mut bytes, r, big.extent, big.len);
    }
    let shared = d.join("shared.iso");
    fs::write(&shared, &bytes).unwrap();

    let time = |iso: &Path| {
        let started = Instant::now();
        let mut cmd = cks_iso();
        cmd.args(["upgrade-check", p(&b.iso), p(iso)]);
        let (done, rss) = output_within_rss(&mut cmd, 300).expect("upgrade-check ran past 300 s");
        (started.elapsed().as_secs_f64(), done, rss)
    };
    let (normal_s, _, _) = time(&normal);
    let (shared_s, done, rss) = time(&shared);
    let said = combined(&done);
    eprintln!(
        "upgrade-check: {normal_s:.2} s on the normal ISO, {shared_s:.2} s ({:.2}×, peak RSS {} \
         MiB) on 3,000 records sharing 16 MiB",
        shared_s / normal_s,
        rss >> 20
    );
    assert!(
        shared_s <= 3.0 * normal_s,
        "{shared_s:.2} s vs {normal_s:.2} s"
    );
    assert_eq!(done.status.code(), Some(1), "{said}");
    assert!(said.contains(p(&shared)), "{said}");
    assert!(said.contains("3001 files"), "{said}");
    assert!(said.contains("share the 16.00 MiB"), "{said}");
}

/// Every `blobs/sha256/<hex>` tar member of the ISO's bytes: the header's offset, the hex and the
/// member's size. Archives start on a block and members on 512 bytes, so headers are found
/// without reading the archives as archives.
fn members(iso: &[u8]) -> Vec<(usize, String, u64)> {
    (0..iso.len().saturating_sub(512))
        .step_by(512)
        .filter(|&at| {
            iso[at..].starts_with(b"blobs/sha256/") && &iso[at + 257..at + 262] == b"ustar"
        })
        .map(|at| {
            let hex = String::from_utf8_lossy(&iso[at + 13..at + 77]).into_owned();
            let size = String::from_utf8_lossy(&iso[at + 124..at + 136]);
            let size = u64::from_str_radix(size.trim_matches(|c| c == '\0' || c == ' '), 8);
            (at, hex, size.unwrap())
        })
        .collect()
}

/// The delta's `assumes` (what it leaves out) and `carries`, as digests.
fn delta_lists(delta: &Path) -> (Vec<String>, Vec<String>) {
    let doc: serde_json::Value =
        serde_json::from_slice(&fs::read(delta.join("delta.json")).unwrap()).unwrap();
    let list = |key: &str| {
        doc[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["digest"].as_str().unwrap().to_owned())
            .collect()
    };
    (list("assumes"), list("carries"))
}

#[test]
fn a_delta_minus_an_iso_with_right_names_but_wrong_bytes_carries_those_blobs() {
    let b = built();
    let d = b.dir.join("wrong-bytes");
    fs::create_dir_all(&d).unwrap();
    let mut bytes = fs::read(&b.iso).unwrap();
    let found = members(&bytes);
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, hex, _) in &found {
        *seen.entry(hex).or_default() += 1;
    }
    // The largest blob only one archive holds: no right copy elsewhere in the ISO.
    let (at, hex, size) = found
        .iter()
        .filter(|(_, hex, size)| seen[hex.as_str()] == 1 && *size > 0)
        .max_by_key(|(_, _, size)| *size)
        .cloned()
        .expect("no blob member in the ISO");
    let digest = format!("sha256:{hex}");
    eprintln!("altering {digest} ({size} bytes) in place");
    bytes[at + 512] ^= 0xff;
    let wrong = d.join("wrong.iso");
    fs::write(&wrong, &bytes).unwrap();

    let export = |minus: &Path, out: &Path| {
        ok(cache_cmd(&b.cache, &export_minus(b, minus, out))
            .output()
            .unwrap())
    };
    // Minus the good ISO, the blob is left out: the far side holds it.
    let good_delta = d.join("good-delta");
    export(&b.iso, &good_delta);
    let (assumes, carries) = delta_lists(&good_delta);
    assert!(assumes.contains(&digest) && !carries.contains(&digest));
    // Minus the altered one, it is carried, and said.
    let delta = d.join("delta");
    let out = export(&wrong, &delta);
    let said = combined(&out);
    let (assumes, carries) = delta_lists(&delta);
    assert!(!assumes.contains(&digest), "the delta assumes {digest}");
    assert!(
        carries.contains(&digest),
        "the delta does not carry {digest}"
    );
    assert!(
        said.contains(&format!("under the name of {digest}: not counted as held")),
        "{said}"
    );
    assert!(said.contains(p(&wrong)), "{said}");

    // The far side, with the delta and the altered ISO alone, builds the same ISO offline.
    let far = d.join("far");
    let import = import_from_iso(b, &delta, &wrong);
    ok(cache_cmd(&far, &import).output().unwrap());
    let rebuilt = d.join("rebuilt");
    ok(offline_build(b, &far, &rebuilt, &wrong).output().unwrap());
    let iso = rebuilt.join(b.iso.file_name().unwrap());
    assert!(same_bytes(&iso, &b.iso), "the rebuilt ISO differs");
}
