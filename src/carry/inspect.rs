//! `cache ls`, `cache verify` and `cache prune`: what the cache holds, whether it is intact, and
//! trimming it to what some locks need.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::json;

use super::error::Kind;
use super::{CarryError, Locked, human};
use crate::cache::{BlobFile, Cache, CacheError, IndexEntry, Needs, Stray};
use crate::image::Digest;
use crate::reporter::Reporter;
use crate::ui::printable;
use crate::upstream::tie::{Tie, tie};

/// The version of `cache ls --json`'s document (its `format` field).
pub const FORMAT: u32 = 1;

/// What a cache holds, and what each lock given needs of it.
pub struct Inventory<'a> {
    cache: &'a Cache,
    locks: &'a [Locked],
    blobs: Vec<BlobFile>,
    strays: Vec<Stray>,
    entries: Vec<IndexEntry>,
    needs: Vec<Needs>,
    /// Blobs none of the locks needs.
    unneeded: Vec<BlobFile>,
}

/// Lists `cache`: its blobs, its index, and what each of `locks` needs.
pub fn inventory<'a>(cache: &'a Cache, locks: &'a [Locked]) -> Result<Inventory<'a>, CacheError> {
    let (blobs, strays) = cache.blob_files()?;
    let (entries, _) = cache.index_files()?;
    let needs: Vec<Needs> = locks.iter().map(|l| cache.needs(&l.lock)).collect();
    let needed: BTreeSet<_> = needs.iter().flat_map(Needs::digests).collect();
    let unneeded = (blobs.iter())
        .filter(|b| !needed.contains(&b.digest))
        .cloned()
        .collect();
    Ok(Inventory {
        cache,
        locks,
        blobs,
        strays,
        entries,
        needs,
        unneeded,
    })
}

impl Inventory<'_> {
    fn present(&self, e: &IndexEntry) -> bool {
        self.cache.size_of(&e.digest) == Some(e.size)
    }

    /// `cache ls --json`'s document.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "format": FORMAT,
            "root": self.cache.root(),
            "blobs": {"count": self.blobs.len(), "bytes": self.blobs.iter().map(|b| b.size).sum::<u64>()},
            "temporary": self.strays.iter().map(|s| json!({
                "path": s.path, "bytes": s.size, "stale": s.stale,
            })).collect::<Vec<_>>(),
            "index": self.entries.iter().map(|e| json!({
                "key": e.key, "digest": e.digest, "size": e.size, "present": self.present(e),
            })).collect::<Vec<_>>(),
            "locks": self.locks.iter().zip(&self.needs).map(|(l, n)| json!({
                "file": l.file,
                "blobs": n.blobs.iter().map(|b| json!({
                    "what": b.what, "digest": b.digest, "size": b.size,
                    "present": b.problem.is_none(), "problem": b.problem,
                })).collect::<Vec<_>>(),
                "index": n.keys.iter().map(|k| k.key.to_string()).collect::<Vec<_>>(),
                "missing": n.missing().count(),
                "complete": !n.incomplete,
            })).collect::<Vec<_>>(),
            "unneeded": (!self.locks.is_empty()).then(|| json!({
                "count": self.unneeded.len(),
                "bytes": self.unneeded.iter().map(|b| b.size).sum::<u64>(),
            })),
        })
    }

    /// `cache ls`'s lines: the blobs, the index, then what each lock needs.
    pub fn lines(&self) -> Vec<String> {
        let bytes: u64 = self.blobs.iter().map(|b| b.size).sum();
        let mut out = vec![
            format!("cache {}", self.cache.root().display()),
            format!("blobs: {} ({})", self.blobs.len(), human(bytes)),
        ];
        if !self.strays.is_empty() {
            let stale = self.strays.iter().filter(|s| s.stale).count();
            out.push(format!(
                "other files in blobs/: {} ({stale} stale)",
                self.strays.len()
            ));
        }
        out.push(format!("index: {} entries", self.entries.len()));
        for e in &self.entries {
            let gone = if self.present(e) {
                ""
            } else {
                " (blob missing)"
            };
            out.push(format!(
                "  {} -> {} {}{gone}",
                e.key,
                e.digest,
                human(e.size)
            ));
        }
        for (locked, needs) in self.locks.iter().zip(&self.needs) {
            lock_lines(&mut out, locked, needs);
        }
        if !self.locks.is_empty() {
            let size = self.unneeded.iter().map(|b| b.size).sum();
            out.push(format!(
                "needed by none of these locks: {} blob(s) ({})",
                self.unneeded.len(),
                human(size)
            ));
        }
        out
    }
}

/// What one lock needs, a line per blob.
fn lock_lines(out: &mut Vec<String>, locked: &Locked, needs: &Needs) {
    let size: u64 = needs.blobs.iter().filter_map(|b| b.size).sum();
    out.push(format!(
        "lock {}: needs {} blob(s) ({}) and {} index entries; {} missing",
        locked.file.display(),
        needs.blobs.len(),
        human(size),
        needs.keys.len(),
        needs.missing().count()
    ));
    for blob in &needs.blobs {
        let size = blob.size.map_or("?".into(), human);
        out.push(match &blob.problem {
            None => format!("  ok      {} {size} {}", blob.digest, blob.what),
            Some(problem) => format!("  MISSING {} {size} {}: {problem}", blob.digest, blob.what),
        });
    }
    if needs.incomplete {
        out.push(
            "  (an image's manifest is missing: its config and layers are not listed)".to_owned(),
        );
    }
}

/// One thing `cache verify` or `cache prune` says, a line each (its `Display`).
pub enum Finding {
    /// A blob that cannot be read.
    Unreadable {
        /// The blob.
        digest: Digest,
        /// Why.
        error: CacheError,
    },
    /// A blob whose content hashes to another digest.
    Corrupt {
        /// The blob.
        digest: Digest,
        /// What its content hashes to.
        actual: Digest,
        /// Its bytes.
        size: u64,
    },
    /// An index entry without a signature in the cache: said, not counted.
    Unsigned {
        /// The entry's key.
        key: String,
        /// Its blob.
        digest: Digest,
    },
    /// An index entry that cannot be tied to what verified it.
    Unverified {
        /// The entry's key.
        key: String,
        /// Its blob.
        digest: Digest,
        /// Why not.
        reason: String,
    },
    /// An index entry whose blob is missing or of another size.
    Dangling {
        /// The entry.
        entry: IndexEntry,
        /// The size of the blob found, if one is.
        found: Option<u64>,
    },
    /// A stale temporary file, or an unreadable index entry.
    Stray {
        /// Which.
        problem: &'static str,
        /// The file.
        stray: Stray,
    },
    /// Something removed.
    Removed(String),
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unreadable { digest, error } => write!(f, "unreadable {digest}: {error}"),
            Self::Corrupt {
                digest,
                actual,
                size,
            } => write!(
                f,
                "corrupt {digest}: the content hashes to {actual} ({size} bytes)"
            ),
            Self::Unsigned { key, digest } => write!(
                f,
                "unsigned index entry {}: no signature for {digest} in the cache; an offline \
                 build without --locked refuses it",
                printable(key)
            ),
            Self::Unverified {
                key,
                digest,
                reason,
            } => write!(
                f,
                "unverified index entry {}: its blob {digest} cannot be tied to a verification: {}",
                printable(key),
                printable(reason)
            ),
            Self::Dangling { entry, found } => {
                let state = match found {
                    None => "is not in the cache".to_owned(),
                    Some(other) => format!("has {other} bytes"),
                };
                write!(
                    f,
                    "dangling index entry {}: its blob {} ({} bytes) {state}",
                    entry.key, entry.digest, entry.size
                )
            }
            Self::Stray { problem, stray } => write!(
                f,
                "{problem}: {} ({} bytes)",
                stray.path.display(),
                stray.size
            ),
            Self::Removed(what) => write!(f, "removed {what}"),
        }
    }
}

/// Where each finding goes as soon as it is made.
pub type Findings<'a> = &'a mut dyn FnMut(Finding);

/// What `cache verify` checked.
pub struct Verified {
    /// Blobs rehashed.
    pub blobs: usize,
    /// Index entries checked.
    pub entries: usize,
    /// Problems found (fixed with `fix`).
    pub problems: usize,
    /// Files removed.
    pub removed: usize,
}

/// Rehashes every blob and checks every index entry (its blob present, and tied to the published
/// checksum that verified it); hands each problem to `found`; with `fix` removes what is broken.
/// Fails when problems remain.
pub fn verify(
    cache: &Cache,
    fix: bool,
    reporter: &dyn Reporter,
    found: Findings<'_>,
) -> Result<Verified, CarryError> {
    let mut removed = Vec::new();
    let (blobs, strays) = cache.blob_files()?;
    let mut problems = rehash(cache, &blobs, fix, reporter, found, &mut removed)?;
    let (entries, index_strays) = cache.index_files()?;
    for entry in &entries {
        problems += usize::from(check_entry(cache, entry, fix, found, &mut removed)?);
    }
    for stray in strays.iter().chain(&index_strays) {
        problems += usize::from(check_stray(cache, stray, fix, found, &mut removed)?);
    }
    let count = removed.len();
    for what in removed {
        found(Finding::Removed(what));
    }
    if problems > 0 && !fix {
        return Err(CarryError::from(Kind::Problems {
            count: problems,
            cache: cache.root().to_owned(),
        }));
    }
    Ok(Verified {
        blobs: blobs.len(),
        entries: entries.len(),
        problems,
        removed: count,
    })
}

/// Rehashes `blobs`; how many are unreadable or corrupt.
fn rehash(
    cache: &Cache,
    blobs: &[BlobFile],
    fix: bool,
    reporter: &dyn Reporter,
    found: Findings<'_>,
    removed: &mut Vec<String>,
) -> Result<usize, CarryError> {
    let progress = reporter.bytes(&format!("verifying {} blob(s)", blobs.len()));
    progress.start(blobs.iter().map(|b| b.size).sum());
    let mut problems = 0;
    for blob in blobs {
        let rehashed = match cache.rehash(&blob.digest) {
            Ok(rehashed) => rehashed,
            // Removed by another process since it was listed.
            Err(CacheError::NotFound { .. }) => continue,
            Err(error) => {
                problems += 1;
                let digest = blob.digest.clone();
                found(Finding::Unreadable { digest, error });
                continue;
            }
        };
        progress.advance(blob.size);
        if rehashed.actual == blob.digest {
            continue;
        }
        problems += 1;
        found(Finding::Corrupt {
            digest: blob.digest.clone(),
            actual: rehashed.actual.clone(),
            size: rehashed.size,
        });
        if fix && cache.remove_corrupt(&blob.digest, &rehashed)? {
            removed.push(format!("blob {}", blob.digest));
        }
    }
    progress.finish();
    Ok(problems)
}

/// Checks one index entry: its blob present and tied to what verified it; whether it is a problem.
fn check_entry(
    cache: &Cache,
    entry: &IndexEntry,
    fix: bool,
    found: Findings<'_>,
    removed: &mut Vec<String>,
) -> Result<bool, CarryError> {
    let (key, digest) = (entry.key.clone(), entry.digest.clone());
    let size = cache.size_of(&entry.digest);
    if size != Some(entry.size) {
        found(Finding::Dangling {
            entry: entry.clone(),
            found: size,
        });
        if fix && cache.forget(entry)? {
            removed.push(format!("index entry {}", entry.key));
        }
        return Ok(true);
    }
    // Present: still tied to what verified it (a published checksum kept beside it)?
    let reason = match tie(cache, &entry.key, &entry.digest, &entry.note) {
        // Not damage: the publisher may not sign it. Said, not counted.
        Ok(Tie::Unsigned) => {
            found(Finding::Unsigned { key, digest });
            return Ok(false);
        }
        Ok(_) => return Ok(false),
        Err(reason) => reason.to_string(),
    };
    found(Finding::Unverified {
        key,
        digest,
        reason,
    });
    if fix && cache.forget(entry)? {
        removed.push(format!("index entry {}", printable(&entry.key)));
    }
    Ok(true)
}

/// Reports a stray file; whether it is a problem (stale temporary, unreadable index entry).
fn check_stray(
    cache: &Cache,
    stray: &Stray,
    fix: bool,
    found: Findings<'_>,
    removed: &mut Vec<String>,
) -> Result<bool, CarryError> {
    let in_index = stray.path.parent().is_some_and(|d| d.ends_with("index"));
    let problem = match (stray.temporary, stray.stale, in_index) {
        (true, false, _) => return Ok(false), // being written by someone
        (true, true, _) => "stale temporary file, untouched for over an hour",
        (false, _, true) => "unreadable index entry",
        (false, _, false) => {
            tracing::warn!("{} is not a blob (left alone)", stray.path.display());
            return Ok(false);
        }
    };
    found(Finding::Stray {
        problem,
        stray: stray.clone(),
    });
    if fix && cache.remove_stray(stray)? {
        removed.push(format!("{}", stray.path.display()));
    }
    Ok(true)
}

/// What `cache prune` removed.
pub struct Pruned {
    /// Bytes freed.
    pub freed: u64,
    /// Blobs removed.
    pub blobs: usize,
    /// Index entries removed.
    pub entries: usize,
    /// Blobs kept.
    pub kept: usize,
}

/// Removes every blob and index entry that none of `locks` needs, handing each removal to
/// `found`; removes nothing when a lock's needs cannot be told.
pub fn prune(cache: &Cache, locks: &[Locked], found: Findings<'_>) -> Result<Pruned, CarryError> {
    let mut keep = Needs::default();
    for Locked { file, lock } in locks {
        let needs = cache.needs(lock);
        if needs.incomplete {
            let gap = (needs.missing().next()).expect("an incomplete walk names a gap");
            return Err(CarryError::from(Kind::Incomplete {
                file: file.clone(),
                what: gap.what.clone(),
                digest: gap.digest.clone(),
                problem: gap.problem.clone().unwrap_or_default(),
            }));
        }
        keep.extend(needs);
    }
    let digests = keep.digests();
    let keys: BTreeSet<String> = keep.keys.iter().map(|k| k.key.to_string()).collect();
    let (blobs, _) = cache.blob_files()?;
    let (mut freed, mut count) = (0, 0);
    for blob in blobs.iter().filter(|b| !digests.contains(&b.digest)) {
        if let Some(size) = cache.remove_blob(&blob.digest)? {
            found(Finding::Removed(format!("{} {size}", blob.digest)));
            freed += size;
            count += 1;
        }
    }
    let (entries, _) = cache.index_files()?;
    let mut forgotten = 0;
    for entry in &entries {
        let kept =
            keys.contains(entry.key.as_str()) && cache.size_of(&entry.digest) == Some(entry.size);
        if !kept && cache.forget(entry)? {
            found(Finding::Removed(format!("index entry {}", entry.key)));
            forgotten += 1;
        }
    }
    Ok(Pruned {
        freed,
        blobs: count,
        entries: forgotten,
        kept: blobs.len() - count,
    })
}
