//! An HTTPS server for the world's stand-ins that real clients reach over TLS: the storage host
//! (a bucket, a CDN) a registry redirects blob downloads to. Real registries do that redirect
//! (docker-registry's `redirect` storage middleware, S3 and GCS behind registry.k8s.io), and the
//! client must keep its rules there: the same roots, no `Authorization` carried across, its
//! connections kept alive and its TLS sessions resumed. No real bucket runs here, so this server
//! stands in for one and reports what the client did: connections, requests, and how many
//! handshakes resumed an earlier session (rustls' own account of each handshake).
//!
//! Unlike [`crate::server::HttpServer`] (one request per connection) it keeps each connection
//! open for the next request, as storage hosts do: HTTP/1.1 only (ALPN `http/1.1`), one thread per
//! connection, requests read by the world's one parser ([`crate::http`]).

use std::io::{self, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::http::{Incoming, read_request, reason};
use crate::registry::Tls;
use crate::server::Outgoing;

type Handler = dyn Fn(Incoming) -> Outgoing + Send + Sync;

#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    resumed: AtomicU64,
    requests: AtomicU64,
}

/// An HTTPS server on an ephemeral 127.0.0.1 port with `tls`'s certificate, stopped when dropped
/// (open connections end with their client).
pub struct TlsServer {
    port: u16,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    thread: Option<JoinHandle<()>>,
}

impl TlsServer {
    /// Serves every request with `handler`.
    pub fn start(
        tls: &Tls,
        handler: impl Fn(Incoming) -> Outgoing + Send + Sync + 'static,
    ) -> Self {
        let config = Arc::new(server_config(tls));
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let handler: Arc<Handler> = Arc::new(handler);
        let thread = {
            let (stop, counts) = (stop.clone(), counts.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    counts.connections.fetch_add(1, Ordering::SeqCst);
                    let (config, counts, handler) =
                        (config.clone(), counts.clone(), handler.clone());
                    std::thread::spawn(move || {
                        // A client hanging up is how connections end; nothing to report.
                        let _ = serve(stream, config, &counts, handler.as_ref());
                    });
                }
            })
        };
        Self {
            port,
            stop,
            counts,
            thread: Some(thread),
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://{}", self.host())
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.counts.connections.load(Ordering::SeqCst)
    }

    /// Handshakes so far that resumed a session instead of a full handshake.
    pub fn resumed(&self) -> u64 {
        self.counts.resumed.load(Ordering::SeqCst)
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.counts.requests.load(Ordering::SeqCst)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// rustls' defaults (TLS 1.2 and 1.3, a session cache, two TLS 1.3 tickets per connection) with
/// `tls`'s certificate, offering HTTP/1.1 only.
fn server_config(tls: &Tls) -> rustls::ServerConfig {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(tls.cert())
        .expect("read the test certificate")
        .collect::<Result<_, _>>()
        .expect("parse the test certificate");
    let key = PrivateKeyDer::from_pem_file(tls.key()).expect("read the test key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("rustls' default versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("the test certificate and key match");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// Runs the handshake, then answers requests until the client closes the connection.
fn serve(
    mut tcp: TcpStream,
    config: Arc<rustls::ServerConfig>,
    counts: &Counts,
    handler: &Handler,
) -> io::Result<()> {
    tcp.set_read_timeout(Some(Duration::from_secs(60)))?;
    tcp.set_nodelay(true)?;
    let mut conn = rustls::ServerConnection::new(config).map_err(io::Error::other)?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp)?;
    }
    if conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed) {
        counts.resumed.fetch_add(1, Ordering::SeqCst);
    }
    let mut reader = BufReader::new(rustls::StreamOwned::new(conn, tcp));
    while let Some(incoming) = read_request(&mut reader)? {
        counts.requests.fetch_add(1, Ordering::SeqCst);
        let head = incoming.method == "HEAD";
        let out = handler(incoming);
        let mut text = format!("HTTP/1.1 {} {}\r\n", out.status, reason(out.status));
        for (name, value) in &out.headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        let length = out.length.unwrap_or(out.body.len());
        text.push_str(&format!("Content-Length: {length}\r\n\r\n"));
        let stream = reader.get_mut();
        stream.write_all(text.as_bytes())?;
        if !head {
            stream.write_all(&out.body)?;
        }
        stream.flush()?;
    }
    Ok(())
}
