//! A Rekor v1 stand-in for the world: the entries the world's [`Sigstore`] logs for signed files,
//! in a real RFC 6962 Merkle tree, served the way rekor.sigstore.dev serves them:
//!
//! - `POST /api/v1/index/retrieve` with `{"hash":"sha256:<hex>"}` answers the UUIDs of the entries
//!   indexed under that hash (a JSON array);
//! - `GET /api/v1/log/entries/<uuid>` answers `{"<uuid>": {body, integratedTime, logID, logIndex,
//!   verification: {inclusionProof: {checkpoint, hashes, logIndex, rootHash, treeSize},
//!   signedEntryTimestamp}}}`, the proof against the current tree and a checkpoint the world's
//!   Rekor key signs;
//! - `POST /api/v1/log/entries/retrieve` with `{"entries": [<proposed hashedrekord>]}` (Rekor's
//!   search, as cosign's `FindTlogEntry` asks it) answers `[{"<uuid>": {...}}, ...]`: the entries
//!   whose hash, signature and certificate are the proposal's, compared as Rekor compares them
//!   (decoded, the certificate's PEM re-read), at most ten proposals (Rekor's
//!   `maxSearchQueries`).
//!
//! - `POST /api/v1/log/entries` with a proposed `hashedrekord` 0.0.1 (once
//!   [`RekorServer::accept_entries`] gave it the world's Rekor key) appends it to the same tree and
//!   answers as Rekor's `createLogEntry` does (sigstore/rekor `pkg/api/entries.go`,
//!   `openapi.yaml`): `201 Created`, `Location` and `ETag` naming the UUID, and the `LogEntry`
//!   `{uuid: {body, integratedTime, logID, logIndex, verification}}` with the SET and the inclusion
//!   proof (what sigstore-python's `_internal/rekor/client.py` reads into a bundle). The entry is
//!   checked first as `pkg/types/hashedrekord/v0.0.1/entry.go` checks it: a sha256 digest of 64
//!   hex digits, a certificate or public key whose key verifies the signature over that digest;
//!   a refusal is `400` `{"code": 400, "message": …}`, an entry already logged `409 Conflict` with
//!   its `Location`.
//!
//! For the tests of a hostile log it can also index UUIDs it does not serve ([`RekorServer::index`]),
//! pad every entry it serves ([`RekorServer::pad`]), and it records the requests it was sent
//! ([`RekorServer::requests`]).
//!
//! Written from RFC 6962 and Rekor's API, independently of cks-iso's verifier. [`Tamper`] spoils
//! what it serves, for the tests' negative cases.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use sha2::Digest as _;

use crate::http::{base64, hex};
use crate::server::{HttpServer, Incoming, Outgoing};
use crate::sigstore::{SignedBlob, Sigstore};

/// What to spoil in the entries served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tamper {
    /// Serve the truth.
    #[default]
    None,
    /// One character of the checkpoint's root hash line changed (its signature fails).
    Checkpoint,
    /// One bit of the first audit path hash flipped.
    ProofHash,
}

struct Stored {
    uuid: String,
    blob: SignedBlob,
}

struct State {
    entries: Vec<Stored>,
    /// Hash (hex) → UUIDs.
    index: BTreeMap<String, Vec<String>>,
    checkpoint: String,
    tamper: Tamper,
    /// Bytes of padding added to each entry served.
    pad: usize,
    /// `METHOD target` of each request, in order.
    requests: Vec<String>,
    /// The Sigstore whose Rekor key signs entries clients send, once they are accepted.
    signer: Option<Arc<Sigstore>>,
}

/// The server; stops when dropped.
pub struct RekorServer {
    server: HttpServer,
    state: Arc<Mutex<State>>,
}

fn leaf(body: &[u8]) -> Vec<u8> {
    let mut h = sha2::Sha256::new();
    h.update([0u8]);
    h.update(body);
    h.finalize().to_vec()
}

fn node(l: &[u8], r: &[u8]) -> Vec<u8> {
    let mut h = sha2::Sha256::new();
    h.update([1u8]);
    h.update(l);
    h.update(r);
    h.finalize().to_vec()
}

/// The largest power of two smaller than `n` (n > 1).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// RFC 6962 §2.1 Merkle tree hash of `leaves` (leaf hashes).
pub fn tree_hash(leaves: &[Vec<u8>]) -> Vec<u8> {
    match leaves.len() {
        0 => sha2::Sha256::digest([]).to_vec(),
        1 => leaves[0].clone(),
        n => {
            let k = split(n);
            node(&tree_hash(&leaves[..k]), &tree_hash(&leaves[k..]))
        }
    }
}

/// RFC 6962 §2.1.1 audit path of leaf `m` in `leaves`.
pub fn audit_path(m: usize, leaves: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let n = leaves.len();
    if n <= 1 {
        return Vec::new();
    }
    let k = split(n);
    if m < k {
        let mut path = audit_path(m, &leaves[..k]);
        path.push(tree_hash(&leaves[k..]));
        path
    } else {
        let mut path = audit_path(m - k, &leaves[k..]);
        path.push(tree_hash(&leaves[..k]));
        path
    }
}

impl RekorServer {
    /// An empty log on an ephemeral 127.0.0.1 port.
    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(State {
            entries: Vec::new(),
            index: BTreeMap::new(),
            checkpoint: String::new(),
            tamper: Tamper::None,
            pad: 0,
            requests: Vec::new(),
            signer: None,
        }));
        let server = {
            let state = state.clone();
            HttpServer::start(move |request| handle(&request, &state))
        };
        Self { server, state }
    }

    /// Its base URL, `http://127.0.0.1:P`.
    pub fn url(&self) -> String {
        format!("http://{}", self.server.host())
    }

    /// The index the next entry gets.
    pub fn next_index(&self) -> i64 {
        self.state.lock().unwrap().entries.len() as i64
    }

    /// Appends `blob` (signed by `sigstore` at [`RekorServer::next_index`]), indexed under
    /// `hash` (hex: the file's sha256, or another file's for a misleading index), and signs a new
    /// checkpoint. Returns its UUID.
    pub fn add(&self, sigstore: &Sigstore, blob: SignedBlob, hash: &str) -> String {
        let mut state = self.state.lock().unwrap();
        assert_eq!(
            blob.log_index,
            state.entries.len() as i64,
            "entries in order"
        );
        let uuid = hex(&leaf(&blob.body));
        state
            .index
            .entry(hash.to_owned())
            .or_default()
            .push(uuid.clone());
        state.entries.push(Stored {
            uuid: uuid.clone(),
            blob,
        });
        let leaves: Vec<Vec<u8>> = state.entries.iter().map(|e| leaf(&e.blob.body)).collect();
        state.checkpoint = sigstore.checkpoint(leaves.len() as u64, &tree_hash(&leaves));
        uuid
    }

    /// Accepts entries clients send (`POST /api/v1/log/entries`) from now on, signed with
    /// `sigstore`'s Rekor key (the one [`RekorServer::add`] is given).
    pub fn accept_entries(&self, sigstore: Arc<Sigstore>) {
        self.state.lock().unwrap().signer = Some(sigstore);
    }

    /// Spoils what is served from now on.
    pub fn tamper(&self, tamper: Tamper) {
        self.state.lock().unwrap().tamper = tamper;
    }

    /// Lists `uuid` under `hash` (hex) in the index, whether the log holds such an entry or not
    /// (a hostile or lagging index).
    pub fn index(&self, hash: &str, uuid: &str) {
        let mut state = self.state.lock().unwrap();
        state
            .index
            .entry(hash.to_owned())
            .or_default()
            .push(uuid.to_owned());
    }

    /// Adds `bytes` of padding (an extra field) to every entry served from now on.
    pub fn pad(&self, bytes: usize) {
        self.state.lock().unwrap().pad = bytes;
    }

    /// `METHOD target` of each request received so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn entry_reply(state: &State, uuid: &str) -> Option<Vec<u8>> {
    let m = state.entries.iter().position(|e| e.uuid == uuid)?;
    let leaves: Vec<Vec<u8>> = state.entries.iter().map(|e| leaf(&e.blob.body)).collect();
    let root = tree_hash(&leaves);
    let mut hashes: Vec<String> = audit_path(m, &leaves).iter().map(|h| hex(h)).collect();
    let mut checkpoint = state.checkpoint.clone();
    match state.tamper {
        Tamper::None => {}
        Tamper::ProofHash => {
            if let Some(first) = hashes.first_mut() {
                let flipped = if first.starts_with('0') { "1" } else { "0" };
                first.replace_range(0..1, flipped);
            }
        }
        Tamper::Checkpoint => {
            let b64 = base64(&root);
            let swapped = match b64.starts_with('A') {
                true => format!("B{}", &b64[1..]),
                false => format!("A{}", &b64[1..]),
            };
            checkpoint = checkpoint.replacen(&b64, &swapped, 1);
        }
    }
    let e = &state.entries[m].blob;
    let mut value = json!({ uuid: {
        "body": base64(&e.body),
        "integratedTime": e.integrated_time,
        "logID": e.log_id,
        "logIndex": e.log_index,
        "verification": {
            "inclusionProof": {
                "checkpoint": checkpoint,
                "hashes": hashes,
                "logIndex": m,
                "rootHash": hex(&root),
                "treeSize": leaves.len(),
            },
            "signedEntryTimestamp": base64(&e.set),
        },
    }});
    if state.pad > 0 {
        value[uuid]["padding"] = json!(" ".repeat(state.pad));
    }
    Some(serde_json::to_vec(&value).expect("JSON"))
}

/// What makes two `hashedrekord` 0.0.1 entries the same entry for Rekor: the hash, the
/// signature's bytes and the certificate's DER (read from the base64 of its PEM).
fn identity(entry: &serde_json::Value) -> Option<(String, String, Vec<u8>, Vec<u8>)> {
    let spec = &entry["spec"];
    let hash = &spec["data"]["hash"];
    let signature = crate::http::unbase64(spec["signature"]["content"].as_str()?)?;
    let pem = crate::http::unbase64(spec["signature"]["publicKey"]["content"].as_str()?)?;
    let pem = String::from_utf8(pem).ok()?;
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----"))
        .collect();
    Some((
        hash["algorithm"].as_str()?.to_owned(),
        hash["value"].as_str()?.to_ascii_lowercase(),
        signature,
        crate::http::unbase64(&body)?,
    ))
}

/// Rekor's search by proposed entries: the reply, or the status and message of a refusal.
fn search(state: &State, query: &[u8]) -> Result<Vec<u8>, (u16, &'static str)> {
    let query: serde_json::Value =
        serde_json::from_slice(query).map_err(|_| (400, "the query is not JSON"))?;
    let proposed = query["entries"].as_array().cloned().unwrap_or_default();
    if proposed.len() > 10 {
        return Err((422, "more than 10 queries"));
    }
    let mut found: Vec<u8> = b"[".to_vec();
    for p in &proposed {
        let wanted = identity(p).ok_or((400, "a proposed entry that is not a hashedrekord"))?;
        for stored in &state.entries {
            let body: serde_json::Value =
                serde_json::from_slice(&stored.blob.body).expect("the world's own body");
            if identity(&body).as_ref() == Some(&wanted)
                && let Some(reply) = entry_reply(state, &stored.uuid)
            {
                if found.len() > 1 {
                    found.push(b',');
                }
                found.extend(reply);
            }
        }
    }
    found.push(b']');
    Ok(found)
}

fn handle(request: &Incoming, state: &Mutex<State>) -> Outgoing {
    let reply = |status: u16, body: Vec<u8>| {
        Outgoing::new(status, body).with("Content-Type", "application/json")
    };
    state
        .lock()
        .unwrap()
        .requests
        .push(format!("{} {}", request.method, request.target));
    match (request.method.as_str(), request.target.as_str()) {
        ("POST", "/api/v1/log/entries/retrieve") => {
            match search(&state.lock().unwrap(), &request.body) {
                Ok(body) => reply(200, body),
                Err((status, message)) => reply(
                    status,
                    json!({ "message": message }).to_string().into_bytes(),
                ),
            }
        }
        ("POST", "/api/v1/log/entries") => create(&mut state.lock().unwrap(), &request.body),
        ("POST", "/api/v1/index/retrieve") => {
            let query: serde_json::Value =
                serde_json::from_slice(&request.body).unwrap_or_default();
            match query["hash"]
                .as_str()
                .and_then(|h| h.strip_prefix("sha256:"))
            {
                Some(hash) => {
                    let state = state.lock().unwrap();
                    let uuids = state.index.get(hash).cloned().unwrap_or_default();
                    reply(200, serde_json::to_vec(&uuids).expect("JSON"))
                }
                None => reply(400, br#"{"message":"bad query"}"#.to_vec()),
            }
        }
        ("GET", path) if path.starts_with("/api/v1/log/entries/") => {
            let uuid = &path["/api/v1/log/entries/".len()..];
            match entry_reply(&state.lock().unwrap(), uuid) {
                Some(body) => reply(200, body),
                None => reply(404, br#"{"message":"not found"}"#.to_vec()),
            }
        }
        _ => reply(404, br#"{"message":"not found"}"#.to_vec()),
    }
}

/// Rekor's refusal of a proposed entry.
fn refusal(status: u16, message: &str) -> Outgoing {
    let body = json!({"code": status, "message": message}).to_string();
    Outgoing::new(status, body).with("Content-Type", "application/json")
}

/// The SubjectPublicKeyInfo of a hashedrekord's `publicKey.content` (base64 of a PEM certificate
/// or public key).
fn signer_key(content: &str) -> Option<Vec<u8>> {
    let pem = String::from_utf8(crate::http::unbase64(content)?).ok()?;
    let label = pem.lines().next()?.trim().to_owned();
    let b64: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = crate::http::unbase64(&b64)?;
    match label.as_str() {
        "-----BEGIN CERTIFICATE-----" => {
            let (_, cert) = x509_parser::parse_x509_certificate(&der).ok()?;
            Some(cert.public_key().raw.to_vec())
        }
        "-----BEGIN PUBLIC KEY-----" => Some(der),
        _ => None,
    }
}

/// Why a proposed entry is refused: each answered with Rekor's own words for it (a 400's
/// `message`).
#[derive(Debug)]
enum Refused {
    Json(serde_json::Error),
    NotHashedrekord,
    Hash,
    NoKey,
    NotP256,
    SignatureEncoding,
    Signature,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Json(e) => write!(f, "invalid JSON: {e}"),
            Self::NotHashedrekord => {
                f.write_str("only hashedrekord 0.0.1 entries are accepted here")
            }
            Self::Hash => {
                f.write_str("validation failure: the hash is not a sha256 of 64 hex digits")
            }
            Self::NoKey => f.write_str("invalid public key: neither a certificate nor a key"),
            Self::NotP256 => f.write_str("invalid public key: not an ECDSA P-256 key"),
            Self::SignatureEncoding => f.write_str("invalid signature: not a DER ECDSA signature"),
            Self::Signature => f.write_str(
                "verifying signature: invalid signature when validating ASN.1 encoded signature",
            ),
        }
    }
}

/// The canonical body of a proposed hashedrekord whose signature verifies, or the refusal.
fn canonical(proposed: &[u8]) -> Result<Vec<u8>, Refused> {
    use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
    use p256::pkcs8::DecodePublicKey as _;
    let entry: serde_json::Value = serde_json::from_slice(proposed).map_err(Refused::Json)?;
    if entry["kind"] != "hashedrekord" || entry["apiVersion"] != "0.0.1" {
        return Err(Refused::NotHashedrekord);
    }
    let spec = &entry["spec"];
    let hash = spec["data"]["hash"]["value"].as_str().unwrap_or_default();
    let digest = (spec["data"]["hash"]["algorithm"] == "sha256" && hash.len() == 64)
        .then(|| {
            (0..32)
                .map(|i| u8::from_str_radix(&hash[2 * i..2 * i + 2], 16).ok())
                .collect::<Option<Vec<u8>>>()
        })
        .flatten()
        .ok_or(Refused::Hash)?;
    let signature = spec["signature"]["content"].as_str().unwrap_or_default();
    let key_b64 = spec["signature"]["publicKey"]["content"]
        .as_str()
        .unwrap_or_default();
    let spki = signer_key(key_b64).ok_or(Refused::NoKey)?;
    let key =
        p256::ecdsa::VerifyingKey::from_public_key_der(&spki).map_err(|_| Refused::NotP256)?;
    let sig = crate::http::unbase64(signature)
        .and_then(|s| p256::ecdsa::Signature::from_der(&s).ok())
        .ok_or(Refused::SignatureEncoding)?;
    key.verify_prehash(&digest, &sig)
        .map_err(|_| Refused::Signature)?;
    let body = json!({
        "apiVersion": "0.0.1",
        "kind": "hashedrekord",
        "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": hash.to_ascii_lowercase()}},
            "signature": {"content": signature, "publicKey": {"content": key_b64}},
        },
    });
    Ok(serde_json::to_vec(&body).expect("JSON"))
}

/// `createLogEntry`: the proposed entry checked, appended, its SET signed, answered with its
/// inclusion proof.
fn create(state: &mut State, proposed: &[u8]) -> Outgoing {
    let Some(sigstore) = state.signer.clone() else {
        return refusal(405, "this log accepts no entries");
    };
    let body = match canonical(proposed) {
        Ok(body) => body,
        Err(refused) => return refusal(400, &refused.to_string()),
    };
    let uuid = hex(&leaf(&body));
    let location = format!("/api/v1/log/entries/{uuid}");
    if state.entries.iter().any(|e| e.uuid == uuid) {
        let message =
            format!("An equivalent entry already exists in the transparency log with UUID {uuid}");
        return refusal(409, &message).with("Location", &location);
    }
    let index = state.entries.len() as i64;
    let integrated_time = crate::sigstore::now();
    let log_id = sigstore.rekor_log_id();
    // serde_json sorts object keys: compact output is the canonical JSON the SET signs.
    let payload = json!({
        "body": base64(&body),
        "integratedTime": integrated_time,
        "logID": log_id,
        "logIndex": index,
    });
    let set = sigstore.rekor_sign(&serde_json::to_vec(&payload).expect("JSON"));
    let hash: serde_json::Value = serde_json::from_slice(&body).expect("the body just made");
    let hash = hash["spec"]["data"]["hash"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    state.index.entry(hash).or_default().push(uuid.clone());
    state.entries.push(Stored {
        uuid: uuid.clone(),
        blob: SignedBlob {
            sig: Vec::new(),
            cert: Vec::new(),
            body,
            integrated_time,
            log_index: index,
            log_id,
            set,
        },
    });
    let leaves: Vec<Vec<u8>> = state.entries.iter().map(|e| leaf(&e.blob.body)).collect();
    state.checkpoint = sigstore.checkpoint(leaves.len() as u64, &tree_hash(&leaves));
    let reply = entry_reply(state, &uuid).expect("the entry just stored");
    Outgoing::new(201, reply)
        .with("Content-Type", "application/json")
        .with("Location", &location)
        .with("ETag", &uuid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_paths_lead_to_the_root() {
        for n in 1..12usize {
            let leaves: Vec<Vec<u8>> = (0..n).map(|i| leaf(&[i as u8])).collect();
            let root = tree_hash(&leaves);
            for m in 0..n {
                // Recompute the root from the path the RFC 9162 way.
                let (mut f, mut s) = (m, n - 1);
                let mut r = leaves[m].clone();
                for p in audit_path(m, &leaves) {
                    if f & 1 == 1 || f == s {
                        r = node(&p, &r);
                        while f & 1 == 0 && f != 0 {
                            f >>= 1;
                            s >>= 1;
                        }
                    } else {
                        r = node(&r, &p);
                    }
                    f >>= 1;
                    s >>= 1;
                }
                assert_eq!(r, root, "n={n} m={m}");
            }
        }
    }
}
