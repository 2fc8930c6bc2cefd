//! Turns "Kubernetes vX.Y.Z" into the exact upstream inputs of an ISO, without kubeadm or a token.
//!
//! The upstream script shipped the autoscaler from `master`, ran the target's `kubeadm` on the
//! build host and could not be pointed at a mirror. This module decides *what* to fetch; the
//! downloads themselves belong to the fetch layer.
//!
//! - [`crate::release`] (re-exported here): Kubernetes versions, autoscaler releases and their
//!   tag listing, the CCM tag, kubeadm's image list.
//! - `resolution`: all of it together for one build ([`resolve()`], [`Resolution`]), with the
//!   small metadata fetched through the upstream [`crate::upstream::Fetcher`].

pub mod published;
mod resolution;

// The releases' vocabulary, under the paths `resolve` always gave it.
pub use crate::release::{
    AutoscalerChoice, AutoscalerVersion, Extras, GitRef, KubeVersion, Listing, Protocol,
    ResolveError, ccm_tag, choose_autoscaler, images, ls_remote,
};
// What a request gives before anything is fetched is the plan's (the domain crate's).
pub use crate::plan::{Given, Partial, csi_tag};
pub use resolution::{
    DownloadRow, ImageRow, ImageSource, Resolution, ResolutionError, ResolvedVersions, resolve,
};
