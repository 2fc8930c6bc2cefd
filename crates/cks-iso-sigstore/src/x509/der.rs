//! Just enough DER to read X.509 certificates and SubjectPublicKeyInfos: tag-length-value
//! elements with their exact bytes, so a certificate's TBS can be re-encoded without one extension
//! (the SCT check needs the precertificate's TBS). Definite lengths only; anything else is an
//! error, never a guess.

use crate::Invalid;
/// One DER element.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tlv<'a> {
    /// The identifier octet (class, constructed bit and tag number; tags above 30 are refused).
    pub(crate) tag: u8,
    /// The contents.
    pub(crate) value: &'a [u8],
    /// The whole element: identifier, length and contents.
    pub(crate) raw: &'a [u8],
}

pub(crate) const SEQUENCE: u8 = 0x30;
pub(crate) const BOOLEAN: u8 = 0x01;
pub(crate) const INTEGER: u8 = 0x02;
pub(crate) const BIT_STRING: u8 = 0x03;
pub(crate) const OCTET_STRING: u8 = 0x04;
pub(crate) const OID: u8 = 0x06;
pub(crate) const UTF8_STRING: u8 = 0x0c;
pub(crate) const UTC_TIME: u8 = 0x17;
pub(crate) const GENERALIZED_TIME: u8 = 0x18;

/// Reads elements one after another from a byte string.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next element, whatever its tag.
    pub(crate) fn any(&mut self) -> Result<Tlv<'a>, Invalid> {
        let bytes = self.rest;
        let (&tag, after) = bytes.split_first().ok_or("DER ends early")?;
        if tag & 0x1f == 0x1f {
            return Err("DER tag numbers above 30 are not used here".into());
        }
        let (&first, mut after) = after.split_first().ok_or("DER length missing")?;
        let len = match first {
            0..=0x7f => usize::from(first),
            0x81..=0x84 => {
                let n = usize::from(first & 0x7f);
                if after.len() < n {
                    return Err("DER length truncated".into());
                }
                let len = after[..n]
                    .iter()
                    .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
                // DER lengths are minimal: no leading zero byte, no long form for < 128.
                if after[0] == 0 || len < 0x80 {
                    return Err("a DER length that is not in its shortest form".into());
                }
                after = &after[n..];
                len
            }
            _ => return Err("indefinite or oversized DER length".into()),
        };
        if after.len() < len {
            return Err("DER element longer than its container".into());
        }
        let header = bytes.len() - after.len();
        self.rest = &after[len..];
        Ok(Tlv {
            tag,
            value: &after[..len],
            raw: &bytes[..header + len],
        })
    }

    /// The next element, which must have tag `tag`.
    pub(crate) fn expect(&mut self, tag: u8) -> Result<Tlv<'a>, Invalid> {
        let tlv = self.any()?;
        match tlv.tag == tag {
            true => Ok(tlv),
            false => Err(format!("expected DER tag {tag:#04x}, found {:#04x}", tlv.tag).into()),
        }
    }

    /// The next element if it has tag `tag`.
    pub(crate) fn optional(&mut self, tag: u8) -> Result<Option<Tlv<'a>>, Invalid> {
        match self.rest.first() {
            Some(&t) if t == tag => self.any().map(Some),
            _ => Ok(None),
        }
    }
}

/// The single element `bytes` must hold.
pub(crate) fn one(bytes: &[u8], tag: u8) -> Result<Tlv<'_>, Invalid> {
    let mut reader = Reader::new(bytes);
    let tlv = reader.expect(tag)?;
    match reader.is_empty() {
        true => Ok(tlv),
        false => Err("trailing bytes after a DER element".into()),
    }
}

/// Encodes `contents` as one element with tag `tag`.
pub(crate) fn encode(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = contents.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|&b| b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(contents);
    out
}

/// The contents of a BIT STRING without unused bits.
pub(crate) fn bits<'a>(tlv: &Tlv<'a>) -> Result<&'a [u8], Invalid> {
    match tlv.value.split_first() {
        Some((0, bits)) => Ok(bits),
        _ => Err("BIT STRING with unused bits".into()),
    }
}

/// A UTCTime or GeneralizedTime (`…Z`, seconds) as seconds since the Unix epoch.
pub(crate) fn time(tlv: &Tlv<'_>) -> Result<i64, Invalid> {
    let text = std::str::from_utf8(tlv.value)
        .ok()
        .filter(|t| t.is_ascii())
        .ok_or("time is not ASCII")?;
    let digits = text.strip_suffix('Z').ok_or("time is not in UTC")?;
    let (year, rest) = match tlv.tag {
        UTC_TIME if digits.len() == 12 => {
            let yy: i64 = num(&digits[..2])?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &digits[2..])
        }
        GENERALIZED_TIME if digits.len() == 14 => (num(&digits[..4])?, &digits[4..]),
        _ => return Err(format!("unsupported time {text:?}").into()),
    };
    let field = |i: usize| num::<i64>(&rest[i..i + 2]);
    let (month, day, hour, min, sec) = (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return Err(format!("invalid time {text:?}").into());
    }
    Ok(days_from_civil(year, month, day) * 86_400 + hour * 3600 + min * 60 + sec)
}

fn num<T: std::str::FromStr>(text: &str) -> Result<T, Invalid> {
    match text.bytes().all(|b| b.is_ascii_digit()) {
        true => text
            .parse()
            .map_err(|_| format!("bad number {text:?}").into()),
        false => Err(format!("bad number {text:?}").into()),
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's algorithm).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// RFC 3339 `YYYY-MM-DDTHH:MM:SS[.fff]Z`, as trusted roots write `validFor`, in seconds.
pub(crate) fn rfc3339(text: &str) -> Result<i64, Invalid> {
    let bad = || Invalid::from(format!("not an RFC 3339 UTC time: {text:?}"));
    // Byte positions below are fields only in ASCII text; anything else is no such time.
    if !text.is_ascii() {
        return Err(bad());
    }
    let body = text.strip_suffix('Z').ok_or_else(bad)?;
    let body = body.split('.').next().ok_or_else(bad)?;
    let b = body.as_bytes();
    if b.len() != 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return Err(bad());
    }
    let n = |r: std::ops::Range<usize>| num::<i64>(&body[r]).map_err(|_| bad());
    Ok(days_from_civil(n(0..4)?, n(5..7)?, n(8..10)?) * 86_400
        + n(11..13)? * 3600
        + n(14..16)? * 60
        + n(17..19)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_with_non_ascii_characters_are_refused_not_sliced_apart() {
        // Found by `make fuzz` (trusted_root): a CA certificate's validity time with a two-byte
        // character where a digit pair ends panicked on a byte index.
        let utc = encode(UTC_TIME, "0\u{703}116504601Z".as_bytes());
        let err = time(&one(&utc, UTC_TIME).unwrap()).unwrap_err();
        assert!(err.to_string().contains("not ASCII"), "{err}");
        let err = rfc3339("2025-01-01T00:0\u{703}00Z").unwrap_err();
        assert!(
            err.to_string().contains("not an RFC 3339 UTC time"),
            "{err}"
        );
    }

    #[test]
    fn reads_and_writes_lengths() {
        let long = vec![7u8; 300];
        let encoded = encode(OCTET_STRING, &long);
        assert_eq!(&encoded[..4], &[0x04, 0x82, 0x01, 0x2c]);
        let tlv = one(&encoded, OCTET_STRING).unwrap();
        assert_eq!(tlv.value, &long[..]);
        assert_eq!(tlv.raw, &encoded[..]);
        assert!(one(&encoded[..100], OCTET_STRING).is_err());
    }

    #[test]
    fn non_minimal_lengths_are_refused() {
        // A long form for a length the short form holds; a length with a leading zero byte.
        assert!(one(&[0x04, 0x81, 0x03, 1, 2, 3], OCTET_STRING).is_err());
        let mut padded = vec![0x04, 0x82, 0x00, 0x81];
        padded.extend([7u8; 0x81]);
        assert!(one(&padded, OCTET_STRING).is_err());
        // The minimal long form still reads.
        let mut minimal = vec![0x04, 0x81, 0x81];
        minimal.extend([7u8; 0x81]);
        assert_eq!(one(&minimal, OCTET_STRING).unwrap().value.len(), 0x81);
    }

    #[test]
    fn times() {
        let utc = encode(UTC_TIME, b"220413200615Z");
        assert_eq!(time(&one(&utc, UTC_TIME).unwrap()).unwrap(), 1_649_880_375);
        let generalized = encode(GENERALIZED_TIME, b"20220413200615Z");
        assert_eq!(
            time(&one(&generalized, GENERALIZED_TIME).unwrap()).unwrap(),
            1_649_880_375
        );
        assert_eq!(rfc3339("2022-04-13T20:06:15.000Z").unwrap(), 1_649_880_375);
        assert_eq!(rfc3339("1970-01-01T00:00:00Z").unwrap(), 0);
    }
}
