//! A blob written into the cache as it streams in, for writers that get the bytes in chunks (the
//! registry client's downloads), so that only the cache gives a blob its final name.
//!
//! The writer is a [`Sink`]: it appends each chunk to a private temporary file beside the final
//! name (pid-stamped by [`crate::atomic::AtomicFile`], so `atomic::sweep_stale` and `cache verify
//! --fix` know it), hashes it in the same pass, and keeps the count of bytes written, which is
//! where a resumed `Range` request starts. Memory does not grow with the blob.
//! [`BlobWriter::commit`] gives the file the blob's name only when its digest and size are the
//! expected ones; a writer dropped uncommitted (or that fails to verify) removes its file.
//!
//! [`BlobParts`] is the same for a blob whose bytes arrive out of order (ranged downloads write
//! parts at their offsets): the file is hashed from its start when every part is in, then named
//! under the same rule.

use std::fs::File;
use std::io::{self, Read as _, Seek as _};
use std::path::Path;

use sha2::{Digest as _, Sha256};

use super::{BLOBS, Cache, CacheError};
use crate::atomic::AtomicFile;
use crate::fetch::{FileSink, Sink};
use crate::image::Digest;

/// The blob `digest` being written; see the module documentation.
#[derive(Debug)]
pub struct BlobWriter {
    cache: Cache,
    digest: Digest,
    sink: FileSink,
}

impl Cache {
    /// Starts writing the blob `digest` under a temporary name.
    pub fn blob_writer(&self, digest: &Digest) -> Result<BlobWriter, CacheError> {
        let dir = self.root.join(BLOBS);
        std::fs::create_dir_all(&dir).map_err(|source| CacheError::io(&dir, source))?;
        let sink = FileSink::create(&self.blob_path(digest))
            .map_err(|source| CacheError::io(&dir, source))?;
        Ok(BlobWriter {
            cache: self.clone(),
            digest: digest.clone(),
            sink,
        })
    }
}

impl BlobWriter {
    /// Stops the download one byte past `size`, the blob's declared size ([`Sink::bound`]).
    pub fn bounded(mut self, size: u64) -> Self {
        self.sink = self.sink.with_bound(Some(size));
        self
    }

    /// The temporary file, for messages when the disk fails.
    pub fn temp_path(&self) -> &Path {
        self.sink.temp_path()
    }

    /// The digest of what was written so far.
    pub fn digest(&self) -> Digest {
        Digest::sha256(self.sink.sha256())
    }

    /// Gives the blob its final name if what was written has its digest and, when given, `size`
    /// bytes (without waiting for the disk, see [`FileSink::commit_unsynced`]), and records it as
    /// verified by this process; returns the size. Otherwise the temporary file is removed and
    /// the error is [`CacheError::Mismatch`], naming both digests and sizes.
    pub fn commit(self, size: Option<u64>) -> Result<u64, CacheError> {
        let (actual, written) = (self.digest(), self.sink.written());
        if actual != self.digest || size.is_some_and(|s| s != written) {
            return Err(CacheError::Mismatch {
                expected: self.digest,
                actual,
                expected_size: size,
                actual_size: written,
            });
        }
        let target = self.sink.target().to_owned();
        self.sink
            .set_mode(0o644)
            .map_err(|source| CacheError::io(self.sink.temp_path(), source))?;
        self.sink
            .commit_unsynced()
            .map_err(|source| CacheError::io(&target, source))?;
        self.cache.mark_verified(&self.digest);
        Ok(written)
    }
}

/// The registry's downloader streams into it, resuming from [`Sink::written`].
impl Sink for BlobWriter {
    fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.sink.write(chunk)
    }

    fn written(&self) -> u64 {
        self.sink.written()
    }

    fn restart(&mut self) -> io::Result<()> {
        self.sink.restart()
    }

    fn path(&self) -> Option<&Path> {
        self.sink.path()
    }

    fn bound(&self) -> Option<u64> {
        self.sink.bound()
    }
}

/// The blob `digest` of `size` bytes, written at offsets; see the module documentation.
#[derive(Debug)]
pub struct BlobParts {
    cache: Cache,
    digest: Digest,
    size: u64,
    out: AtomicFile,
}

impl Cache {
    /// Starts the blob `digest` as a temporary file of `size` bytes, to be filled at offsets.
    pub fn blob_parts(&self, digest: &Digest, size: u64) -> Result<BlobParts, CacheError> {
        let dir = self.root.join(BLOBS);
        std::fs::create_dir_all(&dir).map_err(|source| CacheError::io(&dir, source))?;
        let mut out = AtomicFile::create(&self.blob_path(digest))
            .map_err(|source| CacheError::io(&dir, source))?;
        out.file()
            .set_len(size)
            .map_err(|source| CacheError::io(&dir, source))?;
        Ok(BlobParts {
            cache: self.clone(),
            digest: digest.clone(),
            size,
            out,
        })
    }
}

impl BlobParts {
    /// The temporary file, to write parts into at their offsets (`pwrite`).
    pub fn file(&mut self) -> &File {
        self.out.file()
    }

    /// The temporary file's path, for messages.
    pub fn temp_path(&self) -> &Path {
        self.out.temp_path()
    }

    /// Hashes the file from its start (blocking: run it off the async threads) and gives it the
    /// blob's name only when digest and size match, recording it as verified; otherwise the file
    /// is removed and the error is [`CacheError::Mismatch`].
    pub fn commit(mut self) -> Result<(), CacheError> {
        let temp = self.out.temp_path().to_owned();
        let (actual, written) =
            hash_from_start(self.out.file()).map_err(|source| CacheError::io(&temp, source))?;
        if actual != self.digest || written != self.size {
            return Err(CacheError::Mismatch {
                expected: self.digest,
                actual,
                expected_size: Some(self.size),
                actual_size: written,
            });
        }
        self.out
            .set_mode(0o644)
            .map_err(|source| CacheError::io(&temp, source))?;
        let target = self.out.target().to_owned();
        self.out
            .commit_unsynced()
            .map_err(|source| CacheError::io(&target, source))?;
        self.cache.mark_verified(&self.digest);
        Ok(())
    }
}

/// The digest and length of `file` read from its start.
fn hash_from_start(file: &mut File) -> io::Result<(Digest, u64)> {
    file.rewind()?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 1 << 20];
    let mut len = 0;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok((Digest::from_hasher(hasher), len))
}
