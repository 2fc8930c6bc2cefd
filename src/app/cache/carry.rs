//! `cache export` and `cache import`: carrying exactly what a lock needs across an air gap.
//!
//! Both copy blob by blob through [`Cache::put`], which hashes while copying and renames only a
//! verified blob into place, and write index entries after the blobs they name: an interrupted
//! export or import leaves a smaller cache, never a half blob or an entry naming nothing.

use std::collections::BTreeMap;

use super::{AppError, Locked, failed, human, open, read_locks};
use crate::cache::{Assumed, Cache, CacheError, Delta, Key, Needs, Totals, lock_id};
use crate::cli::{CacheExportArgs, CacheImportArgs};
use crate::ui::{Ui, printable};
use crate::upstream::admit;

/// Writes what the locks need into `--output`, laid out as a cache.
pub(super) fn export(args: CacheExportArgs, ui: &Ui) -> Result<(), AppError> {
    let cache = open(args.cache.cache_dir)?;
    let locks = read_locks(&args.locked)?;
    let mut needs = Needs::default();
    for Locked { lock, .. } in &locks {
        needs.extend(cache.needs(lock));
    }
    // A delta: what the far side already holds is left out, and said in delta.json.
    let held = super::delta::held(&cache, &args.minus)?;
    let full = Totals {
        blobs: needs.blobs.len(),
        bytes: needs.blobs.iter().filter_map(|n| n.size).sum(),
    };
    let (assumed, carried): (Vec<_>, Vec<_>) = std::mem::take(&mut needs.blobs)
        .into_iter()
        .partition(|n| held.digests.contains_key(&n.digest));
    needs.blobs = carried;
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
        // An entry whose blob the far side holds comes with that blob, not with the delta.
        if held.digests.contains_key(&key.digest) {
            continue;
        }
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
    if held.minus.is_empty() {
        crate::outln!(
            "exported {} blob(s), {} ({copied} copied), and {} index entries to {}",
            needs.blobs.len(),
            human(bytes),
            needs.keys.len(),
            args.output.display()
        );
        return Ok(());
    }
    let delta = Delta {
        format: crate::cache::DELTA_FORMAT,
        locks: locks.iter().map(|l| lock_id(&l.lock)).collect(),
        minus: held.minus.clone(),
        assumes: assumed
            .iter()
            .map(|n| Assumed {
                digest: n.digest.clone(),
                size: n.size,
                what: n.what.clone(),
                from: held.digests[&n.digest].clone(),
            })
            .collect(),
        carries: needs
            .blobs
            .iter()
            .map(|n| Assumed {
                digest: n.digest.clone(),
                size: n.size,
                what: n.what.clone(),
                from: String::new(),
            })
            .collect(),
        carried: Totals {
            blobs: needs.blobs.len(),
            bytes,
        },
        full,
    };
    delta.write(&args.output).map_err(failed)?;
    crate::outln!(
        "exported a delta to {}: {} blob(s), {} ({:.1}% of the {} a full export carries); it \
         assumes the far side holds {} blob(s), {}, of {} (listed in {})",
        args.output.display(),
        needs.blobs.len(),
        human(bytes),
        share(bytes, full.bytes),
        human(full.bytes),
        delta.assumes.len(),
        human(full.bytes.saturating_sub(bytes)),
        held.minus
            .iter()
            .map(|m| m.file.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        crate::cache::DELTA_FILE
    );
    Ok(())
}

/// `part` as a percentage of `whole`.
fn share(part: u64, whole: u64) -> f64 {
    match whole {
        0 => 0.0,
        w => part as f64 * 100.0 / w as f64,
    }
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

/// Adds every blob of `DIR` (verified) to the cache, and those of its index entries that
/// evidence from outside `DIR` admits ([`admit`]): a `--locked` lock naming the entry's digest, or
/// a signature verified against the trusted root; each other entry is named on stderr with the
/// reason it was skipped, and one a lock names with another digest is refused (exit 1).
pub(super) fn import(args: CacheImportArgs, ui: &Ui) -> Result<(), AppError> {
    let from = Cache::new(&args.dir);
    if !args.dir.join("blobs/sha256").is_dir() {
        return Err(AppError::failure(
            anyhow::anyhow!("{} holds no blobs/sha256: not a cache", args.dir.display()),
            Some("pass the directory `cks-iso cache export -o DIR` wrote".into()),
        ));
    }
    let cache = open(args.cache.cache_dir)?;
    let trust = admit::Trust {
        root: crate::trust::trusted_root(args.trusted_root.as_deref(), None)
            .map_err(AppError::from)?
            .0,
        policy: crate::trust::policy(args.signature_policy.as_deref()).map_err(AppError::from)?,
        now: crate::trust::now(),
    };
    let locked = read_locks(&args.locked)?;
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
    // What the locks name is the evidence from outside DIR.
    let mut locks = admit::Locks::default();
    for Locked { lock, file } in &locked {
        for k in from.needs(lock).keys {
            locks.name(&k.key, k.digest, file);
        }
    }
    let index = from.index().map_err(failed)?;
    let verdicts = admit::judge(&from, &index, &locks, Some(&trust));
    let (mut entries, mut skipped, mut refused) = (0, 0, Vec::new());
    for (entry, verdict) in index.into_iter().zip(verdicts) {
        let why = match verdict {
            admit::Verdict::Take(_) => None,
            admit::Verdict::Skip(why) => Some(why),
            admit::Verdict::Refuse { lock, locked } => {
                tracing::error!(
                    "index entry {} refused: {} names {}, but the lock {} names {locked}",
                    printable(&entry.key),
                    args.dir.display(),
                    entry.digest,
                    lock.display()
                );
                refused.push(printable(&entry.key).to_string());
                continue;
            }
        };
        // Only entries whose blob is now here: never one naming nothing.
        let why = why.or_else(|| {
            (cache.size_of(&entry.digest) != Some(entry.size))
                .then(|| format!("its blob {} is not in {}", entry.digest, args.dir.display()))
        });
        if let Some(why) = why {
            tracing::warn!("index entry {} not imported: {why}", printable(&entry.key));
            skipped += 1;
            continue;
        }
        // Every kind a verdict admits is one this cks-iso writes.
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
    let given: Vec<_> = locked
        .iter()
        .map(|l| (l.file.clone(), l.lock.clone()))
        .collect();
    super::delta::check_import(&args.dir, &cache, &given, &args.from_iso)?;
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
    if !refused.is_empty() {
        let files: Vec<String> = locked
            .iter()
            .map(|l| l.file.display().to_string())
            .collect();
        return Err(AppError::failure(
            anyhow::anyhow!(
                "{} index entries of {} name other content than the lock ({}) names for them, \
                 and were not imported: {}",
                refused.len(),
                args.dir.display(),
                files.join(", "),
                refused.join(", ")
            ),
            Some(format!(
                "DIR was altered, or exported for another lock: export again with `cks-iso cache \
                 export --locked {}` where the lock was written, and import that; {}",
                files[0],
                match corrupt.is_empty() {
                    true => "the other entries were imported",
                    false => "some blobs are corrupt too (named above)",
                }
            )),
        ));
    }
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
