//! Why writing an ISO (or what goes beside it) failed; the archive and ISO errors pass through
//! unchanged, with their own hints.

use std::path::PathBuf;

use crate::archive::ArchiveError;
use cks_iso_iso9660::IsoError;

/// An ISO, or a file beside it, that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum AuthorError {
    /// A file of the staging directory or beside the ISO.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// The lock file asked for (`--lock-file`).
    #[error("cannot write the lock to {}", path.display())]
    LockFile {
        /// Where.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An image archive that could not be described or read from the cache.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// The ISO itself.
    #[error(transparent)]
    Iso(#[from] IsoError),
}

impl AuthorError {
    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Io { .. } => None,
            Self::LockFile { .. } => {
                Some("choose a --lock-file in a directory you can write to".into())
            }
            Self::Archive(e) => e.hint(),
            Self::Iso(e) => e.hint(),
        }
    }

    /// Whether the user's input is at fault rather than the work (an ISO option).
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Iso(e) if e.is_usage())
    }

    /// `what` failed.
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| Self::Io { what, source }
    }
}
