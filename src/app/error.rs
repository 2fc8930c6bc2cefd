//! The error every subcommand returns: the cause chain, how bad it is, and a hint.

use std::fmt;

use crate::env::EPOCH_HINT;

/// The hint for an architecture cks-iso does not build for, wherever it is given.
pub(crate) const ARCH_HINT: &str = "use amd64 (x86_64) or arm64 (aarch64)";

/// How a failed run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    /// The work failed (exit 1).
    Failure,
    /// The arguments or configuration are wrong (exit 2).
    Usage,
}

/// A failed subcommand.
#[derive(Debug)]
pub struct AppError {
    /// Usage or failure.
    pub kind: ExitKind,
    /// What went wrong, with its causes.
    pub error: anyhow::Error,
    /// What the user can do, if anything.
    pub hint: Option<String>,
}

/// `SOURCE_DATE_EPOCH` set to something else than seconds: the same error in every subcommand
/// that reads it.
impl From<crate::env::BadEpoch> for AppError {
    fn from(err: crate::env::BadEpoch) -> Self {
        Self::usage(err, Some(EPOCH_HINT.into()))
    }
}

impl AppError {
    /// A failure of the work.
    pub fn failure(error: impl Into<anyhow::Error>, hint: Option<String>) -> Self {
        Self {
            kind: ExitKind::Failure,
            error: error.into(),
            hint,
        }
    }

    /// A wrong argument or setting.
    pub fn usage(error: impl Into<anyhow::Error>, hint: Option<String>) -> Self {
        Self {
            kind: ExitKind::Usage,
            error: error.into(),
            hint,
        }
    }

    /// `--arch` naming an architecture cks-iso does not build for, in every subcommand.
    pub(crate) fn unknown_arch(given: &str) -> Self {
        Self::usage(
            anyhow::anyhow!("--arch {given:?} is not an architecture cks-iso builds for"),
            Some(ARCH_HINT.into()),
        )
    }

    /// An output directory (given with `flag`) that cannot be created or written, in every
    /// subcommand that writes one.
    pub(crate) fn output_dir(
        dir: &std::path::Path,
        flag: &str,
        err: impl Into<anyhow::Error>,
    ) -> Self {
        Self::failure(
            err.into().context(format!(
                "cannot write to the output directory {}",
                dir.display()
            )),
            Some(format!(
                "pass {flag} a directory you can write to (it is created if its parent exists)"
            )),
        )
    }

    /// What the user can do: the given hint, else one for a full disk anywhere in the chain.
    pub fn advice(&self) -> Option<String> {
        crate::failure::advice(self.error.as_ref(), self.hint.clone())
    }

    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            ExitKind::Failure => 1,
            ExitKind::Usage => 2,
        }
    }

    /// The top message and each distinct cause below it, once.
    pub fn lines(&self) -> (String, Vec<String>) {
        crate::failure::lines(self.error.as_ref())
    }

    /// [`AppError::lines`] on one line, joined by `: `.
    pub fn one_line(&self) -> String {
        crate::failure::one_line(self.error.as_ref())
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl From<cks_iso_iso9660::IsoError> for AppError {
    fn from(err: cks_iso_iso9660::IsoError) -> Self {
        let hint = err.hint();
        match err.is_usage() {
            true => Self::usage(err, hint),
            false => Self::failure(err, hint),
        }
    }
}

impl From<cks_iso_iso9660::read::ReadError> for AppError {
    fn from(err: cks_iso_iso9660::read::ReadError) -> Self {
        let hint = err.hint();
        Self::failure(err, Some(hint))
    }
}

/// Builds the `From` impl for an error type with `hint()` whose every variant is a failure of the
/// work (or, with `usage`, of the arguments).
macro_rules! from_error {
    ($ty:ty, failure) => {
        impl From<$ty> for AppError {
            fn from(err: $ty) -> Self {
                let hint = err.hint();
                Self::failure(err, hint)
            }
        }
    };
    ($ty:ty, usage) => {
        impl From<$ty> for AppError {
            fn from(err: $ty) -> Self {
                let hint = err.hint();
                Self::usage(err, hint)
            }
        }
    };
    ($ty:ty, either) => {
        impl From<$ty> for AppError {
            fn from(err: $ty) -> Self {
                let hint = err.hint();
                match err.is_usage() {
                    true => Self::usage(err, hint),
                    false => Self::failure(err, hint),
                }
            }
        }
    };
}

from_error!(crate::config::ConfigError, usage);
from_error!(crate::plan::PlanError, usage);
from_error!(crate::upstream::UpstreamError, failure);
from_error!(crate::fetch::FetchError, failure);
from_error!(crate::trust::TrustError, usage);
from_error!(crate::trust::image::CheckError, failure);
from_error!(crate::lock::source::SourceError, usage);
from_error!(crate::cloudstack::line::BadPublishUrl, usage);
// The build pipeline's errors: each says (and its wrapped errors keep) its exit code and hint.
from_error!(crate::pipeline::BuildError, either);
from_error!(crate::pipeline::realize::RealizeError, either);
from_error!(crate::trust::binaries::BinaryError, either);

/// Signatures that cannot be judged (a flag or file at fault) or an image judged bad: the one
/// place `build`, `pull` and `verify-image` turn the checker's error into an exit code and hint.
impl From<crate::trust::checker::CheckerError> for AppError {
    fn from(err: crate::trust::checker::CheckerError) -> Self {
        let hint = err.hint();
        match err.is_usage() {
            true => Self::usage(err, hint),
            false => Self::failure(err, hint),
        }
    }
}

impl From<crate::release::ResolveError> for AppError {
    fn from(err: crate::release::ResolveError) -> Self {
        let hint = err.hint();
        match err.is_usage() {
            true => Self::usage(err, hint),
            false => Self::failure(err, hint),
        }
    }
}

impl From<crate::release::VersionError> for AppError {
    fn from(err: crate::release::VersionError) -> Self {
        crate::release::ResolveError::from(err).into()
    }
}

impl From<crate::pipeline::resolve::ResolutionError> for AppError {
    fn from(err: crate::pipeline::resolve::ResolutionError) -> Self {
        match err {
            crate::pipeline::resolve::ResolutionError::Resolve(e) => e.into(),
            crate::pipeline::resolve::ResolutionError::Image(e) => e.into(),
            // A release that does not exist is a wrong value, like a malformed one.
            unpublished @ crate::pipeline::resolve::ResolutionError::Unpublished { .. } => {
                let hint = unpublished.hint();
                Self::usage(unpublished, hint)
            }
            other => {
                let hint = other.hint();
                Self::failure(other, hint)
            }
        }
    }
}

impl From<crate::image::ImageError> for AppError {
    fn from(err: crate::image::ImageError) -> Self {
        let hint = err.hint();
        match err.is_usage() {
            true => Self::usage(err, hint),
            false => Self::failure(err, hint),
        }
    }
}

impl From<crate::registry::RegistryError> for AppError {
    fn from(err: crate::registry::RegistryError) -> Self {
        let hint = err.hint();
        match err.is_usage() {
            true => Self::usage(err, hint),
            false => Self::failure(err, hint),
        }
    }
}

impl From<crate::archive::ArchiveError> for AppError {
    fn from(err: crate::archive::ArchiveError) -> Self {
        let hint = err.hint();
        Self::failure(err, hint)
    }
}
