//! Rekor v2 entries (`hashedrekord` 0.0.2), as Sigstore bundles v0.3 carry them: the log signs
//! no entry timestamp and vouches for no integrated time, so an entry is proven by its inclusion
//! proof and the log's checkpoint alone, and the signing time comes from RFC 3161 timestamps of a
//! timestamp authority of the trusted root ([`crate::tsa`]). The certificate checks after that
//! are the very ones a Rekor v1 signature gets (`verify::signed_at`).

use crate::Invalid;
use serde::Deserialize;

use super::{Evidence, MAX_TIMESTAMPS, logged};
use crate::policy::Rule;
use crate::root::TrustedRoot;
use crate::tsa::TimeStamp;
use crate::verify::{Blob, Failure, Signer, Step, Verified, b64, signed_at};
use crate::x509::Cert;

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    spec: Spec,
}

#[derive(Deserialize)]
struct Spec {
    #[serde(rename = "hashedRekordV002")]
    hashed_rekord: HashedRekord,
}

#[derive(Deserialize)]
struct HashedRekord {
    data: Data,
    signature: Signature,
}

#[derive(Deserialize)]
struct Data {
    algorithm: String,
    digest: String,
}

#[derive(Deserialize)]
struct Signature {
    content: String,
    verifier: Verifier,
}

#[derive(Deserialize)]
struct Verifier {
    #[serde(rename = "x509Certificate")]
    certificate: Option<RawBytes>,
}

#[derive(Deserialize)]
struct RawBytes {
    #[serde(rename = "rawBytes")]
    raw_bytes: String,
}

/// Whether the entry `body` (base64 of its canonical JSON) is the `hashedrekord` 0.0.2 of a
/// blob whose sha256 is `digest`, with `signature` and the certificate `leaf_der`.
pub(crate) fn logs(
    body: &str,
    digest: &[u8],
    signature: &[u8],
    leaf_der: &[u8],
) -> Result<(), Invalid> {
    let entry = b64(body)
        .and_then(|body| serde_json::from_slice::<Entry>(&body).ok())
        .ok_or("the body is not a hashedrekord 0.0.2")?;
    if entry.kind != "hashedrekord" || entry.api_version != "0.0.2" {
        return Err(format!(
            "a {} {} entry, not hashedrekord 0.0.2",
            entry.kind, entry.api_version
        )
        .into());
    }
    let h = &entry.spec.hashed_rekord;
    let logged = b64(&h.data.digest);
    if h.data.algorithm != "SHA2_256" || logged.as_deref() != Some(digest) {
        return Err(format!(
            "the entry logs {}:{}, not this payload (sha256:{})",
            h.data.algorithm,
            logged.map_or_else(|| h.data.digest.clone(), hex::encode),
            hex::encode(digest)
        )
        .into());
    }
    if b64(&h.signature.content).as_deref() != Some(signature) {
        return Err("the entry logs another signature".into());
    }
    let Some(cert) = &h.signature.verifier.certificate else {
        return Err("the entry logs a public key, not a certificate".into());
    };
    if b64(&cert.raw_bytes).as_deref() != Some(leaf_der) {
        return Err("the entry logs another certificate".into());
    }
    Ok(())
}

/// Verifies a file hashing to `digest` against Rekor v2 `evidence`: the entry binds the digest,
/// signature and certificate; at least one timestamp verifies; at every verified time the
/// certificate checks pass; the inclusion proof and the checkpoint hold.
pub(crate) fn verify(
    root: &TrustedRoot,
    rule: &Rule,
    digest: &[u8; 32],
    evidence: &Evidence,
    now: i64,
) -> Result<Verified, Failure> {
    let leaf = Cert::parse(&evidence.leaf).map_err(|e| Failure {
        step: Step::LayerIntegrity,
        reason: format!("the certificate: {e}"),
    })?;
    logs(&evidence.body, digest, &evidence.signature, &evidence.leaf).map_err(|reason| {
        Failure {
            step: Step::RekorEntry,
            reason: reason.into(),
        }
    })?;
    let times = timestamps(root, evidence)?;
    let mut signer = Signer::default();
    for &t in &times {
        signer = signed_at(
            root,
            rule,
            &leaf,
            &evidence.signature,
            Blob::Sha256(digest),
            digest,
            (t, "timestamped"),
            now,
        )?;
    }
    logged(root, evidence, times[0])?;
    Ok(Verified {
        identity: signer.identity,
        issuer: signer.issuer,
        log_index: evidence.log_index,
        integrated_time: times[0],
        timestamped: true,
        docker_reference: String::new(),
    })
}

/// The generation times of the timestamps that verify (at least one), in the bundle's order.
pub(crate) fn timestamps(root: &TrustedRoot, evidence: &Evidence) -> Result<Vec<i64>, Failure> {
    let fail = |reason: String| Failure {
        step: Step::Timestamp,
        reason,
    };
    if evidence.timestamps.is_empty() {
        return Err(fail(
            "the bundle has no RFC 3161 timestamp, and a Rekor v2 entry has no integrated time: \
             nothing says when it was signed"
                .into(),
        ));
    }
    // A bundle's list is capped when it is read; evidence built otherwise is held to the same.
    if evidence.timestamps.len() > MAX_TIMESTAMPS {
        return Err(fail(format!(
            "the bundle carries {} timestamps, more than the {MAX_TIMESTAMPS} read",
            evidence.timestamps.len()
        )));
    }
    // As sigstore-go: copies of one token must not count as several authorities' word. One
    // map of those seen, not a scan of the earlier ones for each.
    let mut seen = std::collections::HashMap::new();
    for (i, der) in evidence.timestamps.iter().enumerate() {
        if let Some(j) = seen.insert(der.as_slice(), i) {
            return Err(fail(format!(
                "timestamps #{} and #{} are the same bytes: one authority's word given twice",
                j + 1,
                i + 1
            )));
        }
    }
    let mut times = Vec::new();
    let mut why = Vec::new();
    for (i, der) in evidence.timestamps.iter().enumerate() {
        match TimeStamp::parse(der).and_then(|ts| ts.verify(root, &evidence.signature)) {
            Ok(t) => times.push(t),
            Err(e) => why.push(format!("timestamp #{}: {e}", i + 1)),
        }
    }
    match times.is_empty() {
        true => Err(fail(why.join("; "))),
        false => Ok(times),
    }
}
