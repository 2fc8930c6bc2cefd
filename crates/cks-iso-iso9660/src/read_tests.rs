//! The reader's refusals ([`crate::bounds`]) on ISOs this crate writes and then patches record
//! by record, as an attacker would ([`crate::craft`], which reads the records itself, not through
//! the reader under test).

use std::fs;
use std::path::{Path, PathBuf};

use crate::bounds::{self, Refusal};
use crate::craft as iso_craft;
use crate::read::{IsoReader, ReadError};
use crate::{IsoSpec, VolumeId, author};

/// Writes `tree` as an ISO beside it, patches it with `patch` and reads its entries.
fn craft(dir: &Path, patch: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let spec = IsoSpec {
        volume_id: VolumeId::default(),
        epoch: 1_700_000_000,
    };
    let iso = dir.join("out/x.iso");
    fs::create_dir_all(iso.parent().unwrap()).unwrap();
    author(&dir.join("tree"), &iso, &spec, &()).unwrap();
    let mut bytes = fs::read(&iso).unwrap();
    patch(&mut bytes);
    fs::write(&iso, &bytes).unwrap();
    iso
}

fn refusal(result: Result<Vec<crate::read::Entry>, ReadError>) -> Refusal {
    let err = result.expect_err("the ISO was read");
    assert!(
        err.reason
            .starts_with(&err.refused.as_ref().unwrap().to_string())
    );
    *err.refused.unwrap()
}

#[test]
fn a_directory_reached_twice_is_refused_naming_both_paths() {
    let dir = tempfile::tempdir().unwrap();
    iso_craft::bomb_tree(&dir.path().join("tree"), 3, 2);
    // Unpatched, every path is listed once.
    let iso = craft(dir.path(), |_| {});
    let listed = IsoReader::open(&iso).unwrap().entries().unwrap();
    assert_eq!(listed.len(), 1 + 3 + 3 + 1);
    let iso = craft(dir.path(), |b| {
        assert_eq!(iso_craft::share_directories(b), 4)
    });
    let err = IsoReader::open(&iso).unwrap().entries().unwrap_err();
    assert!(
        err.to_string().contains(&iso.display().to_string()),
        "{err}"
    );
    assert!(
        err.hint().starts_with("do not use this ISO"),
        "{}",
        err.hint()
    );
    match *err.refused.unwrap() {
        Refusal::SharedDirectory { path, first, .. } => {
            assert_eq!((path.as_str(), first.as_str()), ("d00/d01", "d00/d00"));
        }
        other => panic!("{other}"),
    }
}

#[test]
fn the_thirty_to_the_sixth_bomb_ends_at_once() {
    let dir = tempfile::tempdir().unwrap();
    iso_craft::bomb_tree(&dir.path().join("tree"), 30, 6);
    let iso = craft(dir.path(), |b| {
        iso_craft::share_directories(b);
    });
    let started = std::time::Instant::now();
    let refused = refusal(IsoReader::open(&iso).unwrap().entries());
    assert!(
        matches!(refused, Refusal::SharedDirectory { .. }),
        "{refused}"
    );
    let took = started.elapsed();
    assert!(took.as_secs() < 2, "{took:?}");
}

#[test]
fn more_entries_or_deeper_ones_than_the_caps_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("tree/a/b/c/d");
    fs::create_dir_all(&deep).unwrap();
    for i in 0..6 {
        fs::write(dir.path().join(format!("tree/f{i}")), b"f").unwrap();
    }
    let iso = craft(dir.path(), |_| {});
    let reader = IsoReader::open(&iso).unwrap();
    assert_eq!(reader.entries().unwrap().len(), 1 + 4 + 6);
    assert_eq!(reader.entries_within(10, 4).unwrap().len(), 11);
    match refusal(reader.entries_within(9, 4)) {
        Refusal::TooManyEntries { limit: 9, .. } => {}
        other => panic!("{other}"),
    }
    match refusal(reader.entries_within(100, 3)) {
        Refusal::TooDeep { path, depth: 4, .. } => assert_eq!(path, "a/b/c/d"),
        other => panic!("{other}"),
    }
}

/// A tree of one 1 MiB file and `small` one-byte files, the ISO with `shared` of them pointed at
/// the big file's extent.
fn shared_extent_iso(dir: &Path, small: usize, shared: usize) -> PathBuf {
    let tree = dir.join("tree");
    fs::create_dir_all(&tree).unwrap();
    fs::write(tree.join("big"), vec![7u8; 1 << 20]).unwrap();
    for i in 0..small {
        fs::write(tree.join(format!("s{i:03}")), b"s").unwrap();
    }
    craft(dir, |b| {
        let records = iso_craft::children(b, &iso_craft::root(b));
        let big = records.iter().find(|r| r.name == "big").unwrap().clone();
        for r in records.iter().filter(|r| r.len == 1).take(shared) {
            iso_craft::point(b, r, big.extent, big.len);
        }
    })
}

#[test]
fn files_naming_far_more_bytes_than_the_iso_are_refused_naming_the_shared_extent() {
    let dir = tempfile::tempdir().unwrap();
    let iso = shared_extent_iso(dir.path(), 100, 100);
    let size = fs::metadata(&iso).unwrap().len();
    match refusal(IsoReader::open(&iso).unwrap().entries()) {
        Refusal::SharedExtents {
            claimed,
            count,
            len,
            examples,
            ..
        } => {
            assert_eq!(claimed, 101 << 20);
            assert!(claimed > bounds::claim_limit(size));
            assert_eq!((count, len), (101, 1 << 20));
            assert!(examples.0 != examples.1, "{examples:?}");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn hard_links_within_the_bound_are_read_as_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let iso = shared_extent_iso(dir.path(), 3, 2);
    let reader = IsoReader::open(&iso).unwrap();
    let entries = reader.entries().unwrap();
    let big: Vec<&str> = entries
        .iter()
        .filter(|e| e.len == 1 << 20)
        .map(|e| e.path.as_str())
        .collect();
    assert_eq!(big.len(), 3, "{big:?}");
    for path in big {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut reader.open_file(path).unwrap(), &mut bytes).unwrap();
        assert!(
            bytes.len() == 1 << 20 && bytes.iter().all(|&b| b == 7),
            "{path}"
        );
    }
}

#[test]
fn files_overlapping_without_sharing_an_extent_are_refused_too() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir_all(&tree).unwrap();
    fs::write(tree.join("big"), vec![7u8; 1 << 20]).unwrap();
    for i in 0..100 {
        fs::write(tree.join(format!("s{i:03}")), b"s").unwrap();
    }
    // Each small file starts one block further into the big one and runs to its end.
    let iso = craft(dir.path(), |b| {
        let records = iso_craft::children(b, &iso_craft::root(b));
        let big = records.iter().find(|r| r.name == "big").unwrap().clone();
        for (i, r) in records.iter().filter(|r| r.len == 1).enumerate() {
            let i = i as u32 + 1;
            iso_craft::point(b, r, big.extent + i, big.len - i * 2048);
        }
    });
    let refused = refusal(IsoReader::open(&iso).unwrap().entries());
    assert!(matches!(refused, Refusal::SharedExtents { count: 1, .. }));
    let said = refused.to_string();
    assert!(said.contains("their extents overlap"), "{said}");
}
