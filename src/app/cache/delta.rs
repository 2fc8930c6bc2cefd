//! Deltas across the air gap, wired: what `--minus` files say the far side holds (for `cache
//! export`), what `cache import` of a delta checks, and the ISO `build --from-iso` takes content
//! from. The cache and ISO work is [`crate::cache::IsoSource`] and [`crate::cache::Delta`].

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::{AppError, failed, human};
use crate::cache::{Cache, Delta, IsoSource, Minus, lock_id};
use crate::image::Digest;
use crate::lock::Lock;

/// What the far side holds, by digest, with the `--minus` file that holds each.
pub(super) struct Held {
    pub(super) digests: BTreeMap<Digest, String>,
    pub(super) minus: Vec<Minus>,
}

/// The file name alone, as a delta records it.
fn name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Whether `path` starts like a lock (JSON) rather than an ISO.
fn is_lock(path: &Path) -> Result<bool, AppError> {
    let mut head = Vec::new();
    crate::input::open_regular(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(|e| {
            AppError::usage(
                anyhow::Error::new(e).context(format!("cannot read {}", path.display())),
                Some("pass a cks-iso.lock or an ISO to --minus".into()),
            )
        })?;
    Ok(head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'))
}

fn unreadable_iso(path: &Path, e: crate::iso::read::ReadError) -> AppError {
    AppError::usage(
        anyhow::Error::new(e).context(format!("cannot read {} as an ISO", path.display())),
        Some("pass the ISO itself (not mounted), or a cks-iso.lock".into()),
    )
}

/// Reads each `--minus` file: a lock holds what its export carried (what it needs, read from
/// this cache), an ISO what [`IsoSource`] finds in it (archives' blobs, every other file hashed).
pub(super) fn held(cache: &Cache, minus: &[PathBuf]) -> Result<Held, AppError> {
    let mut held = Held {
        digests: BTreeMap::new(),
        minus: Vec::new(),
    };
    for path in minus {
        let file = name(path);
        let (kind, digests) = match is_lock(path)? {
            true => {
                let lock = crate::lock::source::read(path)?.0;
                ("lock", cache.needs(&lock).digests())
            }
            false => {
                let mut source = IsoSource::open(path).map_err(|e| unreadable_iso(path, e))?;
                source.hash_files().map_err(|e| unreadable_iso(path, e))?;
                ("iso", source.digests())
            }
        };
        for digest in digests {
            held.digests.entry(digest).or_insert_with(|| file.clone());
        }
        held.minus.push(Minus {
            file,
            kind: kind.to_owned(),
        });
    }
    Ok(held)
}

/// After a delta's blobs are imported: it is for one of `locks` (when given), and what it assumes
/// is in the cache or, for what an ISO holds, in the `--from-iso` ISOs (checked when given, else
/// said on stderr).
pub(super) fn check_import(
    dir: &Path,
    cache: &Cache,
    locks: &[(PathBuf, Lock)],
    from_iso: &[PathBuf],
) -> Result<(), AppError> {
    let delta = match Delta::read(dir) {
        Ok(Some(delta)) => delta,
        Ok(None) => return Ok(()),
        Err(e) => {
            return Err(AppError::failure(
                anyhow::anyhow!(e),
                Some("export the delta again with `cks-iso cache export --minus`".into()),
            ));
        }
    };
    if let Some((file, _)) = locks
        .iter()
        .find(|(_, lock)| !delta.locks.contains(&lock_id(lock)))
    {
        return Err(AppError::failure(
            anyhow::anyhow!(
                "{} is a delta for another lock than {}",
                dir.display(),
                file.display()
            ),
            Some(format!(
                "export the delta with `cks-iso cache export --locked {} --minus OLD -o DIR` \
                 where that lock was written",
                file.display()
            )),
        ));
    }
    let mut isos = Vec::new();
    for path in from_iso {
        let mut source = IsoSource::open(path).map_err(|e| unreadable_iso(path, e))?;
        source.hash_files().map_err(|e| unreadable_iso(path, e))?;
        isos.push(source.digests());
    }
    let in_iso = |d: &Digest| isos.iter().any(|s| s.contains(d));
    let from_isos: Vec<&str> = delta
        .minus
        .iter()
        .filter(|m| m.kind == "iso")
        .map(|m| m.file.as_str())
        .collect();
    let mut absent = Vec::new();
    let mut later = (0usize, 0u64);
    for a in &delta.assumes {
        if cache.size_of(&a.digest).is_some() || in_iso(&a.digest) {
            continue;
        }
        match from_isos.contains(&a.from.as_str()) && from_iso.is_empty() {
            true => {
                later.0 += 1;
                later.1 += a.size.unwrap_or(0);
            }
            false => absent.push(a),
        }
    }
    if let Some(first) = absent.first() {
        return Err(AppError::failure(
            anyhow::anyhow!(
                "{} assumes the far side holds {} blob(s) that neither the cache ({}){} has: \
                 first {} {} (held by {})",
                dir.display(),
                absent.len(),
                cache.root().display(),
                match from_iso.is_empty() {
                    true => String::new(),
                    false => format!(
                        " nor {}",
                        from_iso
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
                first.what,
                first.digest,
                first.from
            ),
            Some(format!(
                "import the carry of {} first (or pass that ISO with --from-iso), or export a \
                 full carry without --minus",
                first.from
            )),
        ));
    }
    if later.0 > 0 {
        tracing::info!(
            "{} leaves out {} blob(s), {}, that {} holds: build with `--from-iso {}` (or check \
             it now with `cks-iso cache import {} --from-iso {}`)",
            dir.display(),
            later.0,
            human(later.1),
            from_isos.join(", "),
            from_isos.first().copied().unwrap_or_default(),
            dir.display(),
            from_isos.first().copied().unwrap_or_default()
        );
    } else {
        tracing::info!(
            "{}: every blob the delta assumes is at hand ({} blob(s))",
            dir.display(),
            delta.assumes.len()
        );
    }
    Ok(())
}

/// `build --locked LOCK --from-iso ISO…`: adds to the cache what `lock` needs and the ISOs hold
/// (verified); offline, fails naming what is still missing and the export that would bring it.
pub(crate) fn from_iso(
    cache: &Cache,
    lock: &Lock,
    locked: &Path,
    isos: &[PathBuf],
    offline: bool,
) -> Result<(), AppError> {
    for path in isos {
        let mut source = IsoSource::open(path).map_err(|e| unreadable_iso(path, e))?;
        // Files are found by their sha256, as `cache export --minus` found them.
        source.hash_files().map_err(|e| unreadable_iso(path, e))?;
        let seeded = source.seed(cache, lock).map_err(failed)?;
        tracing::info!(
            "took {} blob(s), {}, from {} into the cache",
            seeded.blobs,
            human(seeded.bytes),
            path.display()
        );
    }
    let needs = cache.needs(lock);
    let missing: Vec<_> = needs.missing().collect();
    if !offline || (missing.is_empty() && !needs.incomplete) {
        return Ok(());
    }
    let minus: Vec<String> = isos
        .iter()
        .map(|p| format!("--minus {}", name(p)))
        .collect();
    let listed: Vec<String> = missing
        .iter()
        .take(5)
        .map(|n| format!("{} {}", n.what, n.digest))
        .collect();
    Err(AppError::failure(
        anyhow::anyhow!(
            "cannot build {} offline: {} blob(s) it needs are neither in the cache ({}) nor in {}: \
             {}{}",
            locked.display(),
            missing.len(),
            cache.root().display(),
            isos.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            listed.join(", "),
            match missing.len() {
                0..=5 => String::new(),
                n => format!(", and {} more", n - 5),
            }
        ),
        Some(format!(
            "where the lock was written, run `cks-iso cache export --locked {} {} -o DELTA`, carry \
             DELTA here and `cks-iso cache import DELTA --locked {}`",
            name(locked),
            minus.join(" "),
            name(locked)
        )),
    ))
}
