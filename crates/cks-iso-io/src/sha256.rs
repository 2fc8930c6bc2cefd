//! One type for a sha256 sum, so every hash cks-iso makes or reads is 32 checked bytes and prints
//! one way: 64 lowercase hex digits.
//!
//! Before it, a hash was a `String` here, a `[u8; 32]` there and an OCI digest elsewhere, and each
//! place encoded, validated and prefixed it by hand. [`Sha256Sum`] is the value; its `Display` is
//! the 64 lowercase hex digits (the lock's, `<iso>.sha256`'s, a blob's file name); the
//! `sha256:<hex>` form belongs to the OCI digest type built from it
//! (`cks_iso_oci::image::Digest::sha256`). It lives in this bottom crate because the hashing
//! writers that give birth to hashes (the fetch sinks, [`crate::hash_thread`]) live here too, and
//! every other crate can reach it.
//!
//! Parsing is strict: exactly 64 lowercase hex digits, as `sha256sum` prints and registries name
//! blobs. Callers that take uppercase from an outside file lowercase it first, on purpose.

use std::fmt;
use std::io::{self, Read};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::Digest as _;

/// A sha256 sum: 32 bytes, shown as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256Sum([u8; 32]);

/// Text that is not a sha256 sum's 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a sha256 sum: {reason}")]
pub struct Sha256ParseError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub reason: Sha256Malformed,
}

/// What is wrong with text given as a sha256 sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Sha256Malformed {
    /// Not 64 characters long.
    #[error("a sha256 digest has 64 hex digits")]
    Length,
    /// A character outside `0-9a-f` (uppercase hex included).
    #[error("it must be lowercase hex")]
    NotLowercaseHex,
}

impl Sha256Sum {
    /// The sum whose bytes are `bytes`.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The sha256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(sha2::Sha256::digest(bytes).into())
    }

    /// The sum of what `hasher` was fed.
    pub fn from_hasher(hasher: sha2::Sha256) -> Self {
        Self(hasher.finalize().into())
    }

    /// The sha256 of everything `reader` yields, read through one 64 KiB buffer: memory does not
    /// grow with the size of what is read (a Kubernetes binary, a file inside an ISO).
    pub fn of_reader(mut reader: impl Read) -> io::Result<Self> {
        let mut hasher = sha2::Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return Ok(Self::from_hasher(hasher)),
                Ok(n) => hasher.update(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Parses exactly 64 lowercase hex digits; anything else is an error naming the text.
    pub fn parse_hex(text: &str) -> Result<Self, Sha256ParseError> {
        let refuse = |reason| Sha256ParseError {
            text: text.to_owned(),
            reason,
        };
        if text.len() != 64 {
            return Err(refuse(Sha256Malformed::Length));
        }
        if !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(refuse(Sha256Malformed::NotLowercaseHex));
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes)
            .map_err(|_| refuse(Sha256Malformed::NotLowercaseHex))?;
        Ok(Self(bytes))
    }

    /// The 32 bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64 lowercase hex digits (what `Display` prints).
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// The first `n` hex digits (at most 64), for short names in messages and file names.
    pub fn short(&self, n: usize) -> String {
        let mut hex = self.to_hex();
        hex.truncate(n);
        hex
    }
}

impl From<[u8; 32]> for Sha256Sum {
    fn from(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }
}

impl From<Sha256Sum> for [u8; 32] {
    fn from(sum: Sha256Sum) -> Self {
        sum.0
    }
}

impl fmt::Display for Sha256Sum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = [0u8; 64];
        hex::encode_to_slice(self.0, &mut text).map_err(|_| fmt::Error)?;
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Sha256Sum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Sum({self})")
    }
}

impl FromStr for Sha256Sum {
    type Err = Sha256ParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse_hex(text)
    }
}

/// As its 64 hex digits, so a field turned from `String` into `Sha256Sum` keeps its JSON bytes.
impl Serialize for Sha256Sum {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Sha256Sum {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse_hex(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn display_is_what_sha256sum_prints_and_parses_back() {
        let sum = Sha256Sum::of(b"");
        assert_eq!(sum.to_string(), EMPTY);
        assert_eq!(sum.to_hex(), EMPTY);
        assert_eq!(Sha256Sum::parse_hex(EMPTY), Ok(sum));
        assert_eq!(EMPTY.parse::<Sha256Sum>(), Ok(sum));
        assert_eq!(sum.short(12), "e3b0c44298fc");
        assert_eq!(sum.short(99), EMPTY);
        assert_eq!(format!("{sum:?}"), format!("Sha256Sum({EMPTY})"));
    }

    #[test]
    fn bytes_round_trip() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i * 37) as u8);
        let sum = Sha256Sum::from(bytes);
        assert_eq!(sum.as_bytes(), &bytes);
        assert_eq!(<[u8; 32]>::from(sum), bytes);
        assert_eq!(Sha256Sum::parse_hex(&sum.to_hex()), Ok(sum));
        assert_eq!(Sha256Sum::from_bytes(bytes), sum);
    }

    #[test]
    fn the_ways_of_hashing_agree() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut hasher = sha2::Sha256::new();
        hasher.update(&data);
        let of = Sha256Sum::of(&data);
        assert_eq!(Sha256Sum::from_hasher(hasher), of);
        assert_eq!(Sha256Sum::of_reader(&data[..]).unwrap(), of);
        assert_ne!(Sha256Sum::of(b"x"), of);
    }

    #[test]
    fn uppercase_short_long_and_non_hex_are_refused_naming_the_text() {
        let upper = EMPTY.to_uppercase();
        let cases = [
            (upper.as_str(), Sha256Malformed::NotLowercaseHex),
            ("e3b0", Sha256Malformed::Length),
            ("", Sha256Malformed::Length),
            (&format!("{EMPTY}0"), Sha256Malformed::Length),
            (
                &format!("g{}", &EMPTY[1..]),
                Sha256Malformed::NotLowercaseHex,
            ),
            (
                &["sha256:", &EMPTY[7..]].concat(),
                Sha256Malformed::NotLowercaseHex,
            ),
            (
                &format!("é{}", &EMPTY[2..]),
                Sha256Malformed::NotLowercaseHex,
            ),
        ];
        for (bad, reason) in cases {
            let err = Sha256Sum::parse_hex(bad).unwrap_err();
            assert_eq!(err.reason, reason, "{bad}");
            let shown = err.to_string();
            assert!(shown.contains(bad), "{shown}");
            assert!(shown.contains(&reason.to_string()), "{shown}");
        }
        assert_eq!(
            Sha256Sum::parse_hex("e3b0").unwrap_err().to_string(),
            "\"e3b0\" is not a sha256 sum: a sha256 digest has 64 hex digits"
        );
    }

    #[test]
    fn serde_form_is_the_hex_string() {
        let sum = Sha256Sum::of(b"");
        let json = serde_json::to_string(&sum).unwrap();
        assert_eq!(json, format!("\"{EMPTY}\""));
        assert_eq!(serde_json::from_str::<Sha256Sum>(&json).unwrap(), sum);
        let err = serde_json::from_str::<Sha256Sum>(&format!("\"{}\"", EMPTY.to_uppercase()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("it must be lowercase hex"), "{err}");
        assert!(serde_json::from_str::<Sha256Sum>("32").is_err());
    }
}
