//! Why a reference, digest or image could not be used, naming the image and the blob.

use std::io;

use super::{Arch, Digest, Platform};

/// Errors of [`crate::image`].
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Not `sha256:<64 lowercase hex>`.
    #[error("invalid digest {digest:?}: {reason}")]
    InvalidDigest {
        /// The text given.
        digest: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Not a Docker image reference.
    #[error("invalid image reference {reference:?}: {reason}")]
    InvalidReference {
        /// The text given.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Not an architecture CKS nodes run.
    #[error("{arch:?} is not an architecture cks-iso builds for")]
    InvalidArch {
        /// The text given.
        arch: String,
    },
    /// A manifest, index or config that does not parse.
    #[error("{what} {digest} is malformed: {reason}")]
    Malformed {
        /// The blob.
        digest: Digest,
        /// What it should have been.
        what: &'static str,
        /// The parser's complaint.
        reason: String,
    },
    /// A manifest of a kind we cannot bundle (schema 1, unknown media type, nested index).
    #[error("{image}: manifest {digest} cannot be used: {reason}")]
    Unsupported {
        /// The full reference.
        image: String,
        /// The manifest.
        digest: Digest,
        /// Why.
        reason: String,
    },
    /// The index has no manifest for the target platform.
    #[error("{image} has no image for linux/{wanted}; it has {}", list(available))]
    NoPlatform {
        /// The full reference.
        image: String,
        /// The target architecture.
        wanted: Arch,
        /// The platforms the index lists (attestations left out).
        available: Vec<String>,
    },
    /// A single-platform image whose config names another platform.
    #[error("{image} is a single-platform image for {found}, not linux/{wanted}")]
    WrongArch {
        /// The full reference.
        image: String,
        /// The target architecture.
        wanted: Arch,
        /// What its config says.
        found: Platform,
    },
    /// Bytes that do not hash to the digest that names them.
    #[error("{image}: {what} does not match: expected {expected}, got {actual}")]
    DigestMismatch {
        /// The full reference.
        image: String,
        /// Which blob (`manifest`, `config`, `layer 2`, `pinned digest`).
        what: String,
        /// The digest it is named by.
        expected: Digest,
        /// The digest of what was read.
        actual: Digest,
    },
    /// A manifest, index or config larger than [`super::MAX_MANIFEST_SIZE`].
    #[error(
        "{image}: {what} {digest} is larger than {}",
        indicatif::HumanBytes(*limit)
    )]
    TooLarge {
        /// The full reference.
        image: String,
        /// Which blob.
        what: String,
        /// Its digest.
        digest: Digest,
        /// The cap.
        limit: u64,
    },
    /// The source could not produce a blob.
    #[error("{image}: cannot read {what} {digest}")]
    Source {
        /// The full reference.
        image: String,
        /// Which blob.
        what: String,
        /// Its digest.
        digest: Digest,
        /// What the source said.
        #[source]
        source: io::Error,
    },
}

fn list(items: &[String]) -> String {
    match items.is_empty() {
        true => "no platforms".into(),
        false => items.join(", "),
    }
}

impl ImageError {
    /// Whether the user gave a wrong argument rather than the work failing.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::InvalidDigest { .. } | Self::InvalidReference { .. } | Self::InvalidArch { .. }
        )
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::InvalidDigest { .. } => "a digest is written sha256:<64 lowercase hex>".into(),
            Self::InvalidReference { .. } => {
                "write it as [HOST[:PORT]/]PATH[:TAG][@sha256:HEX], with a lower-case path".into()
            }
            Self::InvalidArch { .. } => "use amd64 (x86_64) or arm64 (aarch64)".into(),
            Self::NoPlatform { wanted, .. } | Self::WrongArch { wanted, .. } => format!(
                "use a tag or image published for linux/{wanted}, or build the ISO for another arch"
            ),
            Self::DigestMismatch { .. } => {
                "correct a pinned @sha256: digest; if the cache's copy is corrupt, `cks-iso cache \
                 verify --fix` removes it, and the same command run again fetches it anew"
                    .into()
            }
            Self::Malformed { .. }
            | Self::Unsupported { .. }
            | Self::TooLarge { .. }
            | Self::Source { .. } => return None,
        })
    }
}
