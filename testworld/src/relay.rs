//! A TCP relay that counts the connections passing through it and can hold every byte for a
//! fixed one-way delay: what a TLS (and so HTTP/2) registry looks like through a far path, without
//! reading a byte of what it carries.
//!
//! The HTTP proxies of the world ([`crate::shaper`], [`crate::faults`]) speak HTTP/1.1 in clear,
//! so they cannot stand between a client and a TLS registry, and they cannot count what matters
//! for HTTP/2: TCP connections, not requests. This relay forwards bytes both ways and counts
//! accepted connections (and the most open at once).
//!
//! With a delay it is the packet-delaying helper `bench/tls.sh` needs where the kernel has no
//! `netem` qdisc (this machine's has none): every chunk read from one side is written to the other
//! `delay` later, so a request and its answer cost a round trip of `2 × delay`, a new connection
//! pays one more (as the SYN/SYN-ACK exchange would), and HTTP/2's WINDOW_UPDATE frames arrive as
//! late as over the real path. At most [`IN_FLIGHT`] bytes are in flight per direction of a
//! connection, as a TCP receive window would allow (Linux's default `tcp_rmem` maximum is 6 MiB):
//! a byte counts until its acknowledgement would be back, one more `delay` after it was written,
//! so one connection's rate is capped at `IN_FLIGHT / (2 × delay)` (80 MiB/s at 50 ms). What it
//! does not model: slow start (a new connection gets its whole window at once, which flatters
//! many short connections against one long one), loss, and a shared bottleneck link (the
//! capacity of the path is what the machine's CPUs carry through the relay).
//!
//! ```no_run
//! use std::time::Duration;
//! use cks_iso_testworld::relay::TcpRelay;
//! let relay = TcpRelay::start("127.0.0.1:5000", Duration::from_millis(25));
//! let host = relay.host(); // 127.0.0.1:<port>: 50 ms round trips to 127.0.0.1:5000
//! assert_eq!(relay.connections(), 0);
//! ```

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes in transit at most per direction of one connection (a TCP window's worth).
pub const IN_FLIGHT: usize = 4 << 20;

/// The running relay; stops accepting when dropped (open connections run to their end).
pub struct TcpRelay {
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    accept: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Counts {
    accepted: AtomicU64,
    open: AtomicU64,
    peak: AtomicU64,
}

impl TcpRelay {
    /// Starts a relay on an ephemeral loopback port in front of `upstream` (`host:port`), holding
    /// each byte `delay` in each direction (`Duration::ZERO`: a plain counting relay).
    pub fn start(upstream: &str, delay: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the TCP relay");
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let upstream = upstream.to_owned();
        let (stop2, counts2) = (stop.clone(), counts.clone());
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = stream else { continue };
                counts2.accepted.fetch_add(1, Ordering::SeqCst);
                let open = counts2.open.fetch_add(1, Ordering::SeqCst) + 1;
                counts2.peak.fetch_max(open, Ordering::SeqCst);
                let (upstream, counts) = (upstream.clone(), counts2.clone());
                std::thread::spawn(move || {
                    // A side hanging up is how connections end; nothing to report.
                    let _ = relay(client, &upstream, delay);
                    counts.open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Self {
            addr,
            stop,
            counts,
            accept: Some(accept),
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.counts.accepted.load(Ordering::SeqCst)
    }

    /// The most connections open at once so far.
    pub fn peak(&self) -> u64 {
        self.counts.peak.load(Ordering::SeqCst)
    }
}

impl Drop for TcpRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(handle) = self.accept.take() {
            let _ = handle.join();
        }
    }
}

/// Connects to `upstream` and pumps both ways until both sides are done.
fn relay(client: TcpStream, upstream: &str, delay: Duration) -> std::io::Result<()> {
    // The connection's own round trip (SYN, SYN-ACK) before the client's first byte can leave.
    std::thread::sleep(delay * 2);
    let server = TcpStream::connect(upstream)?;
    for s in [&client, &server] {
        s.set_nodelay(true)?;
    }
    let up = pump(client.try_clone()?, server.try_clone()?, delay);
    let down = pump(server, client, delay);
    let _ = up.join();
    let _ = down.join();
    Ok(())
}

/// Chunks read but not yet written, each with when it is due, and the bytes in flight: those
/// queued plus those written whose acknowledgement has not come back yet.
#[derive(Default)]
struct Queue {
    chunks: VecDeque<(Instant, Option<Vec<u8>>)>,
    bytes: usize,
    /// Bytes written, each with when their acknowledgement reaches the sender (one more `delay`).
    acks: VecDeque<(Instant, usize)>,
    /// The writing side failed: the reader stops.
    closed: bool,
}

impl Queue {
    /// Takes the bytes acknowledged by `now` out of flight.
    fn acknowledge(&mut self, now: Instant) {
        while let Some(&(due, n)) = self.acks.front() {
            if due > now {
                break;
            }
            self.bytes -= n;
            self.acks.pop_front();
        }
    }
}

#[derive(Default)]
struct Line {
    queue: Mutex<Queue>,
    changed: Condvar,
}

/// Copies `from` to `to`, each chunk `delay` after it was read; ends with a write shutdown of
/// `to` when `from` ends, or shuts both down when `to` fails.
fn pump(mut from: TcpStream, mut to: TcpStream, delay: Duration) -> JoinHandle<()> {
    let line = Arc::new(Line::default());
    let reader_line = line.clone();
    let source = from.try_clone();
    let reader = std::thread::spawn(move || {
        let line = reader_line;
        let mut buf = vec![0; 64 * 1024];
        loop {
            let chunk = match from.read(&mut buf) {
                Ok(0) | Err(_) => None,
                Ok(n) => Some(buf[..n].to_vec()),
            };
            let end = chunk.is_none();
            let size = chunk.as_ref().map_or(0, Vec::len);
            let mut queue = line.queue.lock().unwrap();
            loop {
                queue.acknowledge(Instant::now());
                if queue.closed || queue.bytes == 0 || queue.bytes + size <= IN_FLIGHT {
                    break;
                }
                // Full: wait for the next acknowledgement, or for a write to schedule one.
                queue = match queue.acks.front() {
                    Some(&(due, _)) => {
                        let wait = due.saturating_duration_since(Instant::now());
                        line.changed.wait_timeout(queue, wait).unwrap().0
                    }
                    None => line.changed.wait(queue).unwrap(),
                };
            }
            if queue.closed {
                return;
            }
            queue.bytes += size;
            queue.chunks.push_back((Instant::now() + delay, chunk));
            line.changed.notify_all();
            drop(queue);
            if end {
                return;
            }
        }
    });
    std::thread::spawn(move || {
        loop {
            let (due, chunk) = {
                let mut queue = line.queue.lock().unwrap();
                while queue.chunks.is_empty() {
                    queue = line.changed.wait(queue).unwrap();
                }
                queue.chunks.pop_front().unwrap()
            };
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let Some(chunk) = chunk else {
                let _ = to.shutdown(Shutdown::Write);
                break;
            };
            let written = to.write_all(&chunk);
            let mut queue = line.queue.lock().unwrap();
            // The bytes leave flight when their acknowledgement is back, a one-way delay later:
            // a connection moves at most IN_FLIGHT per round trip, as a TCP window allows.
            queue.acks.push_back((Instant::now() + delay, chunk.len()));
            queue.closed = written.is_err();
            line.changed.notify_all();
            drop(queue);
            if written.is_err() {
                // The far side is gone: so is this connection, both ways.
                let _ = to.shutdown(Shutdown::Both);
                if let Ok(source) = &source {
                    let _ = source.shutdown(Shutdown::Both);
                }
                break;
            }
        }
        let _ = reader.join();
    })
}
