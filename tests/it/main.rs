//! The one integration test binary of cks-iso: every suite is a module here, so the dependency
//! tree is linked once and `support` compiles once. This file is the map: one folder per area of
//! the library, each `mod.rs` opening with what its tests protect and where a new test of that
//! area goes. Run an area with `cargo test --test it AREA::` (e.g. `cargo test --test it
//! build::`), one suite with `cargo test --test it AREA::SUITE::` (e.g. `build::e2e::`).

mod support;

/// Add-on images and manifests a user puts on an ISO.
mod addons;
/// Image archives: the writer, its memory, skopeo and containerd reading them.
mod archive;
/// `cks-iso build` through the binary: whole builds, locks, matrices, crashes, disks.
mod build;
/// The blob cache and the `cache` commands, across an air gap.
mod cache;
/// CloudStack releases' rules and registering ISOs in CloudStack.
mod cloudstack;
/// The documentation's links and commands.
mod docs;
/// HTTP downloads, retries under faults, no internet.
mod fetch;
/// Hostile input: locks, ISOs, caches, files, bodies, add-ons, parsers.
mod hostile;
/// The ISO 9660 writer and reader, and ISO signatures.
mod iso;
/// `pipeline::Build` called in this process, judged on `Built` and `BuildError`.
mod pipeline;
/// The repository's rules: layers and packaging.
mod project;
/// The OCI registry client: pull, push, credentials, faults.
mod registry;
/// Kubernetes releases: versions, labels, kubeadm's images, the autoscaler tag.
mod release;
/// `cks-iso resolve` and `resolve --lock`.
mod resolve;
/// Sigstore signatures of images and binaries.
mod signatures;
/// `cks-iso sync` against the CloudStack stand-in.
mod sync;
/// What a user sees: messages, progress, JSON logs, `doctor`.
mod ui;
/// Commands that read finished ISOs: `verify`, `diff`, `upgrade-check`.
mod verify;
