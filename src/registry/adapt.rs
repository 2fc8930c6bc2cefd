//! How many blob transfers run at once when `--jobs` (or `jobs:`) is not given: start at the
//! default and grow while the bytes per second grow with it. Where each connection is capped (a
//! far registry, a per-flow shaped link) more transfers fill the link; where the disk, the CPU or
//! the link itself is the limit, growing stops after two steps that bring no gain.
//!
//! Throughput is measured over windows of [`WINDOW`] from the bytes downloads report; a window
//! that beats the best so far by [`GAIN`] doubles the slots, up to [`MAX_JOBS`] (from the default
//! 4: 8 after the first window that moves bytes, 16 after the next that gains). Slots are never taken back: each transfer streams, so memory stays flat at any
//! count. Blob bodies travel on the HTTP/1.1 client (see `ranged` and [`crate::fetch::Protocols`]),
//! so a slot is a TCP connection of its own, also against a registry that speaks HTTP/2.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::progress::{Progress, Source};

/// The most blob transfers at once a pull grows to.
pub const MAX_JOBS: usize = 16;
/// How long each throughput sample lasts.
const WINDOW: Duration = Duration::from_millis(250);
/// How much better a window must be than the best one to count as a gain.
const GAIN: f64 = 1.15;
/// Windows in a row without gain after which growing stops.
const PATIENCE: u32 = 2;

/// The transfer slots and the controller that grows them.
pub(super) struct Adaptive {
    /// Whether to grow at all (not when the user chose the count).
    enabled: bool,
    bytes: AtomicU64,
    state: Mutex<State>,
}

struct State {
    slots: usize,
    since: Instant,
    /// Bytes counted when the window began.
    at: u64,
    best: f64,
    flat: u32,
    done: bool,
}

impl Adaptive {
    pub(super) fn new(start: usize, enabled: bool) -> Self {
        Self {
            enabled: enabled && start < MAX_JOBS,
            bytes: AtomicU64::new(0),
            state: Mutex::new(State {
                slots: start,
                since: Instant::now(),
                at: 0,
                best: 0.0,
                flat: 0,
                done: false,
            }),
        }
    }

    /// Counts `n` downloaded bytes and, at the end of a window, grows `permits` when it paid.
    pub(super) fn advance(&self, n: u64, permits: &Semaphore) {
        if !self.enabled {
            return;
        }
        let total = self.bytes.fetch_add(n, Ordering::Relaxed) + n;
        let Ok(mut state) = self.state.try_lock() else {
            return;
        };
        let elapsed = state.since.elapsed();
        if state.done || elapsed < WINDOW {
            return;
        }
        let rate = (total - state.at) as f64 / elapsed.as_secs_f64();
        state.since = Instant::now();
        state.at = total;
        if rate > state.best * GAIN {
            state.best = rate;
            state.flat = 0;
            let add = state.slots.min(MAX_JOBS - state.slots);
            state.slots += add;
            permits.add_permits(add);
            tracing::debug!(
                "{:.0} MB/s: {} blob transfers at once",
                rate / 1e6,
                state.slots
            );
            state.done = state.slots >= MAX_JOBS;
        } else {
            state.flat += 1;
            state.done = state.flat >= PATIENCE;
        }
    }
}

/// A [`Progress`] that also feeds the [`Adaptive`] controller.
pub(super) struct Counted<'a> {
    pub(super) inner: &'a dyn Progress,
    pub(super) adaptive: &'a Adaptive,
    pub(super) permits: &'a Semaphore,
}

impl Progress for Counted<'_> {
    fn start(&self, total: u64) {
        self.inner.start(total);
    }
    fn advance(&self, bytes: u64) {
        self.adaptive.advance(bytes, self.permits);
        self.inner.advance(bytes);
    }
    fn finish(&self) {
        self.inner.finish();
    }
    fn item(&self, item: &str, bytes: u64, source: Source) {
        self.inner.item(item, bytes, source);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_while_throughput_grows_and_stops_when_flat() {
        let permits = Semaphore::new(2);
        let adaptive = Adaptive::new(2, true);
        let window = |bytes: u64| {
            std::thread::sleep(WINDOW + Duration::from_millis(5));
            adaptive.advance(bytes, &permits);
        };
        window(1_000_000);
        assert_eq!(permits.available_permits(), 4);
        window(2_000_000);
        assert_eq!(permits.available_permits(), 8);
        window(2_000_000);
        window(2_000_000);
        assert_eq!(permits.available_permits(), 8, "two flat windows stop it");
        window(50_000_000);
        assert_eq!(permits.available_permits(), 8, "stopped for good");
    }

    #[test]
    fn growth_ends_at_the_cap() {
        let permits = Semaphore::new(4);
        let adaptive = Adaptive::new(4, true);
        for bytes in [1_000_000, 2_000_000, 4_000_000, 8_000_000] {
            std::thread::sleep(WINDOW + Duration::from_millis(5));
            adaptive.advance(bytes, &permits);
        }
        assert_eq!(permits.available_permits(), MAX_JOBS);
    }

    #[test]
    fn a_chosen_count_stays() {
        let permits = Semaphore::new(4);
        let adaptive = Adaptive::new(4, false);
        std::thread::sleep(WINDOW);
        adaptive.advance(1_000_000, &permits);
        assert_eq!(permits.available_permits(), 4);
    }
}
