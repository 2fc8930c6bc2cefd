//! Sigstore's `trusted_root.json` (protobuf-specs `TrustedRoot`, JSON form): the Fulcio CA
//! chains, the transparency logs' keys (Rekor v1 and v2), the CT logs' keys and the RFC 3161
//! timestamp authorities' chains a signature is judged against. Nothing else is trusted: a chain
//! shipped beside a signature, or embedded in a timestamp, is ignored.

use base64::Engine as _;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use crate::x509::der;
use crate::x509::key::KeyKind;
use crate::x509::{Cert, PublicKey};

/// The media type this reader understands.
pub const MEDIA_TYPE: &str = "application/vnd.dev.sigstore.trustedroot+json;version=0.1";

/// A parsed trusted root.
#[derive(Debug, Clone)]
pub struct TrustedRoot {
    pub(crate) cas: Vec<Authority>,
    pub(crate) tlogs: Vec<LogKey>,
    pub(crate) ctlogs: Vec<LogKey>,
    /// The timestamp authorities whose chains cks-iso can read, in the root's order.
    pub(crate) tsas: Vec<Authority>,
}

/// One certificate authority (Fulcio, or an RFC 3161 timestamp authority): its chain (the
/// issuing certificate first, the root last).
#[derive(Debug, Clone)]
pub(crate) struct Authority {
    pub(crate) chain: Vec<Vec<u8>>,
    pub(crate) valid: Validity,
}

/// A log's key and its id (SHA-256 of the key's DER for Rekor v1 and CT logs).
#[derive(Debug, Clone)]
pub(crate) struct LogKey {
    pub(crate) id: Vec<u8>,
    pub(crate) key: Option<PublicKey>,
    pub(crate) valid: Validity,
}

/// `validFor`: from `start`, until `end` if given (seconds).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Validity {
    pub(crate) start: Option<i64>,
    pub(crate) end: Option<i64>,
}

impl Validity {
    pub(crate) fn covers(&self, t: i64) -> bool {
        self.start.is_none_or(|s| s <= t) && self.end.is_none_or(|e| t <= e)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    media_type: String,
    #[serde(default)]
    tlogs: Vec<RawLog>,
    #[serde(default)]
    certificate_authorities: Vec<RawCa>,
    #[serde(default)]
    ctlogs: Vec<RawLog>,
    #[serde(default)]
    timestamp_authorities: Vec<RawCa>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLog {
    public_key: RawKey,
    log_id: RawLogId,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawKey {
    raw_bytes: Option<String>,
    key_details: Option<String>,
    valid_for: Option<RawValidity>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLogId {
    key_id: String,
}

#[derive(Deserialize)]
struct RawValidity {
    start: Option<String>,
    end: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCa {
    cert_chain: RawChain,
    valid_for: Option<RawValidity>,
}

#[derive(Deserialize)]
struct RawChain {
    certificates: Vec<RawCert>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCert {
    raw_bytes: String,
}

/// Why a trusted root is refused; `entry` names the certificate authority or log concerned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RootError {
    /// Not a trusted root's JSON.
    #[error("not a trusted root: {0}")]
    Json(String),
    /// Another media type.
    #[error("media type {found:?}, expected {MEDIA_TYPE:?}")]
    MediaType {
        /// The one found.
        found: String,
    },
    /// A bytes field is not base64.
    #[error("{entry}: {field} is not base64")]
    NotBase64 {
        /// The entry.
        entry: String,
        /// The field.
        field: &'static str,
    },
    /// A CA certificate does not parse.
    #[error("{entry}: a CA certificate: {reason}")]
    Certificate {
        /// The entry.
        entry: String,
        /// Why.
        reason: String,
    },
    /// A CA without certificates.
    #[error("{entry} has no certificates")]
    EmptyChain {
        /// The entry.
        entry: String,
    },
    /// `validFor` without `start`.
    #[error("{entry} has a validFor without start; each range must say when it begins")]
    NoStart {
        /// The entry.
        entry: String,
    },
    /// A `validFor` time that is not RFC 3339.
    #[error("{entry}: validFor: {reason}")]
    Time {
        /// The entry.
        entry: String,
        /// Why.
        reason: String,
    },
    /// A key whose `keyDetails` names another algorithm than its bytes hold.
    #[error("{entry}: keyDetails says {details} but the key is {actual}")]
    KeyDetails {
        /// The entry.
        entry: String,
        /// The `keyDetails` value.
        details: String,
        /// What the key's bytes are.
        actual: &'static str,
    },
}

fn b64(text: &str, entry: &str, field: &'static str) -> Result<Vec<u8>, RootError> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| RootError::NotBase64 {
            entry: entry.to_owned(),
            field,
        })
}

/// `validFor`, for `entry`: without it an entry is valid at all times; with it, `start` is
/// required (a range open to the past would make a key valid before it existed).
fn validity(raw: Option<&RawValidity>, entry: &str) -> Result<Validity, RootError> {
    let at = |t: Option<&String>| {
        t.map(|t| der::rfc3339(t))
            .transpose()
            .map_err(|reason| RootError::Time {
                entry: entry.to_owned(),
                reason: reason.into(),
            })
    };
    Ok(match raw {
        Some(v) if v.start.is_none() => {
            return Err(RootError::NoStart {
                entry: entry.to_owned(),
            });
        }
        Some(v) => Validity {
            start: at(v.start.as_ref())?,
            end: at(v.end.as_ref())?,
        },
        None => Validity {
            start: None,
            end: None,
        },
    })
}

/// The key kind a protobuf-specs `PublicKeyDetails` value names; `None` for values this reader
/// has no key kind for (kept for other clients, as unreadable keys are).
fn kind_named(details: &str) -> Option<KeyKind> {
    match details {
        "PKIX_ECDSA_P256_SHA_256" | "PKIX_ECDSA_P256_HMAC_SHA_256" => Some(KeyKind::P256),
        "PKIX_ECDSA_P384_SHA_384" => Some(KeyKind::P384),
        "PKIX_ED25519" | "PKIX_ED25519_PH" => Some(KeyKind::Ed25519),
        d if d.starts_with("PKIX_RSA_") || d.starts_with("PKCS1_RSA_") => Some(KeyKind::Rsa),
        _ => None,
    }
}

fn log(raw: &RawLog, what: &str) -> Result<LogKey, RootError> {
    let entry = format!("the {what} {}", raw.log_id.key_id);
    let id = b64(&raw.log_id.key_id, &entry, "logId")?;
    // A key this reader cannot use (RSA, an unknown curve) is kept out, not an error: the root
    // lists keys for clients of every kind.
    let key = match &raw.public_key.raw_bytes {
        Some(bytes) => PublicKey::from_spki(&b64(bytes, &entry, "publicKey")?).ok(),
        None => None,
    };
    // As sigstore-go: the algorithm `keyDetails` names is the one the key must have, so a root
    // cannot present a key as another kind than it is.
    if let (Some(key), Some(details)) = (&key, &raw.public_key.key_details)
        && kind_named(details).is_some_and(|named| named != key.kind)
    {
        return Err(RootError::KeyDetails {
            entry,
            details: details.clone(),
            actual: key.kind.name(),
        });
    }
    Ok(LogKey {
        id,
        key,
        valid: validity(raw.public_key.valid_for.as_ref(), &entry)?,
    })
}

impl TrustedRoot {
    /// Parses the JSON text of a trusted root.
    pub fn from_json(text: &str) -> Result<Self, RootError> {
        let raw: Raw = serde_json::from_str(text).map_err(|e| RootError::Json(e.to_string()))?;
        if raw.media_type != MEDIA_TYPE {
            return Err(RootError::MediaType {
                found: raw.media_type,
            });
        }
        let mut cas = Vec::new();
        for (i, ca) in raw.certificate_authorities.iter().enumerate() {
            let entry = format!("certificate authority #{}", i + 1);
            let chain = ca
                .cert_chain
                .certificates
                .iter()
                .map(|c| b64(&c.raw_bytes, &entry, "certificate"))
                .collect::<Result<Vec<_>, _>>()?;
            for der in &chain {
                Cert::parse(der).map_err(|reason| RootError::Certificate {
                    entry: entry.clone(),
                    reason: reason.into(),
                })?;
            }
            if chain.is_empty() {
                return Err(RootError::EmptyChain { entry });
            }
            cas.push(Authority {
                chain,
                valid: validity(ca.valid_for.as_ref(), &entry)?,
            });
        }
        let mut tsas = Vec::new();
        for (i, tsa) in raw.timestamp_authorities.iter().enumerate() {
            let entry = format!("timestamp authority #{}", i + 1);
            let chain = tsa
                .cert_chain
                .certificates
                .iter()
                .map(|c| b64(&c.raw_bytes, &entry, "certificate"))
                .collect::<Result<Vec<_>, _>>()?;
            let valid = validity(tsa.valid_for.as_ref(), &entry)?;
            // An authority whose chain this reader cannot use (a signature algorithm other than
            // ECDSA or RSA with SHA-2) is kept out, as an unusable log key is: a timestamp it
            // signed then finds no authority, and is refused.
            if !chain.is_empty() && chain.iter().all(|der| Cert::parse(der).is_ok()) {
                tsas.push(Authority { chain, valid });
            }
        }
        let tlogs = raw
            .tlogs
            .iter()
            .map(|l| log(l, "transparency log"))
            .collect::<Result<_, _>>()?;
        let ctlogs = raw
            .ctlogs
            .iter()
            .map(|l| log(l, "CT log"))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            cas,
            tlogs,
            ctlogs,
            tsas,
        })
    }

    /// A fingerprint of the text, for the report: which root judged.
    pub fn fingerprint(text: &str) -> String {
        hex::encode(Sha256::digest(text.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_good_root_parses() {
        let root = TrustedRoot::from_json(crate::PUBLIC_GOOD_ROOT).unwrap();
        assert_eq!(root.cas.len(), 2);
        assert_eq!(root.ctlogs.len(), 2);
        // Rekor v1 (P-256) is usable; its log id is the SHA-256 of its key.
        let rekor = &root.tlogs[0];
        assert_eq!(
            hex::encode(&rekor.id),
            "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d"
        );
        assert!(rekor.key.is_some());
    }
}
