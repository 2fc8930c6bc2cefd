//! cks-iso: builds the CloudStack Kubernetes Service binaries ISO without root, daemon or mkisofs.
//!
//! `cks-iso build` resolves the request into a lock, realizes the lock (fetches and verifies
//! exactly what it names) and writes the ISOs; `build --locked` skips the first step. The flow is
//! `cli` (parse) → `app` (one function per subcommand, the only place that wires modules) → the
//! library. What another crate may use is public; what only the commands use is not.
//!
//! The pipeline ([`pipeline`], the README's sentence as modules):
//! - [`pipeline::resolve`]: a request resolved into a complete lock, fetching only metadata (the
//!   versions, every file's URL and published checksum, every image's digests).
//! - [`pipeline::realize`]: the lock realized — files, manifests, images and their signatures
//!   fetched and verified into a work directory.
//! - [`pipeline::author`]: the ISOs, their `.sha256`, SBOMs and lock, from what was realized.
//! - [`reporter`]: where the pipeline's progress goes.
//! - [`trust`]: the signature policy and trusted root a user names, and an image's signature
//!   found through the registry and judged, as every command that checks one does.
//!
//! The network side, each layer on the one below:
//! - [`fetch`]: HTTP with retries, timeouts, TLS roots, mirrors, offline, resumable verified
//!   downloads.
//! - [`cache`]: the content-addressed blob store that only ever holds verified blobs.
//! - [`registry`]: the distribution API client that pulls images into the cache.
//! - [`upstream`]: taking each file of the catalog verified through the mirrors; labels read.
//! - [`release`]: the autoscaler's tags listed over git's smart HTTP; `ResolveError`.
//!
//! The pure domain, from [`cks_iso_domain`] under the same names: [`contract`], [`plan`],
//! [`lock`], [`versions`], [`manifest`], [`sbom`], [`diff`], [`units`] (and its `release` rules,
//! `catalog` and `cloudstack` releases, re-exported by [`release`], [`upstream`] and the
//! private `cloudstack` module, the CloudStack client). From the leaf
//! crates: [`image`] and [`archive`] ([`cks_iso_oci`]), [`atomic`], [`input`] and [`progress`]
//! ([`cks_iso_io`]); [`cks_iso_iso9660`] and [`cks_iso_sigstore`] are named directly.
//!
//! For the binary: [`app`], [`cli`], [`ui`] (logs and progress on stderr), [`env`](mod@env)
//! (every environment variable the tool reads). The commands' own modules are private: `verify`
//! (an ISO checked against the contract), `upgrade` (`upgrade-check`), `cloudstack` (CloudStack
//! registration and the releases' rules), `pull`, `push` (an image list to push), `carry` (the `cache` subcommands: a cache carried across an air gap, listed, verified, pruned), `doctor`, `config` (the
//! configuration file), `failure` (how an error reads), `out` (data on stdout).

pub mod app;
// The leaf crates, under the module names the rest of the crate has always used.
pub use cks_iso_io::{atomic, input, progress};
pub use cks_iso_oci::{archive, image};
// The pure domain (crates/cks-iso-domain), under the module names the rest of the crate uses.
pub use cks_iso_domain::{contract, diff, lock, manifest, plan, sbom, staged, units, versions};
pub mod cache;
mod carry;
pub mod cli;
mod cloudstack;
mod config;
mod doctor;
pub mod env;
mod failure;
pub mod fetch;

mod out;
pub mod pipeline;
mod pull;
mod push;
pub mod registry;
pub mod release;
pub mod reporter;
mod sync;
pub mod trust;
pub mod ui;
mod upgrade;
pub mod upstream;
mod verify;
