//! Large blobs as several `Range` requests at once: where each connection is capped (a far
//! registry, a per-flow shaped link), more connections fill the link. The parts travel on the
//! registry's HTTP/1.1 client, so each part in flight is a TCP connection of its own even when the
//! registry speaks HTTP/2 (where they would be streams of one connection, sharing its windows).
//!
//! A blob of at least [`RANGED_MIN`] is cut into parts of at least [`PART_MIN`] (at most
//! [`MAX_PARTS`]); each part is one GET with `Range: bytes=a-b`, written at its offset into the
//! blob's temporary file in the cache directory, and resumed within its range after a cut. Parts
//! beyond the first wait for one of [`PARTS_PER_HOST`] slots of their registry host, so a pull
//! never opens more than its blob transfers plus that many connections to one host.
//!
//! The trade-off: parts arrive out of order, so the blob cannot be hashed while it streams as a
//! single GET is. Once every part is in, the file is read back in order (from the page cache, as
//! it was just written) and hashed; only a blob whose digest and size match gets its final name,
//! as always. That costs one extra pass over the bytes in memory (sha256 at ~1.5 GB/s with SHA-NI
//! against a network that is the bottleneck), never a second download.
//!
//! Registries that ignore ranges (`200` with the whole body), refuse them (`400`, `416`) or answer
//! another range are not argued with: the first such answer ends the ranged attempt, its file is
//! dropped, and the blob is fetched by the ordinary single GET (with its own resume and retries).
//! So does any other failure of a part, or a digest mismatch: the single GET's errors are the ones
//! the user sees.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

use futures_util::future::join_all;
use tokio::sync::Semaphore;

use super::{Endpoint, Registry, RegistryError};
use crate::cache::CacheError;
use crate::fetch;
use crate::image::{Descriptor, Reference};
use crate::progress::Progress;

/// Blobs at least this large are fetched in parts.
pub(super) const RANGED_MIN: u64 = 16 << 20;
/// No part is smaller than this.
pub(super) const PART_MIN: u64 = 4 << 20;
/// No blob is cut into more parts than this.
pub(super) const MAX_PARTS: u64 = 8;
/// Part requests beyond each blob's first, at once, per registry host.
pub(super) const PARTS_PER_HOST: usize = 16;

/// The part slots of each host.
#[derive(Default)]
pub(super) struct PartSlots {
    hosts: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl PartSlots {
    fn of(&self, host: &str) -> Arc<Semaphore> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        hosts
            .entry(host.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(PARTS_PER_HOST)))
            .clone()
    }
}

/// The byte ranges `[start, end)` a blob of `size` is fetched in; one for a small blob.
pub(super) fn parts(size: u64) -> Vec<(u64, u64)> {
    if size < RANGED_MIN {
        return vec![(0, size)];
    }
    let count = (size / PART_MIN).clamp(1, MAX_PARTS);
    let step = size.div_ceil(count);
    (0..count)
        .map(|i| (i * step, ((i + 1) * step).min(size)))
        .filter(|(a, b)| a < b)
        .collect()
}

/// One part's bytes, written at their offset of the shared file.
struct PartSink<'a> {
    file: &'a File,
    path: &'a Path,
    start: u64,
    written: u64,
}

impl fetch::Sink for PartSink<'_> {
    fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.file.write_all_at(chunk, self.start + self.written)?;
        self.written += chunk.len() as u64;
        Ok(())
    }

    fn written(&self) -> u64 {
        self.written
    }

    fn restart(&mut self) -> io::Result<()> {
        self.written = 0;
        Ok(())
    }

    fn path(&self) -> Option<&Path> {
        Some(self.path)
    }
}

/// Why a ranged attempt gave up; the caller falls back to a single GET.
pub(super) enum GaveUp {
    /// Ranges are not served as asked, or a part failed: worth the single GET.
    Fallback(String),
    /// The cache cannot be written: the single GET would fail the same way.
    Cache(RegistryError),
}

impl Registry {
    /// Fetches `desc` in parts into the cache; `Ok` once it is verified under its final name.
    pub(super) async fn download_ranged(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        desc: &Descriptor,
        progress: &dyn Progress,
    ) -> Result<(), GaveUp> {
        let url = ep.blob_url(&desc.digest);
        let cache_err = |source: CacheError| {
            GaveUp::Cache(RegistryError::Cache {
                reference: reference.to_string(),
                source,
            })
        };
        let mut out = self
            .cache
            .blob_parts(&desc.digest, desc.size)
            .map_err(cache_err)?;
        let headers = self
            .auth_headers(ep, reference, false)
            .await
            .map_err(|e| GaveUp::Fallback(e.to_string()))?;
        let ranges = parts(desc.size);
        let slots = self.part_slots.of(&ep.base);
        let temp = out.temp_path().to_owned();
        let file: &File = out.file();
        let download = self.blob_download(progress);
        let fetches = ranges.iter().enumerate().map(|(i, &(start, end))| {
            let (url, headers, slots, temp) = (&url, &headers, &slots, &temp);
            async move {
                // The first part runs on the blob's own transfer slot.
                let _slot = match i {
                    0 => None,
                    _ => Some(slots.acquire().await.expect("never closed")),
                };
                let mut sink = PartSink {
                    file,
                    path: temp,
                    start,
                    written: 0,
                };
                download
                    .range_to_sink(url, headers, &mut sink, start, end)
                    .await
            }
        });
        for result in join_all(fetches).await {
            if let Err(err) = result {
                return Err(GaveUp::Fallback(err.to_string()));
            }
        }
        // Read back in order and hashed by the cache (see the module doc for why not while
        // streaming), and named only when it matches.
        match tokio::task::spawn_blocking(move || out.commit()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(CacheError::Mismatch {
                actual,
                actual_size,
                ..
            })) => Err(GaveUp::Fallback(format!(
                "the parts hash to {actual} ({actual_size} bytes)"
            ))),
            Ok(Err(err)) => Err(cache_err(err)),
            Err(e) => Err(GaveUp::Fallback(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_blobs_are_one_part_large_ones_cover_every_byte_once() {
        assert_eq!(parts(10), [(0, 10)]);
        assert_eq!(parts(RANGED_MIN - 1), [(0, RANGED_MIN - 1)]);
        for size in [RANGED_MIN, RANGED_MIN + 1, 100 << 20, (2 << 30) + 7] {
            let parts = parts(size);
            assert!(parts.len() > 1 && parts.len() as u64 <= MAX_PARTS, "{size}");
            assert_eq!(parts[0].0, 0);
            assert_eq!(parts.last().unwrap().1, size);
            for pair in parts.windows(2) {
                assert_eq!(pair[0].1, pair[1].0);
            }
            assert!(parts.iter().all(|(a, b)| b - a >= PART_MIN - 8), "{size}");
        }
    }
}
