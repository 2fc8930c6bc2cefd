//! The nine checks one cosign signature layer must pass, in cosign's order, against a trusted
//! root and a policy rule. Each failure names its [`Step`]; the first failing step ends the layer.

use crate::Invalid;
use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::Rule;
use super::root::TrustedRoot;
use super::x509::path::{self, Usage};
use super::x509::{Cert, Hash, PublicKey, pem_certificates};
use super::{ANN_BUNDLE, ANN_CERTIFICATE, ANN_SIGNATURE, SIMPLE_SIGNING_TYPE};

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

/// One `dev.sigstore.cosign/bundle` annotation.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RekorBundle {
    signed_entry_timestamp: String,
    payload: RekorPayload,
}

#[derive(Deserialize, serde::Serialize)]
struct RekorPayload {
    // Field order is the RFC 8785 (JCS) order: the keys sorted. Values are an ASCII string, a hex
    // string and integers, for which serde_json's compact output is the canonical form.
    body: String,
    #[serde(rename = "integratedTime")]
    integrated_time: i64,
    #[serde(rename = "logID")]
    log_id: String,
    #[serde(rename = "logIndex")]
    log_index: i64,
}

#[derive(Deserialize)]
struct HashedRekord {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    spec: HashedRekordSpec,
}

#[derive(Deserialize)]
struct HashedRekordSpec {
    data: HashedData,
    signature: HashedSignature,
}

#[derive(Deserialize)]
struct HashedData {
    hash: HashValue,
}

#[derive(Deserialize)]
struct HashValue {
    algorithm: String,
    value: String,
}

#[derive(Deserialize)]
struct HashedSignature {
    content: String,
    #[serde(rename = "publicKey")]
    public_key: PublicKeyContent,
}

#[derive(Deserialize)]
struct PublicKeyContent {
    content: String,
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

pub(crate) fn b64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
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
    let payload_hex = hex::encode(digest);
    if layer_digest != format!("sha256:{payload_hex}") {
        return fail(
            LayerIntegrity,
            format!(
                "the payload hashes to sha256:{payload_hex}, its descriptor says {layer_digest}"
            ),
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
    let identity = signed_at(
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
        identity,
        issuer: rule.issuer.clone(),
        log_index: p.log_index,
        integrated_time: p.integrated_time,
        timestamped: false,
        docker_reference: String::new(),
    })
}

/// Check 2: the signed entry timestamp `set` of the entry `body` (integrated at
/// `integrated_time`, index `log_index`) verifies with the key of the root's log `log_id`, valid
/// at the integrated time.
pub(crate) fn rekor_set(
    root: &TrustedRoot,
    body: &str,
    integrated_time: i64,
    log_id: &[u8],
    log_index: i64,
    set: &[u8],
) -> Result<(), Failure> {
    let p = RekorPayload {
        body: body.to_owned(),
        integrated_time,
        log_id: hex::encode(log_id),
        log_index,
    };
    let tlog = root
        .tlogs
        .iter()
        .find(|l| l.id == log_id)
        .ok_or_else(|| Failure {
            step: Step::RekorSet,
            reason: format!(
                "log {} is not a transparency log of the trusted root",
                p.log_id
            ),
        })?;
    let Some(key) = tlog
        .key
        .as_ref()
        .filter(|_| tlog.valid.covers(p.integrated_time))
    else {
        return fail(
            Step::RekorSet,
            format!("log {} has no usable key at the integrated time", p.log_id),
        );
    };
    let canonical = serde_json::to_vec(&p).expect("plain JSON");
    key.verify(Hash::Sha256, &canonical, set)
        .map_err(|_| Failure {
            step: Step::RekorSet,
            reason: format!(
                "the SignedEntryTimestamp does not verify with the key of log {}",
                p.log_id
            ),
        })
}

/// Checks 4 to 8, whatever gave the signing time `t` (`when.0`; `when.1` says how it was
/// established, "integrated" by Rekor v1 or "timestamped" by a timestamp authority): the leaf
/// chains to a CA of the root at `t`, embeds a valid SCT, signed `payload` (whose sha256 is
/// `digest`) with `signature`, was valid at `t` (not in the future of `now`), and names the
/// rule's identity and issuer. Returns the identity that matched.
#[allow(clippy::too_many_arguments)]
pub(crate) fn signed_at(
    root: &TrustedRoot,
    rule: &Rule,
    leaf: &Cert<'_>,
    signature: &[u8],
    payload: Blob<'_>,
    digest: &[u8; 32],
    (t, when): (i64, &str),
    now: i64,
) -> Result<String, Failure> {
    use Step::*;
    // 4. Chain, with the root's CAs only.
    let issuer_spki = chain(root, leaf, t).map_err(|reason| Failure {
        step: CertificateChain,
        reason: reason.into(),
    })?;

    // 5. SCT.
    super::sct::sct(root, leaf, &issuer_spki).map_err(|reason| Failure {
        step: Sct,
        reason: reason.into(),
    })?;

    // 6. Signature over the payload (or over its digest).
    PublicKey::from_spki(leaf.spki)
        .and_then(|k| match payload {
            Blob::Bytes(bytes) => k.verify(Hash::Sha256, bytes, signature),
            Blob::Sha256(_) => k.verify_prehash(Hash::Sha256, digest, signature),
        })
        .map_err(|e| Failure {
            step: Signature,
            reason: format!("the leaf's key: {e}"),
        })?;

    // 7. Time.
    if t < leaf.not_before || t > leaf.not_after {
        return fail(
            Time,
            format!(
                "{when} at {t}, outside the certificate's validity {}..{}",
                leaf.not_before, leaf.not_after
            ),
        );
    }
    if t > now + 300 {
        return fail(Time, format!("{when} at {t}, in the future"));
    }

    // 8. Identity and issuer.
    let ids = leaf.identities().map_err(|e| Failure {
        step: Identity,
        reason: e.into(),
    })?;
    let identity = ids
        .iter()
        .find(|i| rule.identity.matches(i))
        .cloned()
        .ok_or_else(|| Failure {
            step: Identity,
            reason: format!(
                "signed by {}, the policy wants {}",
                list(&ids),
                rule.identity.describe()
            ),
        })?;
    let issuer = leaf.oidc_issuer().map_err(|e| Failure {
        step: Issuer,
        reason: e.into(),
    })?;
    if issuer.as_deref() != Some(rule.issuer.as_str()) {
        return fail(
            Issuer,
            format!(
                "issued for {}, the policy wants {}",
                issuer.as_deref().unwrap_or("no OIDC issuer"),
                rule.issuer
            ),
        );
    }
    Ok(identity)
}

/// Whether the Rekor entry `body` (base64 of the canonical JSON) is the hashedrekord 0.0.1 of
/// a blob hashing to `payload_hex`, with `signature` and the certificate `leaf_der`.
pub(crate) fn logs(
    body: &str,
    payload_hex: &str,
    signature: &[u8],
    leaf_der: &[u8],
) -> Result<(), Invalid> {
    let entry = b64(body)
        .and_then(|body| serde_json::from_slice::<HashedRekord>(&body).ok())
        .ok_or("the body is not a hashedrekord")?;
    if entry.kind != "hashedrekord" || entry.api_version != "0.0.1" {
        return Err(format!(
            "a {} {} entry, not hashedrekord 0.0.1",
            entry.kind, entry.api_version
        )
        .into());
    }
    let hash = &entry.spec.data.hash;
    if hash.algorithm != "sha256" || hash.value != payload_hex {
        return Err(format!(
            "the entry logs {}:{}, not this payload",
            hash.algorithm, hash.value
        )
        .into());
    }
    if b64(&entry.spec.signature.content).as_deref() != Some(signature) {
        return Err("the entry logs another signature".into());
    }
    let logged_cert = b64(&entry.spec.signature.public_key.content)
        .and_then(|pem| pem_certificates(&String::from_utf8_lossy(&pem)).ok());
    if !logged_cert.is_some_and(|certs| certs.len() == 1 && certs[0] == leaf_der) {
        return Err("the entry logs another certificate".into());
    }
    Ok(())
}

fn list(ids: &[String]) -> String {
    match ids.is_empty() {
        true => "no identity".into(),
        false => ids.join(", "),
    }
}

/// Check 4: `leaf` chains to one of the root's certificate authorities whose `validFor` covers
/// `t`, validated by webpki ([`crate::x509::path`]) for code signing; returns the issuing CA's
/// SPKI. The leaf's own validity at `t` is check 7's to judge (so that a signature made outside
/// it fails as such): the path is validated at `t` brought inside the leaf's validity, which is
/// `t` itself whenever check 7 can pass. webpki holds a trust anchor valid at all times and
/// ignores key usage bits; the root certificate's validity and the leaf's digitalSignature bit
/// are checked here.
fn chain(root: &TrustedRoot, leaf: &Cert<'_>, t: i64) -> Result<Vec<u8>, Invalid> {
    if !leaf.digital_signature()? {
        return Err("the leaf's key usage does not include digitalSignature".into());
    }
    let at = t.clamp(leaf.not_before, leaf.not_after.max(leaf.not_before));
    let mut why: Vec<String> = Vec::new();
    for ca in root.cas.iter().filter(|ca| ca.valid.covers(t)) {
        let anchor_valid = ca
            .chain
            .last()
            .and_then(|der| Cert::parse(der).ok())
            .is_some_and(|c| c.not_before <= at && at <= c.not_after);
        let attempt = match anchor_valid {
            true => path::validate(leaf.der, &ca.chain, at, Usage::CodeSigning),
            false => Err("a CA certificate is not valid at the signing time".into()),
        };
        match attempt {
            Ok(spki) => return Ok(spki),
            Err(e) => {
                let e = String::from(e);
                if !why.contains(&e) {
                    why.push(e);
                }
            }
        }
    }
    Err(match why.is_empty() {
        true => "no certificate authority of the trusted root is valid at the signing time".into(),
        false => format!(
            "not issued by a CA of the trusted root ({})",
            why.join("; ")
        )
        .into(),
    })
}
