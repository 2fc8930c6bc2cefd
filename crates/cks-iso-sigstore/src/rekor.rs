//! Signed files (dl.k8s.io's Kubernetes binaries): a `.sig` (base64 of the DER ECDSA signature
//! over the file) and a `.cert` (base64 of the Fulcio leaf's PEM) beside each file, and the Rekor
//! v1 entry that logged them, with its inclusion proof and signed checkpoint. [`Evidence`] is that
//! material in one shape, read from Rekor's API ([`Evidence::from_rekor`]) or from a Sigstore
//! bundle v0.3 ([`Evidence::from_bundle`]), written as one ([`Evidence::bundle`]).
//!
//! [`verify_file`] hashes the file once while it streams (constant memory, whatever its size) and
//! [`verify_digest`] runs, on that digest, checks 1 to 8 of [`super::verify::blob`] (the same code that judges
//! image signature layers: SET, entry, chain, SCT, signature, time, identity, issuer), then the
//! two a bundle adds: the RFC 6962 inclusion proof of the entry up to the proof's root hash, and
//! the checkpoint (a signed note) by a transparency log key of the trusted root committing to that
//! root hash and tree size. Pure: no network, no file system.

use crate::Invalid;
use std::collections::BTreeMap;
use std::io::Read;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;

use super::root::TrustedRoot;
pub use super::tlog::{
    Checkpoint, CheckpointError, MAX_NOTE_SIGNATURES, checkpoint, inclusion, leaf_hash, node_hash,
};
use super::verify::{self, Failure, Step, Verified, b64};
use super::x509::{Cert, pem_certificates};
use super::{ANN_BUNDLE, ANN_CERTIFICATE, ANN_SIGNATURE, Rule};
use cks_iso_oci::image::sha256_of;

/// The bundle media type written.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

pub use super::bundle::{BUNDLE_MEDIA_TYPES, BundleError, MAX_BUNDLE_SIZE, MAX_TIMESTAMPS};
pub use super::dsse::{Envelope, Logged, Statement};
pub use super::tsa::TimestampError;

/// A Rekor v1 log entry as `GET /api/v1/log/entries/<uuid>` serves it (the value under its UUID).
#[derive(Debug, Clone, Deserialize)]
pub struct LogEntry {
    /// Base64 of the canonical entry body.
    pub body: String,
    /// Seconds since the epoch.
    #[serde(rename = "integratedTime")]
    pub integrated_time: i64,
    /// The log's id, hex.
    #[serde(rename = "logID")]
    pub log_id: String,
    /// The global log index.
    #[serde(rename = "logIndex")]
    pub log_index: i64,
    /// Proof and promise.
    pub verification: Verification,
}

/// The entry's `verification` object.
#[derive(Debug, Clone, Deserialize)]
pub struct Verification {
    /// The inclusion proof (Rekor always sends one for an integrated entry).
    #[serde(rename = "inclusionProof")]
    pub inclusion_proof: Option<ApiProof>,
    /// Base64 of the SET.
    #[serde(rename = "signedEntryTimestamp")]
    pub signed_entry_timestamp: String,
}

/// An inclusion proof as Rekor's API gives it (hex hashes).
#[derive(Debug, Clone, Deserialize)]
pub struct ApiProof {
    /// The signed note.
    pub checkpoint: String,
    /// Audit path, hex.
    pub hashes: Vec<String>,
    /// The index within the tree (shard).
    #[serde(rename = "logIndex")]
    pub log_index: i64,
    /// Hex.
    #[serde(rename = "rootHash")]
    pub root_hash: String,
    /// The tree size the proof is for.
    #[serde(rename = "treeSize")]
    pub tree_size: i64,
}

/// Rekor v1's search (`POST`), which finds the entries that log a proposed entry whatever the
/// shard: how cosign (`FindTlogEntry`) looks up a signature that came without its entry. One
/// request, answered with the matching entries only: the index by hash
/// (`/api/v1/index/retrieve`) lists every entry anyone logged for the file, each to be fetched.
pub const SEARCH_PATH: &str = "/api/v1/log/entries/retrieve";

/// The most a search reply may weigh: one entry per shard that holds it, each 5–8 KiB for a
/// real Fulcio leaf (the body with the certificate's PEM, twice base64, a proof of a few dozen
/// hashes, a checkpoint), about 60 KiB for a certificate at [`crate::MAX_CERT_SIZE`]. A bundle
/// written from an entry at this cap stays under [`MAX_BUNDLE_SIZE`].
pub const MAX_SEARCH_REPLY: u64 = 128 * 1024;

/// The most entries of a reply considered: Rekor answers one per shard that holds the entry
/// (public-good Rekor v1 has had a few shards).
pub const MAX_ENTRIES: usize = 16;

#[derive(Deserialize)]
#[serde(untagged)]
enum Reply {
    /// `GET /api/v1/log/entries/<uuid>`: `{uuid: entry}`.
    One(BTreeMap<String, LogEntry>),
    /// The search: `[{uuid: entry}, ...]`.
    Many(Vec<BTreeMap<String, LogEntry>>),
}

/// The entries of a Rekor reply, by UUID: a search's (`[{uuid: entry}, ...]`, the first
/// [`MAX_ENTRIES`]) or, as caches and locks of earlier cks-iso releases hold them, a
/// `GET /api/v1/log/entries/<uuid>`'s (`{uuid: entry}`).
pub fn entries(reply: &[u8]) -> Result<BTreeMap<String, LogEntry>, Invalid> {
    let reply: Reply =
        serde_json::from_slice(reply).map_err(|e| format!("not a Rekor log entry reply: {e}"))?;
    Ok(match reply {
        Reply::One(map) => map,
        Reply::Many(list) => list.into_iter().flatten().take(MAX_ENTRIES).collect(),
    })
}

/// The body of the search (at [`SEARCH_PATH`]) for the `hashedrekord` 0.0.1 entry of a file
/// hashing to `sha256_hex`, with `signature` and the certificate `leaf_der`, as cosign proposes
/// it (Rekor canonicalises the signature and the certificate's PEM before it looks).
pub fn search_query(sha256_hex: &str, signature: &[u8], leaf_der: &[u8]) -> Vec<u8> {
    let entry = json!({
        "apiVersion": "0.0.1",
        "kind": "hashedrekord",
        "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": sha256_hex}},
            "signature": {
                "content": b64_encode(signature),
                "publicKey": {"content": b64_encode(pem(leaf_der).as_bytes())},
            },
        },
    });
    serde_json::to_vec(&json!({ "entries": [entry] })).expect("plain JSON")
}

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

/// The `.sig` file's signature and the `.cert` file's leaf (DER).
pub fn read_pair(sig: &[u8], cert: &[u8]) -> Result<(Vec<u8>, Vec<u8>), Invalid> {
    let signature = b64(&String::from_utf8_lossy(sig)).ok_or("the .sig is not base64")?;
    let pem_text = b64(&String::from_utf8_lossy(cert)).ok_or("the .cert is not base64")?;
    let mut certs = pem_certificates(&String::from_utf8_lossy(&pem_text))
        .map_err(|e| format!("the .cert: {e}"))?;
    if certs.len() != 1 {
        return Err("the .cert is not one PEM certificate".into());
    }
    Ok((signature, certs.remove(0)))
}

fn unhex(text: &str, what: &str) -> Result<Vec<u8>, Invalid> {
    hex::decode(text).map_err(|_| format!("{what} is not hex").into())
}

impl Evidence {
    /// The evidence for a file hashing to `digest`, from its `.sig` and `.cert` bytes and the
    /// Rekor entry that logs them.
    pub fn from_rekor(
        digest: &[u8],
        sig: &[u8],
        cert: &[u8],
        entry: &LogEntry,
    ) -> Result<Self, Invalid> {
        let (signature, leaf) = read_pair(sig, cert)?;
        let p = entry
            .verification
            .inclusion_proof
            .as_ref()
            .ok_or("the Rekor entry has no inclusion proof")?;
        Ok(Self {
            version: EntryVersion::V001,
            timestamps: Vec::new(),
            envelope: None,
            digest: digest.to_vec(),
            signature,
            leaf,
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

    /// Whether `entry` logs this file's digest, signature and leaf (how the right one is picked
    /// among those the index lists).
    pub fn logged_by(digest: &[u8], sig: &[u8], cert: &[u8], entry: &LogEntry) -> bool {
        read_pair(sig, cert).is_ok_and(|(signature, leaf)| {
            verify::logs(&entry.body, &hex::encode(digest), &signature, &leaf).is_ok()
        })
    }

    /// The Sigstore bundle v0.3 (JSON, keys sorted, pretty): byte-identical for the same
    /// evidence.
    pub fn bundle(&self) -> Vec<u8> {
        let p = &self.proof;
        let (kind, version) = match &self.envelope {
            Some(env) => env.logged.kind_version(),
            None => ("hashedrekord", self.version.as_str()),
        };
        let mut entry = json!({
            "logIndex": self.log_index.to_string(),
            "logId": {"keyId": b64_encode(&self.log_id)},
            "kindVersion": {"kind": kind, "version": version},
            "inclusionProof": {
                "logIndex": p.log_index.to_string(),
                "rootHash": b64_encode(&p.root_hash),
                "treeSize": p.tree_size.to_string(),
                "hashes": p.hashes.iter().map(|h| b64_encode(h)).collect::<Vec<_>>(),
                "checkpoint": {"envelope": p.checkpoint},
            },
            "canonicalizedBody": self.body,
        });
        if self.version == EntryVersion::V001 {
            entry["integratedTime"] = json!(self.integrated_time.to_string());
            entry["inclusionPromise"] = json!({"signedEntryTimestamp": b64_encode(&self.set)});
        }
        let mut material = json!({
            "certificate": {"rawBytes": b64_encode(&self.leaf)},
            "tlogEntries": [entry],
        });
        if !self.timestamps.is_empty() {
            let signed: Vec<_> = self
                .timestamps
                .iter()
                .map(|t| json!({"signedTimestamp": b64_encode(t)}))
                .collect();
            material["timestampVerificationData"] = json!({"rfc3161Timestamps": signed});
        }
        let mut value = json!({
            "mediaType": BUNDLE_MEDIA_TYPE,
            "verificationMaterial": material,
        });
        match &self.envelope {
            Some(env) => {
                let mut signature = json!({"sig": b64_encode(&self.signature)});
                if let Some(keyid) = &env.keyid {
                    signature["keyid"] = json!(keyid);
                }
                value["dsseEnvelope"] = json!({
                    "payload": b64_encode(&env.payload),
                    "payloadType": env.payload_type,
                    "signatures": [signature],
                });
            }
            None => {
                value["messageSignature"] = json!({
                    "messageDigest": {"algorithm": "SHA2_256", "digest": b64_encode(&self.digest)},
                    "signature": b64_encode(&self.signature),
                });
            }
        }
        let mut out = serde_json::to_vec_pretty(&value).expect("plain JSON");
        out.push(b'\n');
        out
    }
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
        return super::dsse::verify(root, rule, digest, evidence, env, now);
    }
    if digest.as_slice() != evidence.digest.as_slice() {
        return Err(Failure {
            step: Step::LayerIntegrity,
            reason: format!(
                "the file hashes to sha256:{}, the signature material is for sha256:{}",
                hex::encode(digest),
                hex::encode(&evidence.digest)
            ),
        });
    }
    if evidence.version == EntryVersion::V002 {
        return super::rekor_v2::verify(root, rule, digest, evidence, now);
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
    let layer_digest = format!("sha256:{}", hex::encode(digest));
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
        for t in super::rekor_v2::timestamps(root, evidence)? {
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
    // The inclusion proof, from the entry's leaf to the proof's root.
    let p = &evidence.proof;
    let body = b64(&evidence.body).ok_or_else(|| Failure {
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
    let log = root.tlogs.iter().find(|l| l.id == evidence.log_id);
    if log.is_some_and(|l| !l.valid.covers(t)) {
        return Err(Failure {
            step: Step::Checkpoint,
            reason: format!(
                "log {} of the trusted root is not valid at the signing time {t}",
                hex::encode(&evidence.log_id)
            ),
        });
    }
    let cp = checkpoint(root, &evidence.log_id, &p.checkpoint).map_err(|reason| Failure {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn entry(index: i64) -> Value {
        json!({
            "body": "e30=", "integratedTime": 1, "logID": "00", "logIndex": index,
            "verification": {"signedEntryTimestamp": "AA=="},
        })
    }

    #[test]
    fn a_search_reply_and_an_entry_reply_of_earlier_caches_both_read() {
        let one = json!({"a": entry(1)}).to_string();
        let map = entries(one.as_bytes()).unwrap();
        assert_eq!(map["a"].log_index, 1);
        let list: Vec<Value> = (0..40)
            .map(|i| json!({ format!("u{i:02}"): entry(i) }))
            .collect();
        let map = entries(Value::from(list).to_string().as_bytes()).unwrap();
        assert_eq!(map.len(), MAX_ENTRIES, "the first {MAX_ENTRIES} only");
        assert!(map.contains_key("u00") && !map.contains_key("u39"));
        assert!(entries(b"[1]").is_err());
    }

    #[test]
    fn the_search_proposes_the_hashedrekord_cosign_proposes() {
        let query: Value = serde_json::from_slice(&search_query("ab", b"sig", b"der")).unwrap();
        let [proposed] = query["entries"].as_array().unwrap().as_slice() else {
            panic!("{query}");
        };
        assert_eq!(proposed["kind"], "hashedrekord");
        assert_eq!(proposed["apiVersion"], "0.0.1");
        assert_eq!(proposed["spec"]["data"]["hash"]["value"], "ab");
        assert_eq!(proposed["spec"]["signature"]["content"], b64_encode(b"sig"));
        let pem_b64 = proposed["spec"]["signature"]["publicKey"]["content"]
            .as_str()
            .unwrap();
        let text = String::from_utf8(b64(pem_b64).unwrap()).unwrap();
        assert_eq!(pem_certificates(&text).unwrap(), [b"der".to_vec()]);
    }
}
