//! Why realizing a build failed: each variant names the item, what was expected and what was
//! found, and says what the user can do ([`RealizeError::hint`]); the errors of the modules the
//! pipeline calls pass through unchanged.

use crate::fetch::FetchError;
use crate::image::ImageError;
use crate::manifest::ManifestError;
use crate::plan::PauseConflict;
use crate::registry::RegistryError;
use crate::release::ResolveError;
use crate::trust::binaries::BinaryError;
use crate::trust::checker::CheckerError;
use crate::upstream::UpstreamError;

/// The hint for a lock that names what this cks-iso would not take.
const OTHER_CKS_ISO: &str = "the lock was written by another cks-iso; build without --locked";

/// A build that could not be realized.
#[derive(Debug, thiserror::Error)]
pub enum RealizeError {
    /// The work directory could not be written or read.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A locked input whose bytes are not the locked ones.
    #[error(
        "{what} from {origin} changed since it was locked: expected sha256:{expected} (the \
         lock), got sha256:{actual}"
    )]
    Drift {
        /// The ISO path.
        what: String,
        /// Where it was read from.
        origin: String,
        /// The lock's sha256.
        expected: String,
        /// The sha256 read now.
        actual: String,
    },
    /// A lock naming another URL than the one its entry is taken from: with a warm cache that
    /// URL would be recorded for bytes verified under another, so one lock would give two ISOs.
    #[error("the lock's {what} names the URL {locked}, but cks-iso takes it from {expected}")]
    Forged {
        /// The entry.
        what: String,
        /// The URL the lock names (redacted).
        locked: String,
        /// The URL(s) cks-iso takes it from.
        expected: String,
    },
    /// A local manifest that cannot be read.
    #[error("cannot read {dest} from {}", path.display())]
    ManifestUnreadable {
        /// The ISO path.
        dest: String,
        /// The file given.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A manifest that cannot be edited.
    #[error("{dest} from {origin}")]
    Edit {
        /// The ISO path.
        dest: String,
        /// Where it came from.
        origin: String,
        /// Why.
        #[source]
        source: Box<ManifestError>,
    },
    /// A second pause image: named by a manifest, asked for by reference, or in a lock.
    #[error(transparent)]
    Pause(Box<PauseConflict>),
    /// A manifest's image line that is not a reference.
    #[error("{dest} from {origin} names the image {image:?}, which is not a reference")]
    NotAReference {
        /// The ISO path.
        dest: String,
        /// Where the manifest came from.
        origin: String,
        /// The image line.
        image: String,
        /// Why it is not one.
        #[source]
        source: Box<ImageError>,
    },
    /// The lock holds a manifest this build would not take.
    #[error("the lock holds {missing} but this build would not take it")]
    NotTaken {
        /// The manifest.
        missing: String,
    },
    /// The manifests name an image the lock does not hold.
    #[error("this build would bundle {extra}, which the lock does not hold")]
    NotLocked {
        /// The image.
        extra: String,
    },
    /// The lock lacks a file this build downloads.
    #[error("the lock holds no {dest} for linux/{arch}")]
    NoLockedFile {
        /// The ISO path.
        dest: String,
        /// The architecture.
        arch: &'static str,
    },
    /// The lock holds no entry for an architecture the request builds.
    #[error("the lock holds no linux/{arch}; it locks {locked}")]
    NoLockedArch {
        /// The architecture.
        arch: &'static str,
        /// What it holds.
        locked: String,
    },
    /// A locked image's digest that is not one.
    #[error("the lock's image {reference}")]
    LockedImage {
        /// The image.
        reference: String,
        /// Why.
        #[source]
        source: Box<ImageError>,
    },
    /// Images that could not be pulled: the first failure, the others summed up in `context`.
    #[error("{context}")]
    Images {
        /// `cannot bundle the images for linux/…`, with the count.
        context: String,
        /// The first failure.
        #[source]
        source: Box<RegistryError>,
    },
    /// More than one image failed its signature check: the first one.
    #[error("{count} images of linux/{arch} failed the signature check, this one first")]
    Signatures {
        /// How many failed.
        count: usize,
        /// The architecture.
        arch: &'static str,
        /// The first failure.
        #[source]
        source: Box<CheckerError>,
    },
    /// A download or client failure.
    #[error(transparent)]
    Fetch(Box<FetchError>),
    /// An upstream file that could not be taken.
    #[error(transparent)]
    Upstream(Box<UpstreamError>),
    /// A locked version that is not one, or not this cks-iso's to build.
    #[error(transparent)]
    Version(Box<ResolveError>),
    /// An image reference that is not one.
    #[error(transparent)]
    Image(Box<ImageError>),
    /// One image's signature.
    #[error(transparent)]
    Checker(Box<CheckerError>),
    /// A downloaded file's signature.
    #[error(transparent)]
    Binary(Box<BinaryError>),
}

/// `?` on the wrapped errors, boxed to keep the error small.
macro_rules! boxed_from {
    ($($variant:ident($ty:ty)),*) => {
        $(impl From<$ty> for RealizeError {
            fn from(err: $ty) -> Self {
                Self::$variant(Box::new(err))
            }
        })*
    };
}

boxed_from!(
    Fetch(FetchError),
    Upstream(UpstreamError),
    Version(ResolveError),
    Image(ImageError),
    Checker(CheckerError),
    Binary(BinaryError)
);

impl RealizeError {
    /// What the user can do (a wrapped error's own hint).
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Drift { .. } => "restore the locked file, or build without --locked to take the \
                                   new one (and review the change)"
                .into(),
            Self::Forged { .. } => "the lock was changed by hand or by someone else: pass a lock \
                                    written by `cks-iso build --lock-file`, or build without \
                                    --locked"
                .into(),
            Self::ManifestUnreadable { .. } => "pass an existing file or an http(s) URL".into(),
            Self::Edit { source, .. } => return source.hint(),
            Self::Pause(conflict) => conflict.hint(),
            Self::NotAReference { .. } => "fix that image line, or pass another manifest".into(),
            Self::NotTaken { .. }
            | Self::NotLocked { .. }
            | Self::NoLockedFile { .. }
            | Self::NoLockedArch { .. } => OTHER_CKS_ISO.into(),
            Self::LockedImage { .. } => {
                "the lock is damaged; write it again with --lock-file".into()
            }
            Self::Images { source, .. } => return source.hint(),
            Self::Signatures { source, .. } | Self::Checker(source) => return source.hint(),
            Self::Fetch(e) => return e.hint(),
            Self::Upstream(e) => return e.hint(),
            Self::Version(e) => return e.hint(),
            Self::Image(e) => return e.hint(),
            Self::Binary(e) => return e.hint(),
            Self::Io { .. } => return None,
        })
    }

    /// Whether the user's input (a flag, a lock changed by hand) is at fault rather than the
    /// work.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Forged { .. } => true,
            Self::Signatures { source, .. } | Self::Checker(source) => source.is_usage(),
            Self::Version(e) => e.is_usage(),
            Self::Image(e) => e.is_usage(),
            Self::Binary(e) => e.is_usage(),
            _ => false,
        }
    }

    /// `what` failed on the work directory.
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| Self::Io { what, source }
    }
}
