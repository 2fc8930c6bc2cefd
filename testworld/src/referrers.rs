//! Image signatures the cosign 3 way, for the world: `cosign sign` (3.0 and later, its default
//! `--new-bundle-format`) signs an in-toto statement whose subject is the image digest, with
//! predicate type `https://sigstore.dev/cosign/sign/v1`, as a DSSE envelope logged as a Rekor v1
//! `dsse` 0.0.1 entry (or, with [`DsseOptions::rekor_v2`], as cosign does when its signing
//! configuration names a Rekor v2 log: a `hashedrekord` 0.0.2 over the SHA-256 of the envelope's
//! pre-authentication encoding, Rekor v2 having no `dsse` kind, dated by an RFC 3161 timestamp
//! of the envelope's signature), puts the Sigstore bundle v0.3 as the one layer of an OCI 1.1 referrer
//! manifest (artifact type the bundle's media type, empty config, `subject` the image) pushed by
//! digest, and — on a registry without the Referrers API, such as Debian's docker-registry 2.8 —
//! lists it in the tag-schema fallback index `sha256-<hex>`.
//!
//! Written from the DSSE, in-toto and OCI specifications and cosign's observed output,
//! independently of cks-iso's reader. [`DsseOptions`] makes the bad ones the tests need.

use rcgen::SigningKey as _;
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::http::{base64, hex, request, sha256};
use crate::images::{OCI_INDEX, OCI_MANIFEST, push_blob, push_manifest};
use crate::rekor_v2::Authority;
use crate::sigstore::{SignOptions, Sigstore};

/// The artifact type and layer media type of a cosign 3 signature referrer.
pub const BUNDLE_V03: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// cosign's image signature predicate.
pub const COSIGN_SIGN: &str = "https://sigstore.dev/cosign/sign/v1";
/// The DSSE payload type of an in-toto statement.
pub const IN_TOTO: &str = "application/vnd.in-toto+json";
/// The empty config descriptor's media type and bytes.
const EMPTY: (&str, &[u8]) = ("application/vnd.oci.empty.v1+json", b"{}");

/// How to spoil a DSSE payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    /// Left as signed.
    None,
    /// Altered after it was signed and logged: the entry and signature are of the original.
    AfterLogging,
    /// Altered after it was signed, then logged so (a log that did not check the signature):
    /// only the signature is of the original.
    BeforeLogging,
}

/// How to sign, and how to spoil it.
#[derive(Debug, Clone)]
pub struct DsseOptions {
    /// The leaf's identity, issuer and the rest, as for `.sig` signatures.
    pub sign: SignOptions,
    /// The statement's subject digest instead of the one signed (a bundle for another image).
    pub subject: Option<String>,
    /// The statement's predicate type.
    pub predicate_type: String,
    /// What happens to the payload.
    pub tamper: Tamper,
    /// Log the envelope on the world's Rekor v2 log instead of its Rekor v1 (no SET, no
    /// integrated time: the timestamp dates it).
    pub rekor_v2: Option<OnRekorV2>,
}

/// How a DSSE envelope goes onto the Rekor v2 log, and how to spoil it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnRekorV2 {
    /// Which timestamp authority dates the envelope's signature.
    pub authority: Authority,
    /// The checkpoint is signed by a key that is not the log's (with the log's key hint).
    pub foreign_checkpoint_key: bool,
    /// The entry is the one logged for another envelope of the same signer (its PAE's digest
    /// and its signature): an entry copied from another bundle.
    pub other_envelope: bool,
}

impl Default for OnRekorV2 {
    fn default() -> Self {
        Self {
            authority: Authority::World,
            foreign_checkpoint_key: false,
            other_envelope: false,
        }
    }
}

impl Default for DsseOptions {
    fn default() -> Self {
        Self {
            sign: SignOptions::default(),
            subject: None,
            predicate_type: COSIGN_SIGN.into(),
            tamper: Tamper::None,
            rekor_v2: None,
        }
    }
}

fn digest_bytes(bytes: &[u8]) -> Vec<u8> {
    sha2::Sha256::digest(bytes).to_vec()
}

fn pem(der: &[u8]) -> String {
    let text = base64(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in text.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("ASCII"));
        out.push('\n');
    }
    out + "-----END CERTIFICATE-----\n"
}

/// DSSE's pre-authentication encoding.
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

impl Sigstore {
    /// A Sigstore bundle v0.3 (JSON) signing `digest` (`sha256:<hex>`) as `cosign sign` 3 does:
    /// the statement, its DSSE envelope signed by a fresh leaf, a Rekor v1 `dsse` 0.0.1 entry
    /// with its SET, and an inclusion proof in a tree of one with its checkpoint. With
    /// `opts.rekor_v2`, the envelope goes onto the world's Rekor v2 log instead, in the shape of
    /// the conformance suite's `rekor2-dsse-happy-path` bundle: a `hashedrekord` 0.0.2 over the
    /// SHA-256 of the PAE with its proof and checkpoint, and an RFC 3161 timestamp of the
    /// envelope's signature in `timestampVerificationData`.
    pub fn sign_dsse(&self, digest: &str, opts: &DsseOptions) -> Vec<u8> {
        let subject = opts.subject.as_deref().unwrap_or(digest);
        let statement = json!({
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"digest": {"sha256": subject.trim_start_matches("sha256:")}}],
            "predicateType": opts.predicate_type,
            "predicate": {},
        });
        let payload = serde_json::to_vec(&statement).expect("JSON");
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("leaf key");
        let issued = now() - 120 - opts.sign.integrated_after.max(0);
        let leaf = self.leaf(&key, &opts.sign, issued);
        let t = issued + opts.sign.integrated_after;
        let signature = key.sign(&pae(IN_TOTO, &payload)).expect("signature");
        // Still the same statement, one byte longer: only the bytes differ.
        let altered = [b"{ ".as_slice(), &payload[1..]].concat();
        let (logged, shipped) = match opts.tamper {
            Tamper::None => (&payload, &payload),
            Tamper::AfterLogging => (&payload, &altered),
            Tamper::BeforeLogging => (&altered, &altered),
        };
        if let Some(v2) = &opts.rekor_v2 {
            let (logged_pae, logged_sig) = match v2.other_envelope {
                false => (pae(IN_TOTO, logged), signature.clone()),
                true => {
                    let other = [payload.as_slice(), b"\n"].concat();
                    let pae = pae(IN_TOTO, &other);
                    let sig = key.sign(&pae).expect("signature");
                    (pae, sig)
                }
            };
            let (entry, index) = self.rekor_v2().append(
                &digest_bytes(&logged_pae),
                &logged_sig,
                &leaf,
                v2.foreign_checkpoint_key,
            );
            let stamp = self
                .rekor_v2()
                .timestamp(v2.authority, &signature, t, index);
            let bundle = json!({
                "mediaType": BUNDLE_V03,
                "verificationMaterial": {
                    "certificate": {"rawBytes": base64(&leaf)},
                    "tlogEntries": [entry],
                    "timestampVerificationData": stamp,
                },
                "dsseEnvelope": {
                    "payload": base64(shipped),
                    "payloadType": IN_TOTO,
                    "signatures": [{"sig": base64(&signature)}],
                },
            });
            return serde_json::to_vec_pretty(&bundle).expect("JSON");
        }
        self.dsse_on_rekor_v1(logged, shipped, &leaf, &signature, t, opts.sign.flip_set)
    }
    /// The bundle of [`Self::sign_dsse`] on the Rekor v1 log: the envelope of `logged` as a
    /// `dsse` 0.0.1 entry with its SET (its last byte flipped with `flip_set`) and an inclusion
    /// proof in a tree of one, shipping the envelope of `shipped`.
    fn dsse_on_rekor_v1(
        &self,
        logged: &[u8],
        shipped: &[u8],
        leaf: &[u8],
        signature: &[u8],
        t: i64,
        flip_set: bool,
    ) -> Vec<u8> {
        let envelope = json!({
            "payload": base64(logged),
            "payloadType": IN_TOTO,
            "signatures": [{"sig": base64(signature)}],
        });
        let body = json!({
            "apiVersion": "0.0.1",
            "kind": "dsse",
            "spec": {
                "envelopeHash": {
                    "algorithm": "sha256",
                    "value": hex(&digest_bytes(&serde_json::to_vec(&envelope).expect("JSON"))),
                },
                "payloadHash": {"algorithm": "sha256", "value": hex(&digest_bytes(logged))},
                "signatures": [{
                    "signature": base64(signature),
                    "verifier": base64(pem(leaf).as_bytes()),
                }],
            },
        });
        let body = serde_json::to_vec(&body).expect("JSON");
        let index = self.take_index();
        // serde_json sorts keys: compact output is the canonical form of these values.
        let entry = json!({
            "body": base64(&body),
            "integratedTime": t,
            "logID": self.rekor_log_id(),
            "logIndex": index,
        });
        let mut set = self.rekor_sign(&serde_json::to_vec(&entry).expect("JSON"));
        if flip_set {
            let last = set.len() - 1;
            set[last] ^= 0x01;
        }
        let mut leaf_input = vec![0u8];
        leaf_input.extend(&body);
        let root = digest_bytes(&leaf_input);
        let log_id: Vec<u8> = (0..self.rekor_log_id().len() / 2)
            .map(|i| u8::from_str_radix(&self.rekor_log_id()[2 * i..2 * i + 2], 16).expect("hex"))
            .collect();
        let bundle = json!({
            "mediaType": BUNDLE_V03,
            "verificationMaterial": {
                "certificate": {"rawBytes": base64(leaf)},
                "tlogEntries": [{
                    "logIndex": index.to_string(),
                    "logId": {"keyId": base64(&log_id)},
                    "kindVersion": {"kind": "dsse", "version": "0.0.1"},
                    "integratedTime": t.to_string(),
                    "inclusionPromise": {"signedEntryTimestamp": base64(&set)},
                    "inclusionProof": {
                        "logIndex": "0",
                        "rootHash": base64(&root),
                        "treeSize": "1",
                        "hashes": [],
                        "checkpoint": {"envelope": self.checkpoint(1, &root)},
                    },
                    "canonicalizedBody": base64(&body),
                }],
            },
            "dsseEnvelope": {
                "payload": base64(shipped),
                "payloadType": IN_TOTO,
                "signatures": [{"sig": base64(signature)}],
            },
        });
        serde_json::to_vec_pretty(&bundle).expect("JSON")
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A pushed referrer: its manifest's digest and the descriptor a referrers list names it by.
#[derive(Debug, Clone)]
pub struct Referrer {
    /// `sha256:<hex>` of the referrer manifest.
    pub digest: String,
    /// Its descriptor, with `artifactType` and annotations, as a referrers list holds it.
    pub descriptor: Value,
}

/// The promotion record registry.k8s.io's promoter attaches to every promoted digest
/// (kubernetes-sigs/promo-tools PR #1903; `docs/promotion-predicate.md`).
pub const PROMOTION_PREDICATE: &str = "https://k8s.io/promo-tools/promotion/v1";
/// An SPDX document as an in-toto predicate (`cosign attest --type spdxjson`).
pub const SPDX_PREDICATE: &str = "https://spdx.dev/Document";

/// What a referrer is: cosign 3's image signature, or one of the artifacts that sit beside it on
/// a registry.k8s.io image. promo-tools (PR #1903, `docs/image-promotion.md` "Provenance
/// generation") pushes its signed promotion record as cosign 3 does an attestation: a Sigstore
/// bundle v0.3 referrer whose DSSE statement has the promotion predicate, named by the
/// `dev.sigstore.bundle.predicateType` annotation; `cosign tree` of a promoted image lists SPDX,
/// OpenVEX, SLSA provenance and more the same way. An SBOM may also be attached as a plain
/// artifact (`oras attach --artifact-type application/spdx+json`): no bundle at all.
#[derive(Debug, Clone)]
pub struct ReferrerShape {
    /// The manifest's `artifactType` (and the list entry's).
    pub artifact_type: String,
    /// The one layer's media type.
    pub layer_media_type: String,
    /// The `dev.sigstore.bundle.predicateType` annotation; `None` leaves the Sigstore
    /// annotations out (a writer that never set them, a registry that drops them from lists).
    pub predicate_annotation: Option<String>,
    /// The size the layer's descriptor declares instead of the real one (a lying referrer).
    pub declared_layer_size: Option<u64>,
}

impl ReferrerShape {
    /// `cosign sign` 3's signature referrer.
    pub fn signature() -> Self {
        Self::attestation(COSIGN_SIGN)
    }

    /// A cosign 3 attestation (`cosign attest --new-bundle-format`, promo-tools' promotion
    /// record): a bundle v0.3 referrer annotated with its statement's `predicate`.
    pub fn attestation(predicate: &str) -> Self {
        Self {
            artifact_type: BUNDLE_V03.into(),
            layer_media_type: BUNDLE_V03.into(),
            predicate_annotation: Some(predicate.into()),
            declared_layer_size: None,
        }
    }

    /// The same without its Sigstore annotations: known only by its statement.
    pub fn unannotated(mut self) -> Self {
        self.predicate_annotation = None;
        self
    }

    /// An SPDX SBOM attached as a plain OCI artifact, as `oras attach` does.
    pub fn spdx_sbom() -> Self {
        Self {
            artifact_type: "application/spdx+json".into(),
            layer_media_type: "application/spdx+json".into(),
            predicate_annotation: None,
            declared_layer_size: None,
        }
    }
}

/// Pushes `bundle` as a cosign 3 signature referrer of `subject` (`sha256:<hex>`, a manifest or
/// index of `repository` at the registry `addr`): the empty config, the bundle layer, the
/// referrer manifest by digest; with `fallback`, also adds it to the `sha256-<hex>` index, as
/// cosign does on a registry without the Referrers API.
pub fn push_referrer(
    addr: &str,
    repository: &str,
    subject: &str,
    bundle: &[u8],
    fallback: bool,
) -> Referrer {
    push_referrer_as(
        addr,
        repository,
        subject,
        bundle,
        &ReferrerShape::signature(),
        fallback,
    )
}

/// [`push_referrer`] of a referrer shaped as `shape` says, its one layer `layer`.
pub fn push_referrer_as(
    addr: &str,
    repository: &str,
    subject: &str,
    layer_bytes: &[u8],
    shape: &ReferrerShape,
    fallback: bool,
) -> Referrer {
    let head = request(
        addr,
        "HEAD",
        &format!("/v2/{repository}/manifests/{subject}"),
        &[("Accept", &format!("{OCI_INDEX}, {OCI_MANIFEST}, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"))],
        &[],
    )
    .expect("HEAD the subject");
    assert_eq!(head.status, 200, "the subject {subject} of {repository}");
    let media = head.header("content-type").unwrap_or(OCI_INDEX).to_owned();
    let size: u64 = head
        .header("content-length")
        .and_then(|l| l.parse().ok())
        .expect("the subject's size");
    let config = sha256(EMPTY.1);
    let layer = sha256(layer_bytes);
    for (digest, bytes) in [(&config, EMPTY.1), (&layer, layer_bytes)] {
        push_blob(addr, repository, digest, bytes).expect("push a referrer blob");
    }
    let annotations = match &shape.predicate_annotation {
        Some(predicate) => json!({
            "org.opencontainers.image.created": "2026-01-01T00:00:00Z",
            "dev.sigstore.bundle.content": "dsse-envelope",
            "dev.sigstore.bundle.predicateType": predicate,
        }),
        None => json!({"org.opencontainers.image.created": "2026-01-01T00:00:00Z"}),
    };
    let artifact_type = shape.artifact_type.as_str();
    let layer_size = shape
        .declared_layer_size
        .unwrap_or(layer_bytes.len() as u64);
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": artifact_type,
        "config": {"mediaType": EMPTY.0, "artifactType": artifact_type, "digest": config, "size": 2},
        "layers": [{"mediaType": shape.layer_media_type, "digest": layer, "size": layer_size}],
        "subject": {"mediaType": media, "digest": subject, "size": size},
        "annotations": annotations,
    });
    let bytes = serde_json::to_vec(&manifest).expect("JSON");
    let digest = sha256(&bytes);
    push_manifest(addr, repository, &digest, OCI_MANIFEST, &bytes).expect("push the referrer");
    let descriptor = json!({
        "mediaType": OCI_MANIFEST,
        "digest": digest,
        "size": bytes.len(),
        "artifactType": artifact_type,
        "annotations": annotations,
    });
    let referrer = Referrer { digest, descriptor };
    if fallback {
        let tag = subject.replace(':', "-");
        let existing = request(
            addr,
            "GET",
            &format!("/v2/{repository}/manifests/{tag}"),
            &[("Accept", OCI_INDEX)],
            &[],
        )
        .expect("GET the fallback index");
        let mut listed: Vec<Value> = match existing.status {
            200 => serde_json::from_slice::<Value>(&existing.body).expect("an index")["manifests"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        listed.push(referrer.descriptor.clone());
        push_index(addr, repository, &tag, &listed);
    }
    referrer
}

/// Pushes an image index of `manifests` (referrer descriptors) as `tag`: a referrers list; its
/// digest.
pub fn push_index(addr: &str, repository: &str, tag: &str, manifests: &[Value]) -> String {
    let index = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests});
    let bytes = serde_json::to_vec(&index).expect("JSON");
    push_manifest(addr, repository, tag, OCI_INDEX, &bytes).expect("push a referrers list");
    sha256(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rekor_v2::tests::outline;
    use crate::rekor_v2::unbase64;
    use crate::tsa::tests::skeleton;

    fn paths(v: &Value) -> Vec<String> {
        let mut out = Vec::new();
        outline(v, "", &mut out);
        out.sort();
        out
    }

    fn body(bundle: &Value) -> Value {
        let text = bundle["verificationMaterial"]["tlogEntries"][0]["canonicalizedBody"]
            .as_str()
            .unwrap();
        serde_json::from_slice(&unbase64(text)).unwrap()
    }

    fn field(v: &Value, path: &[&str]) -> Vec<u8> {
        unbase64(path.iter().fold(v, |v, k| &v[*k]).as_str().unwrap())
    }

    #[test]
    fn a_rekor_v2_dsse_bundle_has_the_shape_of_the_conformance_suites() {
        let real: Value = serde_json::from_slice(
            &std::fs::read(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../tests/sigstore-conformance/bundle-verify/rekor2-dsse-happy-path/bundle.sigstore.json"
            ))
            .unwrap(),
        )
        .unwrap();
        let sigstore = Sigstore::generate();
        let opts = DsseOptions {
            rekor_v2: Some(OnRekorV2::default()),
            ..DsseOptions::default()
        };
        // A second entry, so that its inclusion proof has a hash, as the real one has.
        sigstore.sign_dsse(&format!("sha256:{}", "1".repeat(64)), &opts);
        let ours: Value = serde_json::from_slice(
            &sigstore.sign_dsse(&format!("sha256:{}", "2".repeat(64)), &opts),
        )
        .unwrap();
        // Field for field: the bundle, and the entry's body.
        assert_eq!(paths(&real), paths(&ours));
        assert_eq!(paths(&body(&real)), paths(&body(&ours)));
        for bundle in [&real, &ours] {
            let entry = &bundle["verificationMaterial"]["tlogEntries"][0];
            assert_eq!(
                entry["kindVersion"],
                json!({"kind": "hashedrekord", "version": "0.0.2"})
            );
            // The entry logs the SHA-256 of the envelope's PAE, its signature and the leaf.
            let env = &bundle["dsseEnvelope"];
            let signed = pae(
                env["payloadType"].as_str().unwrap(),
                &field(env, &["payload"]),
            );
            let b = body(bundle);
            let spec = &b["spec"]["hashedRekordV002"];
            assert_eq!(field(spec, &["data", "digest"]), digest_bytes(&signed));
            let signature = field(&env["signatures"][0], &["sig"]);
            assert_eq!(field(spec, &["signature", "content"]), signature);
            assert_eq!(
                field(
                    spec,
                    &["signature", "verifier", "x509Certificate", "rawBytes"]
                ),
                field(
                    &bundle["verificationMaterial"],
                    &["certificate", "rawBytes"]
                )
            );
            // The timestamp's imprint is the SHA-256 of the envelope's signature.
            let stamp = field(
                &bundle["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"]
                    [0],
                &["signedTimestamp"],
            );
            let imprint = digest_bytes(&signature);
            assert!(stamp.windows(32).any(|w| w == imprint.as_slice()));
        }
        let stamp = |v: &Value| {
            let mut out = Vec::new();
            let der = field(
                &v["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"][0],
                &["signedTimestamp"],
            );
            skeleton(&der, 0, &mut out);
            out
        };
        // The same TimeStampResp, but for the TSTInfo's nonce: RFC 3161 has one only when the
        // request asked, and the client that made the suite's bundle did not; cosign does.
        let mut ours = stamp(&ours);
        let accuracy = ours
            .windows(3)
            .position(|w| w == ["8:30", "8:02", "8:a0"])
            .expect("accuracy, nonce, TSA name");
        ours.remove(accuracy + 1);
        assert_eq!(stamp(&real), ours);
    }
}
