//! Deltas across the air gap: what `--minus` files say the far side holds (for `export`), what
//! `import` of a delta checks, and the ISOs `build --from-iso` takes content from. The cache and
//! ISO work is [`crate::cache::IsoSource`] and [`crate::cache::Delta`].

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::error::Kind;
use super::{CarryError, Locked, human};
use crate::cache::{Cache, Delta, IsoSource, Members, Minus, lock_id};
use crate::image::Digest;
use crate::lock::Lock;

/// What the far side holds, by digest, with the `--minus` file that holds each.
pub struct Held {
    /// Each blob held, and the file that holds it.
    pub digests: BTreeMap<Digest, String>,
    /// The `--minus` files, as the delta records them.
    pub minus: Vec<Minus>,
}

/// The file name alone, as a delta records it.
pub(super) fn name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Whether `path` starts like a lock (JSON) rather than an ISO.
fn is_lock(path: &Path) -> Result<bool, CarryError> {
    let mut head = Vec::new();
    crate::input::open_regular(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(|source| {
            CarryError::from(Kind::MinusUnreadable {
                path: path.to_owned(),
                source,
            })
        })?;
    Ok(head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'))
}

/// The ISO at `path`, its archives indexed as `members` says (hashed for what a delta assumes
/// the far side holds: never a member's name alone) and its other files hashed (for seeding,
/// the small ones).
fn iso_digests(path: &Path, members: Members) -> Result<IsoSource, CarryError> {
    let unreadable = |source| {
        CarryError::from(Kind::Iso {
            path: path.to_owned(),
            source,
        })
    };
    let mut source = IsoSource::open(path, members).map_err(unreadable)?;
    // Files are found by their sha256, as `cache export --minus` found them. Seeding needs only
    // the small ones (signatures, certificates: the lock knows no size for them): it finds the
    // others by their size and hashes them as it stores them, reading each once.
    let up_to = match members {
        Members::Hashed => u64::MAX,
        Members::Named => IsoSource::SMALL,
    };
    source.hash_files(up_to).map_err(unreadable)?;
    Ok(source)
}

/// Reads each `--minus` file: a lock holds what its export carried (what it needs, read from
/// this cache), an ISO what [`IsoSource`] finds in it (archives' blobs, every other file hashed).
pub fn held(cache: &Cache, minus: &[PathBuf]) -> Result<Held, CarryError> {
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
            false => ("iso", iso_digests(path, Members::Hashed)?.digests()),
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
    locks: &[Locked],
    from_iso: &[PathBuf],
) -> Result<(), CarryError> {
    let Some(delta) = Delta::read(dir).map_err(|e| CarryError::from(Kind::Delta(e)))? else {
        return Ok(());
    };
    if let Some(Locked { file, .. }) = locks
        .iter()
        .find(|l| !delta.locks.contains(&lock_id(&l.lock)))
    {
        return Err(CarryError::from(Kind::OtherLock {
            dir: dir.to_owned(),
            file: file.clone(),
        }));
    }
    let isos = (from_iso.iter())
        .map(|path| Ok(iso_digests(path, Members::Hashed)?.digests()))
        .collect::<Result<Vec<_>, CarryError>>()?;
    let in_iso = |d: &Digest| isos.iter().any(|s| s.contains(d));
    let from_isos: Vec<&str> = (delta.minus.iter())
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
        return Err(CarryError::from(Kind::Absent {
            dir: dir.to_owned(),
            count: absent.len(),
            cache: cache.root().to_owned(),
            isos: match from_iso.is_empty() {
                true => String::new(),
                false => format!(" nor {}", shown(from_iso)),
            },
            what: first.what.clone(),
            digest: first.digest.clone(),
            from: first.from.clone(),
        }));
    }
    let first = from_isos.first().copied().unwrap_or_default();
    match later.0 {
        0 => tracing::info!(
            "{}: every blob the delta assumes is at hand ({} blob(s))",
            dir.display(),
            delta.assumes.len()
        ),
        n => tracing::info!(
            "{} leaves out {n} blob(s), {}, that {} holds: build with `--from-iso {first}` (or \
             check it now with `cks-iso cache import {} --from-iso {first}`)",
            dir.display(),
            human(later.1),
            from_isos.join(", "),
            dir.display(),
        ),
    }
    Ok(())
}

/// The paths, joined by `, `.
fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `build --locked LOCK --from-iso ISO…`: adds to the cache what `lock` needs and the ISOs hold
/// (verified); offline, fails naming what is still missing and the export that would bring it.
pub fn from_iso(
    cache: &Cache,
    lock: &Lock,
    locked: &Path,
    isos: &[PathBuf],
    offline: bool,
) -> Result<(), CarryError> {
    for path in isos {
        // Members by name: what is seeded is hashed as the cache stores it, and a member is read
        // only when it is copied.
        let seeded = iso_digests(path, Members::Named)?.seed(cache, lock)?;
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
    Err(CarryError::from(Kind::Offline {
        locked: locked.to_owned(),
        count: missing.len(),
        cache: cache.root().to_owned(),
        isos: shown(isos),
        listed: (missing.iter().take(5))
            .map(|n| format!("{} {}", n.what, n.digest))
            .collect(),
        minus: isos
            .iter()
            .map(|p| format!("--minus {}", name(p)))
            .collect(),
    }))
}
