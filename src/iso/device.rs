//! The output device: a host file that reports every write to a [`Progress`], and the free-space
//! check done before the first byte is written.

use std::fs::File;
use std::io;
use std::path::Path;

use super::IsoError;
use super::hasher::Background;
use super::splice::Splicer;
use super::writeback::WriteBack;
use crate::progress::Progress;
use hadris_io::{Error, ErrorType};
use hadris_storage::host::FileDevice;
use hadris_storage::sync::BlockDevice;
use hadris_storage::{BlockIndex, BlockSize};

/// A [`FileDevice`] that counts what is written and hashes the image as it goes, so the ISO's
/// sha256 needs no second read of a multi-GiB file. The hashing itself runs on a helper thread
/// ([`Background`]) that reads the written bytes back from the page cache, overlapped with the
/// writes; this thread only reports how far it got.
///
/// With a [`Splicer`], the bytes written over spliced files' placeholders are replaced by the
/// files' real bytes before they reach the file and the hash.
pub(super) struct Counting<'p, 's> {
    inner: FileDevice,
    writeback: WriteBack,
    splicer: Option<Splicer<'s>>,
    /// Where a write that touches a spliced file is assembled.
    scratch: Vec<u8>,
    progress: &'p dyn Progress,
    /// The hasher and the end of the last write, while writes arrive in ascending order.
    hash: Option<(Background, u64)>,
}

impl<'p, 's> Counting<'p, 's> {
    pub(super) fn new(
        file: File,
        progress: &'p dyn Progress,
        splicer: Option<Splicer<'s>>,
    ) -> io::Result<Self> {
        let hasher = Background::start(file.try_clone()?)?;
        Ok(Self {
            writeback: WriteBack::new(file.try_clone()?),
            inner: FileDevice::new(file)?,
            splicer,
            scratch: Vec::new(),
            progress,
            hash: Some((hasher, 0)),
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
    pub(super) fn sha256(&mut self, len: u64) -> Option<String> {
        let (hasher, pos) = self.hash.take()?;
        (pos == len).then(|| hasher.finish(len)).flatten()
    }

    /// Bytes `[offset, end)` were written: everything before `end` is final unless a write went
    /// back, which ends hashing (the caller then hashes the finished file).
    fn hash(&mut self, offset: u64, end: u64) {
        let Some((hasher, pos)) = self.hash.as_mut() else {
            return;
        };
        if offset < *pos {
            self.hash = None;
            return;
        }
        *pos = end;
        hasher.written(end);
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
        let mut scratch = std::mem::take(&mut self.scratch);
        let buf = match &mut self.splicer {
            Some(splicer) if splicer.touches(offset, end) => {
                scratch.clear();
                scratch.extend_from_slice(buf);
                if splicer.splice(offset, &mut scratch).is_err() {
                    self.scratch = scratch;
                    return Err(Error::device(
                        io::Error::other("a spliced file could not be produced"),
                        "spliced file failed",
                    ));
                }
                &scratch[..]
            }
            _ => buf,
        };
        let written = self.inner.write_blocks(first, buf);
        if written.is_ok() {
            self.hash(offset, end);
        }
        self.scratch = scratch;
        written?;
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
