//! Looking after a cache that other processes may be using at the same time: listing what is
//! there, rehashing it, and removing blobs and index entries without ever removing a file another
//! process is writing or has just put in place.
//!
//! Writers only ever create temporary names (`.<name>.<random>.partial` or `.link`) and rename
//! them into place, so only final names are removed here, and a temporary file counts as stale
//! (left by a killed process) only when nothing touched it for an hour (its ctime: writing,
//! linking and renaming all update it). A blob found corrupt is first renamed aside and removed
//! only if it is still the very file that was hashed; had another process replaced it meanwhile
//! (with a verified copy), that copy is put back. An index entry is removed the same way, only if
//! its content is still what was judged. No network.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::INDEX;
use super::{BLOBS, Cache, CacheError, Stamp};
use crate::image::{Digest, Hashing};

/// A temporary file untouched this long was left by a process that is gone.
pub const STALE_AFTER: Duration = Duration::from_secs(3600);

/// A blob under its final name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFile {
    /// Its name.
    pub digest: Digest,
    /// Its size.
    pub size: u64,
}

/// An index entry as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// `url:…` or `tag:…`.
    pub key: String,
    /// The blob it names.
    pub digest: Digest,
    /// The blob's size.
    pub size: u64,
    /// Where it came from.
    pub note: String,
    /// The entry's file.
    pub path: PathBuf,
    /// The file's bytes, to remove it only while unchanged.
    raw: Vec<u8>,
}

/// A file in `blobs/` or `index/` that is neither a blob nor an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stray {
    /// Where.
    pub path: PathBuf,
    /// Bytes.
    pub size: u64,
    /// A temporary file nothing touched for [`STALE_AFTER`].
    pub stale: bool,
    /// A temporary file (dot name); otherwise a file cks-iso did not write.
    pub temporary: bool,
}

/// What rehashing a blob found.
#[derive(Debug)]
pub struct Rehashed {
    /// The digest of the content.
    pub actual: Digest,
    /// The bytes read.
    pub size: u64,
    stamp: Stamp,
}

impl Cache {
    /// Every blob under its final name, sorted; strays (temporary and unknown files) apart.
    pub fn blob_files(&self) -> Result<(Vec<BlobFile>, Vec<Stray>), CacheError> {
        let mut blobs = Vec::new();
        let mut strays = Vec::new();
        for (path, name, meta) in files_in(&self.root.join(BLOBS))? {
            match Digest::from_hex(&name) {
                Ok(digest) if meta.is_file() => blobs.push(BlobFile {
                    digest,
                    size: meta.len(),
                }),
                _ => strays.push(stray(path, &name, &meta, SystemTime::now())),
            }
        }
        blobs.sort_by(|a, b| a.digest.cmp(&b.digest));
        Ok((blobs, strays))
    }

    /// Every index entry that parses, sorted by key; the rest are strays.
    pub fn index_files(&self) -> Result<(Vec<IndexEntry>, Vec<Stray>), CacheError> {
        let mut entries = Vec::new();
        let mut strays = Vec::new();
        for (path, name, meta) in files_in(&self.root.join(INDEX))? {
            let parsed = match name.starts_with('.') || !meta.is_file() {
                true => None,
                false => std::fs::read(&path)
                    .ok()
                    .and_then(|raw| parse_entry(&path, raw)),
            };
            match parsed {
                Some(entry) if self.index_path(&entry.key) == path => entries.push(entry),
                _ => strays.push(stray(path, &name, &meta, SystemTime::now())),
            }
        }
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        Ok((entries, strays))
    }

    /// Every index entry, for lookups; unreadable ones left out.
    pub fn index(&self) -> Result<Vec<IndexEntry>, CacheError> {
        Ok(self.index_files()?.0)
    }

    /// Hashes the stored blob, streaming: memory does not grow with its size.
    pub fn rehash(&self, digest: &Digest) -> Result<Rehashed, CacheError> {
        let mut file = self.open(digest)?;
        let path = self.blob_path(digest);
        let stamp = Stamp::of(&file.metadata().map_err(|e| CacheError::io(&path, e))?);
        let mut hashing = Hashing::new(&mut file);
        let mut buf = vec![0; 256 * 1024];
        loop {
            match hashing.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => return Err(CacheError::io(&path, source)),
            }
        }
        Ok(Rehashed {
            actual: hashing.digest(),
            size: hashing.count(),
            stamp,
        })
    }

    /// Removes the blob `digest` if it is still the file `rehashed` read; returns whether it did.
    pub fn remove_corrupt(&self, digest: &Digest, rehashed: &Rehashed) -> Result<bool, CacheError> {
        remove_if(&self.blob_path(digest), |file| {
            file.metadata()
                .is_ok_and(|m| Stamp::of(&m) == rehashed.stamp)
        })
    }

    /// Removes the blob `digest` whatever its content (nothing needs it); returns its size, or
    /// `None` when it was already gone.
    pub fn remove_blob(&self, digest: &Digest) -> Result<Option<u64>, CacheError> {
        let path = self.blob_path(digest);
        let size = self.size_of(digest);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                self.verified().remove(digest);
                Ok(size)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(CacheError::io(&path, source)),
        }
    }

    /// Removes the index entry if it still says what it said when read; returns whether it did.
    pub fn forget(&self, entry: &IndexEntry) -> Result<bool, CacheError> {
        remove_if(&entry.path, |file| {
            let mut now = Vec::new();
            file.take(entry.raw.len() as u64 + 1)
                .read_to_end(&mut now)
                .is_ok_and(|_| now == entry.raw)
        })
    }

    /// Removes a stray file (a stale temporary); returns whether it did.
    pub fn remove_stray(&self, stray: &Stray) -> Result<bool, CacheError> {
        match std::fs::remove_file(&stray.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(CacheError::io(&stray.path, source)),
        }
    }

    /// Copies the blob `digest` from `from` into this cache, hashing it on the way
    /// ([`Cache::put`]: atomic, nothing left on a mismatch). Returns its size and whether it was
    /// already here.
    pub fn copy_from(
        &self,
        from: &Cache,
        digest: &Digest,
        size: Option<u64>,
    ) -> Result<(u64, bool), CacheError> {
        let size = size.or_else(|| from.size_of(digest));
        if let Some(found) = self.size_of(digest)
            && size.is_none_or(|size| size == found)
        {
            return Ok((found, true));
        }
        let file = from.open(digest)?;
        Ok((self.put(digest, size, file)?, false))
    }
}

/// Every directory entry of `dir` with its metadata (none when `dir` does not exist).
fn files_in(dir: &Path) -> Result<Vec<(PathBuf, String, Metadata)>, CacheError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(CacheError::io(dir, source)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| CacheError::io(dir, source))?;
        let path = entry.path();
        // Gone since listed: someone else's temporary file, renamed or removed.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        out.push((path, entry.file_name().to_string_lossy().into_owned(), meta));
    }
    Ok(out)
}

/// Judges a file that is neither a blob nor an entry, as of `now`.
fn stray(path: PathBuf, name: &str, meta: &Metadata, now: SystemTime) -> Stray {
    use std::os::unix::fs::MetadataExt;
    let temporary = name.starts_with('.');
    let changed = SystemTime::UNIX_EPOCH
        + Duration::from_secs(u64::try_from(meta.ctime()).unwrap_or_default());
    let idle = now.duration_since(changed).unwrap_or_default();
    Stray {
        path,
        size: meta.len(),
        stale: temporary && idle >= STALE_AFTER,
        temporary,
    }
}

/// `"sha256:<hex> <size>\n<key>\n<note>\n"`.
fn parse_entry(path: &Path, raw: Vec<u8>) -> Option<IndexEntry> {
    let text = std::str::from_utf8(&raw).ok()?;
    let mut lines = text.lines();
    let (digest, size) = lines.next()?.split_once(' ')?;
    let key = lines.next()?.to_owned();
    let note = lines.next().unwrap_or_default().to_owned();
    Some(IndexEntry {
        key,
        digest: Digest::parse(digest).ok()?,
        size: size.parse().ok()?,
        note,
        path: path.to_owned(),
        raw: raw.clone(),
    })
}

/// Renames `path` aside, and removes it there if `still` holds for it; otherwise (another process
/// replaced it since it was judged) puts it back unless something newer took its name.
fn remove_if(path: &Path, still: impl FnOnce(&File) -> bool) -> Result<bool, CacheError> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let aside = path.with_file_name(format!(".{name}.{}.removing", fastrand::u64(..)));
    match std::fs::rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(source) => return Err(CacheError::io(path, source)),
    }
    let same = File::open(&aside).is_ok_and(|file| still(&file));
    if same {
        std::fs::remove_file(&aside).map_err(|source| CacheError::io(&aside, source))?;
        return Ok(true);
    }
    // A hard link does not replace a file that appeared under the name meanwhile.
    let _ = std::fs::hard_link(&aside, path);
    let _ = std::fs::remove_file(&aside);
    Ok(false)
}

#[cfg(test)]
mod tests;
