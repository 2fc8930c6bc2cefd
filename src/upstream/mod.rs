//! The files a build takes from upstream web servers, and taking them verified.
//!
//! The upstream script saved 404 pages as binaries and checked nothing. Here each file an ISO
//! needs is an [`Artifact`] of the domain crate's catalog (its URL, where its checksum is
//! published and in which shape, what its bytes must be), and [`get::Fetcher`] downloads one
//! through the mirrors, verifies it, and only then gives it its name. HTTP, retries and mirrors
//! stay in `fetch`.

pub mod admit;
mod error;
mod get;
pub mod label;
mod text;
pub mod tie;

// The catalog (what each file is, its checksum's shape, its content checks) is the domain
// crate's; under the paths the rest of the crate uses.
pub use cks_iso_domain::catalog::{
    Artifact, Checksum, ChecksumFileError, Content, DEFAULT_CNI, DEFAULT_CSI, Legacy, Pins,
    WrongContent, bare_version, catalog, check_yaml, default_crictl, file_name, hash_and_check_tar,
    images_in_yaml,
};
pub use error::UpstreamError;
pub use get::{Expected, Fetcher, Got, MANIFEST_LIMIT};
