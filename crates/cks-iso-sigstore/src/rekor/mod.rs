//! Signed files (dl.k8s.io's Kubernetes binaries): a `.sig` (base64 of the DER ECDSA signature
//! over the file) and a `.cert` (base64 of the Fulcio leaf's PEM) beside each file, and the Rekor
//! v1 entry that logged them, with its inclusion proof and signed checkpoint. [`Evidence`] is that
//! material in one shape, read from Rekor's API ([`Evidence::from_rekor`]) or from a Sigstore
//! bundle v0.3 ([`Evidence::from_bundle`]), written as one ([`Evidence::bundle`]).
//!
//! [`verify_file`] hashes the file once while it streams (constant memory, whatever its size) and
//! [`verify_digest`] runs, on that digest, checks 1 to 8 of [`verify::blob`] (the same code that judges
//! image signature layers: SET, entry, chain, SCT, signature, time, identity, issuer), then the
//! two a bundle adds: the RFC 6962 inclusion proof of the entry up to the proof's root hash, and
//! the checkpoint (a signed note) by a transparency log key of the trusted root committing to that
//! root hash and tree size. Pure: no network, no file system.
//!
//! Inside: `api` (Rekor's replies and search), `bundle` (the Sigstore bundle, read and
//! written), `tlog` (inclusion proofs and checkpoints), `v2` (Rekor v2 entries, dated by RFC 3161
//! timestamps), `dsse` (DSSE bundles, whose entries log an envelope) and `key` (a key signature's
//! entry, which has no certificate: [`Entry`]).

mod api;
mod bundle;
mod dsse;
mod key;
mod tlog;
mod v2;
#[cfg(test)]
mod v2_tests;

use std::collections::BTreeMap;
use std::io::Read;

use base64::Engine as _;
use serde_json::json;

use crate::cosign::{ANN_BUNDLE, ANN_CERTIFICATE, ANN_SIGNATURE};
use crate::dsse::Envelope;
use crate::policy::Rule;
use crate::root::TrustedRoot;
use crate::verify::{self, Failure, Step, Verified, b64};
use crate::x509::Cert;
use cks_iso_io::Sha256Sum;
use cks_iso_oci::image::{Digest, sha256_of};

pub use self::api::{
    ApiProof, LogEntry, MAX_ENTRIES, MAX_SEARCH_REPLY, SEARCH_PATH, Verification, entries,
    read_pair, search_query,
};
pub use self::bundle::{BUNDLE_MEDIA_TYPES, BundleError, MAX_BUNDLE_SIZE, MAX_TIMESTAMPS};
pub use self::key::{Entry, key_entry, verify_key_entry};
pub use self::tlog::{
    Checkpoint, CheckpointError, MAX_NOTE_SIGNATURES, checkpoint, inclusion, leaf_hash, node_hash,
};
pub use crate::tsa::TimestampError;

/// The bundle media type written.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// An inclusion proof with decoded hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// Index of the entry in the tree.
    pub log_index: i64,
    /// The root hash the path leads to.
    pub root_hash: Vec<u8>,
    /// The tree size.
    pub tree_size: i64,
    /// The audit path, leaf side first.
    pub hashes: Vec<Vec<u8>>,
    /// The checkpoint (signed note) text.
    pub checkpoint: String,
}

/// The `hashedrekord` version of a log entry, which says which Rekor logged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EntryVersion {
    /// `0.0.1`, Rekor v1: a SET and an integrated time give the signing time.
    #[default]
    V001,
    /// `0.0.2`, Rekor v2: no SET, no integrated time; RFC 3161 timestamps give the signing time.
    V002,
}

impl EntryVersion {
    /// Its `kindVersion.version`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V001 => "0.0.1",
            Self::V002 => "0.0.2",
        }
    }
}

/// Everything that shows a file was signed and logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// Which `hashedrekord` the entry is (Rekor v1 or v2).
    pub version: EntryVersion,
    /// sha256 of the file.
    pub digest: Vec<u8>,
    /// The DER ECDSA signature.
    pub signature: Vec<u8>,
    /// The Fulcio leaf, DER.
    pub leaf: Vec<u8>,
    /// Base64 of the canonical entry body.
    pub body: String,
    /// Seconds since the epoch.
    pub integrated_time: i64,
    /// The log id (SHA-256 of the log's key).
    pub log_id: Vec<u8>,
    /// Global log index.
    pub log_index: i64,
    /// The signed entry timestamp.
    pub set: Vec<u8>,
    /// The inclusion proof.
    pub proof: Proof,
    /// RFC 3161 `TimeStampResp`s (DER) of the signature, as a bundle carries them (only read for
    /// Rekor v2 entries, whose signing time they give).
    pub timestamps: Vec<Vec<u8>>,
    /// A DSSE bundle's envelope, whose PAE `signature` signs (then `digest` is empty: the
    /// statement's subject names the artifact); `None` for a message signature.
    pub envelope: Option<Envelope>,
}

fn b64_encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn pem(der: &[u8]) -> String {
    let text = b64_encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in text.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).expect("ASCII"));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// Verifies that `file` (read once, as it streams; never held) was signed as `evidence` says,
/// under `rule`, at `now`: see [`verify_digest`]. A read error fails layer integrity.
pub fn verify_file(
    root: &TrustedRoot,
    rule: &Rule,
    file: impl Read,
    evidence: &Evidence,
    now: i64,
) -> Result<Verified, Failure> {
    let digest = sha256_of(file).map_err(|e| Failure {
        step: Step::LayerIntegrity,
        reason: format!("cannot read the file: {e}"),
    })?;
    verify_digest(root, rule, &digest, evidence, now)
}

/// Verifies that a file hashing to `digest` (sha256) was signed as `evidence` says, under
/// `rule`, at `now`: checks 1 to 8 of [`verify::blob`] (the signature by an ECDSA verification
/// of the digest), checks 4 to 8 again at the time of each RFC 3161 timestamp the bundle carries
/// (at least one of which must verify, whatever the log), then the inclusion proof and the
/// checkpoint.
pub fn verify_digest(
    root: &TrustedRoot,
    rule: &Rule,
    digest: &[u8; 32],
    evidence: &Evidence,
    now: i64,
) -> Result<Verified, Failure> {
    if let Some(env) = &evidence.envelope {
        return dsse::verify(root, rule, digest, evidence, env, now);
    }
    if digest.as_slice() != evidence.digest.as_slice() {
        return Err(Failure {
            step: Step::LayerIntegrity,
            reason: format!(
                "the file hashes to {}, the signature material is for sha256:{}",
                Digest::sha256(Sha256Sum::from(*digest)),
                hex::encode(&evidence.digest)
            ),
        });
    }
    if evidence.version == EntryVersion::V002 {
        return v2::verify(root, rule, digest, evidence, now);
    }
    // The same checks as an image signature layer, with the material in cosign's annotations.
    let rekor = json!({
        "SignedEntryTimestamp": b64_encode(&evidence.set),
        "Payload": {
            "body": evidence.body,
            "integratedTime": evidence.integrated_time,
            "logID": hex::encode(&evidence.log_id),
            "logIndex": evidence.log_index,
        },
    });
    let annotations = BTreeMap::from([
        (ANN_SIGNATURE.to_owned(), b64_encode(&evidence.signature)),
        (ANN_CERTIFICATE.to_owned(), pem(&evidence.leaf)),
        (ANN_BUNDLE.to_owned(), rekor.to_string()),
    ]);
    let layer_digest = Digest::sha256(Sha256Sum::from(*digest)).to_string();
    let signed = verify::Blob::Sha256(digest);
    let verified = verify::blob(root, rule, &layer_digest, &annotations, signed, now)?;
    // RFC 3161 timestamps beside the SET are judged as for a DSSE bundle, and as sigstore-go
    // and sigstore-python judge both: one must verify, and the leaf passes checks 4-8 at each
    // time that does, not at the integrated time alone.
    if !evidence.timestamps.is_empty() {
        let leaf = Cert::parse(&evidence.leaf).map_err(|e| Failure {
            step: Step::LayerIntegrity,
            reason: format!("the certificate: {e}"),
        })?;
        for t in v2::timestamps(root, evidence)? {
            let when = (t, "timestamped");
            verify::signed_at(
                root,
                rule,
                &leaf,
                &evidence.signature,
                signed,
                digest,
                when,
                now,
            )?;
        }
    }
    logged(root, evidence, evidence.integrated_time)?;
    Ok(verified)
}

/// The last two checks of any entry: its RFC 6962 inclusion proof leads to the proof's root, and
/// a checkpoint of the entry's log, whose key is valid at the signing time `t`, commits to it.
pub(crate) fn logged(root: &TrustedRoot, evidence: &Evidence, t: i64) -> Result<(), Failure> {
    proven(root, &evidence.body, &evidence.log_id, &evidence.proof, t)
}

/// [`logged`] of an entry given by its parts: its `body` (base64), its log's id and its proof.
fn proven(root: &TrustedRoot, body: &str, log_id: &[u8], p: &Proof, t: i64) -> Result<(), Failure> {
    // The inclusion proof, from the entry's leaf to the proof's root.
    let body = b64(body).ok_or_else(|| Failure {
        step: Step::InclusionProof,
        reason: "the entry body is not base64".into(),
    })?;
    inclusion(
        p.log_index,
        p.tree_size,
        leaf_hash(&body),
        &p.hashes,
        &p.root_hash,
    )
    .map_err(|reason| Failure {
        step: Step::InclusionProof,
        reason: reason.into(),
    })?;
    // The checkpoint, signed by the entry's log, commits to that root.
    let log = root.tlogs.iter().find(|l| l.id == log_id);
    if log.is_some_and(|l| !l.valid.covers(t)) {
        return Err(Failure {
            step: Step::Checkpoint,
            reason: format!(
                "log {} of the trusted root is not valid at the signing time {t}",
                hex::encode(log_id)
            ),
        });
    }
    let cp = checkpoint(root, log_id, &p.checkpoint).map_err(|reason| Failure {
        step: Step::Checkpoint,
        reason: reason.to_string(),
    })?;
    if cp.size != p.tree_size || cp.root != p.root_hash {
        return Err(Failure {
            step: Step::Checkpoint,
            reason: format!(
                "the checkpoint commits to tree size {} with root {}, the proof to {} with {}",
                cp.size,
                hex::encode(&cp.root),
                p.tree_size,
                hex::encode(&p.root_hash)
            ),
        });
    }
    Ok(())
}
