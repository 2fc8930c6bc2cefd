//! Just enough DER for the tests to take a real certificate apart and put it back with one thing
//! changed (an extension added, a version or length spoiled). Test-side on purpose: the crate's
//! own reader is what is under test, so the tests do not edit their input with it. Well-formed
//! input only; a malformed element panics.

pub const SEQUENCE: u8 = 0x30;
pub const INTEGER: u8 = 0x02;
pub const OCTET_STRING: u8 = 0x04;
pub const OID: u8 = 0x06;

/// One element: its tag, contents and whole bytes.
#[derive(Debug, Clone, Copy)]
pub struct Tlv<'a> {
    pub tag: u8,
    pub value: &'a [u8],
    pub raw: &'a [u8],
}

/// Reads elements one after another.
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next element.
    pub fn any(&mut self) -> Option<Tlv<'a>> {
        let bytes = self.rest;
        let (&tag, after) = bytes.split_first()?;
        let (&first, mut after) = after.split_first()?;
        let len = match first {
            0..=0x7f => usize::from(first),
            _ => {
                let n = usize::from(first & 0x7f);
                let len = after
                    .get(..n)?
                    .iter()
                    .fold(0, |acc, &b| (acc << 8) | usize::from(b));
                after = &after[n..];
                len
            }
        };
        let value = after.get(..len)?;
        let header = bytes.len() - after.len();
        self.rest = &after[len..];
        Some(Tlv {
            tag,
            value,
            raw: &bytes[..header + len],
        })
    }
}

/// The one element of tag `tag` that `bytes` holds, if it is that.
pub fn one(bytes: &[u8], tag: u8) -> Option<Tlv<'_>> {
    let mut r = Reader::new(bytes);
    let tlv = r.any()?;
    (tlv.tag == tag && r.is_empty()).then_some(tlv)
}

/// `contents` as one element of tag `tag`, its length in the shortest form.
pub fn encode(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = contents.len();
    match u8::try_from(len) {
        Ok(short) if short < 0x80 => out.push(short),
        _ => {
            let bytes: Vec<u8> = len
                .to_be_bytes()
                .into_iter()
                .skip_while(|&b| b == 0)
                .collect();
            out.push(0x80 | bytes.len() as u8);
            out.extend(bytes);
        }
    }
    out.extend_from_slice(contents);
    out
}
