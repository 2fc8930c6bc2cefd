//! A programmable fault-injecting HTTP/1.1 reverse proxy, for proving that clients survive (or
//! fail clearly on) the ways real networks and servers misbehave (`test-world.md`, "faults").
//!
//! A normal server library cannot reset a connection after K body bytes, declare a length and close
//! early, or stall mid-body; this proxy is written on raw `std::net` sockets so it can. It sits on
//! an ephemeral `127.0.0.1` port in front of any plain-HTTP upstream base URL, forwards each request
//! (one request per connection, `Connection: close`) and, when a [`Rule`] matches, bends the answer.
//!
//! # API
//!
//! ```no_run
//! use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
//! # let upstream = "http://127.0.0.1:1/base";
//! let proxy = FaultProxy::start(upstream);
//! // The first two requests whose path contains "kubeadm" get 503, then requests pass through.
//! proxy.add(Rule::path_contains("kubeadm").times(2).fault(Fault::Status(503)));
//! // Every request for a path matching the regex gets one flipped byte, forever.
//! proxy.add(Rule::path_regex(r"\.tgz$").fault(Fault::FlipByte { offset: 10 }));
//! let url = format!("{}/dl.k8s.io/x", proxy.url()); // → upstream + "/dl.k8s.io/x"
//! // ... run the client against `url` ...
//! let log = proxy.log(); // every request: method, path, headers, the fault applied
//! assert!(log.iter().any(|r| r.range().is_some()));
//! ```
//!
//! - Rules are checked in the order added; the first one that matches the request's path (the part
//!   after the proxy's address, query included) and has uses left applies and uses one. A rule
//!   without [`Rule::times`] applies forever. Unmatched requests pass through untouched.
//! - Pass-through rewrites nothing but the `Host` header and the path prefix of the upstream base:
//!   `Range`, `Authorization` and every other header go upstream as sent, and the upstream's answer
//!   (status, headers including `Location` of redirects, `Content-Range`, body) comes back as is,
//!   re-framed with `Content-Length`.
//!   [`FaultProxy::rewrite_redirects`] makes redirects into the upstream come back through the proxy.
//!   `HEAD`, `204` and `304` answers keep the upstream's own `Content-Length`.
//! - [`Fault`] lists what can be done; those that need the upstream's answer (reset, truncation,
//!   flipped byte, stall) fetch it first and damage it on the way back.

use crate::http::{Incoming, header, read_body, read_head, read_request, reason, status_of};
use std::io::{BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

mod rules;

pub use rules::{Fault, LoggedRequest, Rule};

struct State {
    rules: Mutex<Vec<Rule>>,
    /// Random faults for requests no rule matched.
    chaos: Mutex<Option<crate::chaos::Chaos>>,
    log: Mutex<Vec<LoggedRequest>>,
    stop: AtomicBool,
    /// Rewrite `Location` headers that point into the upstream to point at the proxy.
    rewrite_redirects: AtomicBool,
    /// The proxy's own base URL.
    own_url: Mutex<String>,
    /// Body bytes sent by [`Fault::Endless`] answers.
    endless: std::sync::atomic::AtomicU64,
}

/// The running proxy; stops when dropped.
pub struct FaultProxy {
    addr: std::net::SocketAddr,
    state: Arc<State>,
    accept: Option<JoinHandle<()>>,
}

/// Where the upstream lives: `host:port` and a path prefix.
#[derive(Clone)]
struct Upstream {
    authority: String,
    prefix: String,
}

fn parse_upstream(base: &str) -> Upstream {
    let rest = base
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("the fault proxy forwards to plain http:// only, not {base}"));
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let authority = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    Upstream {
        authority,
        prefix: path.trim_end_matches('/').to_owned(),
    }
}

impl FaultProxy {
    /// Starts a proxy in front of `upstream` (an `http://host:port[/prefix]` base URL).
    pub fn start(upstream: &str) -> Self {
        let upstream = parse_upstream(upstream);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fault proxy");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State {
            rules: Mutex::new(Vec::new()),
            chaos: Mutex::new(None),
            log: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            rewrite_redirects: AtomicBool::new(false),
            own_url: Mutex::new(format!("http://{addr}")),
            endless: std::sync::atomic::AtomicU64::new(0),
        });
        let accept_state = state.clone();
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_state.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let state = accept_state.clone();
                let upstream = upstream.clone();
                std::thread::spawn(move || {
                    // A client that gave up mid-answer is normal here; nothing to report.
                    let _ = serve(stream, &state, &upstream);
                });
            }
        });
        Self {
            addr,
            state,
            accept: Some(accept),
        }
    }

    /// The proxy's base URL, `http://127.0.0.1:<port>` (no trailing slash); a path appended to it
    /// is appended to the upstream base.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Adds a rule after the existing ones.
    pub fn add(&self, rule: Rule) {
        self.state.rules.lock().unwrap().push(rule);
    }

    /// Rewrites `Location` headers of upstream redirects that point into the upstream base (absolute
    /// or absolute-path) so the client follows them through the proxy. Off by default: pass-through
    /// rewrites nothing unless told.
    pub fn rewrite_redirects(&self, on: bool) {
        self.state.rewrite_redirects.store(on, Ordering::SeqCst);
    }

    /// Gives requests that no rule matches random faults from `chaos` (seeded, so a run can be
    /// repeated); `None` stops it.
    pub fn chaos(&self, chaos: Option<crate::chaos::Chaos>) {
        *self.state.chaos.lock().unwrap() = chaos;
    }

    /// Removes every rule: everything passes through.
    pub fn clear_rules(&self) {
        self.state.rules.lock().unwrap().clear();
    }

    /// Every request seen so far, in arrival order.
    pub fn log(&self) -> Vec<LoggedRequest> {
        self.state.log.lock().unwrap().clone()
    }

    /// Requests seen so far whose path contains `needle`.
    pub fn requests_to(&self, needle: &str) -> Vec<LoggedRequest> {
        self.log()
            .into_iter()
            .filter(|r| r.path.contains(needle))
            .collect()
    }

    /// Body bytes every [`Fault::Endless`] answer sent so far, together.
    pub fn endless_bytes(&self) -> u64 {
        self.state.endless.load(Ordering::SeqCst)
    }

    /// Forgets the requests seen so far.
    pub fn clear_log(&self) {
        self.state.log.lock().unwrap().clear();
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(handle) = self.accept.take() {
            let _ = handle.join();
        }
    }
}

/// The upstream's answer.
struct Answer {
    status_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// A reply without a body (HEAD, 204, 304): its own `Content-Length` stands as sent.
    head_only: bool,
}

fn forward(
    request: &Incoming,
    upstream: &Upstream,
    rewrite_to: Option<&str>,
) -> std::io::Result<Answer> {
    let mut conn = TcpStream::connect(&upstream.authority)?;
    conn.set_nodelay(true)?;
    let mut head = format!(
        "{} {}{} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n",
        request.method, upstream.prefix, request.target, upstream.authority
    );
    for (name, value) in &request.headers {
        if matches!(
            name.as_str(),
            "host" | "connection" | "transfer-encoding" | "content-length" | "keep-alive"
        ) {
            continue;
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !request.body.is_empty() || request.method == "POST" || request.method == "PUT" {
        head.push_str(&format!("content-length: {}\r\n", request.body.len()));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    conn.write_all(&request.body)?;
    let mut reader = BufReader::new(conn);
    let (status_line, headers) = read_head(&mut reader)?;
    let head_only = request.method == "HEAD" || matches!(status_of(&status_line), Some(204 | 304));
    let body = match head_only {
        true => Vec::new(),
        false => read_body(&mut reader, &headers, true)?,
    };
    let mut answer = Answer {
        status_line,
        headers,
        body,
        head_only,
    };
    if let Some(base) = rewrite_to
        && let Some((_, location)) = answer.headers.iter_mut().find(|(n, _)| n == "location")
    {
        let upstream_base = format!("http://{}{}", upstream.authority, upstream.prefix);
        if let Some(rest) = location.strip_prefix(&upstream_base) {
            *location = format!("{base}{rest}");
        } else if location.starts_with('/')
            && let Some(rest) = location.strip_prefix(&upstream.prefix)
        {
            *location = format!("{base}{rest}");
        }
    }
    Ok(answer)
}

/// The answer's head re-framed with `Content-Length` (`declared` body bytes) and `Connection: close`.
fn head_bytes(answer: &Answer, declared: usize) -> Vec<u8> {
    let mut head = format!("{}\r\n", answer.status_line);
    for (name, value) in &answer.headers {
        let reframed = match name.as_str() {
            "connection" | "transfer-encoding" | "keep-alive" => true,
            "content-length" => !answer.head_only,
            _ => false,
        };
        if !reframed {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    if !answer.head_only {
        head.push_str(&format!("content-length: {declared}\r\n"));
    }
    head.push_str("connection: close\r\n\r\n");
    head.into_bytes()
}

fn canned(status: u16, reason: &str, headers: &[(&str, String)], body: &str) -> Answer {
    Answer {
        status_line: format!("HTTP/1.1 {status} {reason}"),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect(),
        body: body.as_bytes().to_vec(),
        head_only: false,
    }
}

fn pick_fault(state: &State, request: &Incoming) -> Option<Fault> {
    let mut rules = state.rules.lock().unwrap();
    for rule in rules.iter_mut() {
        if rule.remaining == Some(0) || !rule.matcher.matches(&request.target) {
            continue;
        }
        if rule
            .method
            .as_ref()
            .is_some_and(|m| *m != request.method.to_ascii_uppercase())
        {
            continue;
        }
        if let Some(n) = rule.remaining.as_mut() {
            *n -= 1;
        }
        return Some(rule.fault.clone());
    }
    drop(rules);
    let has_range = header(&request.headers, "range").is_some();
    state
        .chaos
        .lock()
        .unwrap()
        .as_mut()
        .and_then(|chaos| chaos.pick(has_range))
}

fn serve(mut stream: TcpStream, state: &State, upstream: &Upstream) -> std::io::Result<()> {
    // Heads and bodies go out in separate writes: see `server::serve`.
    stream.set_nodelay(true)?;
    let Some(request) = read_request(&mut BufReader::new(&stream))? else {
        return Ok(());
    };
    let fault = pick_fault(state, &request);
    state.log.lock().unwrap().push(LoggedRequest {
        method: request.method.clone(),
        path: request.target.clone(),
        headers: request.headers.clone(),
        fault: fault.as_ref().map(Fault::name),
    });
    let bad_gateway = |e: std::io::Error| {
        canned(
            502,
            "Bad Gateway",
            &[("content-type", "text/plain".into())],
            &format!("fault proxy: upstream failed: {e}\n"),
        )
    };
    let own = state.own_url.lock().unwrap().clone();
    let rewrite_to = state
        .rewrite_redirects
        .load(Ordering::SeqCst)
        .then_some(own.as_str());
    let fetch = || forward(&request, upstream, rewrite_to).unwrap_or_else(bad_gateway);
    let text = [("content-type", "text/plain".to_string())];
    match fault {
        None => send(&mut stream, &fetch()),
        Some(Fault::Status(code)) => send(&mut stream, &status(code)),
        Some(Fault::TooManyRequests { retry_after }) => {
            send(&mut stream, &too_many_requests(retry_after))
        }
        Some(Fault::RedirectLoop) => send(&mut stream, &redirect(request.target.clone())),
        Some(Fault::Redirect(to)) => send(&mut stream, &redirect(to)),
        Some(Fault::Reply {
            content_type,
            headers,
            body,
        }) => {
            let mut answer = canned(200, "OK", &[("content-type", content_type)], "");
            answer.headers.extend(headers);
            answer.body = body;
            send(&mut stream, &answer)
        }
        Some(Fault::HtmlOk) => send(&mut stream, &html_ok()),
        Some(Fault::FlipByte { offset }) => {
            let mut answer = fetch();
            if let Some(byte) = answer.body.get_mut(offset) {
                *byte = !*byte;
            }
            send(&mut stream, &answer)
        }
        Some(Fault::Truncate { after }) => cut_short(&mut stream, &fetch(), after, None),
        Some(Fault::ResetAfter { after }) => reset_after(stream, &fetch(), after),
        Some(Fault::IgnoreRange) => {
            let mut plain = request;
            plain.headers.retain(|(n, _)| n != "range");
            let answer = forward(&plain, upstream, rewrite_to).unwrap_or_else(bad_gateway);
            send(&mut stream, &answer)
        }
        Some(Fault::RangeRejected) if header(&request.headers, "range").is_some() => send(
            &mut stream,
            &canned(400, "Bad Request", &text, "fault proxy: no ranges here\n"),
        ),
        Some(Fault::WrongContentRange) if header(&request.headers, "range").is_some() => {
            send(&mut stream, &shifted_range(fetch()))
        }
        Some(Fault::RangeRejected | Fault::WrongContentRange) => send(&mut stream, &fetch()),
        Some(Fault::Trickle { chunk, pause }) => trickle(&mut stream, &fetch(), chunk, pause),
        Some(Fault::Endless) => endless(&mut stream, fetch(), state),
        Some(Fault::Stall { after, pause }) => cut_short(&mut stream, &fetch(), after, Some(pause)),
    }
}

/// An injected error status.
fn status(code: u16) -> Answer {
    canned(
        code,
        reason(code),
        &[("content-type", "text/plain".to_string())],
        &format!("fault proxy: injected {code}\n"),
    )
}

/// 429 with a `Retry-After` of `retry_after` seconds.
fn too_many_requests(retry_after: u32) -> Answer {
    canned(
        429,
        "Too Many Requests",
        &[
            ("content-type", "text/plain".into()),
            ("retry-after", retry_after.to_string()),
        ],
        "fault proxy: slow down\n",
    )
}

/// 302 to `to`.
fn redirect(to: String) -> Answer {
    canned(302, "Found", &[("location", to)], "redirecting\n")
}

/// An HTML error page served as 200 OK, as captive portals and some proxies do.
fn html_ok() -> Answer {
    canned(
        200,
        "OK",
        &[("content-type", "text/html; charset=utf-8".into())],
        "<!DOCTYPE html>\n<html><head><title>Error</title></head>\n\
         <body><h1>Something went wrong</h1><p>Please try again later.</p></body></html>\n",
    )
}

/// The head and the first `after` bytes of the body, then (after `pause`, when given: a stall)
/// the connection closed.
fn cut_short(
    stream: &mut TcpStream,
    answer: &Answer,
    after: usize,
    pause: Option<Duration>,
) -> std::io::Result<()> {
    stream.write_all(&head_bytes(answer, answer.body.len()))?;
    stream.write_all(&answer.body[..after.min(answer.body.len())])?;
    stream.flush()?;
    if let Some(pause) = pause {
        std::thread::sleep(pause);
    }
    stream.shutdown(Shutdown::Both)
}

/// The head and the first `after` bytes of the body, then a reset (RST) instead of a close.
fn reset_after(mut stream: TcpStream, answer: &Answer, after: usize) -> std::io::Result<()> {
    stream.write_all(&head_bytes(answer, answer.body.len()))?;
    stream.write_all(&answer.body[..after.min(answer.body.len())])?;
    stream.flush()?;
    // Give the bytes time to leave before the RST discards what is still queued.
    std::thread::sleep(Duration::from_millis(50));
    let socket = socket2::Socket::from(stream);
    socket.set_linger(Some(Duration::ZERO))?;
    drop(socket);
    Ok(())
}

/// The answer to a range request with its `Content-Range` one byte later than asked, the body
/// one byte shorter.
fn shifted_range(mut answer: Answer) -> Answer {
    if let Some((_, value)) = answer
        .headers
        .iter_mut()
        .find(|(n, _)| n == "content-range")
        && let Some(rest) = value.strip_prefix("bytes ")
        && let Some((start, tail)) = rest.split_once('-')
        && let Ok(start) = start.parse::<u64>()
    {
        *value = format!("bytes {}-{tail}", start + 1);
        if !answer.body.is_empty() {
            answer.body.remove(0);
        }
    }
    answer
}

/// The body in pieces of `chunk` bytes, `pause` after each.
fn trickle(
    stream: &mut TcpStream,
    answer: &Answer,
    chunk: usize,
    pause: Duration,
) -> std::io::Result<()> {
    stream.write_all(&head_bytes(answer, answer.body.len()))?;
    for piece in answer.body.chunks(chunk.max(1)) {
        stream.write_all(piece)?;
        stream.flush()?;
        std::thread::sleep(pause);
    }
    stream.shutdown(Shutdown::Write)
}

/// The body without a declared length, then zeros until the proxy stops, each byte counted.
fn endless(stream: &mut TcpStream, mut answer: Answer, state: &State) -> std::io::Result<()> {
    answer.headers.retain(|(n, _)| n != "content-length");
    // Framed as a reply without a body: no length is declared, the close ends it.
    answer.head_only = true;
    stream.write_all(&head_bytes(&answer, 0))?;
    stream.write_all(&answer.body)?;
    state
        .endless
        .fetch_add(answer.body.len() as u64, Ordering::SeqCst);
    let zeros = vec![0u8; 64 * 1024];
    loop {
        stream.write_all(&zeros)?;
        state
            .endless
            .fetch_add(zeros.len() as u64, Ordering::SeqCst);
        if state.stop.load(Ordering::SeqCst) {
            return Ok(());
        }
    }
}

fn send(stream: &mut TcpStream, answer: &Answer) -> std::io::Result<()> {
    stream.write_all(&head_bytes(answer, answer.body.len()))?;
    stream.write_all(&answer.body)?;
    stream.flush()?;
    stream.shutdown(Shutdown::Write)
}

#[cfg(test)]
mod tests;
