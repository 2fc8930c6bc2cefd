//! Content digests: `sha256:<64 lowercase hex>`, the only algorithm registries and containerd use
//! for the images we bundle. Every blob, manifest and index is named and checked by one.

use std::fmt;
use std::io::{self, Read};

use cks_iso_io::{Sha256ParseError, Sha256Sum};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

use super::ImageError;

/// A validated `sha256:` digest: a [`Sha256Sum`] in its OCI form. `Display` prints
/// `sha256:<hex>`; the hex digits are kept as text because blob paths borrow them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest {
    hex: String,
}

impl Digest {
    /// Parses `sha256:<64 lowercase hex>`; anything else is an error naming the text.
    pub fn parse(text: &str) -> Result<Self, ImageError> {
        let invalid = |reason: &str| ImageError::InvalidDigest {
            digest: text.to_owned(),
            reason: reason.to_owned(),
        };
        let (algorithm, hex) = text
            .split_once(':')
            .ok_or_else(|| invalid("it has no `algorithm:` prefix"))?;
        if algorithm != "sha256" {
            return Err(invalid("only sha256 is supported"));
        }
        let sum = Sha256Sum::parse_hex(hex).map_err(|e| invalid(&e.reason.to_string()))?;
        Ok(Self::sha256(sum))
    }

    /// The digest `sha256:<sum>`: the one way a sum becomes its `sha256:` form.
    pub fn sha256(sum: Sha256Sum) -> Self {
        Self { hex: sum.to_hex() }
    }

    /// The digest `sha256:<hex>` of a bare hex sum (a lock's field, a blob's file name).
    pub fn from_hex(hex: &str) -> Result<Self, Sha256ParseError> {
        Sha256Sum::parse_hex(hex).map(Self::sha256)
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self::sha256(Sha256Sum::of(bytes))
    }

    /// The digest of what `hasher` was fed.
    pub fn from_hasher(hasher: Sha256) -> Self {
        Self::sha256(Sha256Sum::from_hasher(hasher))
    }

    /// The sum this digest names.
    pub fn sum(&self) -> Sha256Sum {
        Sha256Sum::parse_hex(&self.hex).expect("a Digest holds a valid sum")
    }

    /// The 64 hex digits, as used in blob paths.
    pub fn hex(&self) -> &str {
        &self.hex
    }

    /// The first `n` hex digits, for short names in messages and file names.
    pub fn short(&self, n: usize) -> &str {
        &self.hex[..n.min(self.hex.len())]
    }
}

impl From<Sha256Sum> for Digest {
    fn from(sum: Sha256Sum) -> Self {
        Self::sha256(sum)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex)
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A reader that hashes and counts what passes through it, so a blob is verified while it is
/// copied and never has to be read twice.
pub struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    count: u64,
}

impl<R: Read> Hashing<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            count: 0,
        }
    }

    /// The wrapped reader (reading from it directly bypasses the hash).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// Bytes read so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The digest of everything read so far.
    pub fn digest(&self) -> Digest {
        Digest::sha256(self.sum())
    }

    /// The sha256 sum of everything read so far.
    pub fn sum(&self) -> Sha256Sum {
        Sha256Sum::from_hasher(self.hasher.clone())
    }
}

/// The sha256 of everything `reader` yields, read through one 64 KiB buffer: memory does not
/// grow with the size of what is read (a Kubernetes binary, a file inside an ISO). The bytes of
/// [`Sha256Sum::of_reader`], for the Sigstore checks that take raw digests.
pub fn sha256_of(reader: impl Read) -> io::Result<[u8; 32]> {
    Sha256Sum::of_reader(reader).map(<[u8; 32]>::from)
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn digest_of_bytes_matches_sha256sum() {
        assert_eq!(Digest::of(b"").to_string(), EMPTY);
        assert_eq!(Digest::parse(EMPTY).unwrap(), Digest::of(b""));
    }

    #[test]
    fn malformed_digests_are_refused() {
        for bad in [
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
            "sha256:e3b0",
            "sha256:g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ] {
            let err = Digest::parse(bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn sha256_of_a_reader_matches_the_digest_of_its_bytes() {
        let bytes: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
        let digest = sha256_of(&bytes[..]).unwrap();
        assert_eq!(hex::encode(digest), Digest::of(&bytes).hex());
        assert_eq!(
            Digest::sha256(Sha256Sum::from(sha256_of(&b""[..]).unwrap())).to_string(),
            EMPTY
        );
    }

    #[test]
    fn a_sum_and_its_digest_convert_both_ways() {
        let sum = Sha256Sum::of(b"");
        let digest = Digest::sha256(sum);
        assert_eq!(digest.to_string(), EMPTY);
        assert_eq!(digest.sum(), sum);
        assert_eq!(Digest::from(sum), digest);
        assert_eq!(digest.hex(), sum.to_string());
        let err = Digest::parse(
            "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("it must be lowercase hex"), "{err}");
        let err = Digest::parse("sha256:e3b0").unwrap_err().to_string();
        assert!(err.contains("a sha256 digest has 64 hex digits"), "{err}");
    }

    #[test]
    fn hashing_reader_digests_what_it_passes() {
        let mut reader = Hashing::new(&b"hello"[..]);
        let mut out = Vec::new();
        reader.read_to_end(&mut out).unwrap();
        assert_eq!(reader.count(), 5);
        assert_eq!(reader.digest(), Digest::of(b"hello"));
    }
}
