//! A Fulcio for the world: `POST /api/v2/signingCert` issues a short-lived code-signing leaf from
//! the world's Sigstore CA to whoever proves an identity token from a trusted issuer and the
//! possession of the key, with the SCT of the world's CT log embedded, as Fulcio does.
//!
//! Follows sigstore/fulcio, field by field:
//!
//! - the request (`fulcio.proto`, `CreateSigningCertificateRequest`, as grpc-gateway reads its
//!   JSON): the token in `Authorization: Bearer` (or `credentials.oidcIdentityToken`), then either
//!   `certificateSigningRequest` (base64 of a PEM CSR, whose signature is the proof, as
//!   sigstore-python's `_internal/fulcio/client.py` sends it) or `publicKeyRequest` (`publicKey`
//!   `{algorithm, content}` PEM and `proofOfPossession`, an ECDSA signature over the principal's
//!   name, as cosign sends it);
//! - the checks and their order (`pkg/server/grpc_server.go`, `CreateSigningCertificate`): the token
//!   authenticated against its issuer's published keys (discovery document, then `jwks_uri`:
//!   `pkg/identity`, go-oidc), `aud` `sigstore`, not expired; then the proof; each refusal is
//!   gRPC's `InvalidArgument`, which grpc-gateway answers as HTTP 400 with `{"code": 3,
//!   "message": …, "details": []}` and the messages of `pkg/server/error.go`;
//! - the principal (`pkg/identity/email`, `pkg/identity/uri`): an `email` claim (verified) is
//!   an e-mail SAN and the name signed for the proof; otherwise `sub`, which must be a URI, is a
//!   URI SAN;
//! - the answer (`SigningCertificate.signedCertificateEmbeddedSct.chain.certificates`: the leaf,
//!   then the chain, PEM), with the OIDC issuer in the extensions `1.3.6.1.4.1.57264.1.1` and
//!   `.1.8` (`pkg/certificate/extensions.go`).
//!
//! It records what it was sent without the token (`requests`), for the tests that look for one.

use std::sync::{Arc, Mutex};

use p256::ecdsa::signature::Verifier as _;
use p256::pkcs8::DecodePublicKey as _;
use serde_json::{Value, json};

use crate::oidc::{AUDIENCE, unbase64url};
use crate::server::{HttpServer, Incoming, Outgoing};
use crate::sigstore::{IssuerForm, SignOptions, Sigstore};

const INVALID_TOKEN: &str = "There was an error processing the identity token";
const INVALID_SIGNATURE: &str = "The signature supplied in the request could not be verified";
const INVALID_PUBLIC_KEY: &str = "The public key supplied in the request could not be parsed";
const INVALID_CSR: &str = "The certificate signing request could not be parsed";

/// The server; stops when dropped.
pub struct FulcioServer {
    server: HttpServer,
    requests: Arc<Mutex<Vec<String>>>,
}

/// Who a verified token names: the SAN and the name the proof of possession signs.
struct Principal {
    issuer: String,
    identity: String,
}

/// gRPC `InvalidArgument` through grpc-gateway.
fn refuse(message: &str) -> Outgoing {
    let body = json!({"code": 3, "message": message, "details": []});
    Outgoing::new(400, body.to_string()).with("Content-Type", "application/json")
}

/// GETs `url` (`http://host:port/path`) from the world's own client, as JSON.
fn get_json(url: &str) -> Option<Value> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let reply = crate::http::request(host, "GET", &format!("/{path}"), &[], &[]).ok()?;
    (reply.status == 200)
        .then(|| serde_json::from_slice(&reply.body).ok())
        .flatten()
}

/// Authenticates `token` against `issuers`: its issuer is one of them, its signature verifies
/// under a key that issuer publishes, it is meant for Sigstore and still valid.
fn authenticate(token: &str, issuers: &[String]) -> Option<Principal> {
    let mut parts = token.split('.');
    let (header, payload, signature) = (parts.next()?, parts.next()?, parts.next()?);
    let head: Value = serde_json::from_slice(&unbase64url(header)?).ok()?;
    let claims: Value = serde_json::from_slice(&unbase64url(payload)?).ok()?;
    let issuer = claims["iss"].as_str()?.to_owned();
    if head["alg"] != "ES256" || !issuers.contains(&issuer) {
        return None;
    }
    let discovery = get_json(&format!("{issuer}/.well-known/openid-configuration"))?;
    if discovery["issuer"] != issuer.as_str() {
        return None;
    }
    let keys = get_json(discovery["jwks_uri"].as_str()?)?;
    let jwk = keys["keys"]
        .as_array()?
        .iter()
        .find(|k| k["kid"] == head["kid"] && k["crv"] == "P-256")?;
    let point = [
        &[4u8][..],
        &unbase64url(jwk["x"].as_str()?)?,
        &unbase64url(jwk["y"].as_str()?)?,
    ]
    .concat();
    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&point).ok()?;
    let sig = p256::ecdsa::Signature::from_slice(&unbase64url(signature)?).ok()?;
    key.verify(format!("{header}.{payload}").as_bytes(), &sig)
        .ok()?;
    let audience_ok = match &claims["aud"] {
        Value::String(a) => a == AUDIENCE,
        Value::Array(all) => all.iter().any(|a| a == AUDIENCE),
        _ => false,
    };
    let now = crate::sigstore::now();
    if !audience_ok || claims["exp"].as_i64()? < now {
        return None;
    }
    let identity = match (claims["email"].as_str(), &claims["email_verified"]) {
        (Some(email), Value::Bool(true)) => email.to_owned(),
        (Some(_), _) => return None,
        (None, _) => claims["sub"]
            .as_str()
            .filter(|s| s.contains("://"))?
            .to_owned(),
    };
    Some(Principal { issuer, identity })
}

/// The token of the request: the bearer header, else the body's credentials.
fn token_of(request: &Incoming, body: &Value) -> Option<String> {
    let header = request.header("authorization").and_then(|v| {
        v.strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
    });
    header.map(str::to_owned).or_else(|| {
        body["credentials"]["oidcIdentityToken"]
            .as_str()
            .map(str::to_owned)
    })
}

/// The first PEM block's DER.
fn pem_der(text: &str) -> Option<Vec<u8>> {
    let body: String = text
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    crate::http::unbase64(&body)
}

/// The SubjectPublicKeyInfo the request proves it holds the key of, or the refusal.
fn proven_key(body: &Value, principal: &Principal) -> Result<Vec<u8>, &'static str> {
    if let Some(csr) = body["certificateSigningRequest"].as_str() {
        let pem = crate::http::unbase64(csr)
            .and_then(|p| String::from_utf8(p).ok())
            .ok_or(INVALID_CSR)?;
        let der = pem_der(&pem).ok_or(INVALID_CSR)?;
        // rcgen checks the CSR's own signature: the proof of possession.
        let params = rcgen::CertificateSigningRequestParams::from_der(&der.as_slice().into())
            .map_err(|e| match e {
                rcgen::Error::InvalidCertificationRequestSignature => INVALID_SIGNATURE,
                _ => INVALID_CSR,
            })?;
        use rcgen::PublicKeyData as _;
        return Ok(params.public_key.subject_public_key_info());
    }
    let request = &body["publicKeyRequest"];
    let pem = request["publicKey"]["content"]
        .as_str()
        .ok_or(INVALID_PUBLIC_KEY)?;
    let spki = pem_der(pem).ok_or(INVALID_PUBLIC_KEY)?;
    let key =
        p256::ecdsa::VerifyingKey::from_public_key_der(&spki).map_err(|_| INVALID_PUBLIC_KEY)?;
    let proof = request["proofOfPossession"]
        .as_str()
        .and_then(crate::http::unbase64)
        .ok_or(INVALID_SIGNATURE)?;
    let sig = p256::ecdsa::Signature::from_der(&proof).map_err(|_| INVALID_SIGNATURE)?;
    key.verify(principal.identity.as_bytes(), &sig)
        .map_err(|_| INVALID_SIGNATURE)?;
    Ok(spki)
}

fn handle(request: &Incoming, sigstore: &Sigstore, issuers: &[String]) -> Outgoing {
    if (request.method.as_str(), request.target.as_str()) != ("POST", "/api/v2/signingCert") {
        return Outgoing::new(404, r#"{"code":5,"message":"Not Found","details":[]}"#);
    }
    let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
        return refuse("invalid JSON in the request body");
    };
    let Some(principal) = token_of(request, &body).and_then(|t| authenticate(&t, issuers)) else {
        return refuse(INVALID_TOKEN);
    };
    let spki = match proven_key(&body, &principal) {
        Ok(spki) => spki,
        Err(message) => return refuse(message),
    };
    let Ok(key) = rcgen::SubjectPublicKeyInfo::from_der(&spki) else {
        return refuse("The public key supplied in the request is insecure");
    };
    let opts = SignOptions {
        identity: principal.identity,
        issuer: principal.issuer,
        issuer_form: IssuerForm::Both,
        ..SignOptions::default()
    };
    let leaf = sigstore.leaf(&key, &opts, crate::sigstore::now());
    let mut chain = vec![crate::sigstore::pem(&leaf)];
    chain.extend(sigstore.chain_pem());
    let reply = json!({"signedCertificateEmbeddedSct": {"chain": {"certificates": chain}}});
    Outgoing::new(201, reply.to_string()).with("Content-Type", "application/json")
}

impl FulcioServer {
    /// Issues from `sigstore`'s CA to tokens of `issuers` (their URLs, `iss`), on an ephemeral
    /// 127.0.0.1 port.
    pub fn start(sigstore: Arc<Sigstore>, issuers: Vec<String>) -> Self {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let server = HttpServer::start(move |request| {
            let reply = handle(&request, &sigstore, &issuers);
            seen.lock().unwrap().push(format!(
                "{} {} {}",
                request.method, request.target, reply.status
            ));
            reply
        });
        Self { server, requests }
    }

    /// Its base URL, `http://127.0.0.1:P`.
    pub fn url(&self) -> String {
        format!("http://{}", self.server.host())
    }

    /// `METHOD target status` of each request so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// A Sigstore signing configuration (`application/vnd.dev.sigstore.signingconfig.v0.2+json`,
/// protobuf-specs `SigningConfig`) naming the world's services: what a client reads to know
/// where to sign.
pub fn signing_config(fulcio: &str, rekor: &str, oidc: &str) -> serde_json::Value {
    let service = |url: &str| {
        json!({
            "url": url,
            "majorApiVersion": 1,
            "validFor": {"start": "2021-01-01T00:00:00Z"},
            "operator": "cks-world",
        })
    };
    json!({
        "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
        "caUrls": [service(fulcio)],
        "oidcUrls": [service(oidc)],
        "rekorTlogUrls": [service(rekor)],
        "tsaUrls": [],
        "rekorTlogConfig": {"selector": "ANY"},
        "tsaConfig": {"selector": "ANY"},
    })
}

/// A client trust configuration (`application/vnd.dev.sigstore.clienttrustconfig.v0.1+json`):
/// the signing configuration and the trusted root together, as sigstore-python's
/// `--trust-config` reads it.
pub fn client_trust_config(signing_config: &serde_json::Value, trusted_root: &str) -> String {
    let root: serde_json::Value = serde_json::from_str(trusted_root).expect("the world's root");
    let config = json!({
        "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
        "trustedRoot": root,
        "signingConfig": signing_config,
    });
    serde_json::to_string_pretty(&config).expect("JSON")
}
