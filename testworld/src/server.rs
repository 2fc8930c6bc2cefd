//! A tiny threaded HTTP/1.1 server for every server of the world (the registry's fronts, the
//! upstream stand-ins, git smart HTTP, Rekor): one thread per connection, one request per
//! connection (`Connection: close`), so what a client sees depends only on the handler, never on a
//! server library's keep-alive, `HEAD` handling or thread pool (tiny_http's pool lost wakeups, and
//! a connection it left queued went unread until the client's 30 s timeout). Requests are read by
//! the world's one parser (`http`).

pub use crate::http::Incoming;
use crate::http::{read_request, reason};
use std::io::{self, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A response to send.
#[derive(Debug, Clone, Default)]
pub struct Outgoing {
    /// The status code.
    pub status: u16,
    /// Headers besides `Content-Length` and `Connection`.
    pub headers: Vec<(String, String)>,
    /// The body (not sent for `HEAD`).
    pub body: Vec<u8>,
    /// `Content-Length` to announce when it is not the body's (answers to `HEAD`).
    pub length: Option<usize>,
}

impl Outgoing {
    /// A response with `status` and `body`.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            body: body.into(),
            ..Self::default()
        }
    }

    /// Adds a header.
    pub fn with(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// A server on an ephemeral 127.0.0.1 port, stopped when dropped.
pub struct HttpServer {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

type Handler = dyn Fn(Incoming) -> Outgoing + Send + Sync;

impl HttpServer {
    /// Serves every request with `handler`.
    pub fn start(handler: impl Fn(Incoming) -> Outgoing + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let handler = handler.clone();
                    std::thread::spawn(move || {
                        let _ = serve(stream, handler.as_ref());
                    });
                }
            })
        };
        Self {
            port,
            stop,
            thread: Some(thread),
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(stream: TcpStream, handler: &Handler) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    // The head and the body are two writes: without TCP_NODELAY the second waits for the client's
    // delayed ACK of the first (40 ms on Linux), which no real server makes a client wait.
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let Some(incoming) = read_request(&mut reader)? else {
        return Ok(());
    };
    let head = incoming.method == "HEAD";
    let out = handler(incoming);
    let mut text = format!("HTTP/1.1 {} {}\r\n", out.status, reason(out.status));
    for (name, value) in &out.headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    let length = out.length.unwrap_or(out.body.len());
    text.push_str(&format!(
        "Content-Length: {length}\r\nConnection: close\r\n\r\n"
    ));
    let mut stream = stream;
    stream.write_all(text.as_bytes())?;
    if !head {
        stream.write_all(&out.body)?;
    }
    stream.flush()
}
