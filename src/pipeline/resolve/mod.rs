//! The first step of a build: "Kubernetes vX.Y.Z" turned into the exact upstream inputs of an
//! ISO, without kubeadm or a token, and then into the complete lock a build realizes.
//!
//! The upstream script shipped the autoscaler from `master`, ran the target's `kubeadm` on the
//! build host and could not be pointed at a mirror. This module decides *what* to fetch; the
//! downloads themselves belong to the fetch layer and to [`super::realize`].
//!
//! - `resolution`: [`crate::release`] and the upstream catalog together for one build
//!   ([`resolve()`], [`Resolution`]), with the small metadata fetched through the upstream
//!   [`crate::upstream::Fetcher`]; what `cks-iso resolve` prints.
//! - `to_lock`: the request resolved into a complete lock ([`resolve_lock`]), manifests and
//!   published checksums taken as the realization takes them.
//! - [`published`]: whether a Kubernetes release was ever published.

pub mod published;
mod resolution;
mod to_lock;

pub use resolution::{
    DownloadRow, ImageRow, ImageSource, Resolution, ResolutionError, ResolvedVersions, resolve,
};
pub use to_lock::{LockError, LockInputs, addon_manifest_images, resolve_lock, size_images};
