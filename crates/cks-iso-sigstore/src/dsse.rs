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
//! the payload hash, the signature and the key are what bind it. Those bindings and the
//! verification of a DSSE bundle are the `rekor` module's; this module holds the envelope and the
//! statement.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::Invalid;

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

/// A bundle's DSSE envelope (its one signature is [`Evidence::signature`](crate::rekor::Evidence::signature)).
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
    pub(crate) fn digests(&self) -> String {
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
