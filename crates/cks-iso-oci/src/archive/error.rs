//! Why an image archive could not be written, naming the image, the blob and both digests.

use std::io;
use std::path::PathBuf;

use crate::image::Digest;

/// Errors of [`crate::archive`].
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The archive file could not be created or written.
    #[error("cannot write the archive {}", path.display())]
    Output {
        /// The archive.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A blob could not be opened or read from its source.
    #[error("{image}: cannot read {blob} {digest}")]
    Source {
        /// The full reference.
        image: String,
        /// Which blob (`config`, `layer 2 of 5`, …).
        blob: String,
        /// Its digest.
        digest: Digest,
        /// What the source said.
        #[source]
        source: io::Error,
    },
    /// A blob's content does not match its digest or size; the archive was not written.
    #[error(
        "{image}: {blob} does not match: expected {expected} ({}), got {actual} ({}) from the cache",
        indicatif::HumanBytes(*expected_size),
        indicatif::HumanBytes(*actual_size)
    )]
    Mismatch {
        /// The full reference.
        image: String,
        /// Which blob.
        blob: String,
        /// The digest the manifest names it by.
        expected: Digest,
        /// The digest of what the source gave.
        actual: Digest,
        /// The size the manifest gives.
        expected_size: u64,
        /// The bytes the source gave.
        actual_size: u64,
    },
    /// Images that cannot share one archive (not platforms of the same index).
    #[error("{image}: cannot write these platforms into one archive: {reason}")]
    Platforms {
        /// The first image's reference.
        image: String,
        /// What differs.
        reason: String,
    },
}

impl ArchiveError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Output { .. } => "check that the output directory exists and is writable".into(),
            Self::Mismatch { .. } => {
                "the cached blob is corrupt: `cks-iso cache verify --fix` removes it, and the same \
                 command run again fetches it anew"
                    .into()
            }
            Self::Platforms { .. } => {
                "load each platform from the same index and reference before archiving them".into()
            }
            Self::Source { .. } => return None,
        })
    }
}
