//! Reading and writing a Sigstore bundle (protobuf-specs `Bundle`, JSON form) into [`Evidence`]: the versions
//! cks-iso understands (0.1 to 0.3), a Fulcio certificate (or an older bundle's chain, without
//! its root), one log entry with its inclusion proof (a `hashedrekord` 0.0.1 of Rekor v1 with its
//! SET, or a `hashedrekord` 0.0.2 of Rekor v2 with the RFC 3161 timestamps that date it), and a
//! SHA-256 message signature; or a DSSE envelope with one signature (see [`crate::dsse`]), logged
//! as a Rekor v1 `dsse` 0.0.1 or `intoto` 0.0.2, or a Rekor v2 `hashedrekord` 0.0.2 of its PAE. A bundle is handed in by users (`verify-bundle`) and read from ISOs
//! (`verify --signatures`), so every refusal is a [`BundleError`] naming the field, never a panic.

use serde_json::Value;

use serde_json::json;

use super::{BUNDLE_MEDIA_TYPE, Entry, EntryVersion, Evidence, Proof, b64_encode};

use crate::dsse::{Envelope, Logged};
use crate::verify::b64;
use crate::x509::Cert;

/// The bundle media types read: the versions this reader understands, in both spellings of
/// 0.3; any other version is refused, not guessed at.
pub const BUNDLE_MEDIA_TYPES: &[&str] = &[
    "application/vnd.dev.sigstore.bundle+json;version=0.1",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
    "application/vnd.dev.sigstore.bundle+json;version=0.3",
    BUNDLE_MEDIA_TYPE,
];

/// The most a signature's bundle may weigh where cks-iso fetches or reads one (a binary's
/// published bundle, a cosign 3 referrer's, an ISO's `signatures/binaries/`). Real bundles weigh
/// 4–12 KiB (a Fulcio leaf, a proof of a few dozen hashes, a checkpoint, a timestamp or two; the
/// largest of the Sigstore conformance suite, 11.7 KiB); cosign's own bound on an attachment,
/// 128 MiB (`COSIGN_MAX_ATTACHMENT_SIZE`), is for any attestation, not a signature. 256 KiB is
/// twenty times the largest real one, and holds one carrying a certificate at
/// [`MAX_CERT_SIZE`](crate::MAX_CERT_SIZE), 32 timestamps and a long checkpoint.
pub const MAX_BUNDLE_SIZE: usize = 256 * 1024;

/// The most RFC 3161 timestamps a bundle may carry: sigstore-go's `MaxAllowedTimestamps`
/// (nothing signs the list, so anyone on the way can grow it; each one is parsed and verified).
pub const MAX_TIMESTAMPS: usize = 32;

/// Why a bundle is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    Json(String),
    /// A field is missing, or not of its type.
    #[error("no {field}")]
    Missing {
        /// The field.
        field: &'static str,
    },
    /// A bytes field is not base64.
    #[error("{field} is not base64")]
    NotBase64 {
        /// The field.
        field: &'static str,
    },
    /// A hash field is not the 32 bytes of a SHA-256.
    #[error("{field} is {len} bytes long, not the 32 of a SHA-256")]
    HashLength {
        /// The field.
        field: &'static str,
        /// Its length.
        len: usize,
    },
    /// An index or size is negative.
    #[error("{field} is negative ({value})")]
    Negative {
        /// The field.
        field: &'static str,
        /// Its value.
        value: i64,
    },
    /// A bundle version cks-iso does not read.
    #[error("media type {0:?} is not a Sigstore bundle version cks-iso reads (0.1, 0.2, 0.3)")]
    MediaType(String),
    /// A certificate of the chain does not parse.
    #[error("a chain certificate: {0}")]
    ChainCertificate(String),
    /// The chain carries a root: roots come from the trusted root alone.
    #[error("the certificate chain holds a root (self-signed) certificate")]
    RootInChain,
    /// Not exactly one transparency log entry.
    #[error("{0} tlog entries, expected one")]
    Entries(usize),
    /// An entry of a kind not read for this content.
    #[error("the tlog entry is a {kind} {version}, not {expected}")]
    EntryKind {
        /// Its `kindVersion.kind`.
        kind: String,
        /// Its `kindVersion.version`.
        version: String,
        /// What the bundle's content may be logged as.
        expected: &'static str,
    },
    /// Neither a message signature nor a DSSE envelope, or both.
    #[error("the bundle holds {0}, expected a messageSignature or a dsseEnvelope")]
    Content(&'static str),
    /// A DSSE envelope with other than one signature (a Sigstore bundle's has exactly one).
    #[error("the DSSE envelope has {0} signatures, expected one")]
    EnvelopeSignatures(usize),
    /// A message digest other than SHA-256.
    #[error("the message digest is not SHA2_256")]
    DigestAlgorithm,
    /// More of something than any real bundle holds, and than is read.
    #[error("{field} holds {count} entries, more than the {max} read")]
    TooMany {
        /// The field.
        field: &'static str,
        /// How many it holds.
        count: usize,
        /// The most read.
        max: usize,
    },
}

impl BundleError {
    /// The field refused, when one is to blame.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Self::Missing { field }
            | Self::NotBase64 { field }
            | Self::HashLength { field, .. }
            | Self::Negative { field, .. }
            | Self::TooMany { field, .. } => Some(field),
            Self::MediaType(_) => Some("mediaType"),
            Self::ChainCertificate(_) | Self::RootInChain => Some("x509CertificateChain"),
            Self::Entries(_) => Some("tlogEntries"),
            Self::EntryKind { .. } => Some("kindVersion"),
            Self::Content(_) => Some("content"),
            Self::EnvelopeSignatures(_) => Some("dsseEnvelope.signatures"),
            Self::DigestAlgorithm => Some("messageDigest.algorithm"),
            Self::Json(_) => None,
        }
    }
}

fn text(v: &Value, field: &'static str) -> Result<String, BundleError> {
    v.as_str()
        .map(str::to_owned)
        .ok_or(BundleError::Missing { field })
}

/// A bytes field: standard base64, line breaks allowed inside it (as Go's and Python's
/// decoders, which Sigstore's own clients use, allow them; `base64` tools wrap their output).
fn bytes(v: &Value, field: &'static str) -> Result<Vec<u8>, BundleError> {
    let mut text = text(v, field)?;
    text.retain(|c| c != '\n' && c != '\r');
    b64(&text).ok_or(BundleError::NotBase64 { field })
}

/// A number, as protobuf's JSON writes int64 (a string) or as a plain number.
fn number(v: &Value, field: &'static str) -> Result<i64, BundleError> {
    v.as_str()
        .and_then(|t| t.parse::<i64>().ok())
        .or_else(|| v.as_i64())
        .ok_or(BundleError::Missing { field })
}

fn non_negative(v: &Value, field: &'static str) -> Result<i64, BundleError> {
    match number(v, field)? {
        value if value < 0 => Err(BundleError::Negative { field, value }),
        value => Ok(value),
    }
}

fn hash32(v: &Value, field: &'static str) -> Result<Vec<u8>, BundleError> {
    let hash = bytes(v, field)?;
    match hash.len() {
        32 => Ok(hash),
        len => Err(BundleError::HashLength { field, len }),
    }
}

/// The leaf: `certificate`, or the first of an older bundle's chain (which must hold no root).
fn leaf(vm: &Value) -> Result<Vec<u8>, BundleError> {
    if vm["certificate"]["rawBytes"].is_string() {
        return bytes(&vm["certificate"]["rawBytes"], "certificate");
    }
    let chain = vm["x509CertificateChain"]["certificates"]
        .as_array()
        .ok_or(BundleError::Missing {
            field: "certificate",
        })?;
    let certs = chain
        .iter()
        .map(|c| bytes(&c["rawBytes"], "certificate"))
        .collect::<Result<Vec<_>, _>>()?;
    for der in &certs {
        let cert = Cert::parse(der).map_err(|e| BundleError::ChainCertificate(e.into()))?;
        if cert.issuer == cert.subject {
            return Err(BundleError::RootInChain);
        }
    }
    certs.into_iter().next().ok_or(BundleError::Missing {
        field: "certificate",
    })
}

impl Evidence {
    /// Reads a bundle (v0.1 to v0.3, a certificate or a chain without root, one tlog entry
    /// with an inclusion proof; its checkpoint may be missing in older bundles, which the
    /// checkpoint check then refuses).
    pub fn from_bundle(input: &[u8]) -> Result<Self, BundleError> {
        let v: Value =
            serde_json::from_slice(input).map_err(|e| BundleError::Json(e.to_string()))?;
        let media = text(&v["mediaType"], "mediaType")?;
        if !BUNDLE_MEDIA_TYPES.contains(&media.as_str()) {
            return Err(BundleError::MediaType(media));
        }
        let vm = &v["verificationMaterial"];
        let leaf = leaf(vm)?;
        let entries = vm["tlogEntries"].as_array().ok_or(BundleError::Missing {
            field: "tlogEntries",
        })?;
        let [e] = entries.as_slice() else {
            return Err(BundleError::Entries(entries.len()));
        };
        let content = match (v.get("messageSignature"), v.get("dsseEnvelope")) {
            (Some(ms), None) => Content::Message(ms),
            (None, Some(env)) => Content::Envelope(env),
            (None, None) => return Err(BundleError::Content("neither")),
            (Some(_), Some(_)) => return Err(BundleError::Content("both")),
        };
        let (version, logged) = entry_version(&content, e)?;
        let log_index = non_negative(&e["logIndex"], "logIndex")?;
        let p = &e["inclusionProof"];
        if p.is_null() {
            return Err(BundleError::Missing {
                field: "inclusionProof",
            });
        }
        let (digest, signature, envelope) = signed(content, logged)?;
        // Rekor v2 signs no entry timestamp and integrates at no time it vouches for: both are
        // left out, and the timestamps date the signature instead.
        let (integrated_time, set) = match version {
            EntryVersion::V001 => (
                number(&e["integratedTime"], "integratedTime")?,
                bytes(
                    &e["inclusionPromise"]["signedEntryTimestamp"],
                    "signedEntryTimestamp",
                )?,
            ),
            EntryVersion::V002 => (0, Vec::new()),
        };
        let timestamps = timestamps(vm)?;
        Ok(Self {
            version,
            timestamps,
            envelope,
            digest,
            signature,
            leaf,
            body: text(&e["canonicalizedBody"], "canonicalizedBody")?,
            integrated_time,
            log_id: bytes(&e["logId"]["keyId"], "logId")?,
            log_index,
            set,
            proof: proof(p)?,
        })
    }
}

/// The entry's kind and version, which must fit what the bundle holds: its Rekor API version,
/// and for an envelope, what the log recorded of it.
fn entry_version(
    content: &Content,
    e: &Value,
) -> Result<(EntryVersion, Option<Logged>), BundleError> {
    let kind_version = (
        e["kindVersion"]["kind"].as_str().unwrap_or_default(),
        e["kindVersion"]["version"].as_str().unwrap_or_default(),
    );
    let entry_kind = |expected| BundleError::EntryKind {
        kind: kind_version.0.to_owned(),
        version: kind_version.1.to_owned(),
        expected,
    };
    Ok(match (content, kind_version) {
        (Content::Message(_), ("hashedrekord", "0.0.1")) => (EntryVersion::V001, None),
        (Content::Message(_), ("hashedrekord", "0.0.2")) => (EntryVersion::V002, None),
        (Content::Message(_), _) => return Err(entry_kind("a hashedrekord 0.0.1 or 0.0.2")),
        (Content::Envelope(_), ("dsse", "0.0.1")) => (EntryVersion::V001, Some(Logged::Dsse)),
        (Content::Envelope(_), ("intoto", "0.0.2")) => (EntryVersion::V001, Some(Logged::Intoto)),
        (Content::Envelope(_), ("hashedrekord", "0.0.2")) => {
            (EntryVersion::V002, Some(Logged::HashedRekord))
        }
        (Content::Envelope(_), _) => {
            return Err(entry_kind(
                "a dsse 0.0.1 or intoto 0.0.2 (Rekor v1) or a hashedrekord 0.0.2 (Rekor v2; \
                 Rekor v2 logs no dsse entries)",
            ));
        }
    })
}

/// What a bundle's content gives: the message digest (empty for an envelope), the signature
/// and the envelope.
type Signed = (Vec<u8>, Vec<u8>, Option<Envelope>);

/// A message signature's digest and signature, or an envelope's signature and the envelope.
fn signed(content: Content, logged: Option<Logged>) -> Result<Signed, BundleError> {
    Ok(match content {
        Content::Message(ms) => {
            if ms["messageDigest"]["algorithm"] != "SHA2_256" {
                return Err(BundleError::DigestAlgorithm);
            }
            (
                bytes(&ms["messageDigest"]["digest"], "messageDigest")?,
                bytes(&ms["signature"], "signature")?,
                None,
            )
        }
        Content::Envelope(env) => {
            let (signature, envelope) = dsse(env, logged.expect("an envelope's kind"))?;
            (Vec::new(), signature, Some(envelope))
        }
    })
}

/// The RFC 3161 timestamps of the verification material, at most [`MAX_TIMESTAMPS`].
fn timestamps(vm: &Value) -> Result<Vec<Vec<u8>>, BundleError> {
    Ok(
        match &vm["timestampVerificationData"]["rfc3161Timestamps"] {
            Value::Null => Vec::new(),
            Value::Array(list) if list.len() > MAX_TIMESTAMPS => {
                return Err(BundleError::TooMany {
                    field: "rfc3161Timestamps",
                    count: list.len(),
                    max: MAX_TIMESTAMPS,
                });
            }
            Value::Array(list) => list
                .iter()
                .map(|t| bytes(&t["signedTimestamp"], "signedTimestamp"))
                .collect::<Result<_, _>>()?,
            _ => {
                return Err(BundleError::Missing {
                    field: "rfc3161Timestamps",
                });
            }
        },
    )
}

/// The entry's inclusion proof.
fn proof(p: &Value) -> Result<Proof, BundleError> {
    Ok(Proof {
        log_index: non_negative(&p["logIndex"], "inclusionProof.logIndex")?,
        root_hash: hash32(&p["rootHash"], "rootHash")?,
        tree_size: non_negative(&p["treeSize"], "treeSize")?,
        hashes: p["hashes"]
            .as_array()
            .ok_or(BundleError::Missing {
                field: "inclusionProof.hashes",
            })?
            .iter()
            .map(|h| hash32(h, "a proof hash"))
            .collect::<Result<_, _>>()?,
        checkpoint: match &p["checkpoint"]["envelope"] {
            Value::Null => String::new(),
            envelope => text(envelope, "checkpoint")?,
        },
    })
}

/// What a bundle signs.
enum Content<'a> {
    Message(&'a Value),
    Envelope(&'a Value),
}

/// A `dsseEnvelope`: its one signature and the envelope.
fn dsse(env: &Value, logged: Logged) -> Result<(Vec<u8>, Envelope), BundleError> {
    let sigs = env["signatures"].as_array().ok_or(BundleError::Missing {
        field: "dsseEnvelope.signatures",
    })?;
    let [sig] = sigs.as_slice() else {
        return Err(BundleError::EnvelopeSignatures(sigs.len()));
    };
    let keyid = match &sig["keyid"] {
        Value::Null => None,
        keyid => Some(text(keyid, "keyid")?),
    };
    Ok((
        bytes(&sig["sig"], "dsseEnvelope.signatures.sig")?,
        Envelope {
            payload_type: text(&env["payloadType"], "payloadType")?,
            payload: bytes(&env["payload"], "dsseEnvelope.payload")?,
            keyid,
            logged,
        },
    ))
}

impl Entry {
    /// The entry as a bundle's `tlogEntries` list holds it, logged as `kind` `version`; with
    /// `promise` (a Rekor v1 entry), its integrated time and signed entry timestamp.
    pub fn bundle_entry(&self, kind: &str, version: &str, promise: bool) -> Value {
        let p = &self.proof;
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
        if promise {
            entry["integratedTime"] = json!(self.integrated_time.to_string());
            entry["inclusionPromise"] = json!({"signedEntryTimestamp": b64_encode(&self.set)});
        }
        entry
    }

    /// A bundle's `tlogEntries` item holding a `hashedrekord` 0.0.1 of Rekor v1 (a key
    /// signature's: its SET and integrated time, its inclusion proof).
    pub fn from_bundle_entry(e: &Value) -> Result<Self, BundleError> {
        let kind_version = (
            e["kindVersion"]["kind"].as_str().unwrap_or_default(),
            e["kindVersion"]["version"].as_str().unwrap_or_default(),
        );
        if kind_version != ("hashedrekord", "0.0.1") {
            return Err(BundleError::EntryKind {
                kind: kind_version.0.to_owned(),
                version: kind_version.1.to_owned(),
                expected: "a hashedrekord 0.0.1 (a key signature is entered in Rekor v1)",
            });
        }
        if e["inclusionProof"].is_null() {
            return Err(BundleError::Missing {
                field: "inclusionProof",
            });
        }
        Ok(Self {
            body: text(&e["canonicalizedBody"], "canonicalizedBody")?,
            integrated_time: number(&e["integratedTime"], "integratedTime")?,
            log_id: bytes(&e["logId"]["keyId"], "logId")?,
            log_index: non_negative(&e["logIndex"], "logIndex")?,
            set: bytes(
                &e["inclusionPromise"]["signedEntryTimestamp"],
                "signedEntryTimestamp",
            )?,
            proof: proof(&e["inclusionProof"])?,
        })
    }
}

impl Evidence {
    /// The Sigstore bundle v0.3 (JSON, keys sorted, pretty): byte-identical for the same
    /// evidence.
    pub fn bundle(&self) -> Vec<u8> {
        let (kind, version) = match &self.envelope {
            Some(env) => env.logged.kind_version(),
            None => ("hashedrekord", self.version.as_str()),
        };
        let entry = (self.entry()).bundle_entry(kind, version, self.version == EntryVersion::V001);
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
