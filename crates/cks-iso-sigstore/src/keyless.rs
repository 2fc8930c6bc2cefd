//! Keyless signing's pure half: the identity token read (never checked: Fulcio checks it; read for
//! the name the proof of possession signs and for messages), the Sigstore signing configuration
//! that says where Fulcio and Rekor are, the requests sent to them and the certificate read from
//! Fulcio's answer. The `cks-iso` crate sends the requests (`trust::keyless`) and turns Rekor's
//! answer into a bundle with [`crate::rekor::Evidence`].
//!
//! In this crate, beside [`crate::keyed`], so that every byte signed and every request body is
//! made where no network is, and unit-tested here.
//!
//! The shapes follow the services' own definitions: Fulcio's `CreateSigningCertificateRequest`
//! and `SigningCertificate` (sigstore/fulcio `fulcio.proto`; the proof of possession signs the
//! principal's name, the `email` claim or else `sub`, as `pkg/server/grpc_server.go` checks it and
//! cosign's `fulcio.go` signs it), Rekor's `hashedrekord` 0.0.1 (sigstore/rekor
//! `pkg/types/hashedrekord/v0.0.1/hashedrekord_v0_0_1_schema.json`), and the signing
//! configuration of protobuf-specs (`sigstore_trustroot.proto`, `SigningConfig`, media type
//! `application/vnd.dev.sigstore.signingconfig.v0.2+json`).

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::Invalid;
use crate::keyed::SigningKey;

/// Fulcio's public-good instance.
pub const PUBLIC_GOOD_FULCIO: &str = "https://fulcio.sigstore.dev";
/// Rekor's public-good instance.
pub const PUBLIC_GOOD_REKOR: &str = "https://rekor.sigstore.dev";
/// Fulcio's signing endpoint (v2).
pub const FULCIO_PATH: &str = "/api/v2/signingCert";
/// Rekor v1's entry creation endpoint.
pub const REKOR_ENTRIES_PATH: &str = "/api/v1/log/entries";
/// The largest answer read from Fulcio or Rekor: a chain of three PEM certificates, an entry
/// with its proof.
pub const MAX_REPLY: u64 = 256 * 1024;
/// The media type of the signing configurations read.
pub const SIGNING_CONFIG_V02: &str = "application/vnd.dev.sigstore.signingconfig.v0.2+json";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// An OIDC identity token: the secret itself (which no `Debug` or message shows) and what its
/// claims say, read without checking the signature.
pub struct IdentityToken {
    raw: String,
    /// `iss`.
    pub issuer: String,
    /// `sub`.
    pub subject: String,
    /// `email`, when the token has one.
    pub email: Option<String>,
    /// `exp`, seconds since the epoch.
    pub expires: i64,
}

impl std::fmt::Debug for IdentityToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IdentityToken({} via {})", self.identity(), self.issuer)
    }
}

impl IdentityToken {
    /// Reads a JWT's claims (`iss`, `sub`, `exp` required; `email` optional); refuses one that
    /// expired before `now`. Messages never quote the token.
    pub fn parse(raw: &str, now: i64) -> Result<Self, Invalid> {
        let raw = raw.trim();
        let parts: Vec<&str> = raw.split('.').collect();
        let [_, payload, _] = parts.as_slice() else {
            return Err(format!(
                "not a JWT (three base64url parts joined by dots; this has {})",
                parts.len()
            )
            .into());
        };
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .map_err(|_| "the JWT's claims are not base64url")?;
        let claims: Value =
            serde_json::from_slice(&bytes).map_err(|_| "the JWT's claims are not JSON")?;
        let text = |name: &str| -> Result<String, Invalid> {
            claims[name]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("the token has no {name:?} claim").into())
        };
        let expires = claims["exp"]
            .as_i64()
            .ok_or("the token has no \"exp\" claim")?;
        let token = Self {
            raw: raw.to_owned(),
            issuer: text("iss")?,
            subject: text("sub")?,
            email: claims["email"].as_str().map(str::to_owned),
            expires,
        };
        if expires < now {
            return Err(format!(
                "the token of {} expired at {}",
                token.identity(),
                cks_iso_io::date::rfc3339(expires)
            )
            .into());
        }
        Ok(token)
    }

    /// The token itself, for the `Authorization` header and nothing else.
    pub fn secret(&self) -> &str {
        &self.raw
    }

    /// The identity Fulcio certifies and the proof of possession signs: the e-mail address, else
    /// the subject.
    pub fn identity(&self) -> &str {
        self.email.as_deref().unwrap_or(&self.subject)
    }
}

/// Fulcio's request body: the public key and the proof of possession (an ECDSA signature over
/// the identity's SHA-256).
pub fn fulcio_request(key: &SigningKey, token: &IdentityToken) -> Vec<u8> {
    let digest: [u8; 32] = Sha256::digest(token.identity().as_bytes()).into();
    let proof = key.sign_digest(&digest);
    let body = json!({
        "publicKeyRequest": {
            "publicKey": {"algorithm": "ECDSA", "content": key.public_pem()},
            "proofOfPossession": b64(&proof),
        },
    });
    serde_json::to_vec(&body).expect("plain JSON")
}

/// The leaf certificate (DER) of Fulcio's answer (`signedCertificateEmbeddedSct.chain`, the leaf
/// first, PEM).
pub fn leaf_from_fulcio(reply: &[u8]) -> Result<Vec<u8>, Invalid> {
    let v: Value = serde_json::from_slice(reply).map_err(|_| "Fulcio's answer is not JSON")?;
    if v.get("signedCertificateDetachedSct").is_some() {
        return Err(
            "Fulcio answered a certificate with a detached SCT, which cks-iso does not \
                    bundle (Fulcio's with a CT log embed it)"
                .into(),
        );
    }
    let pem = v["signedCertificateEmbeddedSct"]["chain"]["certificates"][0]
        .as_str()
        .ok_or("Fulcio's answer has no signedCertificateEmbeddedSct.chain.certificates")?;
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "-----BEGIN CERTIFICATE-----")
        .skip(1)
        .take_while(|l| *l != "-----END CERTIFICATE-----")
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body.as_bytes())
        .ok()
        .filter(|der| !der.is_empty())
        .ok_or_else(|| "Fulcio's first certificate is not PEM".into())
}

/// Rekor's `hashedrekord` 0.0.1 proposal: the digest, the signature and the leaf (PEM).
pub fn hashedrekord(digest: &[u8; 32], signature: &[u8], leaf_pem: &str) -> Vec<u8> {
    let body = json!({
        "apiVersion": "0.0.1",
        "kind": "hashedrekord",
        "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": hex::encode(digest)}},
            "signature": {"content": b64(signature), "publicKey": {"content": b64(leaf_pem.as_bytes())}},
        },
    });
    serde_json::to_vec(&body).expect("plain JSON")
}

/// Where keyless signing goes, as a signing configuration names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Services {
    /// The Fulcio (v1 API family, `/api/v2/signingCert`).
    pub fulcio: Option<String>,
    /// The Rekor v1 log.
    pub rekor: Option<String>,
}

/// The first service of `list` with major API version 1 valid at `now`.
fn pick(list: &Value, now: i64) -> Option<String> {
    let valid = |s: &Value| {
        let at = |k: &str| s["validFor"][k].as_str().and_then(rfc3339_seconds);
        at("start").is_none_or(|t| t <= now) && at("end").is_none_or(|t| now < t)
    };
    list.as_array()?
        .iter()
        .find(|s| s["majorApiVersion"].as_u64() == Some(1) && valid(s))
        .and_then(|s| s["url"].as_str())
        .map(|u| u.trim_end_matches('/').to_owned())
}

/// `YYYY-MM-DDTHH:MM:SS[.f]Z` as seconds since the epoch.
fn rfc3339_seconds(text: &str) -> Option<i64> {
    crate::x509::der::rfc3339(text).ok()
}

/// Reads a signing configuration v0.2: the Fulcio and Rekor v1 valid at `now` (a Rekor v2 log,
/// which cks-iso does not sign onto, is passed over).
pub fn signing_config(text: &[u8], now: i64) -> Result<Services, Invalid> {
    let v: Value = serde_json::from_slice(text).map_err(|e| format!("not JSON: {e}"))?;
    let media = v["mediaType"].as_str().unwrap_or_default();
    if media != SIGNING_CONFIG_V02 {
        return Err(format!("media type {media:?}, expected {SIGNING_CONFIG_V02:?}").into());
    }
    Ok(Services {
        fulcio: pick(&v["caUrls"], now),
        rekor: pick(&v["rekorTlogUrls"], now),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &Value) -> String {
        let part = |v: &Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
        };
        format!("{}.{}.c2ln", part(&json!({"alg": "ES256"})), part(claims))
    }

    #[test]
    fn a_token_reads_its_identity_and_never_shows_itself() {
        let raw = jwt(&json!({"iss": "https://issuer", "sub": "42", "email": "a@b.c", "exp": 100}));
        let token = IdentityToken::parse(&raw, 50).unwrap();
        assert_eq!(token.identity(), "a@b.c");
        assert!(!format!("{token:?}").contains(&raw[..20]));
        let err = IdentityToken::parse(&raw, 101).unwrap_err();
        assert!(
            err.reason()
                .contains("a@b.c expired at 1970-01-01T00:01:40Z"),
            "{err}"
        );
        assert!(!err.reason().contains(&raw[..20]));
        let workload = jwt(&json!({"iss": "https://ci", "sub": "https://ci/job", "exp": 100}));
        assert_eq!(
            IdentityToken::parse(&workload, 0).unwrap().identity(),
            "https://ci/job"
        );
        let err = IdentityToken::parse("ghp_notajwt", 0).unwrap_err();
        assert!(err.reason().contains("not a JWT"), "{err}");
        let no_iss = jwt(&json!({"sub": "x", "exp": 100}));
        assert!(
            IdentityToken::parse(&no_iss, 0)
                .unwrap_err()
                .reason()
                .contains("\"iss\"")
        );
    }

    #[test]
    fn a_signing_config_names_the_v1_services_valid_now() {
        let text = json!({
            "mediaType": SIGNING_CONFIG_V02,
            "caUrls": [{"url": "https://fulcio.example/", "majorApiVersion": 1,
                        "validFor": {"start": "2023-04-14T21:38:40Z"}}],
            "rekorTlogUrls": [
                {"url": "https://log2.example", "majorApiVersion": 2,
                 "validFor": {"start": "2025-09-23T00:00:00Z"}},
                {"url": "https://old.example", "majorApiVersion": 1,
                 "validFor": {"start": "2021-01-12T11:53:27Z", "end": "2022-01-01T00:00:00Z"}},
                {"url": "https://rekor.example", "majorApiVersion": 1,
                 "validFor": {"start": "2021-01-12T11:53:27Z"}},
            ],
        });
        let now = 1_765_000_000;
        let services = signing_config(text.to_string().as_bytes(), now).unwrap();
        assert_eq!(services.fulcio.as_deref(), Some("https://fulcio.example"));
        assert_eq!(services.rekor.as_deref(), Some("https://rekor.example"));
        let err = signing_config(br#"{"mediaType": "x"}"#, now).unwrap_err();
        assert!(err.reason().contains("expected"), "{err}");
    }

    #[test]
    fn the_requests_carry_a_proof_the_key_verifies_and_the_entry_fields_rekor_reads() {
        let key = SigningKey::generate();
        let raw = jwt(&json!({"iss": "https://i", "sub": "s", "email": "me@x.y", "exp": 10}));
        let token = IdentityToken::parse(&raw, 0).unwrap();
        let body: Value = serde_json::from_slice(&fulcio_request(&key, &token)).unwrap();
        let proof = base64::engine::general_purpose::STANDARD
            .decode(
                body["publicKeyRequest"]["proofOfPossession"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
        let point = &crate::x509::PublicKey::from_spki(key.public_spki())
            .unwrap()
            .bits;
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_ASN1, point)
            .verify(b"me@x.y", &proof)
            .unwrap();
        assert!(!String::from_utf8_lossy(&fulcio_request(&key, &token)).contains(&raw));
        let entry: Value = serde_json::from_slice(&hashedrekord(&[7; 32], b"sig", "PEM")).unwrap();
        assert_eq!(entry["spec"]["data"]["hash"]["value"], "07".repeat(32));
        assert_eq!(entry["spec"]["signature"]["publicKey"]["content"], "UEVN");
    }
}
