//! A Rekor v2 log for the world, and the Sigstore bundles a publisher ships beside files signed
//! onto it (`<file>.sigstore.json`, as `cosign sign-blob --bundle` writes them when its signing
//! configuration names a Rekor v2 log and a timestamp authority).
//!
//! Rekor v2 has no search API: an entry is handed back to the signer once, with its inclusion
//! proof and a checkpoint, and the bundle is all a verifier ever sees. So this log is no server:
//! an RFC 6962 tree in memory, its checkpoints signed notes by an Ed25519 key whose log id (and
//! note key hint) is the C2SP signed-note key id of the log's name and key, and the entries
//! `hashedrekord` 0.0.2 bodies. The signing time comes from the world's [`Tsa`]: the log vouches
//! for none. Its key and the authority are in the world's `trusted_root.json`.
//!
//! Written from the specifications (protobuf-specs `Bundle` and `TrustedRoot`, Rekor v2's
//! `hashedrekord` 0.0.2, C2SP signed notes, RFC 6962), and checked against the shape of the
//! conformance suite's Rekor v2 bundles kept under `tests/` (the tests below). [`BundleOptions`]
//! makes the bad bundles the tests need.

use std::sync::Mutex;

use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256, PKCS_ED25519, PublicKeyData, SigningKey};
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::http::base64;
use crate::rekor::{audit_path, tree_hash};
use crate::sigstore::{SignOptions, Sigstore};
use crate::tsa::Tsa;
use crate::world::{World, binary_signer};

/// The world's Rekor v2 log's name: its checkpoints' origin and its key's name.
pub const ORIGIN: &str = "log2026-1.rekor.world.invalid";

/// How to sign onto the log, and how to spoil the bundle.
#[derive(Debug, Clone)]
pub struct BundleOptions {
    /// The leaf's identity and issuer, and the certificate's own spoilers.
    pub signer: SignOptions,
    /// Sign these bytes instead of the file's (a bundle copied from another file).
    pub other_file: Option<Vec<u8>>,
    /// Which timestamp authority dates the signature.
    pub authority: Authority,
    /// The checkpoint is signed by a key that is not the log's (with the log's key hint).
    pub foreign_checkpoint_key: bool,
    /// Leave the timestamp out.
    pub no_timestamp: bool,
}

impl Default for BundleOptions {
    fn default() -> Self {
        Self {
            signer: binary_signer(),
            other_file: None,
            authority: Authority::World,
            foreign_checkpoint_key: false,
            no_timestamp: false,
        }
    }
}

/// A timestamp authority of the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authority {
    /// The one the trusted root names.
    World,
    /// One the trusted root does not name.
    Rogue,
    /// One the trusted root names too, whose certificate's extended key usage is not critical.
    Lax,
}

/// The log: its key, a stranger's key, the leaves so far, and the timestamp authorities.
pub struct RekorV2 {
    key: KeyPair,
    stranger: KeyPair,
    leaves: Mutex<Vec<Vec<u8>>>,
    tsa: Tsa,
    rogue_tsa: Tsa,
    lax_tsa: Tsa,
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    sha2::Sha256::digest(bytes).to_vec()
}

/// Standard base64 decoding, for the tests' reading of real bundles.
#[cfg(test)]
pub(crate) fn unbase64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c:?}"),
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &d)| n | u32::from(d) << (18 - 6 * i));
        out.extend(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

impl RekorV2 {
    /// Fresh keys, an empty tree, a timestamp authority (and one the root does not name).
    pub fn generate() -> Self {
        Self {
            key: KeyPair::generate_for(&PKCS_ED25519).expect("Ed25519 key"),
            stranger: KeyPair::generate_for(&PKCS_ED25519).expect("Ed25519 key"),
            leaves: Mutex::new(Vec::new()),
            tsa: Tsa::generate("timestamp", false),
            rogue_tsa: Tsa::generate("rogue-timestamp", false),
            lax_tsa: Tsa::generate("lax-timestamp", true),
        }
    }

    /// The log id: the signed-note key id of [`ORIGIN`] and the log's Ed25519 key (SHA-256 of
    /// the name, a newline, the signature type 0x01 and the 32 key bytes).
    pub fn log_id(&self) -> Vec<u8> {
        let mut id = format!("{ORIGIN}\n").into_bytes();
        id.push(0x01);
        id.extend(self.key.der_bytes());
        sha256(&id)
    }

    /// Its `tlogs` entry of a trusted root.
    pub fn root_entry(&self) -> Value {
        json!({
            "baseUrl": format!("http://{ORIGIN}"),
            "hashAlgorithm": "SHA2_256",
            "publicKey": {
                "rawBytes": base64(&self.key.subject_public_key_info()),
                "keyDetails": "PKIX_ED25519",
                "validFor": {"start": "2021-01-01T00:00:00Z"},
            },
            "logId": {"keyId": base64(&self.log_id())},
        })
    }

    /// The trusted root's `timestampAuthorities` entries: the world's, then the lax one.
    pub fn tsa_entries(&self) -> Vec<Value> {
        vec![self.tsa.root_entry(), self.lax_tsa.root_entry()]
    }

    /// The signed note of a tree of `size` with `root`: origin, size, base64 root, a blank line,
    /// `— <origin> <base64(key hint ‖ Ed25519 signature)>`.
    fn checkpoint(&self, size: usize, root: &[u8], foreign: bool) -> String {
        let note = format!("{ORIGIN}\n{size}\n{}\n", base64(root));
        let key = if foreign { &self.stranger } else { &self.key };
        let mut signed = self.log_id()[..4].to_vec();
        signed.extend(key.sign(note.as_bytes()).expect("checkpoint signature"));
        format!("{note}\n\u{2014} {ORIGIN} {}\n", base64(&signed))
    }

    /// Appends the `hashedrekord` 0.0.2 of `digest` (sha256 of what was signed: a file, or a
    /// DSSE envelope's PAE) with `signature` by the certificate `leaf` to the tree: the bundle's
    /// `tlogEntries[0]`, with the inclusion proof and checkpoint of the tree then (signed by a
    /// stranger's key under the log's hint with `foreign_checkpoint_key`), and the entry's index.
    pub fn append(
        &self,
        digest: &[u8],
        signature: &[u8],
        leaf: &[u8],
        foreign_checkpoint_key: bool,
    ) -> (Value, usize) {
        let body = json!({
            "apiVersion": "0.0.2",
            "kind": "hashedrekord",
            "spec": {"hashedRekordV002": {
                "data": {"algorithm": "SHA2_256", "digest": base64(digest)},
                "signature": {
                    "content": base64(signature),
                    "verifier": {
                        "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                        "x509Certificate": {"rawBytes": base64(leaf)},
                    },
                },
            }},
        });
        // serde_json sorts object keys: compact output is the JCS form of these ASCII values.
        let body = serde_json::to_vec(&body).expect("JSON");
        let mut leaves = self.leaves.lock().unwrap();
        let mut leaf_hash = vec![0u8];
        leaf_hash.extend(&body);
        leaves.push(sha256(&leaf_hash));
        let index = leaves.len() - 1;
        let root = tree_hash(&leaves);
        let hashes: Vec<String> = audit_path(index, &leaves)
            .iter()
            .map(|h| base64(h))
            .collect();
        let checkpoint = self.checkpoint(leaves.len(), &root, foreign_checkpoint_key);
        let size = leaves.len();
        drop(leaves);
        let entry = json!({
            "logIndex": index.to_string(),
            "logId": {"keyId": base64(&self.log_id())},
            "kindVersion": {"kind": "hashedrekord", "version": "0.0.2"},
            "inclusionProof": {
                "logIndex": index.to_string(),
                "rootHash": base64(&root),
                "treeSize": size.to_string(),
                "hashes": hashes,
                "checkpoint": {"envelope": checkpoint},
            },
            "canonicalizedBody": base64(&body),
        });
        (entry, index)
    }

    /// The bundle's `timestampVerificationData`: one RFC 3161 timestamp by `authority` of
    /// `signature` at `t`, its serial drawn from the entry's `index`.
    pub fn timestamp(&self, authority: Authority, signature: &[u8], t: i64, index: usize) -> Value {
        let tsa = match authority {
            Authority::World => &self.tsa,
            Authority::Rogue => &self.rogue_tsa,
            Authority::Lax => &self.lax_tsa,
        };
        let stamp = tsa.timestamp(signature, t, 0x7157_0000 + index as u64, 0x5eed);
        json!({"rfc3161Timestamps": [{"signedTimestamp": base64(&stamp)}]})
    }

    /// Signs `file` as `cosign sign-blob --bundle` does against a Rekor v2 log: a Fulcio-like
    /// leaf from `sigstore`, its signature, the entry appended (proof and checkpoint of the
    /// tree then), an RFC 3161 timestamp of the signature; the bundle v0.3's JSON.
    pub fn sign(&self, sigstore: &Sigstore, file: &[u8], opts: &BundleOptions) -> Vec<u8> {
        let signed = opts.other_file.as_deref().unwrap_or(file);
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("leaf key");
        let issued = crate::sigstore::now() - 120;
        let leaf = sigstore.leaf(&key, &opts.signer, issued);
        let signature = key.sign(signed).expect("signature");
        let digest = sha256(signed);
        let (entry, index) = self.append(&digest, &signature, &leaf, opts.foreign_checkpoint_key);
        let mut material = json!({
            "certificate": {"rawBytes": base64(&leaf)},
            "tlogEntries": [entry],
        });
        if !opts.no_timestamp {
            material["timestampVerificationData"] =
                self.timestamp(opts.authority, &signature, issued + 1, index);
        }
        let bundle = json!({
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": material,
            "messageSignature": {
                "messageDigest": {"algorithm": "SHA2_256", "digest": base64(&digest)},
                "signature": base64(&signature),
            },
        });
        serde_json::to_vec_pretty(&bundle).expect("JSON")
    }
}

/// The dl.k8s.io paths (host-prefixed) of the world's Kubernetes binaries, both arches.
pub fn kubernetes_binaries(world: &World) -> Vec<String> {
    let mut paths = Vec::new();
    for arch in ["amd64", "arm64"] {
        for bin in ["kubeadm", "kubectl", "kubelet"] {
            paths.push(format!(
                "dl.k8s.io/release/v{}/bin/linux/{arch}/{bin}",
                world.kubernetes()
            ));
        }
    }
    paths
}

/// Signs the file served at `path` onto the world's Rekor v2 log with `opts` and serves the
/// bundle beside it as `<path>.sigstore.json`; with `drop_pair`, the `.sig` and `.cert` beside
/// it answer 404 from then on (a release signed with cosign 3 alone).
pub fn publish_bundle(world: &World, path: &str, opts: &BundleOptions, drop_pair: bool) {
    let upstream = world.upstream();
    let file = upstream
        .take(path)
        .unwrap_or_else(|| panic!("the world serves no {path}"));
    upstream.put(path, file.body.clone(), file.content_type);
    let bundle = world
        .sigstore()
        .rekor_v2()
        .sign(world.sigstore(), &file.body, opts);
    upstream.put(&format!("{path}.sigstore.json"), bundle, "application/json");
    if drop_pair {
        upstream.take(&format!("{path}.sig"));
        upstream.take(&format!("{path}.cert"));
    }
}

/// [`publish_bundle`] for every Kubernetes binary of the world's release: the upstream option
/// of a Kubernetes version whose binaries are signed onto Rekor v2.
pub fn publish_bundles(world: &World, opts: &BundleOptions, drop_pair: bool) {
    for path in kubernetes_binaries(world) {
        publish_bundle(world, &path, opts, drop_pair);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every key path of `v` with its JSON type, `a.b[].c: string`.
    pub(crate) fn outline(v: &Value, at: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    outline(v, &format!("{at}.{k}"), out);
                }
            }
            Value::Array(items) => {
                for item in items.iter().take(1) {
                    outline(item, &format!("{at}[]"), out);
                }
            }
            Value::String(_) => out.push(format!("{at}: string")),
            other => out.push(format!("{at}: {other}")),
        }
    }

    #[test]
    fn a_bundle_has_the_shape_of_a_real_rekor_v2_bundle() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/sigstore-conformance/bundle-verify/rekor2-happy-path"
        );
        let read = |name: &str| -> Value {
            serde_json::from_slice(&std::fs::read(format!("{dir}/{name}")).unwrap()).unwrap()
        };
        let real = read("bundle.sigstore.json");
        let sigstore = Sigstore::generate();
        // A second entry, so that its inclusion proof has a hash, as the real one has.
        sigstore
            .rekor_v2()
            .sign(&sigstore, b"another file", &BundleOptions::default());
        let ours: Value = serde_json::from_slice(&sigstore.rekor_v2().sign(
            &sigstore,
            b"a file",
            &BundleOptions::default(),
        ))
        .unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        outline(&real, "", &mut a);
        outline(&ours, "", &mut b);
        a.sort();
        b.sort();
        assert_eq!(a, b);
        // The entry bodies alike, key for key.
        let body = |v: &Value| -> Value {
            let text = v["verificationMaterial"]["tlogEntries"][0]["canonicalizedBody"]
                .as_str()
                .unwrap();
            serde_json::from_slice(&unbase64(text)).unwrap()
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        outline(&body(&real), "", &mut a);
        outline(&body(&ours), "", &mut b);
        assert_eq!(a, b);
        // The log's trusted-root entry alike, and its id is the note key id of its name.
        let root = read("trusted_root.json");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        outline(&root["tlogs"][1], "", &mut a);
        outline(&sigstore.rekor_v2().root_entry(), "", &mut b);
        assert_eq!(a, b);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        outline(&root["timestampAuthorities"][0], "", &mut a);
        outline(&sigstore.rekor_v2().tsa_entries()[0], "", &mut b);
        assert_eq!(a, b);
        let envelope = ours["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]
            ["checkpoint"]["envelope"]
            .as_str()
            .unwrap();
        let hint = envelope.rsplit(' ').next().unwrap().trim_end();
        assert_eq!(&unbase64(hint)[..4], &sigstore.rekor_v2().log_id()[..4]);
    }
}
