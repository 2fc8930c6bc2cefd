//! Sigstore signatures judged (src/trust, crates/cks-iso-sigstore): images signed by `.sig` tags
//! and cosign 3 referrers on Rekor v1 and v2, binaries signed by `.sig`/`.cert` and bundles,
//! `verify-image`, `verify-bundle`, Sigstore's conformance cases, withheld signatures, and the
//! signature parsers under property tests. A new test of a signature verdict goes here.

mod binary_bundles;
/// Kubernetes binaries' signatures refused, each naming its check, before any ISO is written.
mod binary_refusals;
/// Helpers the signature suites share: `build`, the oracles, `fails_with`.
pub(crate) mod common;
mod conformance;
/// Image signatures in the lock, and ISOs without evidence to re-verify.
mod image_locks;
/// Image signatures refused, and signature fetches spoiled on the way.
mod image_refusals;
/// Both arches' signature evidence, re-verified offline, by oracles, and tampered.
mod images;
mod properties;
mod referrer_shapes;
pub(crate) mod referrers;
mod referrers_v2;
mod verify_bundle;
mod verify_image;
mod withheld;
