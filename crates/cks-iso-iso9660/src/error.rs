//! Why an ISO could not be written, naming the culprit, with a hint where the user can act.

use std::io;
use std::path::{Path, PathBuf};

/// Errors of [`crate::author`].
#[derive(Debug, thiserror::Error)]
pub enum IsoError {
    /// The source directory is missing or cannot be read.
    #[error("cannot read the source directory {}", path.display())]
    Source {
        /// The directory given.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The source is not a directory.
    #[error("the source {} is not a directory", path.display())]
    SourceNotDir {
        /// The path given.
        path: PathBuf,
    },
    /// A file or directory in the source cannot be read.
    #[error("cannot read {}", path.display())]
    Unreadable {
        /// The entry.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A device node, FIFO or socket: nothing a CKS node could use.
    #[error("{} is a device, FIFO or socket; only files, directories and symlinks go into the ISO", path.display())]
    Unsupported {
        /// The entry.
        path: PathBuf,
    },
    /// The tree library refused an entry.
    #[error("cannot add {} to the ISO", path.display())]
    Tree {
        /// The entry.
        path: PathBuf,
        /// The library's reason (boxed: it is large, and errors travel by value).
        #[source]
        source: Box<hadris_fs::PathError>,
    },
    /// The volume ID is not what ECMA-119 or `blkid` would accept.
    #[error("invalid volume ID {id:?}: {reason}")]
    InvalidVolumeId {
        /// The ID given.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The epoch cannot be represented.
    #[error("the epoch {epoch} is out of the range of ISO 9660 dates")]
    Epoch {
        /// Seconds since 1970.
        epoch: i64,
    },
    /// A spliced file's bytes could not be produced (for `build`: an image archive whose blob
    /// could not be read or does not match its digest); the image was not written.
    #[error("cannot write {path} into the ISO")]
    Spliced {
        /// The file's path in the image.
        path: String,
        /// Why (an `ArchiveError` of `cks_iso_oci::archive` for an image archive).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Laying out the image failed.
    #[error("cannot lay out the ISO")]
    Plan(#[source] Box<hadris_fs::PathError>),
    /// The output directory is missing, not a directory, or not writable.
    #[error("cannot write to the output directory {}", dir.display())]
    OutputDir {
        /// The directory.
        dir: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The output file system is full, or would be.
    #[error(
        "no space left for {}: the ISO needs {}, {} are free",
        path.display(),
        indicatif::HumanBytes(*needed),
        indicatif::HumanBytes(*available)
    )]
    NoSpace {
        /// The ISO being written.
        path: PathBuf,
        /// Bytes the image needs.
        needed: u64,
        /// Bytes that were free.
        available: u64,
    },
    /// Writing the image failed.
    #[error("cannot write {}", path.display())]
    Write {
        /// The ISO being written.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

const ENOSPC: i32 = 28;

impl IsoError {
    /// Writing `path` failed with `source`.
    pub fn write(path: &Path, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Write {
            path: path.to_owned(),
            source: Box::new(source),
        }
    }

    /// Maps a failure of the writer, naming the source file whose content failed, if any.
    pub fn from_write(output: &Path, err: hadris_fs::PathError) -> Self {
        if err.raw_os_error() == Some(ENOSPC) {
            return Self::NoSpace {
                path: output.to_owned(),
                needed: 0,
                available: 0,
            };
        }
        match err.host_path() {
            Some(host) if host != output => Self::Unreadable {
                path: host.to_owned(),
                source: io::Error::other(err),
            },
            _ => Self::write(output, err),
        }
    }

    /// Whether the user gave a wrong argument (exit code 2) rather than the run failing.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::InvalidVolumeId { .. } | Self::Epoch { .. })
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Source { .. } | Self::SourceNotDir { .. } => {
                "pass the directory whose contents become the ISO root".into()
            }
            Self::Unreadable { .. } => {
                "make the file readable by the user running cks-iso, or remove it from the tree"
                    .into()
            }
            Self::Unsupported { .. } => "remove it from the source tree".into(),
            Self::InvalidVolumeId { .. } => format!(
                "CloudStack nodes look for the label {:?}; leave --volume-id unset to use it",
                super::volume_id::DEFAULT
            ),
            Self::Epoch { .. } => {
                "pass --source-date-epoch (or set SOURCE_DATE_EPOCH to) seconds since 1970-01-01 \
                 UTC, e.g. $(git log -1 --format=%ct)"
                    .into()
            }
            Self::OutputDir { .. } => {
                "pass -o a file in a directory you can write to (create the directory first)".into()
            }
            Self::NoSpace { .. } => {
                "free space on that file system, or write the ISO to a disk with room (-o for `cks-iso \
                 iso`, --output for `cks-iso build`)"
                    .into()
            }
            Self::Tree { .. } | Self::Plan(_) | Self::Write { .. } | Self::Spliced { .. } => {
                return None;
            }
        })
    }
}
