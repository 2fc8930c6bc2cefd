//! cks-iso: builds the CloudStack Kubernetes Service binaries ISO without root, daemon or mkisofs.
//!
//! The flow is `cli` (parse) → `app` (one function per subcommand, the only place that wires
//! modules) → library modules that each own one concern:
//!
//! - [`iso`]: authors the ISO 9660 image (Rock Ridge + Joliet) from a directory; no network.
//! - [`resolve`]: which autoscaler, CCM and kubeadm images a Kubernetes version needs; git tag
//!   listing over smart HTTP.
//! - [`atomic`]: outputs that appear complete or not at all, also on Ctrl-C.
//! - [`env`]: every environment variable the tool reads.
//! - [`ui`] and [`progress`]: logs and progress on stderr, data on stdout.

pub mod app;
pub mod atomic;
pub mod cli;
pub mod env;
// `IsoError` carries hadris' `PathError` by value (clippy::result_large_err); boxing it is a
// change of the iso module's API, left to its owner.
#[allow(clippy::result_large_err)]
pub mod iso;
pub mod progress;
pub mod resolve;
pub mod ui;
