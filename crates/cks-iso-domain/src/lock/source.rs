//! Reading a lock given on the command line: a `cks-iso.lock` file, or an ISO whose embedded
//! lock is read. A library function so that every command that takes a lock (and any caller of
//! the build pipeline) reads one the same way; every failure is the user's input, a usage error.

use std::io::Read;
use std::path::Path;

use super::{FILE_NAME, Lock, LockError};
use cks_iso_iso9660::read::{IsoReader, ReadError};

/// Locks are small; more than this is not one.
const LIMIT: u64 = 64 << 20;

/// A lock that cannot be read from the path given.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The file cannot be read.
    #[error("cannot read {shown}")]
    Unreadable {
        /// The path, as shown.
        shown: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Neither JSON nor an ISO the reader opens.
    #[error("{shown} is neither a cks-iso lock nor a readable ISO")]
    NotIso {
        /// The path, as shown.
        shown: String,
        /// Why the ISO reader refused it.
        #[source]
        source: ReadError,
    },
    /// An ISO without an embedded lock (or one that cannot be read).
    #[error("cannot read {origin}")]
    NoLockInIso {
        /// `<iso>:cks-iso.lock`.
        origin: String,
        /// Why.
        #[source]
        source: ReadError,
    },
    /// The text is not a lock this cks-iso reads.
    #[error(transparent)]
    Lock(#[from] LockError),
}

impl SourceError {
    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Unreadable { .. } | Self::NotIso { .. } => {
                Some("pass a cks-iso.lock or an ISO built by cks-iso".into())
            }
            Self::NoLockInIso { .. } => Some(
                "ISOs built before cks-iso carried its lock have none; pass the lock file".into(),
            ),
            Self::Lock(e) => e.hint(),
        }
    }
}

/// The lock in `path` (a lock file or an ISO), with how to name it in messages.
pub fn read(path: &Path) -> Result<(Lock, String), SourceError> {
    let shown = path.display().to_string();
    let unreadable = |source: std::io::Error| SourceError::Unreadable {
        shown: shown.clone(),
        source,
    };
    // Only the start decides: an ISO (gigabytes) opens with 32 KiB of system area, never `{`.
    let mut head = Vec::new();
    cks_iso_io::input::open_regular(path)
        .and_then(|file| file.take(4096).read_to_end(&mut head))
        .map_err(unreadable)?;
    let looks_json = head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let (text, origin) = match looks_json {
        true => {
            let mut bytes = Vec::new();
            cks_iso_io::input::open_regular(path)
                .and_then(|file| file.take(LIMIT).read_to_end(&mut bytes))
                .map_err(unreadable)?;
            (String::from_utf8_lossy(&bytes).into_owned(), shown)
        }
        false => {
            let reader = IsoReader::open(path).map_err(|source| SourceError::NotIso {
                shown: shown.clone(),
                source,
            })?;
            let origin = format!("{shown}:{FILE_NAME}");
            let raw =
                reader
                    .read_small(FILE_NAME, LIMIT)
                    .map_err(|source| SourceError::NoLockInIso {
                        origin: origin.clone(),
                        source,
                    })?;
            (String::from_utf8_lossy(&raw).into_owned(), origin)
        }
    };
    let lock = Lock::parse(&text, &origin)?;
    if lock.cks_iso != env!("CARGO_PKG_VERSION") {
        tracing::warn!(
            "{origin} was written by cks-iso {}, this is {}: the ISO's bytes may differ",
            lock.cks_iso,
            env!("CARGO_PKG_VERSION")
        );
    }
    Ok((lock, origin))
}
