//! The content-addressed blob cache: every blob is stored under the digest it was verified
//! against, so a file found there can be trusted by its name alone.
//!
//! Upstream let containerd hold the content and raced its garbage collector. Here blobs (layers,
//! configs, and manifests and indexes too) live in a plain directory shared by all builds:
//!
//! ```text
//! <root>/                          default $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso
//!   blobs/sha256/<64 hex>          the blob's exact bytes, mode 0644
//!   blobs/sha256/.<hex>.<random>.partial   a blob being written (removed on failure or Ctrl-C)
//!   index/<sha256 of key>          which blob a URL or an image tag named (see [`index`])
//! ```
//!
//! Downloaded files (binaries, tarballs, manifests) are blobs too, so a locked or offline build
//! takes them from here.
//!
//! **Several processes at once** (builds, pulls, `cache` commands; `tests/it/build/crash_and_concurrency.rs`)
//! need no lock: every writer writes a private temporary name (with its process ID) and renames it
//! into place only when verified. A reader sees a blob whole or not at all; two writers of one
//! blob rename identical bytes over each other; index entries are replaced the same way. Only
//! `cache verify --fix` and `cache prune` remove final names. A process killed mid-write leaves
//! its temporary file, which nothing reads and `cache verify --fix` removes once it is stale.
//!
//! [`Cache::put`] streams a reader, and a [`BlobWriter`] the chunks a download brings (resumable
//! with `Range`), into a temporary file beside the final name while hashing it, and renames it
//! only when the digest (and the size, when known) match; otherwise the temporary file is removed
//! and the error names the expected and the actual digest. Nothing else names a blob. Memory
//! does not grow with blob size. A file under its final name is only ever replaced by a verified one (when it
//! has the wrong size, see below). No network.
//!
//! Blobs are renamed into place without waiting for the disk (see
//! [`crate::atomic::AtomicFile::commit_unsynced`]), so a power loss can leave one short or, rarely, damaged. Two
//! checks catch that without re-reading what this run wrote: [`Cache::contains_sized`] does not
//! count a blob whose size is not the descriptor's (it is fetched again and replaced), and
//! [`BlobSource::open_for_copy`] hands out as [`Opened::Verified`] only blobs this process hashed
//! and that are still the very file it hashed (same inode, size and modification time); blobs left
//! by earlier runs are hashed again as they are copied.
//!
//! Several processes may share one cache: writers only create temporary names and rename them
//! into place, and whatever removes blobs or entries (`cache verify --fix`, `cache prune`) touches
//! final names only and checks first that the file is still the one it judged (see `maint`).
//! What a lock needs from a cache is worked out in one place, `needs`.

mod delta;
mod error;
mod guard;
mod index;
mod iso_source;
mod key;
mod maint;
mod needs;
mod writer;

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::env;
use crate::fetch::Sink as _;
use crate::image::{BlobSource, Digest, Opened};
pub use delta::{
    Assumed, DELTA_FILE, Delta, DeltaError, FORMAT as DELTA_FORMAT, Minus, Totals, lock_id,
};
pub use error::CacheError;
pub use index::Recalled;
pub use iso_source::{IsoSource, Members, Seeded};
pub use key::Key;
pub use maint::{BlobFile, IndexEntry, Rehashed, STALE_AFTER, Stray};
pub use needs::{Needed, NeededKey, Needs};
pub use writer::BlobWriter;

/// The directory under the cache root that holds sha256 blobs.
const BLOBS: &str = "blobs/sha256";
/// The index's directory under the cache root (here, as `guard.rs` and `index.rs` both need it).
const INDEX: &str = "index";

/// A blob cache rooted at a directory. Clones share what this process has verified.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
    /// Blobs whose content this process hashed (stored by it, or confirmed by a copy), with the
    /// identity of the file it hashed.
    verified: Arc<Mutex<HashMap<Digest, Stamp>>>,
}

/// Which file, in which state: device, inode, size, modification time. A file replaced or
/// written to since it was hashed has another stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp(u64, u64, u64, i64, i64);

impl Stamp {
    fn of(meta: &Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self(
            meta.dev(),
            meta.ino(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
        )
    }
}

impl Cache {
    /// A cache at `root`; directories are created when the first blob is stored.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            verified: Arc::default(),
        }
    }

    fn verified(&self) -> std::sync::MutexGuard<'_, HashMap<Digest, Stamp>> {
        self.verified.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that the file now under `digest`'s name was hashed to `digest` by this process.
    pub(crate) fn mark_verified(&self, digest: &Digest) {
        if let Ok(meta) = std::fs::metadata(self.blob_path(digest)) {
            self.verified().insert(digest.clone(), Stamp::of(&meta));
        }
    }

    /// `$XDG_CACHE_HOME/cks-iso` when that is an absolute path, else `$HOME/.cache/cks-iso`.
    pub fn default_root() -> Result<PathBuf, CacheError> {
        root_from(env::XDG_CACHE_HOME.get_os(), env::HOME.get_os()).ok_or(CacheError::NoRoot)
    }

    /// Refuses a cache that another user owns or others can write, or whose own directories are
    /// symbolic links (see `guard`).
    pub fn check_safe(&self) -> Result<(), CacheError> {
        guard::check(&self.root)
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the blob `digest` is (or would be) stored.
    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join(BLOBS).join(digest.hex())
    }

    /// Whether the blob is present (and so was verified when stored).
    pub fn contains(&self, digest: &Digest) -> bool {
        self.size_of(digest).is_some()
    }

    /// Whether the blob is present with `size` bytes. One of another size (cut short by a power
    /// loss before the kernel wrote it out) does not count: it is fetched again and replaced.
    pub fn contains_sized(&self, digest: &Digest, size: u64) -> bool {
        match self.size_of(digest) {
            Some(found) if found == size => true,
            Some(found) => {
                tracing::warn!(
                    "cached blob {digest} has the wrong size: expected {}, found {}; fetching it \
                     again",
                    indicatif::HumanBytes(size),
                    indicatif::HumanBytes(found)
                );
                false
            }
            None => false,
        }
    }

    /// The size of the stored blob, if there is one.
    pub fn size_of(&self, digest: &Digest) -> Option<u64> {
        std::fs::symlink_metadata(self.blob_path(digest))
            .ok()
            .filter(|meta| meta.is_file())
            .map(|meta| meta.len())
    }

    /// Stores what `reader` yields as the blob `digest`, verifying digest and, when given, size.
    /// Returns the size. A blob already present (with that size) is kept and `reader` is not read.
    pub fn put(
        &self,
        digest: &Digest,
        size: Option<u64>,
        reader: impl Read,
    ) -> Result<u64, CacheError> {
        let target = self.blob_path(digest);
        if let Ok(meta) = std::fs::symlink_metadata(&target)
            && meta.is_file()
            && size.is_none_or(|size| size == meta.len())
        {
            return Ok(meta.len());
        }
        let mut writer = self.blob_writer(digest)?;
        // One byte more than announced is enough to know the source is too long.
        let limit = size.map_or(u64::MAX, |s| s.saturating_add(1));
        copy(&mut reader.take(limit), &mut writer, digest)?;
        writer.commit(size)
    }

    /// Stores `bytes` (a manifest, an index, a config) under their own digest.
    pub fn put_bytes(&self, bytes: &[u8]) -> Result<Digest, CacheError> {
        let digest = Digest::of(bytes);
        self.put(&digest, Some(bytes.len() as u64), bytes)?;
        Ok(digest)
    }

    /// Opens a stored blob for reading.
    pub fn open(&self, digest: &Digest) -> Result<File, CacheError> {
        let path = self.blob_path(digest);
        guard::open_nofollow(&path).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => CacheError::NotFound {
                digest: digest.clone(),
                root: self.root.clone(),
            },
            _ => CacheError::io(&path, source),
        })
    }
}

/// The XDG rule: a relative `XDG_CACHE_HOME` is ignored.
fn root_from(xdg: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let absolute = |value: Option<OsString>| value.map(PathBuf::from).filter(|p| p.is_absolute());
    absolute(xdg)
        .or_else(|| absolute(home).map(|home| home.join(".cache")))
        .map(|base| base.join("cks-iso"))
}

/// Copies `from` into `to`, telling a failing source from a failing disk.
fn copy(from: &mut impl Read, to: &mut BlobWriter, digest: &Digest) -> Result<(), CacheError> {
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(CacheError::Source {
                    digest: digest.clone(),
                    source,
                });
            }
        };
        to.write(&buf[..n])
            .map_err(|source| CacheError::io(to.temp_path(), source))?;
    }
}

impl Cache {
    /// [`Cache::open`] with the error as `io::Error`, for [`BlobSource`].
    fn open_io(&self, digest: &Digest) -> io::Result<File> {
        match Cache::open(self, digest) {
            Ok(file) => Ok(file),
            Err(CacheError::Io { source, .. }) => Err(source),
            Err(other) => Err(io::Error::new(io::ErrorKind::NotFound, other)),
        }
    }
}

impl BlobSource for Cache {
    fn open(&self, digest: &Digest) -> io::Result<Box<dyn Read + Send + '_>> {
        Ok(Box::new(self.open_io(digest)?))
    }

    fn open_for_copy(&self, digest: &Digest) -> io::Result<Opened<'_>> {
        let file = self.open_io(digest)?;
        let stamp = Stamp::of(&file.metadata()?);
        Ok(match self.verified().get(digest) == Some(&stamp) {
            true => Opened::Verified(file),
            false => Opened::Unverified(Box::new(file)),
        })
    }

    fn confirm(&self, digest: &Digest) {
        self.mark_verified(digest);
    }
}

#[cfg(test)]
mod tests;
