//! The CloudStack side (src/cloudstack, the domain's cloudstack.rs and plan/profile.rs): what
//! each CloudStack release's nodes read (`--cloudstack`), and registering ISOs against the test
//! world's CloudStack stand-in, its bounds and how it answers. A new test of a CloudStack release
//! rule or of `register`/`versions` goes here.

/// What each release's nodes read: ISO names, manifests, etcd and CSI, recorded in the ISO.
mod profiles;
/// Registering ISOs against the CloudStack stand-in, itself first proven against `cs`.
mod registration;
/// The CloudStack client's bounds and credential rules.
mod registration_bounds;
/// Registration against CloudStack as each release answers `listIsos`.
mod registration_fidelity;
/// CloudStack 4.23's Headlamp ISO, release-aware `verify` and the registration summary.
mod releases;
