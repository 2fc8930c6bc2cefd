//! Where downloaded bytes go: written and hashed in one pass, so nothing is read twice.

use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};

use cks_iso_io::Sha256Sum;
use sha2::{Digest as _, Sha256};

use crate::atomic::AtomicFile;

/// A destination for a streamed body that can start over when a server ignores `Range`.
pub trait Sink: Send {
    /// Appends `chunk`.
    fn write(&mut self, chunk: &[u8]) -> io::Result<()>;
    /// Bytes written so far (where a resumed request starts).
    fn written(&self) -> u64;
    /// Drops everything written, to take a full body again.
    fn restart(&mut self) -> io::Result<()>;
    /// The file written to, for messages when the disk fails (none for memory).
    fn path(&self) -> Option<&Path> {
        None
    }
    /// Most bytes a body may have; one more fails the transfer as too large (manifests, tokens).
    fn limit(&self) -> Option<u64> {
        None
    }
    /// The size the body is declared to have (a blob's descriptor, a locked file): the transfer
    /// stops one byte past it, so a lying server's surplus is never read, and the caller's size
    /// check fails as on any other corruption.
    fn bound(&self) -> Option<u64> {
        None
    }
}

/// A file under a temporary name in its final directory, hashed as it is written.
#[derive(Debug)]
pub struct FileSink {
    file: AtomicFile,
    hasher: Sha256,
    written: u64,
    limit: Option<u64>,
    bound: Option<u64>,
}

impl FileSink {
    /// Starts a file that will become `target` on [`FileSink::commit`].
    pub fn create(target: &Path) -> io::Result<Self> {
        Ok(Self {
            file: AtomicFile::create(target)?,
            hasher: Sha256::new(),
            written: 0,
            limit: None,
            bound: None,
        })
    }

    /// Refuses a body of more than `limit` bytes ([`Sink::limit`]).
    pub fn with_limit(mut self, limit: u64) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Stops the transfer one byte past `size`, the declared size ([`Sink::bound`]).
    pub fn with_bound(mut self, size: Option<u64>) -> Self {
        self.bound = size;
        self
    }

    /// The temporary file, for content checks before commit.
    pub fn temp_path(&self) -> &Path {
        self.file.temp_path()
    }

    /// The final name.
    pub fn target(&self) -> &Path {
        self.file.target()
    }

    /// The sha256 of what was written.
    pub fn sha256(&self) -> Sha256Sum {
        Sha256Sum::from_hasher(self.hasher.clone())
    }

    /// Sets the mode the file will have.
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        self.file.set_mode(mode)
    }

    /// Flushes and gives the file its final name.
    pub fn commit(mut self) -> io::Result<PathBuf> {
        self.file.file().flush()?;
        self.file.commit()
    }

    /// Gives the file its final name without waiting for the disk
    /// ([`AtomicFile::commit_unsynced`]).
    pub fn commit_unsynced(mut self) -> io::Result<PathBuf> {
        self.file.file().flush()?;
        self.file.commit_unsynced()
    }
}

impl Sink for FileSink {
    fn path(&self) -> Option<&Path> {
        Some(self.file.target())
    }

    fn limit(&self) -> Option<u64> {
        self.limit
    }

    fn bound(&self) -> Option<u64> {
        self.bound
    }

    fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        if self
            .limit
            .is_some_and(|limit| self.written + chunk.len() as u64 > limit)
        {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                "body over the size limit",
            ));
        }
        self.file.file().write_all(chunk)?;
        self.hasher.update(chunk);
        self.written += chunk.len() as u64;
        Ok(())
    }

    fn written(&self) -> u64 {
        self.written
    }

    fn restart(&mut self) -> io::Result<()> {
        let file = self.file.file();
        file.set_len(0)?;
        file.rewind()?;
        self.hasher = Sha256::new();
        self.written = 0;
        Ok(())
    }
}

/// A small body held in memory, refused past `limit` bytes.
#[derive(Debug)]
pub(crate) struct MemSink {
    pub(crate) buf: Vec<u8>,
    pub(crate) limit: u64,
}

impl Sink for MemSink {
    fn limit(&self) -> Option<u64> {
        Some(self.limit)
    }

    fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        if self.buf.len() as u64 + chunk.len() as u64 > self.limit {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                "body over the size limit",
            ));
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    fn written(&self) -> u64 {
        self.buf.len() as u64
    }

    fn restart(&mut self) -> io::Result<()> {
        self.buf.clear();
        Ok(())
    }
}
