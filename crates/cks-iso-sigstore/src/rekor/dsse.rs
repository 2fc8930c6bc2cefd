//! Verifying a DSSE bundle: how the log entry binds the envelope (Rekor v1 `dsse` 0.0.1 and
//! `intoto` 0.0.2, Rekor v2 `hashedrekord` 0.0.2 of the PAE; see [`crate::dsse`] for the shapes),
//! and the checks of the whole bundle, whose signature signs the envelope's PAE and whose
//! statement names the artifact.

use cks_iso_io::Sha256Sum;
use cks_iso_oci::image::Digest;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::{EntryVersion, Evidence, logged};
use crate::Invalid;
use crate::dsse::{Envelope, IN_TOTO_PAYLOAD_TYPE, Logged, Statement, pae};
use crate::policy::Rule;
use crate::root::TrustedRoot;
use crate::verify::{self, Blob, Failure, Signer, Step, Verified, b64, signed_at};
use crate::x509::{Cert, pem_certificates};

fn field<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| &v[*k])
}

fn text_at<'a>(v: &'a Value, path: &[&str]) -> Result<&'a str, Invalid> {
    field(v, path)
        .as_str()
        .ok_or_else(|| format!("the entry has no {}", path.join(".")).into())
}

/// The one signature of an entry's list, which must be the bundle's only signature.
fn one<'a>(v: &'a Value, path: &[&str]) -> Result<&'a Value, Invalid> {
    match field(v, path).as_array().map(Vec::as_slice) {
        Some([only]) => Ok(only),
        Some(list) => Err(format!(
            "the entry logs {} signatures, the bundle's envelope has one",
            list.len()
        )
        .into()),
        None => Err(format!("the entry has no {}", path.join(".")).into()),
    }
}

fn same_leaf(pem_b64: &str, leaf_der: &[u8]) -> Result<(), Invalid> {
    let certs = b64(pem_b64).and_then(|pem| pem_certificates(&String::from_utf8_lossy(&pem)).ok());
    match certs {
        Some(certs) if certs.len() == 1 && certs[0] == leaf_der => Ok(()),
        _ => Err("the entry logs another certificate".into()),
    }
}

fn payload_hash(body: &Value, path: &[&str], payload: &[u8]) -> Result<(), Invalid> {
    let algorithm = text_at(body, &[path, &["algorithm"]].concat())?;
    let value = text_at(body, &[path, &["value"]].concat())?;
    let actual = Sha256Sum::of(payload);
    if algorithm != "sha256" || value != actual.to_string() {
        return Err(format!(
            "the entry logs a payload hashing to {algorithm}:{value}, the envelope's hashes to \
             {}",
            Digest::sha256(actual)
        )
        .into());
    }
    Ok(())
}

/// Whether the entry `body` (base64 of its canonical JSON) logs `env` signed with `signature`
/// by the certificate `leaf_der`, in the shape `env.logged` says.
pub(crate) fn logs(
    body: &str,
    env: &Envelope,
    signature: &[u8],
    leaf_der: &[u8],
) -> Result<(), Invalid> {
    let (kind, version) = env.logged.kind_version();
    if env.logged == Logged::HashedRekord {
        let digest = Sha256::digest(pae(&env.payload_type, &env.payload));
        return super::v2::logs(body, &digest, signature, leaf_der);
    }
    let entry: Value = b64(body)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("the body is not a Rekor entry")?;
    let (got_kind, got_version) = (&entry["kind"], &entry["apiVersion"]);
    if got_kind != kind || got_version != version {
        return Err(format!(
            "a {} {} entry, the bundle says {kind} {version}",
            got_kind.as_str().unwrap_or("?"),
            got_version.as_str().unwrap_or("?")
        )
        .into());
    }
    match env.logged {
        Logged::Dsse => {
            payload_hash(&entry, &["spec", "payloadHash"], &env.payload)?;
            let sig = one(&entry, &["spec", "signatures"])?;
            if b64(text_at(sig, &["signature"])?).as_deref() != Some(signature) {
                return Err("the entry logs another signature".into());
            }
            same_leaf(text_at(sig, &["verifier"])?, leaf_der)
        }
        Logged::Intoto => {
            payload_hash(&entry, &["spec", "content", "payloadHash"], &env.payload)?;
            let sig = one(&entry, &["spec", "content", "envelope", "signatures"])?;
            // `sig` is base64 of the signature's base64 text.
            let logged =
                b64(text_at(sig, &["sig"])?).and_then(|text| b64(&String::from_utf8_lossy(&text)));
            if logged.as_deref() != Some(signature) {
                return Err("the entry logs another signature".into());
            }
            same_leaf(text_at(sig, &["publicKey"])?, leaf_der)
        }
        Logged::HashedRekord => unreachable!("handled above"),
    }
}

/// Verifies that the artifact hashing to `digest` is a subject of the statement that `evidence`'s
/// envelope `env` holds, signed as `evidence` says, under `rule`, at `now`: the envelope holds an
/// in-toto statement; the log (SET for Rekor v1, RFC 3161 timestamps for Rekor v2 and whenever
/// a bundle carries them) dates it; the entry binds the envelope, its signature and the leaf;
/// the leaf's checks at every time established (chain, SCT, signature over the PAE, validity,
/// identity, issuer); the statement names `digest`; the inclusion proof and checkpoint hold.
pub(crate) fn verify(
    root: &TrustedRoot,
    rule: &Rule,
    digest: &[u8; 32],
    evidence: &Evidence,
    env: &Envelope,
    now: i64,
) -> Result<Verified, Failure> {
    let failure = |step, reason: String| Failure { step, reason };
    if env.payload_type != IN_TOTO_PAYLOAD_TYPE {
        return Err(failure(
            Step::Envelope,
            format!(
                "its payload type is {:?}, not an in-toto statement ({IN_TOTO_PAYLOAD_TYPE})",
                env.payload_type
            ),
        ));
    }
    let statement =
        Statement::parse(&env.payload).map_err(|e| failure(Step::Envelope, e.into()))?;
    let leaf = Cert::parse(&evidence.leaf)
        .map_err(|e| failure(Step::LayerIntegrity, format!("the certificate: {e}")))?;
    let mut times: Vec<(i64, &str)> = Vec::new();
    if evidence.version == EntryVersion::V001 {
        verify::rekor_set(
            root,
            &evidence.body,
            evidence.integrated_time,
            &evidence.log_id,
            evidence.log_index,
            &evidence.set,
        )?;
        times.push((evidence.integrated_time, "integrated"));
    }
    if evidence.version == EntryVersion::V002 || !evidence.timestamps.is_empty() {
        for t in super::v2::timestamps(root, evidence)? {
            times.push((t, "timestamped"));
        }
    }
    logs(&evidence.body, env, &evidence.signature, &evidence.leaf)
        .map_err(|e| failure(Step::RekorEntry, e.into()))?;
    let signed = pae(&env.payload_type, &env.payload);
    let signed_digest: [u8; 32] = Sha256::digest(&signed).into();
    let mut signer = Signer::default();
    for &when in &times {
        signer = signed_at(
            root,
            rule,
            &leaf,
            &evidence.signature,
            Blob::Bytes(&signed),
            &signed_digest,
            when,
            now,
        )
        .map_err(|mut f| {
            if f.step == Step::Signature {
                f.reason
                    .push_str(" over the envelope's DSSE pre-authentication encoding");
            }
            f
        })?;
    }
    if !statement.names(digest) {
        return Err(failure(
            Step::Binding,
            format!(
                "the statement speaks of {}, not {} (a signature of another artifact)",
                statement.digests(),
                Digest::sha256(Sha256Sum::from(*digest))
            ),
        ));
    }
    logged(root, evidence, times[0].0)?;
    Ok(Verified {
        identity: signer.identity,
        issuer: signer.issuer,
        log_index: evidence.log_index,
        integrated_time: times[0].0,
        timestamped: evidence.version == EntryVersion::V002,
        docker_reference: String::new(),
    })
}
