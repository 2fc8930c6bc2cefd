//! Verifies Kubernetes' Sigstore signatures of images and files, offline, and says what was
//! verified.
//!
//! A crate of its own so that "signature checks never touch the network" is the compiler's rule:
//! it has no HTTP client and no async runtime; the `cks-iso` crate fetches what it judges.
//!
//! An ISO crosses an air gap once and is trusted for years; registry.k8s.io signs every image it
//! serves (cosign's keyless "simple signing" format: a `sha256-<digest>.sig` tag whose layers are
//! the signed payloads, with the signature, the Fulcio leaf and the Rekor signed entry timestamp in
//! annotations). This crate judges those layers with the nine checks of [`verify::Step`] against
//! a [`TrustedRoot`] and a policy [`Rule`] (identity and OIDC issuer), binding by digest only: the
//! payload's `docker-reference` is recorded, never trusted (it named backing registries for years).
//!
//! Pure: no network, no file system. The `cks-iso` crate's `registry` fetches the `.sig` manifests and
//! payloads; `app::build` decides per [`Mode`] what a missing or bad signature means and writes
//! the evidence ([`evidence`]) into the ISO.
//!
//! Own code on `ring` (already in the tree through rustls), `rustls-webpki` for certificate paths
//! and a small DER reader for what webpki does not expose, not `sigstore-verify`: see "Library choice" in
//! `docs/design/signatures.md` for why.
//!
//! The modules, by concern, each using only those listed before it:
//!
//! - [`Invalid`], `policy` (who must have signed: [`Policy`], [`Rule`]), [`cosign`'s wire names](ANN_SIGNATURE);
//! - `x509`: certificates and keys read, and their paths validated by webpki;
//! - `root`: the trusted root ([`TrustedRoot`]); `tsa`: RFC 3161 timestamps; [`dsse`]: envelopes and statements;
//! - [`verify`]: the checks of one signature (the image layer's nine, the leaf's, the log
//!   entry's binding);
//! - [`rekor`]: the evidence of a signed file (Rekor's API, Sigstore bundles, inclusion proofs and
//!   checkpoints, Rekor v2, DSSE bundles) and its verification;
//! - [`referrer`]: cosign 3's referrer signatures; `image`: an image's verdict;
//!   `report`: what the ISO records;
//! - [`keyed`]: signatures cks-iso makes with an operator's key (the ISOs it writes), their
//!   bundles, and their check against a public key; [`keyless`]: the identity token, signing
//!   configuration and Fulcio and Rekor request bodies of keyless signing.

mod cosign;
mod cosign_key;
pub mod dsse;
mod image;
mod invalid;
pub mod keyed;
pub mod keyless;
mod policy;
pub mod referrer;
pub mod rekor;
mod report;
mod root;
mod tsa;
pub mod verify;
mod x509;

pub use cosign::{
    ANN_BUNDLE, ANN_CERTIFICATE, ANN_CHAIN, ANN_SIGNATURE, SIMPLE_SIGNING, SIMPLE_SIGNING_TYPE,
    tag_for,
};
pub use image::{Rejection, SignatureError, SignatureManifest, judge, judge_manifest};
pub use invalid::Invalid;
pub use policy::{
    ALWAYS_SIGNED_SINCE_MINOR, CONTROL_PLANE_IMAGES, GOOGLE_ISSUER, Identity, Issuer,
    K8S_BINARY_IDENTITY, K8S_IMAGE_IDENTITY, Policy, Rule, always_signed,
};
pub use report::{
    BUNDLE_SUFFIX, BinaryEvidence, BinaryReport, ImageReport, Mode, PairMaterial, REPORT_PATH,
    Report, Signer, Verdict, evidence,
};
pub use root::{MEDIA_TYPE as TRUSTED_ROOT_MEDIA_TYPE, RootError, TrustedRoot};
pub use x509::MAX_CERT_SIZE;

/// Sigstore's public-good trusted root, as shipped in the `sigstore-trust-root` 0.15.1 crate
/// (`src/trusted_root.json`, sha256
/// `6494e21ea73fa7ee769f85f57d5a3e6a08725eae1e38c755fc3517c9e6bc0b66`).
pub const PUBLIC_GOOD_ROOT: &str = include_str!("sigstore-public-good.trusted_root.json");
