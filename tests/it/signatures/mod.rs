//! Sigstore signatures judged (src/trust, crates/cks-iso-sigstore): images signed by `.sig` tags
//! and cosign 3 referrers on Rekor v1 and v2, binaries signed by `.sig`/`.cert` and bundles,
//! `verify-image`, `verify-bundle`, Sigstore's conformance cases, withheld signatures, and the
//! signature parsers under property tests. A new test of a signature verdict goes here; helpers
//! several suites share go in `common.rs`.

/// Binaries signed onto Rekor v2 by bundles: built, locked, re-verified offline, refused.
mod binary_bundles;
/// Kubernetes binaries' signatures refused, each naming its check, before any ISO is written.
mod binary_refusals;
/// Helpers the signature suites share: `build`, the oracles, `fails_with`.
pub(crate) mod common;
/// Sigstore's conformance cases through `verify-bundle`.
mod conformance;
/// Image signatures in the lock, and ISOs without evidence to re-verify.
mod image_locks;
/// Image signatures refused, and signature fetches spoiled on the way.
mod image_refusals;
/// Both arches' signature evidence, re-verified offline, by oracles, and tampered.
mod images;
/// The signature parsers under property tests.
mod properties;
/// What sits beside a signature in an image's referrers, passed over without a verdict change.
mod referrer_shapes;
/// Images signed the cosign 3 way, as OCI 1.1 referrers.
pub(crate) mod referrers;
/// Referrer-signed images on Rekor v2, with RFC 3161 timestamps.
mod referrers_v2;
/// `verify-bundle` with dl.k8s.io's `.sig` and `.cert`, and its usage errors.
mod verify_bundle;
/// `verify-image` by tag and digest, its JSON, credentials and usage errors.
mod verify_image;
/// Signatures a registry mirror withholds are failures, not warnings.
mod withheld;
