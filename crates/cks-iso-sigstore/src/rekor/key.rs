//! Key signatures entered in Rekor v1 (`build --sign-key … --tlog`): the `hashedrekord` 0.0.1
//! entry whose `publicKey` is the signer's PEM public key rather than a Fulcio certificate, as a
//! bundle with a public-key hint carries it, and its proof against the trusted root: the signed
//! entry timestamp by a log of the root, the entry logging this digest, signature and key, the
//! RFC 6962 inclusion proof and the log's checkpoint. These are the checks a certificate's entry
//! gets in [`super::verify_digest`], without the certificate's (there is none: the key is
//! trusted because the operator named it).
//!
//! Its own file because a key signature has no certificate for [`Evidence`] to hold: the entry
//! stands alone beside the key, and [`Entry`] is the part of [`Evidence`] that a log vouches for.

use super::{Evidence, LogEntry, Proof, entries, proven};
use crate::Invalid;
use crate::root::TrustedRoot;
use crate::verify::{self, Failure, Step, b64};

/// One Rekor v1 entry, apart from the signature material it logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Base64 of the canonical entry body.
    pub body: String,
    /// When the log integrated it, seconds since the epoch.
    pub integrated_time: i64,
    /// The log id (SHA-256 of the log's key).
    pub log_id: Vec<u8>,
    /// Global log index.
    pub log_index: i64,
    /// The signed entry timestamp.
    pub set: Vec<u8>,
    /// The inclusion proof.
    pub proof: Proof,
}

fn unhex(text: &str, what: &str) -> Result<Vec<u8>, Invalid> {
    hex::decode(text).map_err(|_| format!("{what} is not hex").into())
}

impl Entry {
    /// The entry as Rekor's API serves it (`GET /api/v1/log/entries/<uuid>`, or the answer to a
    /// `POST` of a proposed entry): hex hashes and ids decoded.
    pub fn from_api(entry: &LogEntry) -> Result<Self, Invalid> {
        let p = entry
            .verification
            .inclusion_proof
            .as_ref()
            .ok_or("the Rekor entry has no inclusion proof")?;
        Ok(Self {
            body: entry.body.clone(),
            integrated_time: entry.integrated_time,
            log_id: unhex(&entry.log_id, "the logID")?,
            log_index: entry.log_index,
            set: b64(&entry.verification.signed_entry_timestamp)
                .ok_or("the signedEntryTimestamp is not base64")?,
            proof: Proof {
                log_index: p.log_index,
                root_hash: unhex(&p.root_hash, "the rootHash")?,
                tree_size: p.tree_size,
                hashes: p
                    .hashes
                    .iter()
                    .map(|h| unhex(h, "a proof hash"))
                    .collect::<Result<_, _>>()?,
                checkpoint: p.checkpoint.clone(),
            },
        })
    }
}

impl Evidence {
    /// The entry part of this evidence.
    pub fn entry(&self) -> Entry {
        Entry {
            body: self.body.clone(),
            integrated_time: self.integrated_time,
            log_id: self.log_id.clone(),
            log_index: self.log_index,
            set: self.set.clone(),
            proof: self.proof.clone(),
        }
    }
}

/// The entry of Rekor's `reply` (to the proposal of a key signature) that logs a file hashing to
/// `digest`, `signature` and the key `spki`: a reply holding none is refused, so that a log
/// answering another entry is never written into a bundle.
pub fn key_entry(
    reply: &[u8],
    digest: &[u8; 32],
    signature: &[u8],
    spki: &[u8],
) -> Result<Entry, Invalid> {
    let payload_hex = hex::encode(digest);
    let all = entries(reply).map_err(|e| Invalid::from(format!("its answer: {e}")))?;
    let entry = all
        .values()
        .find(|e| verify::logs_key(&e.body, &payload_hex, signature, spki).is_ok())
        .ok_or("its answer holds no entry of this signature")?;
    Entry::from_api(entry).map_err(|e| format!("its entry: {e}").into())
}

/// Verifies that `entry` logs a key signature `signature` by `spki` over a file hashing to
/// `digest`, in a log of `root`: the SET (check 2), the entry's body (check 3, with the key in
/// place of the certificate), the inclusion proof and the checkpoint. Returns when the log
/// integrated it.
pub fn verify_key_entry(
    root: &TrustedRoot,
    spki: &[u8],
    digest: &[u8; 32],
    signature: &[u8],
    entry: &Entry,
) -> Result<i64, Failure> {
    let e = entry;
    verify::rekor_set(
        root,
        &e.body,
        e.integrated_time,
        &e.log_id,
        e.log_index,
        &e.set,
    )?;
    verify::logs_key(&e.body, &hex::encode(digest), signature, spki).map_err(|reason| Failure {
        step: Step::RekorEntry,
        reason: reason.into(),
    })?;
    proven(root, &e.body, &e.log_id, &e.proof, e.integrated_time)?;
    Ok(e.integrated_time)
}
