//! Why a `cache` subcommand failed: each error names the blob, file or lock at fault and says
//! what to do ([`CarryError::hint`]).

use std::path::PathBuf;

use crate::cache::CacheError;
use crate::image::Digest;
use crate::lock::source::SourceError;

/// Errors of [`crate::carry`]: a [`Kind`], boxed (errors are rare, results are many).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct CarryError(Box<Kind>);

impl From<Kind> for CarryError {
    fn from(kind: Kind) -> Self {
        Self(Box::new(kind))
    }
}

impl From<CacheError> for CarryError {
    fn from(err: CacheError) -> Self {
        Kind::Cache(err).into()
    }
}

impl From<SourceError> for CarryError {
    fn from(err: SourceError) -> Self {
        Kind::Lock(err).into()
    }
}

impl CarryError {
    /// Whether the arguments are at fault (exit 2) rather than the work (exit 1).
    pub fn is_usage(&self) -> bool {
        self.0.is_usage()
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        self.0.hint()
    }
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Kind {
    /// The cache (or the carried directory) could not be read or written.
    #[error(transparent)]
    Cache(CacheError),
    /// A lock given cannot be read.
    #[error(transparent)]
    Lock(SourceError),
    /// A `--minus` file cannot be read.
    #[error("cannot read {}", path.display())]
    MinusUnreadable {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// An ISO (`--minus`, `--from-iso`) cannot be read as one.
    #[error("cannot read {} as an ISO", path.display())]
    Iso {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: cks_iso_iso9660::read::ReadError,
    },
    /// `export`: a blob the locks need is not in the cache.
    #[error(
        "cannot export: {what} {digest}: {problem} (cache {}){}",
        cache.display(),
        match more { 0 => String::new(), n => format!(", and {n} more blob(s)") }
    )]
    Missing {
        /// The first blob missing.
        what: String,
        /// Its digest.
        digest: Digest,
        /// Why it does not do.
        problem: String,
        /// The cache.
        cache: PathBuf,
        /// How many more are missing.
        more: usize,
        /// The first lock given.
        locked: PathBuf,
    },
    /// `export`: the output directory cannot be written.
    #[error("cannot write to the output directory {}", dir.display())]
    Output {
        /// The directory.
        dir: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// `export`: a blob of the cache does not hash to its name, or cannot be read.
    #[error("cannot export {what}")]
    Source {
        /// The blob, as the lock names it.
        what: String,
        /// The cache.
        cache: PathBuf,
        /// Why.
        #[source]
        source: CacheError,
    },
    /// `import`: the directory is not a cache.
    #[error("{} holds no blobs/sha256: not a cache", dir.display())]
    NotACache {
        /// The directory.
        dir: PathBuf,
    },
    /// `import`: the delta manifest cannot be read.
    #[error("{0}")]
    Delta(crate::cache::DeltaError),
    /// `import`: the delta is for another lock than the one given.
    #[error("{} is a delta for another lock than {}", dir.display(), file.display())]
    OtherLock {
        /// The delta.
        dir: PathBuf,
        /// The lock given.
        file: PathBuf,
    },
    /// `import`: blobs the delta assumes are neither in the cache nor in the ISOs given.
    #[error(
        "{} assumes the far side holds {count} blob(s) that neither the cache ({}){isos} has: \
         first {what} {digest} (held by {from})",
        dir.display(),
        cache.display()
    )]
    Absent {
        /// The delta.
        dir: PathBuf,
        /// How many are absent.
        count: usize,
        /// The cache.
        cache: PathBuf,
        /// ` nor ISO, ISO` for the `--from-iso` ISOs given, else empty.
        isos: String,
        /// The first absent blob.
        what: String,
        /// Its digest.
        digest: Digest,
        /// The `--minus` file the delta says holds it.
        from: String,
    },
    /// `import`: index entries name other content than the locks.
    #[error(
        "{} index entries of {} name other content than the lock ({}) names for them, and were \
         not imported: {}",
        refused.len(),
        dir.display(),
        files.join(", "),
        refused.join(", ")
    )]
    Refused {
        /// The directory imported.
        dir: PathBuf,
        /// The locks given.
        files: Vec<String>,
        /// The keys refused.
        refused: Vec<String>,
        /// Whether some blobs were corrupt too.
        corrupt: bool,
    },
    /// `import`: blobs of the directory do not hash to their names.
    #[error(
        "{} blob(s) of {} are corrupt and were not imported: {}",
        corrupt.len(),
        dir.display(),
        corrupt.join(", ")
    )]
    Corrupt {
        /// The directory imported.
        dir: PathBuf,
        /// The blobs.
        corrupt: Vec<String>,
    },
    /// `build --from-iso`, offline: blobs the lock needs are still missing.
    #[error(
        "cannot build {} offline: {count} blob(s) it needs are neither in the cache ({}) nor in \
         {isos}: {}{}",
        locked.display(),
        cache.display(),
        listed.join(", "),
        match count { 0..=5 => String::new(), n => format!(", and {} more", n - 5) }
    )]
    Offline {
        /// The lock.
        locked: PathBuf,
        /// How many blobs are missing.
        count: usize,
        /// The cache.
        cache: PathBuf,
        /// The ISOs given, joined.
        isos: String,
        /// The first five missing.
        listed: Vec<String>,
        /// The ISOs' file names, for the hint's export.
        minus: Vec<String>,
    },
    /// `verify`: problems found and not fixed.
    #[error("{count} problem(s) in the cache at {}", cache.display())]
    Problems {
        /// How many.
        count: usize,
        /// The cache.
        cache: PathBuf,
    },
    /// `prune`: a lock's needs cannot be told, so nothing may be removed.
    #[error(
        "cannot tell everything {} needs: {what} {digest}: {problem}; nothing removed",
        file.display()
    )]
    Incomplete {
        /// The lock.
        file: PathBuf,
        /// The first gap.
        what: String,
        /// Its digest.
        digest: Digest,
        /// Why.
        problem: String,
    },
}

impl Kind {
    /// Whether the arguments are at fault (exit 2) rather than the work (exit 1).
    pub fn is_usage(&self) -> bool {
        match self {
            // An ISO the reader refuses (a bound it breaks) is a failure of the work, as in
            // `verify`; one that is no ISO at all, a wrong argument.
            Self::Iso { source, .. } => source.refused.is_none(),
            _ => matches!(self, Self::Lock(_) | Self::MinusUnreadable { .. }),
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Cache(e) => return e.hint(),
            Self::Lock(e) => return e.hint(),
            Self::MinusUnreadable { .. } => "pass a cks-iso.lock or an ISO to --minus".into(),
            Self::Iso { source, .. } if source.refused.is_some() => source.hint(),
            Self::Iso { .. } => "pass the ISO itself (not mounted), or a cks-iso.lock".into(),
            Self::Missing { cache, locked, .. } => format!(
                "build once online with `cks-iso build --locked {locked} --cache-dir {}`, then \
                 export again (`cks-iso cache ls --locked {locked}` lists what is missing)",
                cache.display(),
                locked = locked.display()
            ),
            Self::Output { .. } => "pass -o a directory you can write to (it is created if its \
                                    parent exists)"
                .into(),
            Self::Source { cache, source, .. } => match source {
                CacheError::Mismatch { .. } => format!(
                    "run `cks-iso cache verify --fix --cache-dir {}`, then build once online \
                     with --locked to fetch it again",
                    cache.display()
                ),
                _ => source.hint().unwrap_or_default(),
            },
            Self::NotACache { .. } => {
                "pass the directory `cks-iso cache export -o DIR` wrote".into()
            }
            Self::Delta(_) => "export the delta again with `cks-iso cache export --minus`".into(),
            Self::OtherLock { file, .. } => format!(
                "export the delta with `cks-iso cache export --locked {} --minus OLD -o DIR` \
                 where that lock was written",
                file.display()
            ),
            Self::Absent { from, .. } => format!(
                "import the carry of {from} first (or pass that ISO with --from-iso), or export a \
                 full carry without --minus"
            ),
            Self::Refused { files, corrupt, .. } => format!(
                "DIR was altered, or exported for another lock: export again with `cks-iso cache \
                 export --locked {}` where the lock was written, and import that; {}",
                files[0],
                match corrupt {
                    false => "the other entries were imported",
                    true => "some blobs are corrupt too (named above)",
                }
            ),
            Self::Corrupt { .. } => "run `cks-iso cache export` again where the cache came \
                                     from, and import that; the others were imported"
                .into(),
            Self::Offline { locked, minus, .. } => {
                let name = super::file_name(locked);
                format!(
                    "where the lock was written, run `cks-iso cache export --locked {name} {} -o \
                     DELTA`, carry DELTA here and `cks-iso cache import DELTA --locked {name}`",
                    minus.join(" ")
                )
            }
            Self::Problems { cache, .. } => format!(
                "`cks-iso cache verify --fix --cache-dir {}` removes them; the next build \
                 fetches what it needs again",
                cache.display()
            ),
            Self::Incomplete { file, .. } => format!(
                "build once online with `--locked {}` (or `cks-iso cache import`) to complete \
                 it, or leave that lock out",
                file.display()
            ),
        })
    }
}
