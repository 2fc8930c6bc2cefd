//! Sigstore signatures judged (src/trust, crates/cks-iso-sigstore): images signed by `.sig` tags
//! and cosign 3 referrers on Rekor v1 and v2, binaries signed by `.sig`/`.cert` and bundles,
//! `verify-image`, `verify-bundle`, Sigstore's conformance cases, withheld signatures, and the
//! signature parsers under property tests. A new test of a signature verdict goes here.

mod binary_bundles;
mod conformance;
pub(crate) mod images;
mod properties;
mod referrer_shapes;
pub(crate) mod referrers;
mod referrers_v2;
mod verify_bundle;
mod verify_image;
mod withheld;
