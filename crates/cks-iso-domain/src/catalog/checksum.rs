//! The checksum files upstream publishes, in their three shapes (`docs/reference/iso-contract.md`
//! §2).
//!
//! Kubernetes binaries have `<url>.sha256` holding the bare hex digest; CNI plugins and crictl have
//! `<url>.sha256` holding `hex  name`; etcd has one `SHA256SUMS` per release listing every asset.
//! Pure parsing: fetching the file is the network side's business (`cks_iso::upstream::get`).

/// How the expected sha256 of one file is published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    /// `<url>.sha256` with the bare hex digest (Kubernetes binaries).
    BareHex {
        /// The checksum file's upstream URL.
        url: String,
    },
    /// `<url>.sha256` with `hex  name` (CNI plugins, crictl); the name, when present, must be
    /// the file's.
    HexName {
        /// The checksum file's upstream URL.
        url: String,
    },
    /// A `SHA256SUMS` listing many files, one `hex  name` line each (etcd).
    Sums {
        /// The listing's upstream URL.
        url: String,
    },
}

impl Checksum {
    /// The checksum file's upstream URL (before mirror rewriting).
    pub fn url(&self) -> &str {
        match self {
            Self::BareHex { url } | Self::HexName { url } | Self::Sums { url } => url,
        }
    }

    /// The same kind of checksum at another URL (the CNI legacy name's own `.sha256`).
    pub fn at(&self, url: String) -> Self {
        match self {
            Self::BareHex { .. } => Self::BareHex { url },
            Self::HexName { .. } => Self::HexName { url },
            Self::Sums { .. } => Self::Sums { url },
        }
    }

    /// The lowercase hex sha256 this checksum file gives for `name`.
    pub fn expected(&self, body: &[u8], name: &str) -> Result<String, ChecksumFileError> {
        let text = std::str::from_utf8(body).map_err(|_| ChecksumFileError::NotText)?;
        match self {
            Self::BareHex { .. } => {
                let mut tokens = text.split_whitespace();
                let digest = tokens.next().ok_or(ChecksumFileError::Empty)?;
                if tokens.next().is_some() {
                    return Err(ChecksumFileError::MoreThanADigest);
                }
                hex_digest(digest)
            }
            Self::HexName { .. } => {
                let line = text
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .ok_or(ChecksumFileError::Empty)?;
                let (digest, listed) = split_line(line);
                if let Some(listed) = listed
                    && listed != name
                {
                    return Err(ChecksumFileError::OtherFile {
                        listed: listed.to_owned(),
                        name: name.to_owned(),
                    });
                }
                hex_digest(digest)
            }
            Self::Sums { .. } => {
                let mut found = text.lines().filter_map(|line| {
                    let (digest, listed) = split_line(line);
                    (listed == Some(name)).then_some(digest)
                });
                let digest = found.next().ok_or_else(|| ChecksumFileError::NoLine {
                    name: name.to_owned(),
                })?;
                if found.next().is_some() {
                    return Err(ChecksumFileError::ListedTwice {
                        name: name.to_owned(),
                    });
                }
                hex_digest(digest)
            }
        }
    }
}

/// `hex  name`, `hex *name` (binary mode) or `hex` alone; `./name` counts as `name`.
fn split_line(line: &str) -> (&str, Option<&str>) {
    let line = line.trim();
    match line.split_once(char::is_whitespace) {
        Some((digest, rest)) => {
            let name = rest.trim_start();
            let name = name.strip_prefix('*').unwrap_or(name);
            let name = name.strip_prefix("./").unwrap_or(name);
            (digest, Some(name).filter(|n| !n.is_empty()))
        }
        None => (line, None),
    }
}

fn hex_digest(s: &str) -> Result<String, ChecksumFileError> {
    // Published checksum files may be uppercase; the lock keeps the lowercase form.
    match cks_iso_io::Sha256Sum::parse_hex(&s.to_ascii_lowercase()) {
        Ok(sum) => Ok(sum.to_string()),
        Err(_) => Err(ChecksumFileError::NotADigest {
            shown: s.chars().take(80).collect(),
        }),
    }
}

/// Why a published checksum file gives no digest for the file it should vouch for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChecksumFileError {
    /// Not UTF-8.
    #[error("it is not text")]
    NotText,
    /// Nothing but whitespace.
    #[error("it is empty")]
    Empty,
    /// A bare-digest file with more after the digest.
    #[error("expected a bare hex digest, found more")]
    MoreThanADigest,
    /// A `hex  name` file naming another file.
    #[error("it is the checksum of {listed}, not of {name}")]
    OtherFile {
        /// The name the file lists.
        listed: String,
        /// The file it should vouch for.
        name: String,
    },
    /// A sums file without a line for the file.
    #[error("no line for {name}")]
    NoLine {
        /// The file it should vouch for.
        name: String,
    },
    /// A sums file listing the file twice.
    #[error("{name} is listed twice")]
    ListedTwice {
        /// The file listed twice.
        name: String,
    },
    /// The digest is not 64 hex digits (shown cut to 80 characters).
    #[error("{shown:?} is not a sha256 hex digest")]
    NotADigest {
        /// The start of what stood where the digest should.
        shown: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn bare() -> Checksum {
        Checksum::BareHex { url: "u".into() }
    }

    #[test]
    fn bare_hex_takes_only_a_digest() {
        assert_eq!(
            bare().expected(format!("{D}\n").as_bytes(), "x"),
            Ok(D.into())
        );
        assert_eq!(
            bare().expected(D.to_uppercase().as_bytes(), "x"),
            Ok(D.into())
        );
        assert!(bare().expected(b"<html>nope</html>", "x").is_err());
        assert!(bare().expected(b"", "x").is_err());
    }

    #[test]
    fn hex_name_must_name_the_file() {
        let c = Checksum::HexName { url: "u".into() };
        assert_eq!(
            c.expected(format!("{D}  a.tgz\n").as_bytes(), "a.tgz"),
            Ok(D.into())
        );
        assert_eq!(
            c.expected(format!("{D} *a.tgz").as_bytes(), "a.tgz"),
            Ok(D.into())
        );
        assert_eq!(c.expected(D.as_bytes(), "a.tgz"), Ok(D.into()));
        let err = c
            .expected(format!("{D}  b.tgz\n").as_bytes(), "a.tgz")
            .unwrap_err();
        assert!(err.to_string().contains("b.tgz"), "{err}");
    }

    #[test]
    fn sums_pick_the_files_own_line() {
        let other = "0".repeat(64);
        let sums = format!(
            "{other}  etcd-v3.5.21-linux-amd64.tar.gz\n{D}  etcd-v3.5.21-linux-arm64.tar.gz\n"
        );
        let c = Checksum::Sums { url: "u".into() };
        assert_eq!(
            c.expected(sums.as_bytes(), "etcd-v3.5.21-linux-arm64.tar.gz"),
            Ok(D.into())
        );
        assert!(
            c.expected(sums.as_bytes(), "etcd-v3.5.21-linux-s390x.tar.gz")
                .is_err()
        );
    }
}
