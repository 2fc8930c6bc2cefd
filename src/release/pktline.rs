//! Git's pkt-line framing (`gitprotocol-common`), the only wire format the tag listing speaks.
//!
//! Kept apart from [`super::git`] so the framing rules — 4 hex digits counting themselves, the
//! special packets `0000`/`0001`/`0002`, the 65520-byte limit — are tested on their own, byte by
//! byte, without a server.

/// The largest packet, length prefix included.
pub const MAX_PACKET: usize = 65520;

/// One packet of a pkt-line stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packet<'a> {
    /// A data packet's payload, trailing LF included if the sender wrote one.
    Data(&'a [u8]),
    /// `0000`: end of a section or message.
    Flush,
    /// `0001`: separates a v2 command's capabilities from its arguments.
    Delim,
    /// `0002`: end of a stateless v2 response.
    ResponseEnd,
}

impl<'a> Packet<'a> {
    /// The payload of a data packet without its trailing LF, as text; `None` for special packets.
    pub fn line(&self) -> Option<Result<&'a str, std::str::Utf8Error>> {
        match self {
            Self::Data(data) => Some(std::str::from_utf8(
                data.strip_suffix(b"\n").unwrap_or(data),
            )),
            _ => None,
        }
    }
}

/// A stream that is not valid pkt-line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PktLineError {
    /// The 4-byte length is not lowercase or uppercase hex.
    #[error("invalid pkt-line length {0:?} at byte {1}")]
    BadLength(String, usize),
    /// `0003` has no meaning in any protocol version.
    #[error("reserved pkt-line length {0:04x} at byte {1}")]
    Reserved(usize, usize),
    /// The length exceeds [`MAX_PACKET`].
    #[error("pkt-line of {0} bytes at byte {1} exceeds the maximum of {MAX_PACKET}")]
    TooLong(usize, usize),
    /// The stream ends inside a packet.
    #[error("pkt-line stream truncated at byte {0}")]
    Truncated(usize),
}

/// Reads packets from a complete buffer.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Starts at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// The next packet, or `None` at the end of the buffer.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'a>>, PktLineError> {
        let start = self.pos;
        if start == self.buf.len() {
            return Ok(None);
        }
        let head = self
            .buf
            .get(start..start + 4)
            .ok_or(PktLineError::Truncated(start))?;
        let text = std::str::from_utf8(head)
            .ok()
            .filter(|t| t.bytes().all(|b| b.is_ascii_hexdigit()));
        let len = text
            .and_then(|t| usize::from_str_radix(t, 16).ok())
            .ok_or_else(|| {
                PktLineError::BadLength(String::from_utf8_lossy(head).into_owned(), start)
            })?;
        let packet = match len {
            0 => Packet::Flush,
            1 => Packet::Delim,
            2 => Packet::ResponseEnd,
            3 => return Err(PktLineError::Reserved(len, start)),
            len if len > MAX_PACKET => return Err(PktLineError::TooLong(len, start)),
            len => Packet::Data(
                self.buf
                    .get(start + 4..start + len)
                    .ok_or(PktLineError::Truncated(start))?,
            ),
        };
        self.pos = start + len.max(4);
        Ok(Some(packet))
    }
}

/// Appends `payload` as one data packet.
///
/// # Panics
/// When the payload does not fit in one packet: callers only frame short protocol lines.
pub fn write_data(out: &mut Vec<u8>, payload: &[u8]) {
    let len = payload.len() + 4;
    assert!(
        len <= MAX_PACKET,
        "pkt-line payload of {} bytes is too long",
        payload.len()
    );
    out.extend_from_slice(format!("{len:04x}").as_bytes());
    out.extend_from_slice(payload);
}

/// Appends a flush packet (`0000`).
pub fn write_flush(out: &mut Vec<u8>) {
    out.extend_from_slice(b"0000");
}

/// Appends a delimiter packet (`0001`).
pub fn write_delim(out: &mut Vec<u8>) {
    out.extend_from_slice(b"0001");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(buf: &[u8]) -> Result<Vec<Packet<'_>>, PktLineError> {
        let mut reader = Reader::new(buf);
        let mut out = Vec::new();
        while let Some(p) = reader.next_packet()? {
            out.push(p);
        }
        Ok(out)
    }

    #[test]
    fn special_packets_are_told_apart_from_data() {
        let got = all(b"0000000100020006a\n").unwrap();
        assert_eq!(
            got,
            [
                Packet::Flush,
                Packet::Delim,
                Packet::ResponseEnd,
                Packet::Data(b"a\n")
            ]
        );
    }

    #[test]
    fn the_length_counts_its_own_four_bytes() {
        assert_eq!(all(b"0009hello").unwrap(), [Packet::Data(b"hello")]);
        assert_eq!(all(b"0004").unwrap(), [Packet::Data(b"")]);
    }

    #[test]
    fn trailing_lf_is_optional_in_lines() {
        let with = Packet::Data(b"version 2\n");
        let without = Packet::Data(b"version 2");
        assert_eq!(with.line().unwrap().unwrap(), "version 2");
        assert_eq!(without.line().unwrap().unwrap(), "version 2");
        assert!(Packet::Flush.line().is_none());
    }

    #[test]
    fn uppercase_hex_lengths_are_read() {
        assert_eq!(all(b"000Aabcdef").unwrap(), [Packet::Data(b"abcdef")]);
    }

    #[test]
    fn maximum_length_is_accepted_and_one_more_refused() {
        let mut buf = format!("{MAX_PACKET:04x}").into_bytes();
        buf.resize(MAX_PACKET, b'x');
        assert_eq!(all(&buf).unwrap().len(), 1);
        let over = format!("{:04x}", MAX_PACKET + 1);
        assert_eq!(
            all(over.as_bytes()),
            Err(PktLineError::TooLong(MAX_PACKET + 1, 0))
        );
    }

    #[test]
    fn malformed_streams_are_errors_with_their_offset() {
        assert_eq!(all(b"0000zz"), Err(PktLineError::Truncated(4)));
        assert_eq!(all(b"00zz"), Err(PktLineError::BadLength("00zz".into(), 0)));
        assert_eq!(all(b"0003"), Err(PktLineError::Reserved(3, 0)));
        assert_eq!(all(b"000ahi"), Err(PktLineError::Truncated(0)));
        // A sign or space is not hex even though `from_str_radix` would take "+00a".
        assert!(matches!(all(b"+00a"), Err(PktLineError::BadLength(..))));
    }

    #[test]
    fn written_packets_read_back() {
        let mut out = Vec::new();
        write_data(&mut out, b"command=ls-refs\n");
        write_delim(&mut out);
        write_data(&mut out, b"peel\n");
        write_flush(&mut out);
        assert_eq!(&out[..4], b"0014");
        let got = all(&out).unwrap();
        assert_eq!(
            got,
            [
                Packet::Data(b"command=ls-refs\n"),
                Packet::Delim,
                Packet::Data(b"peel\n"),
                Packet::Flush
            ]
        );
    }
}
