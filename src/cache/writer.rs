//! A blob written into the cache as it streams in, for writers that get the bytes in chunks (the
//! registry client's downloads), so that only the cache gives a blob its final name.
//!
//! The writer is a [`Sink`]: it appends each chunk to a private temporary file beside the final
//! name (pid-stamped by [`crate::atomic::AtomicFile`], so `atomic::sweep_stale` and `cache verify
//! --fix` know it), hashes it in the same pass, and keeps the count of bytes written, which is
//! where a resumed `Range` request starts. Memory does not grow with the blob.
//! [`BlobWriter::commit`] gives the file the blob's name only when its digest and size are the
//! expected ones; a writer dropped uncommitted (or that fails to verify) removes its file.

use std::io;
use std::path::Path;

use super::{BLOBS, Cache, CacheError};
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
    /// The temporary file, for messages when the disk fails.
    pub fn temp_path(&self) -> &Path {
        self.sink.temp_path()
    }

    /// The digest of what was written so far.
    pub fn digest(&self) -> Digest {
        Digest::parse(&format!("sha256:{}", self.sink.sha256())).expect("sha256 hex is a digest")
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
}
