//! The image's sha256 on a helper thread, so the writing thread only copies bytes.
//!
//! Hashing the ISO inline cost about half of `cks-iso iso`'s CPU on the thread that also feeds the
//! kernel (issue 9). Here the writer copies what it wrote into one of a few fixed buffers and hands
//! it over a bounded channel; a helper thread hashes the buffers in the order they were sent and
//! hands them back. At most [`BUFFERS`] × [`BUFFER`] bytes are in flight, so memory stays flat; when
//! the hasher falls behind the writer waits for a free buffer instead of queueing more.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use sha2::{Digest as _, Sha256};

/// Bytes per buffer handed to the hasher: large enough that the hand-over costs nothing next to
/// hashing it, small enough to keep the writer and the hasher overlapped.
const BUFFER: usize = 256 * 1024;
/// Buffers in circulation (filling, queued, being hashed): 1 MiB in all.
const BUFFERS: usize = 4;

/// A sha256 computed on another thread from the bytes given to [`Background::update`], in order.
pub(super) struct Background {
    /// Full buffers to the hasher; `None` once finished.
    full: Option<SyncSender<Vec<u8>>>,
    /// Hashed buffers back from the hasher, for reuse.
    free: Receiver<Vec<u8>>,
    /// Buffers made so far (at most [`BUFFERS`]).
    made: usize,
    /// The buffer being filled.
    current: Vec<u8>,
    thread: Option<JoinHandle<Sha256>>,
}

impl Background {
    /// Starts the hasher thread.
    pub(super) fn start() -> std::io::Result<Self> {
        let (full, queued) = sync_channel::<Vec<u8>>(BUFFERS);
        let (back, free) = sync_channel::<Vec<u8>>(BUFFERS);
        let thread = std::thread::Builder::new()
            .name("iso-sha256".into())
            .spawn(move || {
                let mut hasher = Sha256::new();
                for mut buf in queued {
                    hasher.update(&buf);
                    buf.clear();
                    // The writer may have finished or given up; then the buffer is simply dropped.
                    let _ = back.try_send(buf);
                }
                hasher
            })?;
        Ok(Self {
            full: Some(full),
            free,
            made: 1,
            current: Vec::with_capacity(BUFFER),
            thread: Some(thread),
        })
    }

    /// Adds `bytes` to the hash, after everything given before.
    pub(super) fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let room = BUFFER - self.current.len();
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            self.current.extend_from_slice(now);
            bytes = rest;
            if self.current.len() == BUFFER {
                self.send();
            }
        }
    }

    /// Adds `len` zero bytes, for a gap the writer skipped.
    pub(super) fn zeros(&mut self, mut len: u64) {
        const ZEROS: [u8; 4096] = [0; 4096];
        while len > 0 {
            let n = len.min(ZEROS.len() as u64) as usize;
            self.update(&ZEROS[..n]);
            len -= n as u64;
        }
    }

    /// Hands the current buffer to the hasher and takes a free one, waiting for one when all are
    /// in flight.
    fn send(&mut self) {
        let next = if self.made < BUFFERS {
            self.made += 1;
            Vec::with_capacity(BUFFER)
        } else {
            // The hasher only stops when `full` is dropped, so a buffer always comes back; if
            // its thread died (a panic), hashing is over and `finish` reports that.
            self.free
                .recv()
                .unwrap_or_else(|_| Vec::with_capacity(BUFFER))
        };
        let full = std::mem::replace(&mut self.current, next);
        if let Some(tx) = &self.full {
            let _ = tx.send(full);
        }
    }

    /// Waits for the hasher and returns the hex sha256 of every byte given, or `None` if the
    /// hasher thread failed.
    pub(super) fn finish(mut self) -> Option<String> {
        if !self.current.is_empty() {
            self.send();
        }
        drop(self.full.take());
        let hasher = self.thread.take()?.join().ok()?;
        Some(hex::encode(hasher.finalize()))
    }
}

impl Drop for Background {
    /// Abandoned (the writer failed or went back): stop the thread without waiting for it.
    fn drop(&mut self) {
        drop(self.full.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_an_inline_hash_across_buffer_edges() {
        let data: Vec<u8> = (0..(BUFFER * BUFFERS * 3 + 12345))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut bg = Background::start().unwrap();
        let mut inline = Sha256::new();
        for (i, chunk) in data.chunks(65536 + 7).enumerate() {
            if i % 5 == 4 {
                bg.zeros(3000);
                inline.update([0u8; 3000]);
            }
            bg.update(chunk);
            inline.update(chunk);
        }
        assert_eq!(bg.finish().unwrap(), hex::encode(inline.finalize()));
    }

    #[test]
    fn nothing_hashed_is_the_empty_hash() {
        let bg = Background::start().unwrap();
        assert_eq!(
            bg.finish().unwrap(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn dropping_unfinished_does_not_hang() {
        let mut bg = Background::start().unwrap();
        bg.update(&vec![1u8; BUFFER * (BUFFERS + 2)]);
        drop(bg);
    }
}
