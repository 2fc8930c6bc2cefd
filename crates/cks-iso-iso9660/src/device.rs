//! The output device: a host file that reports every write to a [`Progress`], and the free-space
//! check done before the first byte is written.

use std::fs::File;
use std::io;
use std::path::Path;

use super::IsoError;
use super::hasher::ImageHash;
use super::splice::Splicer;
use super::writeback::WriteBack;
use cks_iso_io::progress::Progress;
use hadris_io::{Error, ErrorType};
use hadris_storage::host::FileDevice;
use hadris_storage::sync::BlockDevice;
use hadris_storage::{BlockIndex, BlockSize};

/// A [`FileDevice`] that counts what is written and hashes the image as it goes, so the ISO's
/// sha256 needs no second read of a multi-GiB file. Each write's bytes are assembled in a buffer
/// of the hasher's ([`ImageHash`]), which takes it over once written and hashes it on its own
/// thread, overlapped with the next writes.
///
/// With a [`Splicer`], the bytes written over spliced files' placeholders are replaced by the
/// files' real bytes in that buffer, before they reach the file and the hash.
pub(super) struct Counting<'p, 's> {
    inner: FileDevice,
    writeback: WriteBack,
    splicer: Option<Splicer<'s>>,
    /// Where a write that touches a spliced file is assembled once the hasher is gone.
    scratch: Vec<u8>,
    progress: &'p dyn Progress,
    /// The hasher, while writes arrive in ascending order.
    hash: Option<ImageHash>,
}

impl<'p, 's> Counting<'p, 's> {
    pub(super) fn new(
        file: File,
        progress: &'p dyn Progress,
        splicer: Option<Splicer<'s>>,
    ) -> io::Result<Self> {
        let hasher = ImageHash::start()?;
        Ok(Self {
            writeback: WriteBack::new(file.try_clone()?),
            inner: FileDevice::new(file)?,
            splicer,
            scratch: Vec::new(),
            progress,
            hash: Some(hasher),
        })
    }

    /// The splicer, to ask what failed or whether every spliced file was written whole.
    pub(super) fn splicer(&self) -> Option<&Splicer<'s>> {
        self.splicer.as_ref()
    }

    /// Takes the first failure of a spliced file's filler.
    pub(super) fn splice_failure(
        &mut self,
    ) -> Option<(String, Box<dyn std::error::Error + Send + Sync>)> {
        self.splicer.as_mut()?.failed.take()
    }

    /// The sha256 of the image, if every write came in order (gaps count as zeros). Waits for
    /// the hasher to catch up with the last write.
    pub(super) fn sha256(&mut self, len: u64) -> Option<cks_iso_io::Sha256Sum> {
        self.hash.take()?.finish(len)
    }

    /// `chunk` was written at `offset`: to the hasher, unless a write went back, which ends
    /// hashing (the caller then hashes the finished file).
    fn hash(&mut self, offset: u64, chunk: Vec<u8>) {
        match self.hash.as_mut() {
            Some(hasher) => {
                if !hasher.written(offset, chunk) {
                    self.hash = None;
                }
            }
            None => self.scratch = chunk,
        }
    }
}

impl ErrorType for Counting<'_, '_> {
    type Error = io::Error;
}

impl BlockDevice for Counting<'_, '_> {
    fn block_size(&self) -> BlockSize {
        self.inner.block_size()
    }

    fn block_count(&self) -> u64 {
        self.inner.block_count()
    }

    fn max_block_count(&self) -> u64 {
        self.inner.max_block_count()
    }

    fn writable(&self) -> bool {
        self.inner.writable()
    }

    fn read_blocks(&mut self, first: BlockIndex, buf: &mut [u8]) -> Result<(), Error<io::Error>> {
        self.inner.read_blocks(first, buf)
    }

    fn write_blocks(&mut self, first: BlockIndex, buf: &[u8]) -> Result<(), Error<io::Error>> {
        let offset = first.get() * u64::from(self.inner.block_size().get());
        let end = offset + buf.len() as u64;
        let splicer = self.splicer.as_mut().filter(|s| s.touches(offset, end));
        // The bytes in a buffer of our own when they are hashed or spliced.
        let mut own = match (&self.hash, &splicer) {
            (Some(hasher), _) => Some(hasher.spare()),
            (None, Some(_)) => Some(std::mem::take(&mut self.scratch)),
            (None, None) => None,
        };
        if let Some(own) = own.as_mut() {
            if splicer.as_ref().is_some_and(|s| s.covers(offset, end)) {
                // Every byte comes from the spliced file: the placeholder's zeros in `buf` need
                // not be copied first (most of a `build`'s image).
                own.resize(buf.len(), 0);
            } else {
                own.clear();
                own.extend_from_slice(buf);
            }
            if let Some(splicer) = splicer
                && splicer.splice(offset, own).is_err()
            {
                return Err(Error::device(
                    io::Error::other("a spliced file could not be produced"),
                    "spliced file failed",
                ));
            }
        }
        self.inner
            .write_blocks(first, own.as_deref().unwrap_or(buf))?;
        if let Some(own) = own {
            self.hash(offset, own);
        }
        self.writeback.written(end);
        self.progress.advance(end - offset);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Error<io::Error>> {
        self.inner.flush()
    }
}

/// Fails before writing when the file system of `dir` cannot hold `needed` more bytes.
pub(super) fn check_space(dir: &Path, output: &Path, needed: u64) -> Result<(), IsoError> {
    let stat = rustix::fs::statvfs(dir).map_err(|errno| IsoError::OutputDir {
        dir: dir.to_owned(),
        source: io::Error::from(errno),
    })?;
    let available = stat.f_bavail.saturating_mul(stat.f_frsize);
    // An existing file of the same name is replaced, but only after the new one is complete.
    if needed > available {
        return Err(IsoError::NoSpace {
            path: output.to_owned(),
            needed,
            available,
        });
    }
    Ok(())
}
