//! The image's sha256 on a helper thread, so the writing thread neither hashes nor copies.
//!
//! Hashing the ISO inline cost about half of `cks-iso iso`'s CPU on the thread that also feeds the
//! kernel (issue 9). Writes arrive in ascending order, so every byte before the writer's position
//! is final: the writer only reports how far it got ([`Background::written`], a few bytes over a
//! channel, never blocking), and a helper thread reads the new bytes back from the file (the page
//! cache, which holds them: write-back does not evict) and hashes them in order. Memory is one
//! [`BUFFER`]; holes the writer skipped read as the zeros they are in the image.

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;

use sha2::{Digest as _, Sha256};

/// Bytes read back per request.
const BUFFER: usize = 256 * 1024;
/// The writer reports its position after at least this many new bytes.
const STEP: u64 = 1024 * 1024;

/// A sha256 of a file's bytes `[0, n)`, computed on another thread as `n` grows.
pub(super) struct Background {
    /// Positions to the hasher; `None` once finished.
    tx: Option<SyncSender<u64>>,
    /// The last position sent.
    sent: u64,
    thread: Option<JoinHandle<Option<Sha256>>>,
}

impl Background {
    /// Starts the hasher thread on `file`, a handle to the file being written.
    pub(super) fn start(file: File) -> std::io::Result<Self> {
        let (tx, rx) = sync_channel::<u64>(64);
        let thread = std::thread::Builder::new()
            .name("iso-sha256".into())
            .spawn(move || hash(&file, &rx))?;
        Ok(Self {
            tx: Some(tx),
            sent: 0,
            thread: Some(thread),
        })
    }

    /// Notes that the file's bytes before `end` are written and final. Never waits: when the
    /// hasher has positions queued, this one is skipped and a later one carries it.
    pub(super) fn written(&mut self, end: u64) {
        if end < self.sent + STEP {
            return;
        }
        if let Some(tx) = &self.tx {
            match tx.try_send(end) {
                Ok(()) => self.sent = end,
                Err(TrySendError::Full(_)) => {}
                Err(TrySendError::Disconnected(_)) => self.tx = None,
            }
        }
    }

    /// Waits for the hasher to hash `[0, len)` and returns its hex sha256, or `None` if it
    /// could not (a read failed, or its thread died).
    pub(super) fn finish(mut self, len: u64) -> Option<String> {
        let tx = self.tx.take()?;
        tx.send(len).ok()?;
        drop(tx);
        let hasher = self.thread.take()?.join().ok()??;
        Some(hex::encode(hasher.finalize()))
    }
}

impl Drop for Background {
    /// Abandoned (the writer failed or went back): the thread stops at its next position.
    fn drop(&mut self) {
        drop(self.tx.take());
    }
}

/// The hasher thread: hashes `file` from 0 up to the latest position received, until the channel
/// closes. `None` if a read fails.
fn hash(file: &File, rx: &Receiver<u64>) -> Option<Sha256> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; BUFFER];
    let mut pos = 0u64;
    while let Ok(mut end) = rx.recv() {
        while let Ok(later) = rx.try_recv() {
            end = end.max(later);
        }
        while pos < end {
            let n = (end - pos).min(BUFFER as u64) as usize;
            file.read_exact_at(&mut buf[..n], pos).ok()?;
            hasher.update(&buf[..n]);
            pos += n as u64;
        }
    }
    Some(hasher)
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn matches_an_inline_hash_of_the_file_holes_included() {
        let data: Vec<u8> = (0..(3 * STEP as usize + 12345))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut file = tempfile::tempfile().unwrap();
        let mut bg = Background::start(file.try_clone().unwrap()).unwrap();
        let mut inline = Sha256::new();
        let mut end = 0u64;
        for (i, chunk) in data.chunks(65536 + 7).enumerate() {
            if i % 5 == 4 {
                // A hole the writer skips.
                end += 3000;
                inline.update([0u8; 3000]);
            }
            file.write_all_at(chunk, end).unwrap();
            end += chunk.len() as u64;
            inline.update(chunk);
            bg.written(end);
        }
        file.flush().unwrap();
        assert_eq!(bg.finish(end).unwrap(), hex::encode(inline.finalize()));
    }

    #[test]
    fn nothing_written_is_the_empty_hash() {
        let bg = Background::start(tempfile::tempfile().unwrap()).unwrap();
        assert_eq!(
            bg.finish(0).unwrap(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn a_position_past_the_end_of_the_file_gives_no_hash() {
        let bg = Background::start(tempfile::tempfile().unwrap()).unwrap();
        assert_eq!(bg.finish(10), None);
    }
}
