//! What a URL or an image tag named when it was last fetched, and whole files kept as blobs: the
//! part of the cache that lets a build run with no network (`--offline`) and a locked build skip
//! downloads it already has.
//!
//! ```text
//! <root>/index/<sha256 of key>     "sha256:<hex> <size>\n<key>\n<note>\n", written atomically
//! ```
//!
//! Keys are [`Key`]s (`url:<upstream URL>` for downloads, manifests and kubeadm's constants,
//! `tag:<reference>` for what a tag resolved to, and the signature material's keys). The note says where it really came from (the
//! legacy URL used after a 404). An entry whose key line differs (a hash collision) or whose blob
//! is gone or of another size counts as absent. Downloaded files go into `blobs/` like image
//! blobs: linked when the file system allows it (no byte copied), else copied and hashed.

use std::io::{self, Read as _, Write};
use std::path::{Path, PathBuf};

use super::{Cache, CacheError, INDEX, Key};
use crate::atomic::AtomicFile;
use crate::image::{BlobSource, Digest, Hashing, Opened};
use cks_iso_io::Sha256Sum;

/// An index entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recalled {
    /// The blob the key named.
    pub digest: Digest,
    /// Its size.
    pub size: u64,
    /// Where it came from.
    pub note: String,
}

impl Cache {
    pub(super) fn index_path(&self, key: &str) -> PathBuf {
        self.root
            .join(INDEX)
            .join(Sha256Sum::of(key.as_bytes()).to_string())
    }

    /// Records that `key` named the blob `digest` of `size` bytes (`note`: where from).
    pub fn remember(
        &self,
        key: &Key,
        digest: &Digest,
        size: u64,
        note: &str,
    ) -> Result<(), CacheError> {
        let key = key.to_string();
        let key = key.as_str();
        let path = self.index_path(key);
        let dir = path.parent().expect("under the root");
        std::fs::create_dir_all(dir).map_err(|source| CacheError::io(dir, source))?;
        let io = |source| CacheError::io(&path, source);
        let mut out = AtomicFile::create(&path).map_err(io)?;
        let line = |s: &str| s.replace('\n', " ");
        write!(
            out.file(),
            "{digest} {size}\n{}\n{}\n",
            line(key),
            line(note)
        )
        .map_err(io)?;
        out.set_mode(0o644).map_err(io)?;
        out.commit_unsynced().map_err(io)?;
        Ok(())
    }

    /// What `key` named, if recorded and its blob is still there with that size.
    pub fn recall(&self, key: &Key) -> Option<Recalled> {
        let key = key.to_string();
        let mut text = String::new();
        super::guard::open_nofollow(&self.index_path(&key))
            .ok()?
            .read_to_string(&mut text)
            .ok()?;
        let mut lines = text.lines();
        let (digest, size) = lines.next()?.split_once(' ')?;
        if lines.next()? != key.replace('\n', " ") {
            return None;
        }
        let recalled = Recalled {
            digest: Digest::parse(digest).ok()?,
            size: size.parse().ok()?,
            note: lines.next().unwrap_or_default().to_owned(),
        };
        (self.size_of(&recalled.digest) == Some(recalled.size)).then_some(recalled)
    }

    /// Every index entry: key and what it names (blobs present or not).
    pub fn index_entries(&self) -> Result<Vec<(String, Digest, u64)>, CacheError> {
        let dir = self.root.join(INDEX);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(CacheError::io(&dir, source)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| CacheError::io(&dir, source))?;
            let mut text = String::new();
            let read = super::guard::open_nofollow(&entry.path())
                .and_then(|mut file| file.read_to_string(&mut text));
            if read.is_err() {
                continue;
            }
            let mut lines = text.lines();
            let parsed = lines
                .next()
                .and_then(|l| l.split_once(' '))
                .and_then(|(d, s)| Some((Digest::parse(d).ok()?, s.parse::<u64>().ok()?)));
            if let (Some((digest, size)), Some(key)) = (parsed, lines.next()) {
                out.push((key.to_owned(), digest, size));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Keeps the finished file `path`, whose sha256 this process computed as `digest`, as a blob:
    /// a hard link when possible, else a verified copy.
    pub fn keep_file(&self, path: &Path, digest: &Digest) -> Result<u64, CacheError> {
        let size = std::fs::metadata(path)
            .map_err(|source| CacheError::io(path, source))?
            .len();
        if self.size_of(digest) == Some(size) {
            return Ok(size);
        }
        let dir = self.root.join(super::BLOBS);
        std::fs::create_dir_all(&dir).map_err(|source| CacheError::io(&dir, source))?;
        let temp = dir.join(format!(".{}.{}.link", digest.hex(), fastrand::u64(..)));
        if std::fs::hard_link(path, &temp).is_ok() {
            let target = self.blob_path(digest);
            let renamed = std::fs::rename(&temp, &target);
            let _ = std::fs::remove_file(&temp);
            renamed.map_err(|source| CacheError::io(&target, source))?;
            self.mark_verified(digest);
            return Ok(size);
        }
        let file = std::fs::File::open(path).map_err(|source| CacheError::io(path, source))?;
        self.put(digest, Some(size), file)
    }

    /// Copies the blob `digest` to a new file `dest` with `mode`, hashing it on the way unless
    /// this process verified that very file; a mismatch leaves nothing at `dest`.
    pub fn copy_out(&self, digest: &Digest, dest: &Path, mode: u32) -> Result<u64, CacheError> {
        let io = |source| CacheError::io(dest, source);
        let mut out = AtomicFile::create(dest).map_err(io)?;
        let opened = self
            .open_for_copy(digest)
            .map_err(|source| CacheError::Source {
                digest: digest.clone(),
                source,
            })?;
        let size = match opened {
            Opened::Verified(mut file) => io::copy(&mut file, out.file()).map_err(io)?,
            Opened::Unverified(reader) => {
                let mut hashing = Hashing::new(reader);
                let size = io::copy(&mut hashing, out.file()).map_err(io)?;
                if hashing.digest() != *digest {
                    return Err(CacheError::Mismatch {
                        expected: digest.clone(),
                        actual: hashing.digest(),
                        expected_size: self.size_of(digest),
                        actual_size: size,
                    });
                }
                self.mark_verified(digest);
                size
            }
        };
        out.set_mode(mode).map_err(io)?;
        out.commit_unsynced().map_err(io)?;
        Ok(size)
    }
}
