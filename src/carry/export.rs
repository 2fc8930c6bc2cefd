//! `cache export`: carrying exactly what some locks need across an air gap, or with `--minus`
//! only what the far side does not hold yet (a delta, described in `delta.json`).
//!
//! It copies blob by blob through [`Cache::copy_from`], which hashes while copying and renames
//! only a verified blob into place, and writes index entries after the blobs they name: an
//! interrupted export leaves a smaller cache, never a half blob or an entry naming nothing.

use std::collections::BTreeMap;
use std::path::Path;

use super::error::Kind;
use super::{CarryError, Locked, delta::Held, writable};
use crate::cache::{Assumed, Cache, Delta, Needed, Needs, Totals, lock_id};
use crate::reporter::Reporter;

/// What an export wrote.
pub struct Exported {
    /// Blobs carried.
    pub blobs: usize,
    /// Their bytes.
    pub bytes: u64,
    /// How many of them were not in the output already.
    pub copied: usize,
    /// Index entries the locks need.
    pub keys: usize,
    /// With `--minus`: the delta written beside the blobs.
    pub delta: Option<Delta>,
}

/// Writes what `locks` need from `cache` into `output`, laid out as a cache, leaving out what
/// the `--minus` files hold (`held`).
pub fn export(
    cache: &Cache,
    locks: &[Locked],
    held: &Held,
    output: &Path,
    reporter: &dyn Reporter,
) -> Result<Exported, CarryError> {
    let mut needs = Needs::default();
    for Locked { lock, .. } in locks {
        needs.extend(cache.needs(lock));
    }
    let full = Totals {
        blobs: needs.blobs.len(),
        bytes: needs.blobs.iter().filter_map(|n| n.size).sum(),
    };
    let (assumed, carried): (Vec<_>, Vec<_>) = std::mem::take(&mut needs.blobs)
        .into_iter()
        .partition(|n| held.digests.contains_key(&n.digest));
    needs.blobs = carried;
    if let Some(first) = needs.missing().next() {
        return Err(CarryError::from(Kind::Missing {
            what: first.what.clone(),
            digest: first.digest.clone(),
            problem: first.problem.clone().unwrap_or_default(),
            cache: cache.root().to_owned(),
            more: needs.missing().count() - 1,
            locked: locks[0].file.clone(),
        }));
    }
    writable(output).map_err(|source| {
        CarryError::from(Kind::Output {
            dir: output.to_owned(),
            source,
        })
    })?;
    let out = Cache::new(output);
    let (copied, bytes) = copy(cache, &out, &needs.blobs, reporter)?;
    remember(cache, &out, &needs, held)?;
    let mut exported = Exported {
        blobs: needs.blobs.len(),
        bytes,
        copied,
        keys: needs.keys.len(),
        delta: None,
    };
    if held.minus.is_empty() {
        return Ok(exported);
    }
    let delta = Delta {
        format: crate::cache::DELTA_FORMAT,
        locks: locks.iter().map(|l| lock_id(&l.lock)).collect(),
        minus: held.minus.clone(),
        assumes: assumed
            .iter()
            .map(|n| assumption(n, held.digests[&n.digest].clone()))
            .collect(),
        carries: (needs.blobs.iter())
            .map(|n| assumption(n, String::new()))
            .collect(),
        carried: Totals {
            blobs: needs.blobs.len(),
            bytes,
        },
        full,
    };
    delta.write(output)?;
    exported.delta = Some(delta);
    Ok(exported)
}

/// A needed blob as a delta lists it, held by `from` (empty for one it carries).
fn assumption(n: &Needed, from: String) -> Assumed {
    Assumed {
        digest: n.digest.clone(),
        size: n.size,
        what: n.what.clone(),
        from,
    }
}

/// Copies `blobs` from `cache` into `out`; how many were new there, and the bytes copied.
fn copy(
    cache: &Cache,
    out: &Cache,
    blobs: &[Needed],
    reporter: &dyn Reporter,
) -> Result<(usize, u64), CarryError> {
    let progress = reporter.bytes(&format!("exporting {} blob(s)", blobs.len()));
    progress.start(blobs.iter().filter_map(|n| n.size).sum());
    let (mut copied, mut bytes) = (0, 0);
    for blob in blobs {
        let (size, present) = out
            .copy_from(cache, &blob.digest, blob.size)
            .map_err(|source| {
                CarryError::from(Kind::Source {
                    what: blob.what.clone(),
                    cache: cache.root().to_owned(),
                    source,
                })
            })?;
        progress.advance(size);
        bytes += size;
        copied += usize::from(!present);
    }
    progress.finish();
    Ok((copied, bytes))
}

/// Writes the index entries the locks need into `out`, after their blobs; those whose blob the
/// far side holds come with that blob, not with the delta.
fn remember(cache: &Cache, out: &Cache, needs: &Needs, held: &Held) -> Result<(), CarryError> {
    let notes: BTreeMap<String, _> = cache
        .index()?
        .into_iter()
        .map(|e| (e.key.clone(), e))
        .collect();
    for key in &needs.keys {
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
        out.remember(&key.key, &key.digest, size, note)?;
    }
    Ok(())
}
