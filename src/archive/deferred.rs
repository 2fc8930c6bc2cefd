//! Blob checks off the writing thread, for the ISO sink ([`super::Reader`]).
//!
//! A warm `build` takes every blob from the cache, which verified it when it was stored; the cache's
//! rule is still to hash a blob not verified in this process as it is copied, so a blob damaged on
//! disk since never reaches an ISO. Hashing inline made the thread that writes the ISO hash every
//! image byte while another thread hashed the ISO itself (issue 9's profile: sha256 was half the
//! writer's time). Here the reader copies each chunk it hands out to a helper thread, which hashes
//! the blobs in order; the reader collects the digests when its archive ends and fails there,
//! naming the blob, before the ISO can be committed. Memory: at most [`QUEUE`] chunks in flight.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use sha2::{Digest as _, Sha256};

use crate::image::Digest;

/// Chunks queued for the hasher (each at most what one fill asks, 64 KiB from the ISO writer).
const QUEUE: usize = 32;

enum Msg {
    /// The next bytes belong to a new blob: the archive piece it is.
    Begin(usize),
    Bytes(Vec<u8>),
    /// The blob's last bytes were sent.
    End,
}

/// What a blob hashed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hashed {
    /// The archive piece it is.
    pub piece: usize,
    pub digest: Digest,
    pub size: u64,
}

/// A helper thread hashing the blobs one archive reader hands out.
pub(super) struct Deferred {
    tx: SyncSender<Msg>,
    /// Chunk buffers the hasher is done with, to be filled again (fresh ones cost page faults).
    spent: Receiver<Vec<u8>>,
    thread: JoinHandle<Vec<Hashed>>,
}

impl Deferred {
    /// Starts the helper thread; `None` if the system cannot start one (then the caller hashes
    /// inline).
    pub(super) fn start() -> Option<Self> {
        let (tx, rx) = sync_channel(QUEUE);
        // Room for every buffer there can be, so returning one never waits.
        let (give_back, spent) = sync_channel(QUEUE + 2);
        let thread = std::thread::Builder::new()
            .name("blob-sha256".into())
            .spawn(move || hash(&rx, &give_back))
            .ok()?;
        Some(Self { tx, spent, thread })
    }

    /// The bytes that follow are blob `piece`'s.
    pub(super) fn begin(&self, piece: usize) {
        let _ = self.tx.send(Msg::Begin(piece));
    }

    /// Hands a copy of `bytes`, the current blob's next bytes, to the hasher. Waits only when
    /// [`QUEUE`] chunks are already waiting.
    pub(super) fn bytes(&self, bytes: &[u8]) {
        let mut chunk = self.spent.try_recv().unwrap_or_default();
        chunk.clear();
        chunk.extend_from_slice(bytes);
        let _ = self.tx.send(Msg::Bytes(chunk));
    }

    /// The current blob is complete.
    pub(super) fn end(&self) {
        let _ = self.tx.send(Msg::End);
    }

    /// Waits for the hasher and returns the digest of every blob ended, in order; `None` if the
    /// thread died.
    pub(super) fn finish(self) -> Option<Vec<Hashed>> {
        drop(self.tx);
        self.thread.join().ok()
    }
}

fn hash(rx: &Receiver<Msg>, give_back: &SyncSender<Vec<u8>>) -> Vec<Hashed> {
    let mut done = Vec::new();
    let mut current: Option<(usize, Sha256, u64)> = None;
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Begin(piece) => current = Some((piece, Sha256::new(), 0)),
            Msg::Bytes(bytes) => {
                if let Some((_, hasher, size)) = current.as_mut() {
                    hasher.update(&bytes);
                    *size += bytes.len() as u64;
                }
                let _ = give_back.try_send(bytes);
            }
            Msg::End => {
                if let Some((piece, hasher, size)) = current.take() {
                    done.push(Hashed {
                        piece,
                        digest: Digest::from_hasher(hasher),
                        size,
                    });
                }
            }
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_each_blob_of_its_chunks_in_order() {
        let d = Deferred::start().unwrap();
        d.begin(1);
        d.bytes(b"hel");
        d.bytes(b"lo");
        d.end();
        d.begin(3);
        d.end();
        let hashed = d.finish().unwrap();
        assert_eq!(
            hashed,
            vec![
                Hashed {
                    piece: 1,
                    digest: Digest::of(b"hello"),
                    size: 5
                },
                Hashed {
                    piece: 3,
                    digest: Digest::of(b""),
                    size: 0
                },
            ]
        );
    }
}
