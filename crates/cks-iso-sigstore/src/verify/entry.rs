//! Checks 2 and 3 of a Rekor v1 entry, whatever carries it (a cosign annotation, a `.sig`/`.cert`
//! pair's entry, a bundle): the signed entry timestamp by a transparency log key of the trusted
//! root, and the `hashedrekord` 0.0.1 body binding this payload, signature and certificate.

use base64::Engine as _;
use serde::Deserialize;

use super::{Failure, Step, fail};
use crate::Invalid;
use crate::root::TrustedRoot;
use crate::x509::{Hash, pem_block, pem_certificates};

/// One `dev.sigstore.cosign/bundle` annotation.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct RekorBundle {
    pub(super) signed_entry_timestamp: String,
    pub(super) payload: RekorPayload,
}

#[derive(Deserialize, serde::Serialize)]
pub(super) struct RekorPayload {
    // Field order is the RFC 8785 (JCS) order: the keys sorted. Values are an ASCII string, a hex
    // string and integers, for which serde_json's compact output is the canonical form.
    pub(super) body: String,
    #[serde(rename = "integratedTime")]
    pub(super) integrated_time: i64,
    #[serde(rename = "logID")]
    pub(super) log_id: String,
    #[serde(rename = "logIndex")]
    pub(super) log_index: i64,
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

pub(crate) fn b64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
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

/// Whether the Rekor entry `body` (base64 of the canonical JSON) is the hashedrekord 0.0.1 of
/// a blob hashing to `payload_hex`, with `signature` and the certificate `leaf_der`.
pub(crate) fn logs(
    body: &str,
    payload_hex: &str,
    signature: &[u8],
    leaf_der: &[u8],
) -> Result<(), Invalid> {
    let pem = logged_key(body, payload_hex, signature)?;
    let logged_cert = pem_certificates(&String::from_utf8_lossy(&pem)).ok();
    if !logged_cert.is_some_and(|certs| certs.len() == 1 && certs[0] == leaf_der) {
        return Err("the entry logs another certificate".into());
    }
    Ok(())
}

/// Whether the Rekor entry `body` is the hashedrekord 0.0.1 of a blob hashing to `payload_hex`,
/// with `signature` and the public key `spki` (DER SubjectPublicKeyInfo): a key signature
/// entered in the log, whose `publicKey` is the key's PEM rather than a certificate.
pub(crate) fn logs_key(
    body: &str,
    payload_hex: &str,
    signature: &[u8],
    spki: &[u8],
) -> Result<(), Invalid> {
    let pem = logged_key(body, payload_hex, signature)?;
    match pem_block(&String::from_utf8_lossy(&pem)) {
        Ok((label, der)) if label == "PUBLIC KEY" && der == spki => Ok(()),
        Ok((label, _)) if label == "PUBLIC KEY" => Err("the entry logs another public key".into()),
        Ok((label, _)) => Err(format!("the entry logs a {label:?}, not a PUBLIC KEY").into()),
        Err(e) => Err(format!("the entry's public key: {e}").into()),
    }
}

/// The `publicKey.content` (PEM bytes) of the hashedrekord 0.0.1 `body`, once its hash is
/// `payload_hex` and its signature `signature`.
fn logged_key(body: &str, payload_hex: &str, signature: &[u8]) -> Result<Vec<u8>, Invalid> {
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
    b64(&entry.spec.signature.public_key.content)
        .ok_or_else(|| "the entry's publicKey is not base64".into())
}
