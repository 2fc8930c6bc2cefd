//! A WAN-shaping HTTP/1.1 proxy: every request waits a fixed delay before it is forwarded, and
//! every connection's answer is paced to a fixed rate, the way a far registry behind a per-flow
//! capped link looks to a client (`make bench`'s WAN shape: +50 ms per request, 200 Mbit/s per
//! connection).
//!
//! Unlike [`crate::faults::FaultProxy`], which holds each answer in memory to bend it, this one
//! streams: the upstream's answer is piped back as it arrives, so gigabyte blobs pass with flat
//! memory. One request per connection (`Connection: close` both ways), so every request pays the
//! delay and every transfer gets its own rate cap; clients simply open another connection.
//!
//! ```no_run
//! use std::time::Duration;
//! use cks_iso_testworld::shaper::{Shape, ShapingProxy};
//! let proxy = ShapingProxy::start("127.0.0.1:5000", Shape::wan());
//! let host = proxy.host(); // 127.0.0.1:<port>, in front of 127.0.0.1:5000
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the proxy bends time.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Added before each request is forwarded.
    pub delay: Duration,
    /// Body and head bytes per second per connection; 0 for no cap.
    pub bytes_per_sec: u64,
}

impl Shape {
    /// +50 ms per request, 200 Mbit/s per connection.
    pub fn wan() -> Self {
        Self {
            delay: Duration::from_millis(50),
            bytes_per_sec: 200_000_000 / 8,
        }
    }

    /// The `CKS_WORLD_SHAPE` spelling, `<ms>,<mbit>` (`50,200`); panics on anything else, since
    /// only benchmarks set it.
    pub fn from_spec(spec: &str) -> Self {
        let (ms, mbit) = spec
            .split_once(',')
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
            .unwrap_or_else(|| panic!("CKS_WORLD_SHAPE must be <ms>,<mbit>, not {spec:?}"));
        Self {
            delay: Duration::from_millis(ms),
            bytes_per_sec: mbit * 1_000_000 / 8,
        }
    }
}

/// The running proxy; stops accepting when dropped.
pub struct ShapingProxy {
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
    accept: Option<JoinHandle<()>>,
}

impl ShapingProxy {
    /// Starts a proxy on an ephemeral loopback port in front of `upstream` (`host:port`).
    pub fn start(upstream: &str, shape: Shape) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the shaping proxy");
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let upstream = upstream.to_owned();
        let (stop2, requests2) = (stop.clone(), requests.clone());
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let upstream = upstream.clone();
                let requests = requests2.clone();
                std::thread::spawn(move || {
                    // A client that hung up mid-answer is normal; nothing to report.
                    let _ = serve(stream, &upstream, shape, &requests);
                });
            }
        });
        Self {
            addr,
            stop,
            requests,
            accept: Some(accept),
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// Requests forwarded so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for ShapingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(handle) = self.accept.take() {
            let _ = handle.join();
        }
    }
}

/// Reads a head (request or status line plus headers) up to the blank line, as raw lines.
fn read_head(reader: &mut impl BufRead) -> std::io::Result<Vec<String>> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end_matches(['\r', '\n']).to_owned();
        if line.is_empty() {
            return Ok(lines);
        }
        lines.push(line);
    }
}

/// The head again, with `Connection: close` in place of any connection headers.
fn closing(head: &[String]) -> Vec<u8> {
    let mut out = String::new();
    for (i, line) in head.iter().enumerate() {
        let name = line.split(':').next().unwrap_or("").to_ascii_lowercase();
        if i > 0 && matches!(name.as_str(), "connection" | "keep-alive") {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    out.into_bytes()
}

/// Writes to `out` no faster than the shape's rate since `start` (`sent` bytes so far).
struct Paced<'a> {
    out: &'a mut TcpStream,
    start: Instant,
    sent: u64,
    rate: u64,
}

impl Paced<'_> {
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        // 64 KiB steps keep the pacing smooth (2.6 ms each at 200 Mbit/s).
        for piece in bytes.chunks(64 * 1024) {
            if self.rate > 0 {
                let due = Duration::from_secs_f64(self.sent as f64 / self.rate as f64);
                if let Some(wait) = due.checked_sub(self.start.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
            self.out.write_all(piece)?;
            self.sent += piece.len() as u64;
        }
        Ok(())
    }
}

fn serve(
    mut client: TcpStream,
    upstream: &str,
    shape: Shape,
    requests: &AtomicU64,
) -> std::io::Result<()> {
    client.set_nodelay(true)?;
    let mut reader = BufReader::new(client.try_clone()?);
    // A TLS hello (a client trying https first, as skopeo does for an insecure registry) has no
    // line to read: answer it as a plain HTTP server would, so the client falls back to http.
    if reader
        .fill_buf()?
        .first()
        .is_some_and(|b| !b.is_ascii_uppercase())
    {
        client.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")?;
        return client.shutdown(Shutdown::Both);
    }
    let head = read_head(&mut reader)?;
    let length: usize = head
        .iter()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    std::thread::sleep(shape.delay);
    requests.fetch_add(1, Ordering::SeqCst);
    let mut conn = TcpStream::connect(upstream)?;
    conn.set_nodelay(true)?;
    conn.write_all(&closing(&head))?;
    conn.write_all(&body)?;
    let mut answer = BufReader::with_capacity(256 * 1024, conn);
    let status = read_head(&mut answer)?;
    let mut paced = Paced {
        out: &mut client,
        start: Instant::now(),
        sent: 0,
        rate: shape.bytes_per_sec,
    };
    paced.send(&closing(&status))?;
    // With `Connection: close` upstream ends its answer by closing: pipe to the end.
    loop {
        let chunk = answer.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        let n = chunk.len();
        paced.send(chunk)?;
        answer.consume(n);
    }
    client.flush()?;
    client.shutdown(Shutdown::Write)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A keep-alive-minded upstream that answers every request with `size` bytes.
    fn upstream(size: usize) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let head = read_head(&mut reader).unwrap();
                    assert!(head.iter().any(|l| l == "Connection: close"), "{head:?}");
                    let body = vec![b'x'; size];
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nConnection: keep-alive\r\n\r\n"
                    );
                    let _ = stream.write_all(&body);
                });
            }
        });
        addr
    }

    fn get(host: &str) -> (Vec<u8>, Duration) {
        let start = Instant::now();
        let mut stream = TcpStream::connect(host).unwrap();
        stream
            .write_all(b"GET /x HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n")
            .unwrap();
        let mut out = Vec::new();
        stream.read_to_end(&mut out).unwrap();
        (out, start.elapsed())
    }

    #[test]
    fn answers_are_delayed_paced_and_closed() {
        let up = upstream(1_000_000);
        let proxy = ShapingProxy::start(
            &up,
            Shape {
                delay: Duration::from_millis(100),
                bytes_per_sec: 4_000_000,
            },
        );
        let (answer, took) = get(&proxy.host());
        let text = String::from_utf8_lossy(&answer[..200]);
        assert!(text.contains("Connection: close"), "{text}");
        assert!(!text.contains("keep-alive"), "{text}");
        assert!(answer.ends_with(&[b'x'; 1000]));
        // 100 ms delay + 1 MB at 4 MB/s.
        assert!(took >= Duration::from_millis(330), "{took:?}");
        assert_eq!(proxy.requests(), 1);
    }
}
