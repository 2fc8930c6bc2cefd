//! Rekor v1's API as cks-iso reads it: a log entry (`GET /api/v1/log/entries/<uuid>`, or the
//! search cosign uses to find the entry of a signature that came without one), the search's
//! query, and the evidence a `.sig`/`.cert` pair and its entry make. What is fetched is the
//! `cks-iso` crate's business; this reads the bytes.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::json;

use super::{Entry, EntryVersion, Evidence, b64_encode, pem};
use crate::Invalid;
use crate::verify::{self, b64};
use crate::x509::pem_certificates;

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
/// written from an entry at this cap stays under [`MAX_BUNDLE_SIZE`](super::MAX_BUNDLE_SIZE).
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
        let e = Entry::from_api(entry)?;
        Ok(Self {
            version: EntryVersion::V001,
            timestamps: Vec::new(),
            envelope: None,
            digest: digest.to_vec(),
            signature,
            leaf,
            body: e.body,
            integrated_time: e.integrated_time,
            log_id: e.log_id,
            log_index: e.log_index,
            set: e.set,
            proof: e.proof,
        })
    }

    /// Whether `entry` logs this file's digest, signature and leaf (how the right one is picked
    /// among those the index lists).
    pub fn logged_by(digest: &[u8], sig: &[u8], cert: &[u8], entry: &LogEntry) -> bool {
        read_pair(sig, cert).is_ok_and(|(signature, leaf)| {
            verify::logs(&entry.body, &hex::encode(digest), &signature, &leaf).is_ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    use crate::verify::b64;

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
