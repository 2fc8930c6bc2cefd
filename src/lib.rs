//! cks-iso: builds the CloudStack Kubernetes Service binaries ISO without root, daemon or mkisofs.
//!
//! The flow is `cli` (parse) → `app` (one function per subcommand, the only place that wires
//! modules) → library modules that each own one concern:
//!
//! - [`cks_iso_iso9660`] (a leaf crate): authors the ISO 9660 image (Rock Ridge + Joliet) from a directory; no network.
//! - [`release`]: Kubernetes releases and what goes with each: versions, the autoscaler and CCM
//!   releases for a minor, git tag listing over smart HTTP, kubeadm's images.
//! - [`resolve`]: [`resolve::resolve`], what a whole build would use — versions, URLs, images —
//!   fetching only metadata.
//! - [`image`]: the one image abstraction (references, digests, manifests, platform choice) that
//!   every source yields and every writer takes; no network.
//! - [`cache`]: the content-addressed blob store that only ever holds verified blobs.
//! - [`archive`]: writes one image as an archive `ctr import`, `docker load` and skopeo read.
//! - [`fetch`]: HTTP with retries, timeouts, TLS roots, mirrors, resumable verified downloads.
//! - [`manifest`]: manifests edited as text (image pins, pull policy, extra RBAC), read as YAML.
//! - [`lock`]: `cks-iso.lock`, the resolved inputs a later build repeats byte for byte.
//! - [`versions`]: `versions.txt`, written into the ISO and read back by `verify`.
//! - [`diff`]: what changed between two ISOs or locks (versions, files, images, manifests,
//!   entries); pure.
//! - [`sbom`]: the ISO's inventory as CycloneDX 1.6 and SPDX 2.3 JSON, from what the build knows;
//!   pure.
//! - [`cks_iso_sigstore`] (a leaf crate): judges Sigstore image signatures against a trusted root and policy; pure.
//! - [`trust`]: the signature policy and trusted root a user names, and an image's signature
//!   found through the registry and judged, as every command that checks one does.
//! - [`verify`]: checks a finished ISO against the CKS contract with the project's own reader.
//! - [`upgrade`]: whether a cluster built from one ISO upgrades to another (CloudStack's version
//!   rule, archives as containerd imports them, kubeadm's images), and what changes.
//! - [`registry`]: the distribution API client that pulls images into the cache.
//! - [`upstream`]: the files a build downloads (URLs, published checksums, content checks) and
//!   taking each one verified through the mirrors.
//! - [`plan`]: what goes into the ISO (request, manifest edits, image set, names); pure.
//! - [`registration`]: registers ISOs as CloudStack Kubernetes supported versions (signed API
//!   calls, look first, wait until Ready) and retires old ones.
//! - [`realize`]: fetches and verifies what a build takes (files, manifests, images, their
//!   signatures) into a work directory, and the lock of it.
//! - [`author`]: writes the ISOs, their `.sha256` and SBOMs, from what [`realize`] staged.
//! - [`reporter`]: where the pipeline's progress goes.
//! - [`pull`]: images pulled into the cache and written one archive each (`cks-iso pull`).
//! - [`upkeep`]: what the `cache` subcommands do (carry across an air gap, list, verify, prune).
//! - [`doctor`]: the checks of what a build depends on, without building.
//! - [`failure`]: how an error and its causes read wherever they are reported.
//! - [`atomic`]: outputs that appear complete or not at all, also on Ctrl-C.
//! - [`config`]: the YAML configuration file and how flags override it.
//! - [`env`](mod@env): every environment variable the tool reads.
//! - [`ui`] and [`progress`]: logs and progress on stderr, data on stdout.

pub mod app;
pub mod author;
// The leaf crates, under the module names the rest of the crate has always used.
pub use cks_iso_io::{atomic, input, progress};
pub use cks_iso_oci::{archive, image};
// The pure domain (crates/cks-iso-domain), under the module names the rest of the crate uses.
pub use cks_iso_domain::{cloudstack, contract, diff, lock, manifest, plan, sbom, units, versions};
pub mod cache;
pub mod cli;
pub mod config;
pub mod doctor;
pub mod env;
pub mod failure;
pub mod fetch;

pub mod out;
pub mod pull;
pub mod realize;
pub mod registration;
pub mod registry;
pub mod release;
pub mod reporter;
pub mod resolve;
pub mod trust;
pub mod ui;
pub mod upgrade;
pub mod upkeep;
pub mod upstream;
pub mod verify;
