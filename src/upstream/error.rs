//! Why an upstream file could not be taken, naming the file and URL, with what the user can do.

use std::path::PathBuf;

use crate::fetch::FetchError;

/// Errors of [`crate::upstream`].
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The transfer failed (status, transport, redirect loop, …).
    #[error("cannot download {name}")]
    Fetch {
        /// The file, e.g. `kubeadm`.
        name: String,
        /// What the fetch layer said (it names the URL and status).
        #[source]
        source: FetchError,
    },
    /// The published checksum could not be read.
    #[error("cannot read the checksum of {name} from {shown_url}: {reason}", shown_url = crate::fetch::redact(url))]
    ChecksumFile {
        /// The file whose checksum was wanted.
        name: String,
        /// The checksum file's URL.
        url: String,
        /// Why it is unusable.
        reason: super::ChecksumFileError,
    },
    /// The bytes do not match the published checksum.
    #[error(
        "{name} from {shown_url} does not match the checksum published in \
         {shown_checksum_url}: expected sha256:{expected}, got sha256:{actual}",
        shown_url = crate::fetch::redact(url),
        shown_checksum_url = crate::fetch::redact(checksum_url)
    )]
    Mismatch {
        /// The file.
        name: String,
        /// Where it was downloaded from.
        url: String,
        /// Where the expected digest was published.
        checksum_url: String,
        /// The published sha256.
        expected: String,
        /// The sha256 of the downloaded bytes.
        actual: String,
    },
    /// The file is not what it should be (not ELF for the arch, not a gzip tar, not YAML).
    #[error("{name} from {shown_url} is not {expected}: {reason}", shown_url = crate::fetch::redact(url))]
    Content {
        /// The file.
        name: String,
        /// Where it came from.
        url: String,
        /// What it should have been, e.g. `an ELF executable for arm64 (aarch64)`.
        expected: String,
        /// What it is instead.
        reason: super::WrongContent,
        /// Whether the transport knew where the body ends ([`crate::fetch::Fetched::framed`]).
        framed: bool,
    },
    /// A locked build got other bytes than the lock records.
    #[error(
        "{name} from {shown_url} changed since it was locked: expected sha256:{expected} (the \
         lock), got sha256:{actual}",
        shown_url = crate::fetch::redact(url)
    )]
    Drift {
        /// The file.
        name: String,
        /// Where it came from.
        url: String,
        /// The sha256 in the lock.
        expected: String,
        /// The sha256 of the bytes received.
        actual: String,
    },
    /// Offline without a lock, a cache entry that no verification kept in the cache vouches for.
    #[error("{name}: the cache's entry {key} cannot be tied to a verification: {reason}")]
    Unverified {
        /// The file.
        name: String,
        /// The index key (`url:<URL>`).
        key: String,
        /// What is missing or does not match.
        reason: super::tie::Untied,
    },
    /// Writing or moving the file failed.
    #[error("cannot write {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

impl UpstreamError {
    /// Whether the bytes failed verification in a way a damaged copy explains (checksum, drift, a
    /// checksum file that does not parse, content): worth fetching again before believing it.
    ///
    /// Not a manifest that arrived whole and does not read as one (YAML that does not parse — a
    /// YAML bomb is one —, a document that is not an object, no document): fetching it again
    /// fetches the same document, five times over. "Whole" is the transport's word
    /// ([`crate::fetch::Fetched::framed`]): a body with a `Content-Length` that ends early is
    /// resumed before any check runs, and a chunked or HTTP/2 body cut short is an error there.
    /// Only a body the closing connection ends may have been cut short unnoticed, so it still
    /// gets the refetches.
    pub fn is_corruption(&self) -> bool {
        match self {
            Self::Mismatch { .. } | Self::ChecksumFile { .. } | Self::Drift { .. } => true,
            Self::Content { reason, framed, .. } => !framed || !reason.is_document_problem(),
            _ => false,
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Fetch { source, .. } => source.hint(),
            Self::ChecksumFile { .. } => Some(
                "the server or mirror published no usable checksum; check the version and the \
                 --mirror rules"
                    .into(),
            ),
            Self::Mismatch { .. } => Some(
                "the download was altered on the way or the mirror holds a different file; \
                 compare the mirror's copy with upstream, or drop the --mirror rule for this URL"
                    .into(),
            ),
            Self::Content { .. } => Some(
                "the server sent something else than the file (an error page, another \
                 architecture's build); check the URL and the --mirror rules"
                    .into(),
            ),
            Self::Drift { .. } => Some(
                "upstream or the mirror now serves other bytes under this URL; build without \
                 --locked to take the new file (and review the change), or restore the original"
                    .into(),
            ),
            Self::Unverified { .. } => Some(
                "the cache was changed, or filled by something that did not verify this file: run \
                 the same build once with network (it keeps the published checksums), or build \
                 --locked from a lock you trust"
                    .into(),
            ),
            Self::Io { .. } => None,
        }
    }
}
