//! Why a blob could not be stored in or read from the cache.

use std::io;
use std::path::{Path, PathBuf};

use crate::image::Digest;

/// Errors of [`crate::cache`].
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Neither `XDG_CACHE_HOME` nor `HOME` names an absolute directory.
    #[error("cannot choose a cache directory: neither XDG_CACHE_HOME nor HOME is an absolute path")]
    NoRoot,
    /// The cache directory or a blob file could not be written or read.
    #[error("cannot use {}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The reader a blob was streamed from failed.
    #[error("reading blob {digest} failed")]
    Source {
        /// The blob being stored.
        digest: Digest,
        /// What the reader said.
        #[source]
        source: io::Error,
    },
    /// The content does not match the digest (or size) that names it; nothing was stored.
    #[error("blob should be {expected}{} but the content received hashes to {actual} ({actual_size} bytes)",
        expected_size.map(|s| format!(" ({s} bytes)")).unwrap_or_default())]
    Mismatch {
        /// The digest it was asked for under.
        expected: Digest,
        /// The digest of what was received.
        actual: Digest,
        /// The announced size, if any.
        expected_size: Option<u64>,
        /// The bytes received.
        actual_size: u64,
    },
    /// The blob is not in the cache.
    #[error("blob {digest} is not in the cache at {}", root.display())]
    NotFound {
        /// The blob.
        digest: Digest,
        /// The cache root.
        root: PathBuf,
    },
}

impl CacheError {
    pub(crate) fn io(path: &Path, source: io::Error) -> Self {
        Self::Io {
            path: path.to_owned(),
            source,
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::NoRoot => "set XDG_CACHE_HOME or HOME, or pass a cache directory".into(),
            Self::Io { .. } => "check that the cache directory is writable and has space".into(),
            Self::Mismatch { .. } => {
                "the source served other bytes than it named; fetching again may help".into()
            }
            Self::NotFound { .. } => "fetch the image again to fill the cache".into(),
            Self::Source { .. } => return None,
        })
    }
}
