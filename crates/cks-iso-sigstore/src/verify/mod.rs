//! The nine checks one cosign signature layer must pass, in cosign's order, against a trusted
//! root and a policy rule. Each failure names its [`Step`]; the first failing step ends the layer.
//! The checks of the log entry (SET, binding) are in `entry`, those of the leaf certificate
//! (chain, SCT, signature, time, identity, issuer) in `leaf`, shared by every kind of evidence.

mod entry;
mod leaf;
mod sct;

use std::collections::BTreeMap;

use cks_iso_io::Sha256Sum;
use cks_iso_oci::image::Digest;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use crate::cosign::{ANN_BUNDLE, ANN_CERTIFICATE, ANN_SIGNATURE, SIMPLE_SIGNING_TYPE};
use crate::policy::Rule;
use crate::root::TrustedRoot;
use crate::x509::{Cert, pem_certificates};

use entry::RekorBundle;
pub(crate) use entry::{b64, logs, logs_key, rekor_set};
pub(crate) use leaf::{Signer, signed_at};

/// The checks, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// 1: the payload hashes to its layer descriptor's digest; the annotations are present.
    LayerIntegrity,
    /// 2: the Rekor signed entry timestamp verifies with a transparency log key of the root.
    RekorSet,
    /// 3: the Rekor entry is the hashedrekord of this payload, signature and certificate.
    RekorEntry,
    /// 4: the leaf chains to a Fulcio CA of the root at the signing time, for code signing.
    CertificateChain,
    /// 5: the leaf embeds an SCT that a CT log of the root signed.
    Sct,
    /// 6: the leaf's key signed the payload.
    Signature,
    /// 7: the signing time (integrated, or timestamped) lies inside the leaf's validity (and not
    /// in the future).
    Time,
    /// 8a: the leaf's SAN is the policy's identity.
    Identity,
    /// 8b: the leaf's OIDC issuer is the policy's issuer.
    Issuer,
    /// 9: the payload signs this very digest, as a cosign container image signature.
    Binding,
    /// Binaries: the entry's RFC 6962 inclusion proof leads to the proof's root hash.
    InclusionProof,
    /// Binaries: the log's signed checkpoint commits to that root hash and tree size.
    Checkpoint,
    /// Rekor v2 entries: an RFC 3161 timestamp of a timestamp authority of the root gives the
    /// signing time (a Rekor v2 entry has no integrated time and no SET).
    Timestamp,
    /// DSSE bundles: the envelope holds an in-toto statement.
    Envelope,
}

impl Step {
    /// Its name in errors and the report.
    pub fn name(self) -> &'static str {
        match self {
            Self::LayerIntegrity => "layer integrity",
            Self::RekorSet => "Rekor signed entry timestamp",
            Self::RekorEntry => "Rekor entry",
            Self::CertificateChain => "certificate chain",
            Self::Sct => "signed certificate timestamp",
            Self::Signature => "signature",
            Self::Time => "signing time",
            Self::Identity => "identity",
            Self::Issuer => "issuer",
            Self::Binding => "signed digest",
            Self::InclusionProof => "Rekor inclusion proof",
            Self::Checkpoint => "Rekor checkpoint",
            Self::Timestamp => "RFC 3161 timestamp",
            Self::Envelope => "DSSE envelope",
        }
    }
}

/// Why one layer failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The step that failed.
    pub step: Step,
    /// What it found.
    pub reason: String,
}

fn fail<T>(step: Step, reason: impl Into<String>) -> Result<T, Failure> {
    Err(Failure {
        step,
        reason: reason.into(),
    })
}

/// What a verified layer establishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The SAN that matched the policy.
    pub identity: String,
    /// The OIDC issuer.
    pub issuer: String,
    /// The Rekor log index (global).
    pub log_index: i64,
    /// When Rekor integrated the entry (seconds since the epoch); for a Rekor v2 entry, which
    /// integrates at no time the log vouches for, the first verified RFC 3161 timestamp's time.
    pub integrated_time: i64,
    /// Whether that time is a timestamp authority's (a Rekor v2 entry) rather than the log's.
    pub timestamped: bool,
    /// The docker-reference the payload names: recorded, never trusted.
    pub docker_reference: String,
}

#[derive(Deserialize)]
struct SimpleSigning {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    identity: CriticalIdentity,
    image: CriticalImage,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct CriticalIdentity {
    #[serde(rename = "docker-reference", default)]
    docker_reference: String,
}

#[derive(Deserialize)]
struct CriticalImage {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// Verifies one layer: its descriptor digest (`sha256:<hex>`), its annotations and its payload,
/// as a signature of `signed` (`sha256:<hex>`), under `rule`, at `now` (seconds).
pub fn layer(
    root: &TrustedRoot,
    rule: &Rule,
    signed: &str,
    layer_digest: &str,
    annotations: &BTreeMap<String, String>,
    payload: &[u8],
    now: i64,
) -> Result<Verified, Failure> {
    let signed_blob = Blob::Bytes(payload);
    let mut verified = blob(root, rule, layer_digest, annotations, signed_blob, now)?;
    // 9. Binding to the digest.
    let claim: SimpleSigning = serde_json::from_slice(payload).map_err(|e| Failure {
        step: Step::Binding,
        reason: format!("the payload is not simple signing JSON: {e}"),
    })?;
    if claim.critical.kind != SIMPLE_SIGNING_TYPE {
        return fail(
            Step::Binding,
            format!("the payload's type is {:?}", claim.critical.kind),
        );
    }
    if claim.critical.image.docker_manifest_digest != signed {
        return fail(
            Step::Binding,
            format!(
                "the payload signs {}, not {signed} (a signature copied from another image)",
                claim.critical.image.docker_manifest_digest
            ),
        );
    }
    verified.docker_reference = claim.critical.identity.docker_reference;
    Ok(verified)
}

/// What was signed: the bytes themselves (a layer's small payload), or the sha256 of a file that
/// was hashed while it streamed (never held in memory, never hashed again).
#[derive(Debug, Clone, Copy)]
pub enum Blob<'a> {
    /// The signed bytes.
    Bytes(&'a [u8]),
    /// The sha256 of the signed bytes.
    Sha256(&'a [u8; 32]),
}

/// Checks 1 to 8 for any signed blob (a layer's payload, or a file): what cosign's annotations
/// (or a `.sig`/`.cert` pair with its Rekor entry, put in the same shape) say about `payload`,
/// whose digest its descriptor names as `layer_digest`. A payload given by its digest is checked
/// with an ECDSA verification of that digest (an Ed25519 leaf cannot sign one).
pub fn blob(
    root: &TrustedRoot,
    rule: &Rule,
    layer_digest: &str,
    annotations: &BTreeMap<String, String>,
    payload: Blob<'_>,
    now: i64,
) -> Result<Verified, Failure> {
    use Step::*;
    // 1. Layer integrity.
    let digest: [u8; 32] = match payload {
        Blob::Bytes(bytes) => Sha256::digest(bytes).into(),
        Blob::Sha256(digest) => *digest,
    };
    let payload_sum = Sha256Sum::from(digest);
    let payload_hex = payload_sum.to_string();
    let hashed = Digest::sha256(payload_sum);
    if layer_digest != hashed.to_string() {
        return fail(
            LayerIntegrity,
            format!("the payload hashes to {hashed}, its descriptor says {layer_digest}"),
        );
    }
    let annotation = |name: &str| {
        annotations.get(name).ok_or_else(|| Failure {
            step: LayerIntegrity,
            reason: format!("the layer has no {name} annotation"),
        })
    };
    let sig_text = annotation(ANN_SIGNATURE)?;
    let signature = b64(sig_text).ok_or_else(|| Failure {
        step: LayerIntegrity,
        reason: "the signature annotation is not base64".into(),
    })?;
    let leaf_pem = annotation(ANN_CERTIFICATE)?;
    let leaf_der = match pem_certificates(leaf_pem) {
        Ok(mut certs) if certs.len() == 1 => certs.remove(0),
        _ => {
            return fail(
                LayerIntegrity,
                "the certificate annotation is not one PEM certificate",
            );
        }
    };
    let leaf = Cert::parse(&leaf_der).map_err(|e| Failure {
        step: LayerIntegrity,
        reason: format!("the certificate: {e}"),
    })?;
    let bundle: RekorBundle =
        serde_json::from_str(annotation(ANN_BUNDLE)?).map_err(|e| Failure {
            step: LayerIntegrity,
            reason: format!("the bundle annotation is not a Rekor bundle: {e}"),
        })?;

    // 2. Rekor SET.
    let p = &bundle.payload;
    let log_id = hex::decode(&p.log_id).map_err(|_| Failure {
        step: RekorSet,
        reason: "the logID is not hex".into(),
    })?;
    let set = b64(&bundle.signed_entry_timestamp).ok_or_else(|| Failure {
        step: RekorSet,
        reason: "the SignedEntryTimestamp is not base64".into(),
    })?;
    rekor_set(root, &p.body, p.integrated_time, &log_id, p.log_index, &set)?;

    // 3. Rekor entry: the body names this payload, this signature and this certificate.
    logs(&p.body, &payload_hex, &signature, &leaf_der).map_err(|reason| Failure {
        step: RekorEntry,
        reason: reason.into(),
    })?;
    let signer = signed_at(
        root,
        rule,
        &leaf,
        &signature,
        payload,
        &digest,
        (p.integrated_time, "integrated"),
        now,
    )?;
    Ok(Verified {
        identity: signer.identity,
        issuer: signer.issuer,
        log_index: p.log_index,
        integrated_time: p.integrated_time,
        timestamped: false,
        docker_reference: String::new(),
    })
}
