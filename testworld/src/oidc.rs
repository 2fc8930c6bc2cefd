//! An OpenID Connect issuer for the world: the discovery document
//! (`/.well-known/openid-configuration`) and the key set (`/keys`) a relying party reads, and
//! identity tokens (ES256 JWTs) minted for whatever subject a test names, the way a CI system
//! hands a job its token. [`OidcIssuer::forge`] signs a token with a key the issuer does not
//! publish, for the tests of a token nobody should accept.
//!
//! Shaped after what Fulcio reads of an issuer (sigstore/fulcio `pkg/identity`, through go-oidc:
//! the discovery document's `issuer` must be the token's `iss`, `jwks_uri` names the keys, the
//! token's `aud` is `sigstore`) and what sigstore-python requires of a token before it sends it
//! (`sigstore/oidc.py`, `IdentityToken`: `aud`, `sub`, `iat`, `exp` and `iss` present, within
//! its validity). Written from OpenID Connect Discovery 1.0, RFC 7517 (JWK) and RFC 7515/7518
//! (JWS, ES256: the raw `r ‖ s` signature, base64url without padding).

use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256, SigningKey as _};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::server::{HttpServer, Outgoing};

/// The audience Sigstore's clients ask tokens for.
pub const AUDIENCE: &str = "sigstore";

/// The issuer's key id in the key set.
const KEY_ID: &str = "world-oidc-1";

/// base64url without padding (RFC 7515 §2).
pub fn base64url(bytes: &[u8]) -> String {
    crate::http::base64(bytes)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

/// base64url (padding optional) decoded.
pub fn unbase64url(text: &str) -> Option<Vec<u8>> {
    crate::http::unbase64(&text.replace('-', "+").replace('_', "/"))
}

/// Who a token names.
#[derive(Debug, Clone, Default)]
pub struct Claims {
    /// `sub`.
    pub subject: String,
    /// `email` (with `email_verified: true`), when the identity is an e-mail address.
    pub email: Option<String>,
    /// Seconds the token stays valid (default 300 when 0).
    pub lifetime: i64,
    /// Another `aud` than `sigstore`.
    pub audience: Option<String>,
}

impl Claims {
    /// A person's token: `sub` is an opaque id, the identity is the e-mail address.
    pub fn email(address: &str) -> Self {
        Self {
            subject: format!("world-user-{}", address.len()),
            email: Some(address.to_owned()),
            ..Self::default()
        }
    }

    /// A workload's token: the identity is `sub` itself, a URI (a CI job's).
    pub fn workload(uri: &str) -> Self {
        Self {
            subject: uri.to_owned(),
            ..Self::default()
        }
    }
}

/// The issuer; stops when dropped.
pub struct OidcIssuer {
    server: HttpServer,
    key: Arc<KeyPair>,
    url: String,
}

/// The ES256 JWT of `claims` signed with `key` under `kid`.
fn jwt(key: &KeyPair, kid: &str, issuer: &str, claims: &Claims) -> String {
    let now = crate::sigstore::now();
    let lifetime = if claims.lifetime == 0 {
        300
    } else {
        claims.lifetime
    };
    let mut body = json!({
        "iss": issuer,
        "sub": claims.subject,
        "aud": claims.audience.as_deref().unwrap_or(AUDIENCE),
        "iat": now,
        "nbf": now,
        "exp": now + lifetime,
    });
    if let Some(email) = &claims.email {
        body["email"] = json!(email);
        body["email_verified"] = json!(true);
    }
    let header = json!({"alg": "ES256", "kid": kid, "typ": "JWT"});
    let signing_input = format!(
        "{}.{}",
        base64url(header.to_string().as_bytes()),
        base64url(body.to_string().as_bytes())
    );
    let der = key.sign(signing_input.as_bytes()).expect("ES256 signature");
    let raw = p256::ecdsa::Signature::from_der(&der).expect("a DER ECDSA signature");
    format!("{signing_input}.{}", base64url(&raw.to_bytes()))
}

impl OidcIssuer {
    /// A fresh key, served on an ephemeral 127.0.0.1 port; the issuer URL is
    /// `http://127.0.0.1:P`.
    pub fn start() -> Self {
        let key = Arc::new(KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("P-256 key"));
        let point = key.public_key_raw().to_vec();
        // The URL is known once the port is: the handler reads it from the Host the client sent
        // to, which on loopback is the issuer's own address.
        let server = HttpServer::start(move |request| {
            let host = request.header("host").unwrap_or_default().to_owned();
            let issuer = format!("http://{host}");
            let reply = |v: Value| {
                Outgoing::new(200, v.to_string()).with("Content-Type", "application/json")
            };
            match (request.method.as_str(), request.target.as_str()) {
                ("GET", "/.well-known/openid-configuration") => reply(json!({
                    "issuer": issuer,
                    "jwks_uri": format!("{issuer}/keys"),
                    "authorization_endpoint": format!("{issuer}/auth"),
                    "token_endpoint": format!("{issuer}/token"),
                    "response_types_supported": ["id_token"],
                    "subject_types_supported": ["public"],
                    "id_token_signing_alg_values_supported": ["ES256"],
                })),
                ("GET", "/keys") => reply(json!({"keys": [{
                    "kty": "EC",
                    "crv": "P-256",
                    "use": "sig",
                    "alg": "ES256",
                    "kid": KEY_ID,
                    "x": base64url(&point[1..33]),
                    "y": base64url(&point[33..65]),
                }]})),
                _ => Outgoing::new(404, "not found"),
            }
        });
        let url = format!("http://{}", server.host());
        Self { server, key, url }
    }

    /// The issuer URL (`iss`), `http://127.0.0.1:P`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its `host:port`.
    pub fn host(&self) -> String {
        self.server.host()
    }

    /// A token this issuer signed for `claims`.
    pub fn mint(&self, claims: &Claims) -> String {
        jwt(&self.key, KEY_ID, &self.url, claims)
    }

    /// A token that claims this issuer and its key id but is signed with another key: what an
    /// impostor makes, and what no relying party may accept.
    pub fn forge(&self, claims: &Claims) -> String {
        let other = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("P-256 key");
        jwt(&other, KEY_ID, &self.url, claims)
    }
}

/// A token's claims, read without checking anything (for the tests' messages).
pub fn claims_of(token: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    serde_json::from_slice(&unbase64url(payload)?).ok()
}
