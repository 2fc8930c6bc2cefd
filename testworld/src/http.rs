//! The world's one HTTP/1.1 reader and its smallest client. The reader ([`read_head`],
//! [`read_body`], [`read_request`], [`status_of`]) is shared by the server of the world's fronts
//! (`server`), the fault proxy (`faults`) and the client here, so each message is parsed one way.
//! The client pushes images and proxies to the registry: one request per connection, plain TCP,
//! chunked bodies understood and sent. Its own code, so the world does not share a client (or its
//! bugs) with cks-iso.

use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A response read to its end.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body (empty for HEAD).
    pub body: Vec<u8>,
}

/// A request as received.
#[derive(Debug, Clone)]
pub struct Incoming {
    /// `GET`, `HEAD`, …
    pub method: String,
    /// Path and query.
    pub target: String,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body (by `Content-Length` or chunked).
    pub body: Vec<u8>,
}

impl Incoming {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

/// The first header called `name` (case-insensitive) in a list whose names are lower case.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let name = name.to_ascii_lowercase();
    headers
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.as_str())
}

impl Reply {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

/// Sends `method target` to `addr` (`host:port`) with `headers` and `body`, and reads the reply.
pub fn request(
    addr: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> io::Result<Reply> {
    let mut stream = connect(addr)?;
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    read_reply(stream, method == "HEAD")
}

/// Sends `method target` with a chunked body that `write` produces, and reads the reply.
pub fn request_streamed(
    addr: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
) -> io::Result<Reply> {
    let stream = connect(addr)?;
    let mut out = io::BufWriter::with_capacity(256 * 1024, stream.try_clone()?);
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    let mut chunked = Chunked(&mut out);
    write(&mut chunked)?;
    out.write_all(b"0\r\n\r\n")?;
    out.flush()?;
    drop(out);
    read_reply(stream, false)
}

struct Chunked<'a, W: Write>(&'a mut W);

impl<W: Write> Write for Chunked<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !buf.is_empty() {
            write!(self.0, "{:x}\r\n", buf.len())?;
            self.0.write_all(buf)?;
            self.0.write_all(b"\r\n")?;
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

fn connect(addr: &str) -> io::Result<TcpStream> {
    let stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Reads header lines up to the blank line that ends them: names lowercased, values trimmed.
pub fn read_headers(reader: &mut impl BufRead) -> io::Result<Vec<(String, String)>> {
    let mut headers = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            return Ok(headers);
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
}

/// Reads a message head: the start line (without its line end) and the headers.
pub fn read_head(reader: &mut impl BufRead) -> io::Result<(String, Vec<(String, String)>)> {
    let mut first = String::new();
    reader.read_line(&mut first)?;
    let headers = read_headers(reader)?;
    Ok((first.trim_end_matches(['\r', '\n']).to_owned(), headers))
}

/// The status code of a status line (`HTTP/1.1 200 OK`).
pub fn status_of(status_line: &str) -> Option<u16> {
    status_line.split_whitespace().nth(1)?.parse().ok()
}

/// Reads a body framed by chunked encoding or `Content-Length`; without either, `to_eof` reads
/// until the peer closes (a response) and otherwise there is none (a request).
pub fn read_body(
    reader: &mut impl BufRead,
    headers: &[(String, String)],
    to_eof: bool,
) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    if header(headers, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("bad chunk size {size:?}"),
                    )
                })?;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..])?;
            let mut crlf = String::new();
            reader.read_line(&mut crlf)?;
        }
    } else if let Some(len) = header(headers, "content-length").and_then(|v| v.parse().ok()) {
        body.resize(len, 0);
        reader.read_exact(&mut body)?;
    } else if to_eof {
        reader.read_to_end(&mut body)?;
    }
    Ok(body)
}

/// Reads a request: its line, headers and body. `None` when the line is not `METHOD TARGET …`
/// (the peer closed or sent garbage).
pub fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Incoming>> {
    let (first, headers) = read_head(reader)?;
    let mut parts = first.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Ok(None);
    };
    let (method, target) = (method.to_owned(), target.to_owned());
    let body = read_body(reader, &headers, false)?;
    Ok(Some(Incoming {
        method,
        target,
        headers,
        body,
    }))
}

fn read_reply(stream: TcpStream, head_only: bool) -> io::Result<Reply> {
    let mut reader = BufReader::new(stream);
    let (line, headers) = read_head(&mut reader)?;
    let status =
        status_of(&line).ok_or_else(|| io::Error::other(format!("bad status line {line:?}")))?;
    let body = match head_only {
        true => Vec::new(),
        false => read_body(&mut reader, &headers, true)?,
    };
    Ok(Reply {
        status,
        headers,
        body,
    })
}

/// The reason phrase the world's servers send with `status`.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        206 => "Partial Content",
        302 => "Found",
        307 => "Temporary Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// `sha256:<hex>` of `bytes`, with the world's own hashing.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("sha256:{}", hex(&sha2::Sha256::digest(bytes)))
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Standard base64 with padding, for Basic credentials.
pub fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 decoded, `None` when it is not (padding optional): what the world's servers
/// read from their clients.
pub fn unbase64(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let digits: Vec<u8> = text
        .trim_end_matches('=')
        .bytes()
        .map(value)
        .collect::<Option<_>>()?;
    if digits.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &d)| n | u32::from(d) << (18 - 6 * i));
        out.extend(&n.to_be_bytes()[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_what_it_encodes() {
        for bytes in [&b""[..], b"f", b"fo", b"foo", b"foob", b"fooba", b"foobar"] {
            assert_eq!(unbase64(&base64(bytes)).as_deref(), Some(bytes));
        }
        assert_eq!(unbase64("Zm9v!"), None);
    }

    #[test]
    fn one_parser_reads_requests_and_replies_however_framed() {
        let raw = "PUT /v2/x?a=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n\
                   3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: t\r\n\r\n";
        let got = read_request(&mut raw.as_bytes()).unwrap().unwrap();
        assert_eq!(
            (got.method.as_str(), got.target.as_str()),
            ("PUT", "/v2/x?a=1")
        );
        assert_eq!(got.header("HOST"), Some("h"));
        assert_eq!(got.body, b"abcde");
        assert!(read_request(&mut "\r\n\r\n".as_bytes()).unwrap().is_none());

        let reply = "HTTP/1.1 206 Partial Content\r\nContent-Length: 2\r\n\r\nxyz";
        let mut reader = reply.as_bytes();
        let (line, headers) = read_head(&mut reader).unwrap();
        assert_eq!(status_of(&line), Some(206));
        assert_eq!(read_body(&mut reader, &headers, true).unwrap(), b"xy");
        let mut unframed = "rest until close".as_bytes();
        assert_eq!(
            read_body(&mut unframed, &[], true).unwrap(),
            b"rest until close"
        );
        assert!(
            read_body(&mut "ignored".as_bytes(), &[], false)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn base64_matches_the_rfc_examples() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(plain.as_bytes()), coded);
        }
    }
}
