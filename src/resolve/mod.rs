//! Turns "Kubernetes vX.Y.Z" into the exact upstream inputs of an ISO, without kubeadm or a token.
//!
//! The upstream script shipped the autoscaler from `master`, ran the target's `kubeadm` on the
//! build host and could not be pointed at a mirror. This module decides *what* to fetch; the
//! downloads themselves belong to the fetch layer.
//!
//! - [`version`]: Kubernetes versions, the autoscaler release for a minor (or the pin), the CCM tag.
//! - [`git`]: tag listing like `git ls-remote` over smart HTTP (v2 `ls-refs`, v0 fallback), on top
//!   of the pkt-line framing in [`pktline`].
//! - [`kubeadm`]: kubeadm's image list from its constants source or the embedded table.
//! - `resolution`: all of it together for one build ([`resolve()`], [`Resolution`]), with the
//!   small metadata fetched through the upstream [`crate::upstream::Fetcher`].

mod error;
pub mod git;
pub mod kubeadm;
pub mod pktline;
pub mod published;
mod resolution;
pub mod version;

pub use error::ResolveError;
pub use git::{GitRef, Listing, Protocol, ls_remote};
pub use kubeadm::{Extras, images};
pub use resolution::{
    DownloadRow, Given, ImageRow, ImageSource, Partial, Resolution, ResolutionError,
    ResolvedVersions, csi_tag, resolve,
};
pub use version::{AutoscalerChoice, AutoscalerVersion, KubeVersion, ccm_tag, choose_autoscaler};
