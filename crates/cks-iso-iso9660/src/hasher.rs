//! The image's sha256 on a helper thread, from the buffers the writer has just written.
//!
//! Hashing the ISO inline cost about half of `cks-iso iso`'s CPU on the thread that also feeds the
//! kernel, and reading the written bytes back from the page cache on a helper cost that helper a
//! second copy of every byte. Writes arrive in ascending order, so each written buffer is final:
//! the device hands it to the [`HashThread`] and takes a spent one for its next write. Holes the
//! writer skipped are hashed as the zeros they are in the image.

use cks_iso_io::Sha256Sum;
use cks_iso_io::hash_thread::HashThread;

/// A sha256 of an image's bytes `[0, n)`, computed on another thread as `n` grows.
pub(super) struct ImageHash {
    thread: HashThread<()>,
    /// The end of the last write.
    pos: u64,
}

impl ImageHash {
    /// Starts the hasher thread.
    pub(super) fn start() -> std::io::Result<Self> {
        let thread = HashThread::start("iso-sha256")?;
        thread.begin(());
        Ok(Self { thread, pos: 0 })
    }

    /// A buffer for the next write's bytes; see [`HashThread::spare`] (its old bytes may remain).
    pub(super) fn spare(&self) -> Vec<u8> {
        self.thread.spare()
    }

    /// `chunk` was written at `offset`. Returns `false`, and hashes nothing, when the write went
    /// back over bytes already hashed: then the image's hash cannot be had this way.
    pub(super) fn written(&mut self, offset: u64, chunk: Vec<u8>) -> bool {
        if offset < self.pos {
            return false;
        }
        self.thread.zeros(offset - self.pos);
        self.pos = offset + chunk.len() as u64;
        self.thread.send(chunk);
        true
    }

    /// Waits for the hasher and returns the sha256 of the image's `len` bytes, or `None` if
    /// the writes did not end at `len` or the thread died.
    pub(super) fn finish(self, len: u64) -> Option<Sha256Sum> {
        if self.pos != len {
            return None;
        }
        self.thread.end();
        let run = self.thread.finish()?.pop()?;
        (run.size == len).then(|| run.sum())
    }
}

#[cfg(test)]
mod tests {
    use sha2::{Digest as _, Sha256};

    use super::*;

    #[test]
    fn matches_an_inline_hash_of_the_image_holes_included() {
        let data: Vec<u8> = (0..(3 * 1024 * 1024 + 12345))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut bg = ImageHash::start().unwrap();
        let mut inline = Sha256::new();
        let mut end = 0u64;
        for (i, chunk) in data.chunks(65536 + 7).enumerate() {
            if i % 5 == 4 {
                // A hole the writer skips.
                end += 3000;
                inline.update([0u8; 3000]);
            }
            let mut buf = bg.spare();
            buf.clear();
            buf.extend_from_slice(chunk);
            assert!(bg.written(end, buf));
            end += chunk.len() as u64;
            inline.update(chunk);
        }
        assert_eq!(bg.finish(end).unwrap(), Sha256Sum::from_hasher(inline));
    }

    #[test]
    fn nothing_written_is_the_empty_hash() {
        assert_eq!(
            ImageHash::start().unwrap().finish(0).unwrap().to_string(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn a_write_that_goes_back_or_stops_short_gives_no_hash() {
        let mut bg = ImageHash::start().unwrap();
        assert!(bg.written(0, vec![1; 10]));
        assert!(!bg.written(5, vec![2; 10]));
        let mut short = ImageHash::start().unwrap();
        assert!(short.written(0, vec![1; 10]));
        assert_eq!(short.finish(20), None);
    }
}
