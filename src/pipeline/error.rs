//! Why a build failed, as one type whatever the step: each variant names the item, what was
//! expected and what was found (the wrapped errors do), says what the user can do
//! ([`BuildError::hint`]) and whether the user's input is at fault ([`BuildError::is_usage`]),
//! which a command maps to its exit code (2 for usage, 1 for a failure of the work). A caller that
//! builds several ISOs in one process tells one failed build from another by this value alone.

use std::path::PathBuf;

use super::author::AuthorError;
use super::realize::RealizeError;
use super::resolve::LockError;
use crate::carry::CarryError;
use crate::cloudstack::UnknownRelease;
use crate::env::{BadEpoch, EPOCH_HINT};
use crate::fetch::FetchError;
use crate::lock::source::SourceError;
use crate::plan::PlanError;
use crate::release::{ResolveError, VersionError};
use crate::trust::sign::SignError;
use crate::upstream::label::LabelError;
use cks_iso_iso9660::IsoError;

/// A build that could not be prepared, resolved, realized or written.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The request's flags or positional arguments, or a lock that contradicts them.
    #[error(transparent)]
    Plan(Box<PlanError>),
    /// A Kubernetes version that is not one, or not one cks-iso builds.
    #[error(transparent)]
    Version(Box<ResolveError>),
    /// A version label (`stable-1.33`) that cannot be read.
    #[error(transparent)]
    Label(Box<LabelError>),
    /// The HTTP client for reading a label.
    #[error(transparent)]
    Fetch(Box<FetchError>),
    /// `--images-file` that cannot be read.
    #[error("cannot read {}", path.display())]
    ImagesFile {
        /// The file given.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `--cloudstack` naming no release cks-iso knows.
    #[error(transparent)]
    CloudStack(Box<UnknownRelease>),
    /// `SOURCE_DATE_EPOCH` that is not seconds.
    #[error(transparent)]
    Epoch(BadEpoch),
    /// The volume ID, or another ISO option.
    #[error(transparent)]
    Iso(Box<IsoError>),
    /// The lock given with `--locked`.
    #[error(transparent)]
    Lock(Box<SourceError>),
    /// `--from-iso`: the ISOs that were to fill the cache.
    #[error(transparent)]
    FromIso(Box<CarryError>),
    /// The output directory cannot be created or written.
    #[error("cannot write to the output directory {}", dir.display())]
    OutputDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The private work directory cannot be created.
    #[error("cannot create a work directory")]
    WorkDir(#[source] std::io::Error),
    /// The request could not be resolved into a lock.
    #[error(transparent)]
    Resolve(Box<LockError>),
    /// The lock could not be realized.
    #[error(transparent)]
    Realize(Box<RealizeError>),
    /// An ISO, or what goes beside it, could not be written.
    #[error(transparent)]
    Author(Box<AuthorError>),
    /// The signing key (`--sign-key`) cannot be read, or an ISO cannot be signed with it.
    #[error(transparent)]
    Sign(Box<SignError>),
    /// A flag that names one build's output, given for several builds (`--name`, a `--lock-file`
    /// without `{kubernetes}`), or two lists that cannot go together.
    #[error("{flag} is for one build, and {count} were asked for: {why}")]
    Several {
        /// The flag (or flags).
        flag: &'static str,
        /// How many builds were asked for.
        count: usize,
        /// Why it cannot serve them all.
        why: &'static str,
        /// What to do instead.
        hint: &'static str,
    },
    /// Of several builds, one that would write what an earlier one writes (`--kubernetes
    /// stable-1.33 --kubernetes 1.33.1` naming one release twice).
    #[error("{} is written by the build of {other} already", path.display())]
    SameIsos {
        /// The ISO (or lock file) both would write.
        path: PathBuf,
        /// The earlier build, as asked for.
        other: String,
    },
    /// A thread for one of several builds cannot be started.
    #[error("cannot start a thread for the build")]
    Thread(#[source] std::io::Error),
}

/// `?` on the steps' errors, boxed to keep the error small.
macro_rules! boxed_from {
    ($($variant:ident($ty:ty)),*) => {
        $(impl From<$ty> for BuildError {
            fn from(err: $ty) -> Self {
                Self::$variant(Box::new(err))
            }
        })*
    };
}

boxed_from!(
    Plan(PlanError),
    Version(ResolveError),
    Label(LabelError),
    Fetch(FetchError),
    CloudStack(UnknownRelease),
    Iso(IsoError),
    Lock(SourceError),
    FromIso(CarryError),
    Resolve(LockError),
    Realize(RealizeError),
    Author(AuthorError),
    Sign(SignError)
);

impl From<VersionError> for BuildError {
    fn from(err: VersionError) -> Self {
        ResolveError::from(err).into()
    }
}

impl From<BadEpoch> for BuildError {
    fn from(err: BadEpoch) -> Self {
        Self::Epoch(err)
    }
}

impl BuildError {
    /// What the user can do, if anything.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Plan(e) => e.hint(),
            Self::Version(e) => e.hint(),
            Self::Label(e) => e.hint(),
            Self::Fetch(e) => e.hint(),
            Self::ImagesFile { .. } => {
                Some("--images-file names a text file of image references, one a line".into())
            }
            Self::CloudStack(_) => {
                Some("or leave --cloudstack out: the ISO then suits 4.22 and 4.23".into())
            }
            Self::Epoch(_) => Some(EPOCH_HINT.into()),
            Self::Iso(e) => e.hint(),
            Self::Lock(e) => e.hint(),
            Self::FromIso(e) => e.hint(),
            Self::OutputDir { .. } => Some(
                "pass --output a directory you can write to (it is created if its parent exists)"
                    .into(),
            ),
            Self::WorkDir(_) => {
                Some("set TMPDIR to a writable directory with room for the images".into())
            }
            Self::Resolve(e) => e.hint(),
            Self::Realize(e) => e.hint(),
            Self::Author(e) => e.hint(),
            Self::Sign(e) => e.hint(),
            Self::Several { hint, .. } => Some((*hint).into()),
            Self::SameIsos { .. } => {
                Some("ask for each Kubernetes release once (a label names a release too)".into())
            }
            Self::Thread(_) => None,
        }
    }

    /// Whether the user's input (a flag, the configuration, a lock) is at fault rather than the
    /// work: a command exits 2 then, else 1.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Plan(_)
            | Self::ImagesFile { .. }
            | Self::CloudStack(_)
            | Self::Epoch(_)
            | Self::Lock(_)
            | Self::Several { .. }
            | Self::SameIsos { .. } => true,
            Self::Version(e) => e.is_usage(),
            Self::Iso(e) => e.is_usage(),
            Self::FromIso(e) => e.is_usage(),
            Self::Resolve(e) => e.is_usage(),
            Self::Realize(e) => e.is_usage(),
            Self::Author(e) => e.is_usage(),
            Self::Sign(e) => e.is_usage(),
            Self::Label(_)
            | Self::Fetch(_)
            | Self::OutputDir { .. }
            | Self::WorkDir(_)
            | Self::Thread(_) => false,
        }
    }
}
