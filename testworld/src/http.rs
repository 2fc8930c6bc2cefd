//! The smallest HTTP/1.1 client the world needs to push images and to proxy to the registry:
//! one request per connection, plain TCP, chunked bodies understood and sent. Its own code, so
//! the world does not share a client (or its bugs) with cks-iso.

use std::io::{self, BufRead, BufReader, Read, Write};
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

fn read_reply(stream: TcpStream, head_only: bool) -> io::Result<Reply> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("bad status line {line:?}")))?;
    let headers = read_headers(&mut reader)?;
    let mut reply = Reply {
        status,
        headers,
        body: Vec::new(),
    };
    if head_only {
        return Ok(reply);
    }
    if reply.header("transfer-encoding") == Some("chunked") {
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| io::Error::other(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                break;
            }
            let start = reply.body.len();
            reply.body.resize(start + size, 0);
            reader.read_exact(&mut reply.body[start..])?;
            line.clear();
            reader.read_line(&mut line)?;
        }
    } else if let Some(len) = reply.header("content-length").and_then(|l| l.parse().ok()) {
        reply.body.resize(len, 0);
        reader.read_exact(&mut reply.body)?;
    } else {
        reader.read_to_end(&mut reply.body)?;
    }
    Ok(reply)
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

#[cfg(test)]
mod tests {
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
