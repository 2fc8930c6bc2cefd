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
    #[error(
        "blob {expected} does not match: expected {expected}{}, got {actual} ({})",
        expected_size.map(|s| format!(" ({})", indicatif::HumanBytes(s))).unwrap_or_default(),
        indicatif::HumanBytes(*actual_size)
    )]
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
    /// The cache directory, or one of its own, can be written by someone else, or is a link.
    #[error("cannot use the cache directory {}: {reason}", path.display())]
    Unsafe {
        /// The directory.
        path: PathBuf,
        /// Who else can write it, or where it leads.
        reason: String,
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
            Self::NoRoot => {
                "set XDG_CACHE_HOME or HOME to an absolute path, or pass --cache-dir DIR".into()
            }
            // A full disk gets the hint every subcommand gives for one (AppError::advice).
            Self::Io { source, .. } if source.kind() == io::ErrorKind::StorageFull => return None,
            Self::Io { .. } => {
                "make the cache directory writable, or pass --cache-dir DIR to use another".into()
            }
            Self::Mismatch { .. } => {
                "the registry, a proxy or an imported cache gave corrupt bytes; if the cache's own \
                 copy is corrupt, `cks-iso cache verify --fix` removes it; then run the same \
                 command again"
                    .into()
            }
            Self::NotFound { .. } => {
                "run the same command again with network to fetch it, or bring it over with \
                 `cks-iso cache import`"
                    .into()
            }
            Self::Source { .. } => return None,
            Self::Unsafe { .. } => {
                "a build ships what the cache holds, so only you may write it: pass --cache-dir \
                 a directory of your own, or `chown` it to yourself and `chmod go-w` it (and \
                 replace a symbolic link by the directory itself)"
                    .into()
            }
        })
    }
}
