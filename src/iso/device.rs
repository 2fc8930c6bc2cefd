//! The output device: a host file that reports every write to a [`Progress`], and the free-space
//! check done before the first byte is written.

use std::fs::File;
use std::io;
use std::path::Path;

use hadris_io::{Error, ErrorType};
use hadris_storage::host::FileDevice;
use hadris_storage::sync::BlockDevice;
use hadris_storage::{BlockIndex, BlockSize};
use super::IsoError;
use super::hasher::Background;
use crate::progress::Progress;

/// A [`FileDevice`] that counts what is written and hashes the image as it goes, so the ISO's
/// sha256 needs no second read of a multi-GiB file. The hashing itself runs on a helper thread
/// ([`Background`]), overlapped with the writes.
pub(super) struct Counting<'p> {
    inner: FileDevice,
    progress: &'p dyn Progress,
    /// The hash of bytes `[0, .1)`, while writes arrive in ascending order.
    hash: Option<(Background, u64)>,
}

impl<'p> Counting<'p> {
    pub(super) fn new(file: File, progress: &'p dyn Progress) -> io::Result<Self> {
        Ok(Self {
            inner: FileDevice::new(file)?,
            progress,
            hash: Some((Background::start()?, 0)),
        })
    }

    /// The sha256 of the image, if every write came in order (gaps count as zeros). Waits for
    /// the hasher to catch up with the last write.
    pub(super) fn sha256(&mut self, len: u64) -> Option<String> {
        let (hasher, pos) = self.hash.take()?;
        (pos == len).then(|| hasher.finish()).flatten()
    }

    fn hash(&mut self, offset: u64, buf: &[u8]) {
        let Some((hasher, pos)) = self.hash.as_mut() else {
            return;
        };
        if offset < *pos {
            self.hash = None;
            return;
        }
        hasher.zeros(offset - *pos);
        *pos = offset;
        hasher.update(buf);
        *pos += buf.len() as u64;
    }
}

impl ErrorType for Counting<'_> {
    type Error = io::Error;
}

impl BlockDevice for Counting<'_> {
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
        self.inner.write_blocks(first, buf)?;
        let offset = first.get() * u64::from(self.inner.block_size().get());
        self.hash(offset, buf);
        self.progress.advance(buf.len() as u64);
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
