//! DSSE envelopes holding in-toto statements, as Sigstore bundles v0.3 carry them in place of a
//! message signature: how cosign 3 signs an image (an in-toto statement whose subject is the
//! image digest, predicate type [`COSIGN_SIGN_PREDICATE`], attached as an OCI 1.1 referrer), and
//! how attestations are signed generally.
//!
//! What was signed is the envelope's pre-authentication encoding ([`pae`]) of its payload type
//! and payload, not the artifact: the artifact is bound by the statement's subject digest. The
//! log entry binds the envelope in one of three shapes, as the Sigstore clients write them and
//! sigstore-go judges them (`pkg/verify/tlog.go`):
//!
//! - Rekor v1 `dsse` 0.0.1: `spec.payloadHash` (sha256 of the payload) and `spec.signatures`
//!   (each the base64 signature and the base64 PEM `verifier`);
//! - Rekor v1 `intoto` 0.0.2 (older clients): `spec.content.payloadHash` and
//!   `spec.content.envelope.signatures` (each `sig`, base64 of the base64 signature, and
//!   `publicKey`, base64 PEM);
//! - Rekor v2 `hashedrekord` 0.0.2 whose digest is the sha256 of the PAE: Rekor v2 dropped its
//!   `dsse` 0.0.2 kind before it was deployed (rekor-tiles "Drop DSSE support", the protos kept
//!   as deprecated), and sigstore-go verifies no such entry; cks-iso refuses one by name.
//!
//! The envelope's `envelopeHash` (v1 `dsse`) and `hash` (v1 `intoto`) are hashes of the envelope
//! as Rekor canonicalised it, which a verifier cannot recompute from the bundle; like sigstore-go,
//! the payload hash, the signature and the key are what bind it.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::Invalid;

use super::Rule;
use super::rekor::{EntryVersion, Evidence, logged};
use super::root::TrustedRoot;
use super::verify::{self, Blob, Failure, Step, Verified, b64, signed_at};
use super::x509::{Cert, pem_certificates};

/// The payload type of an in-toto statement.
pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The predicate type of cosign 3's image signature statement (cosign `pkg/types/predicate.go`).
pub const COSIGN_SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";
/// The in-toto statement types read.
pub const STATEMENT_TYPES: &[&str] = &[
    "https://in-toto.io/Statement/v1",
    "https://in-toto.io/Statement/v0.1",
];
/// The most subjects a statement may list (sigstore-go's bound against a statement built to be
/// slow to search).
const MAX_SUBJECTS: usize = 1024;

/// How the log recorded an envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logged {
    /// Rekor v1 `dsse` 0.0.1.
    Dsse,
    /// Rekor v1 `intoto` 0.0.2.
    Intoto,
    /// Rekor v2 `hashedrekord` 0.0.2 over the PAE.
    HashedRekord,
}

impl Logged {
    /// Its `kindVersion`.
    pub fn kind_version(self) -> (&'static str, &'static str) {
        match self {
            Self::Dsse => ("dsse", "0.0.1"),
            Self::Intoto => ("intoto", "0.0.2"),
            Self::HashedRekord => ("hashedrekord", "0.0.2"),
        }
    }
}

/// A bundle's DSSE envelope (its one signature is [`Evidence::signature`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// `payloadType`.
    pub payload_type: String,
    /// The payload, decoded.
    pub payload: Vec<u8>,
    /// The signature's `keyid`, when the bundle names one (kept to write it back).
    pub keyid: Option<String>,
    /// How the log entry records it.
    pub logged: Logged,
}

/// The pre-authentication encoding DSSE signs: `DSSEv1 <len> <type> <len> <payload>`, lengths
/// in bytes, in decimal.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// One subject of a statement.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Subject {
    /// Its name (cosign's image signature leaves it out).
    #[serde(default)]
    pub name: String,
    /// Its digests, by algorithm (`sha256`), hex.
    #[serde(default)]
    pub digest: BTreeMap<String, String>,
}

/// An in-toto statement: what the signer says of which artifacts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Statement {
    /// `_type`.
    #[serde(rename = "_type")]
    pub kind: String,
    /// The artifacts it speaks of.
    pub subject: Vec<Subject>,
    /// What kind of claim it is.
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
}

impl Statement {
    /// Reads a statement of a type in [`STATEMENT_TYPES`], with at most 1024 subjects.
    pub fn parse(payload: &[u8]) -> Result<Self, Invalid> {
        let st: Self = serde_json::from_slice(payload)
            .map_err(|e| format!("the payload is not an in-toto statement: {e}"))?;
        if !STATEMENT_TYPES.contains(&st.kind.as_str()) {
            return Err(format!(
                "the statement's _type is {:?}, not an in-toto statement",
                st.kind
            )
            .into());
        }
        if st.subject.len() > MAX_SUBJECTS {
            return Err(format!(
                "the statement lists {} subjects, more than the {MAX_SUBJECTS} read",
                st.subject.len()
            )
            .into());
        }
        Ok(st)
    }

    /// Whether a subject has the sha256 `digest`.
    pub fn names(&self, digest: &[u8; 32]) -> bool {
        self.subject.iter().any(|s| {
            s.digest
                .get("sha256")
                .and_then(|h| hex::decode(h).ok())
                .is_some_and(|d| d == digest)
        })
    }

    /// The sha256 digests its subjects name, for messages.
    fn digests(&self) -> String {
        let all: Vec<String> = self
            .subject
            .iter()
            .filter_map(|s| s.digest.get("sha256").map(|h| format!("sha256:{h}")))
            .collect();
        match all.is_empty() {
            true => "no sha256 digest".into(),
            false => all.join(", "),
        }
    }
}

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
    let actual = hex::encode(Sha256::digest(payload));
    if algorithm != "sha256" || value != actual {
        return Err(format!(
            "the entry logs a payload hashing to {algorithm}:{value}, the envelope's hashes to \
             sha256:{actual}"
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
        return super::rekor_v2::logs(body, &digest, signature, leaf_der);
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
        for t in super::rekor_v2::timestamps(root, evidence)? {
            times.push((t, "timestamped"));
        }
    }
    logs(&evidence.body, env, &evidence.signature, &evidence.leaf)
        .map_err(|e| failure(Step::RekorEntry, e.into()))?;
    let signed = pae(&env.payload_type, &env.payload);
    let signed_digest: [u8; 32] = Sha256::digest(&signed).into();
    let mut identity = String::new();
    for &when in &times {
        identity = signed_at(
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
                "the statement speaks of {}, not sha256:{} (a signature of another artifact)",
                statement.digests(),
                hex::encode(digest)
            ),
        ));
    }
    logged(root, evidence, times[0].0)?;
    Ok(Verified {
        identity,
        issuer: rule.issuer.clone(),
        log_index: evidence.log_index,
        integrated_time: times[0].0,
        timestamped: evidence.version == EntryVersion::V002,
        docker_reference: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_is_the_dsse_v1_encoding_with_byte_lengths() {
        assert_eq!(
            pae("application/vnd.in-toto+json", b"{}"),
            b"DSSEv1 28 application/vnd.in-toto+json 2 {}".to_vec()
        );
        assert_eq!(
            pae("t\u{e9}", b""),
            "DSSEv1 3 t\u{e9} 0 ".as_bytes().to_vec()
        );
    }

    #[test]
    fn a_statement_names_a_digest_by_its_sha256_subject_only() {
        let digest = [7u8; 32];
        let text = serde_json::json!({
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"digest": {"sha512": hex::encode([7u8; 32])}},
                        {"name": "x", "digest": {"sha256": hex::encode(digest).to_uppercase()}}],
            "predicateType": COSIGN_SIGN_PREDICATE,
            "predicate": {},
        });
        let st = Statement::parse(text.to_string().as_bytes()).unwrap();
        assert!(st.names(&digest));
        assert!(!st.names(&[8u8; 32]));
        let other = text.to_string().replace("Statement/v1", "Statement/v9");
        let err = Statement::parse(other.as_bytes()).unwrap_err();
        assert!(err.reason().contains("_type"), "{err}");
    }
}
