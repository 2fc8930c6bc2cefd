//! What a cks-iso ISO holds, as data and pure functions over it: the paths the ISO contract fixes,
//! the lock a build resolves to, `versions.txt`, the manifest edits, the SBOMs, the diff of two
//! ISOs or locks, and what each CloudStack release reads.
//!
//! Why a crate of its own: these are the parts a reader must trust without reading the network
//! side, and the parts other tools (a CI check, a registration script) may want without an HTTP
//! client. The compiler holds that line: this crate depends on the leaf crates only (the image
//! model, the ISO reader, the small I/O helpers), never on reqwest or tokio, and
//! `leaf_crates_depend_on_no_network_stack` in the integration tests checks its dependency tree.
//!
//! - [`contract`]: every path of the ISO, as the node-side consumers read them.
//! - [`catalog`]: the files a build takes from upstream web servers: URLs, published checksums,
//!   content checks.
//! - [`cloudstack`]: what each CloudStack release's nodes read from the ISO.
//! - [`units`]: the kubelet unit and kubeadm drop-in the ISO carries.
//! - [`lock`]: `cks-iso.lock`, the resolved inputs a later build repeats byte for byte, and the
//!   lock read back from a built ISO.
//! - [`versions`]: `versions.txt`, written into the ISO and read back by `verify`.
//! - [`staged`]: what realizing a lock staged beyond the lock (archive names, manifest edits,
//!   signature verdicts); `versions.txt` and the SBOMs render the run's lock and this.
//! - [`manifest`]: manifests edited as text (image pins, pull policy, extra RBAC), read as YAML.
//! - [`plan`]: what goes into the ISO: the request (flags, upstream's positional form, or a
//!   lock), the versions before anything is fetched, manifest edits, the image set, names.
//! - [`recorded`]: what a record keeps of a URL (never its credentials).
//! - [`sbom`]: the ISO's inventory as CycloneDX 1.6 and SPDX 2.3 JSON.
//! - [`diff`]: what changed between two ISOs or locks.
//! - [`release`]: Kubernetes versions, the autoscaler and CCM a minor takes, kubeadm's images.

pub mod catalog;
pub mod cloudstack;
pub mod contract;
pub mod diff;
pub mod lock;
pub mod manifest;
pub mod plan;
pub mod recorded;
pub mod release;
pub mod sbom;
pub mod staged;
pub mod units;
pub mod versions;
