//! `cache import DIR`: every blob of DIR (verified) added to the cache, and those of its index
//! entries that evidence from outside DIR admits ([`admit`]): a `--locked` lock naming the
//! entry's digest, or a signature verified against the trusted root. Each other entry is named on
//! stderr with the reason it was skipped; one a lock names with another digest is refused.
//!
//! Blobs are copied through [`Cache::copy_from`], which hashes while copying and renames only a
//! verified blob into place, and entries are written after the blobs they name.

use std::path::{Path, PathBuf};

use super::error::Kind;
use super::{CarryError, Locked};
use crate::cache::{Cache, CacheError, IndexEntry, Key};
use crate::reporter::Reporter;
use crate::ui::printable;
use crate::upstream::admit;

/// A directory `cache export` wrote, about to be imported.
pub struct Carry {
    dir: PathBuf,
    cache: Cache,
}

impl Carry {
    /// The carried directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The carried directory, read as a cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// `dir`, when it holds blobs as a cache does.
    pub fn open(dir: &Path) -> Result<Self, CarryError> {
        if !dir.join("blobs/sha256").is_dir() {
            return Err(CarryError::from(Kind::NotACache {
                dir: dir.to_owned(),
            }));
        }
        Ok(Self {
            dir: dir.to_owned(),
            cache: Cache::new(dir),
        })
    }
}

/// What an import took.
pub struct Imported {
    /// Blobs imported (the corrupt ones left out).
    pub blobs: usize,
    /// Their bytes.
    pub bytes: u64,
    /// How many of them were new to the cache.
    pub added: usize,
    /// Index entries imported.
    pub entries: usize,
    /// Index entries skipped (each named on stderr).
    pub skipped: usize,
    /// Why the import failed although it took the rest, if it did.
    pub failure: Option<CarryError>,
}

/// Blobs and index entries counted as they are taken.
#[derive(Default)]
struct Taken {
    entries: usize,
    skipped: usize,
    refused: Vec<String>,
}

/// Imports `carry` into `cache`: its blobs, then the index entries `locks` or `trust` admit;
/// with a delta, checks what it assumes (in the cache, or in the `from_iso` ISOs).
pub fn import(
    carry: &Carry,
    cache: &Cache,
    locks: &[Locked],
    trust: &admit::Trust,
    from_iso: &[PathBuf],
    reporter: &dyn Reporter,
) -> Result<Imported, CarryError> {
    let (blobs, _) = carry.cache.blob_files()?;
    let progress = reporter.bytes(&format!("importing {} blob(s)", blobs.len()));
    progress.start(blobs.iter().map(|b| b.size).sum());
    let (mut added, mut bytes, mut corrupt) = (0, 0, Vec::new());
    for blob in &blobs {
        match cache.copy_from(&carry.cache, &blob.digest, Some(blob.size)) {
            Ok((size, present)) => {
                bytes += size;
                added += usize::from(!present);
            }
            Err(err @ (CacheError::Mismatch { .. } | CacheError::Source { .. })) => {
                let path = carry.cache.blob_path(&blob.digest);
                tracing::error!("not imported: {}: {err}", path.display());
                corrupt.push(blob.digest.to_string());
            }
            Err(err) => return Err(err.into()),
        }
        progress.advance(blob.size);
    }
    progress.finish();
    let taken = entries(carry, cache, locks, trust)?;
    super::delta::check_import(&carry.dir, cache, locks, from_iso)?;
    let failure = match (taken.refused.is_empty(), corrupt.is_empty()) {
        (false, _) => Some(CarryError::from(Kind::Refused {
            dir: carry.dir.clone(),
            files: locks.iter().map(|l| l.file.display().to_string()).collect(),
            refused: taken.refused,
            corrupt: !corrupt.is_empty(),
        })),
        (true, false) => Some(CarryError::from(Kind::Corrupt {
            dir: carry.dir.clone(),
            corrupt: corrupt.clone(),
        })),
        (true, true) => None,
    };
    Ok(Imported {
        blobs: blobs.len() - corrupt.len(),
        bytes,
        added,
        entries: taken.entries,
        skipped: taken.skipped,
        failure,
    })
}

/// Judges every index entry of `carry` and writes those admitted whose blob is now in `cache`.
fn entries(
    carry: &Carry,
    cache: &Cache,
    locked: &[Locked],
    trust: &admit::Trust,
) -> Result<Taken, CarryError> {
    // What the locks name is the evidence from outside DIR.
    let mut locks = admit::Locks::default();
    for Locked { lock, file } in locked {
        for k in carry.cache.needs(lock).keys {
            locks.name(&k.key, k.digest, file);
        }
    }
    let index = carry.cache.index()?;
    let verdicts = admit::judge(&carry.cache, &index, &locks, Some(trust));
    let mut taken = Taken::default();
    for (entry, verdict) in index.into_iter().zip(verdicts) {
        let why = match verdict {
            admit::Verdict::Take(_) => None,
            admit::Verdict::Skip(why) => Some(why),
            admit::Verdict::Refuse { lock, locked } => {
                tracing::error!(
                    "index entry {} refused: {} names {}, but the lock {} names {locked}",
                    printable(&entry.key),
                    carry.dir.display(),
                    entry.digest,
                    lock.display()
                );
                taken.refused.push(printable(&entry.key).to_string());
                continue;
            }
        };
        match take(carry, cache, &entry, why)? {
            true => taken.entries += 1,
            false => taken.skipped += 1,
        }
    }
    Ok(taken)
}

/// Writes `entry` into `cache` unless it is to be skipped (`why`, or its blob is not there, or
/// its key is not one this cks-iso writes); whether it was written.
fn take(
    carry: &Carry,
    cache: &Cache,
    entry: &IndexEntry,
    why: Option<String>,
) -> Result<bool, CarryError> {
    // Only entries whose blob is now here: never one naming nothing.
    let why = why.or_else(|| {
        (cache.size_of(&entry.digest) != Some(entry.size)).then(|| {
            format!(
                "its blob {} is not in {}",
                entry.digest,
                carry.dir.display()
            )
        })
    });
    if let Some(why) = why {
        tracing::warn!("index entry {} not imported: {why}", printable(&entry.key));
        return Ok(false);
    }
    // Every kind a verdict admits is one this cks-iso writes.
    let Some(key) = Key::parse(&entry.key) else {
        tracing::warn!(
            "index entry {} not imported: not a key this cks-iso writes",
            printable(&entry.key)
        );
        return Ok(false);
    };
    cache.remember(&key, &entry.digest, entry.size, &entry.note)?;
    Ok(true)
}
