//! `cache export` and `cache import`: carrying exactly what a lock needs across an air gap.
//!
//! Both copy blob by blob through [`Cache::put`], which hashes while copying and renames only a
//! verified blob into place, and write index entries after the blobs they name: an interrupted
//! export or import leaves a smaller cache, never a half blob or an entry naming nothing.

use std::collections::{BTreeMap, BTreeSet};

use super::{AppError, Locked, failed, human, open, read_locks};
use crate::cache::{Cache, CacheError, Key, Needs};
use crate::cli::{CacheExportArgs, CacheImportArgs};
use crate::ui::{Ui, printable};
use crate::upstream::tie::{Tie, tie};

/// Writes what the locks need into `--output`, laid out as a cache.
pub(super) fn export(args: CacheExportArgs, ui: &Ui) -> Result<(), AppError> {
    let cache = open(args.cache.cache_dir)?;
    let locks = read_locks(&args.locked)?;
    let mut needs = Needs::default();
    for Locked { lock, .. } in &locks {
        needs.extend(cache.needs(lock));
    }
    if let Some(first) = needs.missing().next() {
        let more = needs.missing().count() - 1;
        let locked = locks[0].file.display();
        return Err(AppError::failure(
            anyhow::anyhow!(
                "cannot export: {} {}: {} (cache {}){}",
                first.what,
                first.digest,
                first.problem.as_deref().unwrap_or_default(),
                cache.root().display(),
                match more {
                    0 => String::new(),
                    n => format!(", and {n} more blob(s)"),
                }
            ),
            Some(format!(
                "build once online with `cks-iso build --locked {locked} --cache-dir {}`, then \
                 export again (`cks-iso cache ls --locked {locked}` lists what is missing)",
                cache.root().display()
            )),
        ));
    }
    crate::app::net::writable(&args.output)
        .map_err(|e| AppError::output_dir(&args.output, "-o", e))?;
    let out = Cache::new(&args.output);
    let total = needs.blobs.iter().filter_map(|n| n.size).sum();
    let progress = ui.bytes(&format!("exporting {} blob(s)", needs.blobs.len()));
    progress.start(total);
    let (mut copied, mut bytes) = (0, 0);
    for blob in &needs.blobs {
        let (size, present) = out
            .copy_from(&cache, &blob.digest, blob.size)
            .map_err(|err| corrupt_source(err, &blob.what, &cache))?;
        progress.advance(size);
        bytes += size;
        copied += usize::from(!present);
    }
    progress.finish();
    let notes: BTreeMap<String, _> = cache
        .index()
        .map_err(failed)?
        .into_iter()
        .map(|e| (e.key.clone(), e))
        .collect();
    for key in &needs.keys {
        // The source's note (the URL really used) when its entry names the same blob.
        let note = notes
            .get(&key.key.to_string())
            .filter(|e| e.digest == key.digest)
            .map_or(key.note.as_str(), |e| e.note.as_str());
        let size = out
            .size_of(&key.digest)
            .expect("every needed blob was copied");
        out.remember(&key.key, &key.digest, size, note)
            .map_err(failed)?;
    }
    crate::outln!(
        "exported {} blob(s), {} ({copied} copied), and {} index entries to {}",
        needs.blobs.len(),
        human(bytes),
        needs.keys.len(),
        args.output.display()
    );
    Ok(())
}

/// A blob of the source cache that does not hash to its name.
fn corrupt_source(err: CacheError, what: &str, cache: &Cache) -> AppError {
    let hint = match &err {
        CacheError::Mismatch { .. } => format!(
            "run `cks-iso cache verify --fix --cache-dir {}`, then build once online with \
             --locked to fetch it again",
            cache.root().display()
        ),
        _ => err.hint().unwrap_or_default(),
    };
    AppError::failure(
        anyhow::anyhow!(err).context(format!("cannot export {what}")),
        Some(hint),
    )
}

/// Adds every blob of `DIR` (verified) to the cache, and those of its index entries that can be
/// tied to a verification (a published checksum or signature in `DIR`) or that a `--locked` lock
/// names; each other entry is named on stderr with the reason it was skipped.
pub(super) fn import(args: CacheImportArgs, ui: &Ui) -> Result<(), AppError> {
    let from = Cache::new(&args.dir);
    if !args.dir.join("blobs/sha256").is_dir() {
        return Err(AppError::failure(
            anyhow::anyhow!("{} holds no blobs/sha256: not a cache", args.dir.display()),
            Some("pass the directory `cks-iso cache export -o DIR` wrote".into()),
        ));
    }
    let cache = open(args.cache.cache_dir)?;
    let (blobs, _) = from.blob_files().map_err(failed)?;
    let progress = ui.bytes(&format!("importing {} blob(s)", blobs.len()));
    progress.start(blobs.iter().map(|b| b.size).sum());
    let (mut added, mut bytes, mut corrupt) = (0, 0, Vec::new());
    for blob in &blobs {
        match cache.copy_from(&from, &blob.digest, Some(blob.size)) {
            Ok((size, present)) => {
                bytes += size;
                added += usize::from(!present);
            }
            Err(err @ (CacheError::Mismatch { .. } | CacheError::Source { .. })) => {
                let path = from.blob_path(&blob.digest);
                tracing::error!("not imported: {}: {err}", path.display());
                corrupt.push(blob.digest.to_string());
            }
            Err(err) => return Err(failed(err)),
        }
        progress.advance(blob.size);
    }
    progress.finish();
    // What the locks name is taken as they name it; everything else only with what verifies it.
    let mut named = BTreeSet::new();
    for Locked { lock, .. } in &read_locks(&args.locked)? {
        let needs = from.needs(lock).keys.into_iter();
        named.extend(needs.map(|k| (k.key.to_string(), k.digest)));
    }
    let index = from.index().map_err(failed)?;
    let ties: Vec<_> = index
        .iter()
        .map(|e| tie(&from, &e.key, &e.digest, &e.note))
        .collect();
    // A published checksum comes in with a download it vouches for, never alone: alone it could
    // only turn a file the cache verified into one it refuses.
    let vouching: BTreeSet<String> = ties
        .iter()
        .filter_map(|t| match t {
            Ok(Tie::Checksum(url)) => Some(Key::Url(url.clone()).to_string()),
            _ => None,
        })
        .collect();
    let (mut entries, mut skipped) = (0, 0);
    for (entry, tied) in index.into_iter().zip(ties) {
        // Only entries whose blob is now here: never one naming nothing.
        if cache.size_of(&entry.digest) != Some(entry.size) {
            tracing::warn!(
                "index entry {} not imported: its blob {} is not in {}",
                printable(&entry.key),
                entry.digest,
                args.dir.display()
            );
            skipped += 1;
            continue;
        }
        let locked = named.contains(&(entry.key.clone(), entry.digest.clone()));
        let why_not = match tied {
            _ if locked => None,
            Ok(Tie::Published) if !vouching.contains(&entry.key) => {
                Some("it is the published checksum of no download imported with it".to_owned())
            }
            Ok(Tie::Served) => Some(
                "nothing can verify it (a manifest or an unsigned image's tag) and no --locked \
                 lock names it"
                    .to_owned(),
            ),
            Ok(Tie::Unsigned) => Some(
                "a signature rule covers the image, DIR holds no signature for it, and no \
                 --locked lock names it"
                    .to_owned(),
            ),
            Ok(_) => None,
            Err(reason) => Some(format!("it cannot be tied to a verification: {reason}")),
        };
        if let Some(why) = why_not {
            tracing::warn!("index entry {} not imported: {why}", printable(&entry.key));
            skipped += 1;
            continue;
        }
        // Every kind tie() or a lock accepts is one this cks-iso writes.
        let Some(key) = Key::parse(&entry.key) else {
            tracing::warn!(
                "index entry {} not imported: not a key this cks-iso writes",
                printable(&entry.key)
            );
            skipped += 1;
            continue;
        };
        cache
            .remember(&key, &entry.digest, entry.size, &entry.note)
            .map_err(failed)?;
        entries += 1;
    }
    crate::outln!(
        "imported {} blob(s), {} ({added} new), and {entries} index entries into {}{}",
        blobs.len() - corrupt.len(),
        human(bytes),
        cache.root().display(),
        match skipped {
            0 => String::new(),
            n => format!("; {n} index entries skipped (named above)"),
        }
    );
    match corrupt.is_empty() {
        true => Ok(()),
        false => Err(AppError::failure(
            anyhow::anyhow!(
                "{} blob(s) of {} are corrupt and were not imported: {}",
                corrupt.len(),
                args.dir.display(),
                corrupt.join(", ")
            ),
            Some(
                "run `cks-iso cache export` again where the cache came from, and import that; \
                 the others were imported"
                    .into(),
            ),
        )),
    }
}
