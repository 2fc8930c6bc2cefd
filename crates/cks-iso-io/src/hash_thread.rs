//! sha256 on a helper thread, fed with the very buffers the producing thread wrote out.
//!
//! Two writers hash what they produce without hashing on their own thread: the ISO writer (the
//! image's sha256 for `<iso>.sha256`) and the archive's ISO sink (cached blobs not verified in this
//! process, the cache's rule). Reading the bytes back from the page cache on the helper, as the ISO
//! hasher once did, cost a second copy of every byte — about a third of that thread's time in a
//! profile of a cold `build` — so the producer hands over the buffer it has just written
//! ([`HashThread::send`]) or a copy of a borrowed one ([`HashThread::bytes`]), and takes a spent
//! buffer back ([`HashThread::spare`]) so the pages are faulted in once.
//!
//! The stream is cut into tagged runs ([`HashThread::begin`] … [`HashThread::end`]), each hashed on
//! its own; [`HashThread::finish`] returns them in order. Memory: at most `QUEUE` chunks in
//! flight, a sender waits when the helper is that far behind.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use sha2::{Digest as _, Sha256};

/// Chunks queued for the helper.
const QUEUE: usize = 32;
/// Borrowed bytes are copied in pieces of at most this, so a large write does not make a large
/// buffer that then stays in the pool.
const PIECE: usize = 64 * 1024;

enum Msg<T> {
    /// The bytes that follow are a new run's, tagged.
    Begin(T),
    Bytes(Vec<u8>),
    /// That many zero bytes.
    Zeros(u64),
    /// The run's last bytes were sent.
    End,
}

/// One run's hash.
pub struct Hashed<T> {
    /// The tag the run was begun with.
    pub tag: T,
    /// The hasher fed with the run's bytes, to finalize.
    pub sha256: Sha256,
    /// How many bytes the run had.
    pub size: u64,
}

impl<T> Hashed<T> {
    /// The run's sha256 sum.
    pub fn sum(&self) -> crate::Sha256Sum {
        crate::Sha256Sum::from_hasher(self.sha256.clone())
    }
}

/// A helper thread hashing runs of chunks in order.
pub struct HashThread<T> {
    tx: SyncSender<Msg<T>>,
    /// Buffers the helper is done with.
    spent: Receiver<Vec<u8>>,
    thread: JoinHandle<Vec<Hashed<T>>>,
}

impl<T: Send + 'static> HashThread<T> {
    /// Starts the helper, named `name` (as profilers and `top -H` show it).
    pub fn start(name: &str) -> std::io::Result<Self> {
        let (tx, rx) = sync_channel(QUEUE);
        // Room for every buffer there can be, so giving one back never waits.
        let (give_back, spent) = sync_channel(QUEUE + 4);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || hash(&rx, &give_back))?;
        Ok(Self { tx, spent, thread })
    }

    /// The bytes that follow belong to the run `tag` (ending any run not ended).
    pub fn begin(&self, tag: T) {
        let _ = self.tx.send(Msg::Begin(tag));
    }

    /// A buffer to fill and [`send`](Self::send): a spent one as the helper left it (its old
    /// length and bytes, so a producer that overwrites it whole need not clear it first), else a
    /// new empty one.
    pub fn spare(&self) -> Vec<u8> {
        self.spent.try_recv().unwrap_or_default()
    }

    /// Hands `chunk`, the current run's next bytes, to the helper.
    pub fn send(&self, chunk: Vec<u8>) {
        let _ = self.tx.send(Msg::Bytes(chunk));
    }

    /// Hands a copy of `bytes`, the current run's next bytes, to the helper.
    pub fn bytes(&self, bytes: &[u8]) {
        for piece in bytes.chunks(PIECE) {
            let mut chunk = self.spare();
            chunk.clear();
            chunk.extend_from_slice(piece);
            self.send(chunk);
        }
    }

    /// The current run's next `n` bytes are zeros.
    pub fn zeros(&self, n: u64) {
        if n > 0 {
            let _ = self.tx.send(Msg::Zeros(n));
        }
    }

    /// The current run is complete.
    pub fn end(&self) {
        let _ = self.tx.send(Msg::End);
    }

    /// Waits for the helper and returns every ended run's hash, in order; `None` if the thread
    /// died. Dropping a `HashThread` instead abandons the work: the helper stops after its queue.
    pub fn finish(self) -> Option<Vec<Hashed<T>>> {
        drop(self.tx);
        self.thread.join().ok()
    }
}

fn hash<T>(rx: &Receiver<Msg<T>>, give_back: &SyncSender<Vec<u8>>) -> Vec<Hashed<T>> {
    let mut done = Vec::new();
    let mut current: Option<Hashed<T>> = None;
    let zeros = [0u8; PIECE];
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Begin(tag) => {
                current = Some(Hashed {
                    tag,
                    sha256: Sha256::new(),
                    size: 0,
                })
            }
            Msg::Bytes(bytes) => {
                if let Some(run) = current.as_mut() {
                    run.sha256.update(&bytes);
                    run.size += bytes.len() as u64;
                }
                let _ = give_back.try_send(bytes);
            }
            Msg::Zeros(mut n) => {
                while let Some(run) = current.as_mut().filter(|_| n > 0) {
                    let k = n.min(PIECE as u64);
                    run.sha256.update(&zeros[..k as usize]);
                    run.size += k;
                    n -= k;
                }
            }
            Msg::End => done.extend(current.take()),
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex_of(h: &Hashed<u32>) -> (u32, String, u64) {
        (h.tag, h.sum().to_string(), h.size)
    }

    #[test]
    fn hashes_each_run_of_its_chunks_in_order() {
        let t = HashThread::start("test-sha256").unwrap();
        t.begin(1);
        t.bytes(b"hel");
        let mut owned = t.spare();
        owned.clear();
        owned.extend_from_slice(b"lo");
        t.send(owned);
        t.end();
        t.begin(3);
        t.end();
        let runs: Vec<_> = t.finish().unwrap().iter().map(hex_of).collect();
        let of = |b: &[u8]| crate::Sha256Sum::of(b).to_string();
        assert_eq!(runs, vec![(1, of(b"hello"), 5), (3, of(b""), 0)]);
    }

    #[test]
    fn zeros_and_large_copies_hash_as_the_bytes_they_stand_for() {
        let data: Vec<u8> = (0..(3 * PIECE + 77))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let t = HashThread::start("test-sha256").unwrap();
        t.begin(7);
        t.bytes(&data);
        t.zeros(2 * PIECE as u64 + 5);
        t.bytes(b"end");
        t.end();
        let mut whole = data.clone();
        whole.extend(std::iter::repeat_n(0u8, 2 * PIECE + 5));
        whole.extend_from_slice(b"end");
        let runs: Vec<_> = t.finish().unwrap().iter().map(hex_of).collect();
        assert_eq!(
            runs,
            vec![(
                7,
                crate::Sha256Sum::of(&whole).to_string(),
                whole.len() as u64
            )]
        );
    }

    #[test]
    fn a_run_not_ended_is_not_reported() {
        let t = HashThread::start("test-sha256").unwrap();
        t.begin(1);
        t.bytes(b"partial");
        assert!(t.finish().unwrap().is_empty());
    }
}
