//! `cache ls`, `cache verify` and `cache prune`: what the cache holds, whether it is intact, and
//! trimming it to what some locks need.

use std::collections::BTreeSet;

use serde_json::json;

use super::{AppError, Locked, failed, human, open, read_locks};
use crate::cache::{Cache, CacheError, Needs, Stray};
use crate::cli::{CacheLsArgs, CachePruneArgs, CacheVerifyArgs};
use crate::ui::{Ui, printable};
use crate::upstream::tie::{Tie, tie};

/// The version of `cache ls --json`'s document (its `format` field).
pub const FORMAT: u32 = 1;

/// Prints the blobs' count and size, the index, and what each lock needs.
pub(super) fn ls(args: CacheLsArgs) -> Result<(), AppError> {
    let cache = open(args.cache.cache_dir)?;
    let locks = read_locks(&args.locked)?;
    let (blobs, strays) = cache.blob_files().map_err(failed)?;
    let (entries, _) = cache.index_files().map_err(failed)?;
    let bytes: u64 = blobs.iter().map(|b| b.size).sum();
    let needs: Vec<Needs> = locks.iter().map(|l| cache.needs(&l.lock)).collect();
    let needed: BTreeSet<_> = needs.iter().flat_map(Needs::digests).collect();
    let unneeded: Vec<_> = blobs
        .iter()
        .filter(|b| !needed.contains(&b.digest))
        .collect();
    let present = |e: &crate::cache::IndexEntry| cache.size_of(&e.digest) == Some(e.size);
    if args.json {
        let value = json!({
            "format": FORMAT,
            "root": cache.root(),
            "blobs": {"count": blobs.len(), "bytes": bytes},
            "temporary": strays.iter().map(|s| json!({
                "path": s.path, "bytes": s.size, "stale": s.stale,
            })).collect::<Vec<_>>(),
            "index": entries.iter().map(|e| json!({
                "key": e.key, "digest": e.digest, "size": e.size, "present": present(e),
            })).collect::<Vec<_>>(),
            "locks": locks.iter().zip(&needs).map(|(l, n)| json!({
                "file": l.file,
                "blobs": n.blobs.iter().map(|b| json!({
                    "what": b.what, "digest": b.digest, "size": b.size,
                    "present": b.problem.is_none(), "problem": b.problem,
                })).collect::<Vec<_>>(),
                "index": n.keys.iter().map(|k| k.key.to_string()).collect::<Vec<_>>(),
                "missing": n.missing().count(),
                "complete": !n.incomplete,
            })).collect::<Vec<_>>(),
            "unneeded": (!locks.is_empty()).then(|| json!({
                "count": unneeded.len(),
                "bytes": unneeded.iter().map(|b| b.size).sum::<u64>(),
            })),
        });
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&value).expect("JSON of plain values")
        );
        return Ok(());
    }
    crate::outln!("cache {}", cache.root().display());
    crate::outln!("blobs: {} ({})", blobs.len(), human(bytes));
    if !strays.is_empty() {
        let stale = strays.iter().filter(|s| s.stale).count();
        crate::outln!("other files in blobs/: {} ({stale} stale)", strays.len());
    }
    crate::outln!("index: {} entries", entries.len());
    for e in &entries {
        let gone = if present(e) { "" } else { " (blob missing)" };
        crate::outln!("  {} -> {} {}{gone}", e.key, e.digest, human(e.size));
    }
    for (locked, needs) in locks.iter().zip(&needs) {
        let size: u64 = needs.blobs.iter().filter_map(|b| b.size).sum();
        crate::outln!(
            "lock {}: needs {} blob(s) ({}) and {} index entries; {} missing",
            locked.file.display(),
            needs.blobs.len(),
            human(size),
            needs.keys.len(),
            needs.missing().count()
        );
        for blob in &needs.blobs {
            let size = blob.size.map_or("?".into(), human);
            match &blob.problem {
                None => crate::outln!("  ok      {} {size} {}", blob.digest, blob.what),
                Some(problem) => {
                    crate::outln!("  MISSING {} {size} {}: {problem}", blob.digest, blob.what)
                }
            }
        }
        if needs.incomplete {
            crate::outln!(
                "  (an image's manifest is missing: its config and layers are not listed)"
            );
        }
    }
    if !locks.is_empty() {
        let size = unneeded.iter().map(|b| b.size).sum();
        crate::outln!(
            "needed by none of these locks: {} blob(s) ({})",
            unneeded.len(),
            human(size)
        );
    }
    Ok(())
}

/// Rehashes every blob and checks every index entry (its blob present, and tied to the published
/// checksum that verified it); names each problem; with `--fix` removes what is broken.
pub(super) fn verify(args: CacheVerifyArgs, ui: &Ui) -> Result<(), AppError> {
    let cache = open(args.cache.cache_dir)?;
    let (blobs, strays) = cache.blob_files().map_err(failed)?;
    let progress = ui.bytes(&format!("verifying {} blob(s)", blobs.len()));
    progress.start(blobs.iter().map(|b| b.size).sum());
    let mut problems = 0;
    let mut removed = Vec::new();
    for blob in &blobs {
        let rehashed = match cache.rehash(&blob.digest) {
            Ok(rehashed) => rehashed,
            // Removed by another process since it was listed.
            Err(CacheError::NotFound { .. }) => continue,
            Err(err) => {
                problems += 1;
                crate::outln!("unreadable {}: {err}", blob.digest);
                continue;
            }
        };
        progress.advance(blob.size);
        if rehashed.actual == blob.digest {
            continue;
        }
        problems += 1;
        crate::outln!(
            "corrupt {}: the content hashes to {} ({} bytes)",
            blob.digest,
            rehashed.actual,
            rehashed.size
        );
        if args.fix
            && cache
                .remove_corrupt(&blob.digest, &rehashed)
                .map_err(failed)?
        {
            removed.push(format!("blob {}", blob.digest));
        }
    }
    progress.finish();
    let (entries, index_strays) = cache.index_files().map_err(failed)?;
    for entry in &entries {
        let found = cache.size_of(&entry.digest);
        if found == Some(entry.size) {
            // Present: still tied to what verified it (a published checksum kept beside it)?
            let reason = match tie(&cache, &entry.key, &entry.digest, &entry.note) {
                Ok(Tie::Unsigned) => {
                    // Not damage: the publisher may not sign it. Said, not counted.
                    crate::outln!(
                        "unsigned index entry {}: no signature for {} in the cache; an offline \
                         build without --locked refuses it",
                        printable(&entry.key),
                        entry.digest
                    );
                    continue;
                }
                Ok(_) => continue,
                Err(reason) => reason,
            };
            problems += 1;
            crate::outln!(
                "unverified index entry {}: its blob {} cannot be tied to a verification: {}",
                printable(&entry.key),
                entry.digest,
                printable(&reason.to_string())
            );
            if args.fix && cache.forget(entry).map_err(failed)? {
                removed.push(format!("index entry {}", printable(&entry.key)));
            }
            continue;
        }
        problems += 1;
        let state = match found {
            None => "is not in the cache".to_owned(),
            Some(other) => format!("has {other} bytes"),
        };
        crate::outln!(
            "dangling index entry {}: its blob {} ({} bytes) {state}",
            entry.key,
            entry.digest,
            entry.size
        );
        if args.fix && cache.forget(entry).map_err(failed)? {
            removed.push(format!("index entry {}", entry.key));
        }
    }
    for stray in strays.iter().chain(&index_strays) {
        problems += usize::from(report_stray(&cache, stray, args.fix, &mut removed)?);
    }
    for what in &removed {
        crate::outln!("removed {what}");
    }
    match (problems, args.fix) {
        (0, _) => {
            crate::outln!(
                "ok: {} blob(s) and {} index entries in {}",
                blobs.len(),
                entries.len(),
                cache.root().display()
            );
            Ok(())
        }
        (n, true) => {
            crate::outln!("fixed {n} problem(s): removed {} file(s)", removed.len());
            Ok(())
        }
        (n, false) => Err(AppError::failure(
            anyhow::anyhow!("{n} problem(s) in the cache at {}", cache.root().display()),
            Some(format!(
                "`cks-iso cache verify --fix --cache-dir {}` removes them; the next build \
                 fetches what it needs again",
                cache.root().display()
            )),
        )),
    }
}

/// Reports a stray file; whether it is a problem (stale temporary, unreadable index entry).
fn report_stray(
    cache: &Cache,
    stray: &Stray,
    fix: bool,
    removed: &mut Vec<String>,
) -> Result<bool, AppError> {
    let path = stray.path.display();
    let in_index = stray.path.parent().is_some_and(|d| d.ends_with("index"));
    let problem = match (stray.temporary, stray.stale, in_index) {
        (true, false, _) => return Ok(false), // being written by someone
        (true, true, _) => "stale temporary file, untouched for over an hour",
        (false, _, true) => "unreadable index entry",
        (false, _, false) => {
            tracing::warn!("{path} is not a blob (left alone)");
            return Ok(false);
        }
    };
    crate::outln!("{problem}: {path} ({} bytes)", stray.size);
    if fix && cache.remove_stray(stray).map_err(failed)? {
        removed.push(format!("{path}"));
    }
    Ok(true)
}

/// Removes every blob and index entry that none of the locks needs.
pub(super) fn prune(args: CachePruneArgs) -> Result<(), AppError> {
    let cache = open(args.cache.cache_dir)?;
    let locks = read_locks(&args.keep_locked)?;
    let mut keep = Needs::default();
    for Locked { file, lock } in &locks {
        let needs = cache.needs(lock);
        if needs.incomplete {
            let gap = needs
                .missing()
                .next()
                .expect("an incomplete walk names a gap");
            return Err(AppError::failure(
                anyhow::anyhow!(
                    "cannot tell everything {} needs: {} {}: {}; nothing removed",
                    file.display(),
                    gap.what,
                    gap.digest,
                    gap.problem.as_deref().unwrap_or_default()
                ),
                Some(format!(
                    "build once online with `--locked {}` (or `cks-iso cache import`) to \
                     complete it, or leave that lock out",
                    file.display()
                )),
            ));
        }
        keep.extend(needs);
    }
    let digests = keep.digests();
    let keys: BTreeSet<String> = keep.keys.iter().map(|k| k.key.to_string()).collect();
    let (blobs, _) = cache.blob_files().map_err(failed)?;
    let (mut freed, mut count) = (0, 0);
    for blob in blobs.iter().filter(|b| !digests.contains(&b.digest)) {
        if let Some(size) = cache.remove_blob(&blob.digest).map_err(failed)? {
            crate::outln!("removed {} {size}", blob.digest);
            freed += size;
            count += 1;
        }
    }
    let (entries, _) = cache.index_files().map_err(failed)?;
    let mut forgotten = 0;
    for entry in &entries {
        let kept =
            keys.contains(entry.key.as_str()) && cache.size_of(&entry.digest) == Some(entry.size);
        if !kept && cache.forget(entry).map_err(failed)? {
            crate::outln!("removed index entry {}", entry.key);
            forgotten += 1;
        }
    }
    crate::outln!(
        "freed {}: {count} blob(s) and {forgotten} index entries removed, {} blob(s) kept",
        human(freed),
        blobs.len() - count
    );
    Ok(())
}
