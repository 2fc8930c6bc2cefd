//! Crafting hostile ISOs from real ones, for tests only (this crate's and, through `#[path]`, the
//! integration suite's): an ISO this crate wrote is read record by record (ECMA-119 §9.1
//! directory records, Rock Ridge `NM` names) and its records are pointed at other extents, as an
//! attacker would patch them. Nothing here uses the reader under test, so a bug there cannot hide
//! itself.

use std::path::Path;

const BLOCK: usize = 2048;

/// One directory record of an ISO's primary (Rock Ridge) tree.
#[derive(Debug, Clone)]
pub struct Record {
    /// Byte offset of the record in the ISO.
    pub at: usize,
    /// Its Rock Ridge name, else its ISO 9660 identifier.
    pub name: String,
    /// The logical block its extent starts at.
    pub extent: u32,
    /// Its data length.
    pub len: u32,
    /// Whether it is a directory.
    pub dir: bool,
}

fn u32_le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn parse(iso: &[u8], at: usize) -> Record {
    let r = &iso[at..at + iso[at] as usize];
    let id_len = r[32] as usize;
    let id = &r[33..33 + id_len];
    // The system use area follows the identifier and its padding byte (when its length is even).
    let mut su = 33 + id_len + usize::from(id_len.is_multiple_of(2));
    let mut name = None;
    while su + 4 <= r.len() {
        let (sig, len) = (&r[su..su + 2], r[su + 2] as usize);
        if len < 4 || su + len > r.len() {
            break;
        }
        if sig == b"NM" && len > 5 {
            name = Some(String::from_utf8_lossy(&r[su + 5..su + len]).into_owned());
        }
        su += len;
    }
    let name = name.unwrap_or_else(|| {
        let id = String::from_utf8_lossy(id).into_owned();
        id.split(';').next().unwrap().to_owned()
    });
    Record {
        at,
        name,
        extent: u32_le(r, 2),
        len: u32_le(r, 10),
        dir: r[25] & 2 != 0,
    }
}

/// The root directory's record, from the primary volume descriptor.
pub fn root(iso: &[u8]) -> Record {
    parse(iso, 16 * BLOCK + 156)
}

/// The records listed in the directory `dir`, without `.` and `..`.
pub fn children(iso: &[u8], dir: &Record) -> Vec<Record> {
    let start = dir.extent as usize * BLOCK;
    let end = start + dir.len as usize;
    let mut at = start;
    let mut found = Vec::new();
    while at < end {
        let len = iso[at] as usize;
        if len == 0 {
            // Records never cross a block: the rest of this one is padding.
            at = (at / BLOCK + 1) * BLOCK;
            continue;
        }
        let id_len = iso[at + 32] as usize;
        let dot = id_len == 1 && iso[at + 33] <= 1;
        if !dot {
            found.push(parse(iso, at));
        }
        at += len;
    }
    found
}

/// The record at `path` (`docker/x.tar`), by Rock Ridge names.
pub fn lookup(iso: &[u8], path: &str) -> Record {
    let mut at = root(iso);
    for part in path.split('/') {
        at = children(iso, &at)
            .into_iter()
            .find(|r| r.name == part)
            .unwrap_or_else(|| panic!("{path}: no {part} in the ISO"));
    }
    at
}

/// Points `record` at `extent` (a logical block) and `len` bytes, both byte orders.
pub fn point(iso: &mut [u8], record: &Record, extent: u32, len: u32) {
    let at = record.at;
    iso[at + 2..at + 6].copy_from_slice(&extent.to_le_bytes());
    iso[at + 6..at + 10].copy_from_slice(&extent.to_be_bytes());
    iso[at + 10..at + 14].copy_from_slice(&len.to_le_bytes());
    iso[at + 14..at + 18].copy_from_slice(&len.to_be_bytes());
}

/// Writes the tree of a shared-directory bomb under `root`: `levels` levels of `width`
/// directories (`d00`…), of which only each level's first holds the next level, and a file at
/// the bottom. [`share_directories`] then makes every sibling the first one: `width^levels`
/// paths, no loop to an ancestor.
pub fn bomb_tree(root: &Path, width: usize, levels: usize) {
    let mut at = root.to_owned();
    for _ in 0..levels {
        for i in 0..width {
            std::fs::create_dir_all(at.join(format!("d{i:02}"))).unwrap();
        }
        at = at.join("d00");
    }
    std::fs::write(at.join("bottom"), b"the bottom\n").unwrap();
}

/// Points every directory record of each level of a [`bomb_tree`] ISO at its level's first
/// directory; returns how many records were patched.
pub fn share_directories(iso: &mut [u8]) -> usize {
    let mut dir = root(iso);
    let mut patched = 0;
    loop {
        let subdirs: Vec<Record> = children(iso, &dir).into_iter().filter(|r| r.dir).collect();
        let Some(first) = subdirs.iter().find(|r| r.name == "d00").cloned() else {
            return patched;
        };
        for other in subdirs.iter().filter(|r| r.name != "d00") {
            point(iso, other, first.extent, first.len);
            patched += 1;
        }
        dir = first;
    }
}
