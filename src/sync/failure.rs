//! Why one minor, version or arch of a sync failed while the others went on. Each is typed here
//! and rendered once, with its causes and hint, into that item's report lines
//! ([`ItemError::text`]): the report is data (`--json`), the error is what made it.

use std::path::PathBuf;

use crate::lock::source::SourceError;
use crate::pipeline::BuildError;
use crate::pipeline::author::AuthorError;
use crate::trust::sign::Refused;
use cks_iso_io::Sha256ParseError;

/// Why the caller's upgrade check could not judge FROM → TO (its error, with its causes).
pub type GateError = Box<dyn std::error::Error + Send + Sync>;

/// What failed one item of a sync.
#[derive(Debug, thiserror::Error)]
pub enum ItemError {
    /// The build's staging directory could not be made inside the publish directory.
    #[error("cannot make a staging directory in {}", dir.display())]
    Staging {
        /// The publish directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--write-locks`: the scratch directory the lock's build writes into.
    #[error("cannot make a scratch directory")]
    Scratch(#[source] std::io::Error),
    /// Resolving, preparing or building failed.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// `--write-locks`: the lock could not be written.
    #[error(transparent)]
    WriteLock(#[from] AuthorError),
    /// `--locks DIR`: the directory cannot be read.
    #[error("cannot read the lock directory {}", dir.display())]
    LockDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--locks DIR`: a lock file there cannot be read.
    #[error("{}", path.display())]
    LockFile {
        /// The lock.
        path: PathBuf,
        /// Why.
        source: SourceError,
    },
    /// `--locks DIR`: no lock there is of this minor (its pin, or any patch of it).
    #[error("no lock of Kubernetes {kubernetes} in {}", dir.display())]
    NoLock {
        /// The minor's label or pin.
        kubernetes: String,
        /// The directory.
        dir: PathBuf,
    },
    /// `--locks DIR`: the minor's lock lacks an arch of the desired state.
    #[error("{} locks {locked}, not {arch}", path.display())]
    LockArch {
        /// The lock.
        path: PathBuf,
        /// The arches it carries.
        locked: String,
        /// The arch the desired state wants.
        arch: String,
    },
    /// `--locks DIR`: the minor's lock was written for another request.
    #[error("{} was written for another request than the desired state's ({})", path.display(), differences.join("; "))]
    LockRequest {
        /// The lock.
        path: PathBuf,
        /// What differs, field by field.
        differences: Vec<String>,
    },
    /// A minor's label names a release of another minor.
    #[error("{label} names v{version}, not a {minor} release")]
    OtherMinor {
        /// The label asked.
        label: String,
        /// The version it names.
        version: String,
        /// The minor wanted.
        minor: String,
    },
    /// The ISO's SHA-256 as read back is not one.
    #[error(transparent)]
    Sha256(#[from] Sha256ParseError),
    /// The signer policy refuses the ISO: it is not registered.
    #[error("not registered: {0}")]
    Unsigned(#[from] Box<Refused>),
}

impl ItemError {
    /// What the operator can do about it.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Build(e) => e.hint(),
            Self::NoLock { .. } => Some(
                "on the connected side, run `cks-iso sync --desired FILE --plan --write-locks DIR` \
                 and carry DIR here"
                    .into(),
            ),
            Self::LockArch { .. } => Some(
                "write it again with `sync --plan --write-locks` for the desired state's arches"
                    .into(),
            ),
            Self::LockRequest { .. } => Some(
                "write it again with `sync --plan --write-locks` from this desired state".into(),
            ),
            _ => None,
        }
    }

    /// The error, its causes and its hint on one line: the item's report line.
    #[must_use]
    pub fn text(&self) -> String {
        error_text(self, self.hint())
    }
}

/// An error with its causes and hint, on one line.
pub(super) fn error_text(e: &(dyn std::error::Error + 'static), hint: Option<String>) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    if let Some(h) = hint {
        text.push_str(&format!(" (hint: {h})"));
    }
    text
}
