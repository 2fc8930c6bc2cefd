//! cosign's names on the wire: the annotations of a `.sig` layer, the simple-signing media and
//! claim types, and the tag a signature of a digest is found under. A module of their own because
//! every layer of the crate reads them (the layer checks, the Rekor evidence put in their shape,
//! the image verdicts) and none of those owns them.

use cks_iso_oci::image::Digest;

/// Annotation: base64 of the DER ECDSA signature over the payload.
pub const ANN_SIGNATURE: &str = "dev.cosignproject.cosign/signature";
/// Annotation: the Fulcio leaf, PEM.
pub const ANN_CERTIFICATE: &str = "dev.sigstore.cosign/certificate";
/// Annotation: the chain, PEM; untrusted and ignored (the trusted root decides).
pub const ANN_CHAIN: &str = "dev.sigstore.cosign/chain";
/// Annotation: the Rekor bundle (SET and entry).
pub const ANN_BUNDLE: &str = "dev.sigstore.cosign/bundle";
/// Media type of a simple-signing layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// `critical.type` of a cosign image signature.
pub const SIMPLE_SIGNING_TYPE: &str = "cosign container image signature";

/// The `.sig` tag cosign attaches to `digest`.
pub fn tag_for(digest: &Digest) -> String {
    format!("sha256-{}.sig", digest.hex())
}
