//! Keyless signing of the ISOs cks-iso writes (`build --sign`, `cks-iso sign --identity-token`):
//! an ephemeral P-256 key made in memory, a short-lived certificate for the operator's OIDC
//! identity from Fulcio, the signature over the ISO's SHA-256 entered in Rekor v1, and the
//! Sigstore bundle v0.3 `<iso>.sigstore.json` written beside the ISO once it verifies offline
//! against the trusted root cks-iso judges signatures with.
//!
//! Its own module beside `sign` (keys) because it is the one place signing talks to servers: the
//! identity token goes to Fulcio in an `Authorization` header and nowhere else (no log line, no
//! message, no file, no redirect followed), and the key is dropped after its one signature. A
//! key signature entered in Rekor (`--sign-key … --tlog`, [`KeyLog`]) goes through the same
//! POST to the same Rekor, a `hashedrekord` with the public key where keyless puts the
//! certificate, and its entry is checked against the same root before the bundle is written.
//! The request bodies and the token's reading are the sigstore crate's (`keyless`), without I/O.
//!
//! Where the services are: the per-service flags (`--fulcio-url`, `--rekor-url`), else the
//! Sigstore signing configuration given (`--signing-config`), else the configuration file's
//! `rekor-url:`, else Sigstore's public-good instances. No timestamp authority is asked: Rekor
//! v1's signed integrated time is what vouches for the signing time, as cosign's bundles carry it.

use std::path::{Path, PathBuf};

use cks_iso_sigstore::keyed::SigningKey;
use cks_iso_sigstore::keyless::{self, IdentityToken};
use cks_iso_sigstore::rekor::{self, Evidence};
use cks_iso_sigstore::{Identity, Invalid, Issuer};
use cks_iso_sigstore::{Policy, TrustedRoot};

use super::sign::{SignError, Signed};

/// What the flags say about keyless signing.
#[derive(Clone, Default)]
pub struct KeylessOptions {
    /// `--identity-token` or `SIGSTORE_ID_TOKEN`: the OIDC token (a secret).
    pub token: Option<String>,
    /// Else a file holding it (sync's `identity-token-file:`), read when signing starts and
    /// again before each signature.
    pub token_file: Option<PathBuf>,
    /// `--signing-config`.
    pub signing_config: Option<PathBuf>,
    /// `--fulcio-url`.
    pub fulcio_url: Option<String>,
    /// `--rekor-url` (or `CKS_ISO_REKOR_URL`).
    pub rekor_url: Option<String>,
    /// `--trusted-root`: the root the bundle is checked against before it is written.
    pub trusted_root: Option<PathBuf>,
}

impl std::fmt::Debug for KeylessOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a secret: whether there is one, never what it is.
        f.debug_struct("KeylessOptions")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("token_file", &self.token_file)
            .field("signing_config", &self.signing_config)
            .field("fulcio_url", &self.fulcio_url)
            .field("rekor_url", &self.rekor_url)
            .finish()
    }
}

/// What the configuration says, for [`KeylessSigner::new`] (the settings' own type is not
/// named here: the configuration reads this module's types, not the other way round).
#[derive(Debug, Clone, Copy)]
pub struct Defaults<'a> {
    /// The HTTP settings (timeouts, CA files, `--offline`).
    pub http: &'a crate::fetch::HttpConfig,
    /// The configuration's `rekor-url:`.
    pub rekor_url: Option<&'a str>,
    /// The configuration's `trusted-root:`.
    pub trusted_root: Option<&'a Path>,
}

/// Ready to sign: the token read, the services chosen, the root and the HTTP client at hand.
#[derive(Debug)]
pub struct KeylessSigner {
    token: IdentityToken,
    /// The file the token came from, read again before each signature (a token helper keeps it
    /// fresh; a CI's tokens live minutes, a build may take longer).
    token_file: Option<PathBuf>,
    fulcio: String,
    rekor: String,
    root: TrustedRoot,
    client: reqwest::Client,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl KeylessSigner {
    /// Reads the token and the signing configuration and picks the services; with `--offline`
    /// or without a token, a usage error naming what to pass.
    pub fn new(opts: &KeylessOptions, settings: &Defaults<'_>) -> Result<Self, SignError> {
        let flags = |message: String, hint: &str| SignError::Flags {
            message,
            hint: Some(hint.to_owned()),
        };
        if settings.http.offline {
            return Err(flags(
                "keyless signing asks Fulcio and Rekor, and --offline forbids the network".into(),
                "sign with a key (--sign-key) offline, or leave --offline out",
            ));
        }
        let configured = configured(opts)?;
        let fulcio = (opts.fulcio_url.clone())
            .or(configured.fulcio.clone())
            .unwrap_or_else(|| keyless::PUBLIC_GOOD_FULCIO.to_owned());
        let rekor = rekor_url(opts, configured, settings);
        let token = read_token(&opts.token, opts.token_file.as_deref(), &fulcio)?;
        let (root, client) = root_and_client(opts, settings)?;
        tracing::info!(
            "signing keyless as {} via {} (Fulcio {}, Rekor {})",
            token.identity(),
            token.issuer,
            crate::fetch::redact(&fulcio),
            crate::fetch::redact(&rekor)
        );
        Ok(Self {
            token,
            token_file: (opts.token.as_deref())
                .is_none_or(|t| t.trim().is_empty())
                .then(|| opts.token_file.clone())
                .flatten(),
            fulcio: fulcio.trim_end_matches('/').to_owned(),
            rekor: rekor.trim_end_matches('/').to_owned(),
            root,
            client,
        })
    }

    /// Signs the ISO at `iso` whose SHA-256 is `digest`: writes `<iso>.sigstore.json`, complete
    /// or not at all, once it verifies offline.
    pub async fn sign_iso(&self, iso: &Path, digest: &[u8; 32]) -> Result<Signed, SignError> {
        let start = std::time::Instant::now();
        let fresh = match &self.token_file {
            Some(path) => Some(read_token(&None, Some(path), &self.fulcio)?),
            None => None,
        };
        let token = fresh.as_ref().unwrap_or(&self.token);
        let key = SigningKey::generate();
        let reply = post(
            &self.client,
            "Fulcio",
            &format!("{}{}", self.fulcio, keyless::FULCIO_PATH),
            keyless::fulcio_request(&key, token),
            Some(token.secret()),
        )
        .await?;
        let refused = |service: &'static str, url: &str, reason: String| SignError::Service {
            service,
            url: url.to_owned(),
            status: None,
            reason,
        };
        let leaf = keyless::leaf_from_fulcio(&reply)
            .map_err(|e| refused("Fulcio", &self.fulcio, e.to_string()))?;
        let signature = key.sign_digest(digest);
        drop(key);
        let leaf_pem = cks_iso_sigstore::keyed::certificate_pem(&leaf);
        let entries_url = format!("{}{}", self.rekor, keyless::REKOR_ENTRIES_PATH);
        let body = keyless::hashedrekord(digest, &signature, &leaf_pem);
        let reply = post(&self.client, "Rekor", &entries_url, body, None).await?;
        let evidence = evidence(digest, &signature, &leaf_pem, &reply)
            .map_err(|e| refused("Rekor", &self.rekor, e.to_string()))?;
        let identity = Identity::Exact(token.identity().to_owned());
        let policy = Policy::one(identity, Issuer::Exact(token.issuer.clone()));
        let rule = policy.rule_for("**").expect("the one rule covers all");
        let verified =
            rekor::verify_digest(&self.root, rule, digest, &evidence, now()).map_err(|f| {
                SignError::Unverifiable {
                    iso: iso.to_owned(),
                    reason: format!("fails the {} check: {}", f.step.name(), f.reason),
                }
            })?;
        super::sign::write_beside(iso, super::sign::BUNDLE_SUFFIX, &evidence.bundle())?;
        tracing::info!(
            "signed {} keyless as {} via {}, logged at index {} of {} ({:.3} s)",
            iso.display(),
            verified.identity,
            verified.issuer,
            evidence.log_index,
            crate::fetch::redact(&self.rekor),
            start.elapsed().as_secs_f64()
        );
        Ok(Signed {
            signer: format!("{} via {}", verified.identity, verified.issuer),
            when: Some(verified.integrated_time),
        })
    }
}

/// The largest identity token file read: a JWT is a few KiB.
const MAX_TOKEN_SIZE: u64 = 64 * 1024;

/// The identity token: `given` (flag or variable; blank is none), else the file's; read, its
/// claims parsed and its expiry checked (Fulcio at `fulcio` checks the rest). The token never
/// appears in an error.
fn read_token(
    given: &Option<String>,
    file: Option<&Path>,
    fulcio: &str,
) -> Result<IdentityToken, SignError> {
    let flags = |message: String, hint: &str| SignError::Flags {
        message,
        hint: Some(hint.to_owned()),
    };
    let given = &given.clone().filter(|t| !t.trim().is_empty());
    let from_file = match (given, file) {
        (Some(_), _) | (None, None) => None,
        (None, Some(path)) => Some(
            crate::input::read_private_text(path, MAX_TOKEN_SIZE).map_err(|source| {
                SignError::Unreadable {
                    what: "the identity token file",
                    path: path.to_owned(),
                    source,
                }
            })?,
        ),
    };
    let raw = given.as_deref().or(from_file.as_deref());
    let Some(raw) = raw.filter(|t| !t.trim().is_empty()) else {
        return Err(flags(
            match file {
                Some(path) => format!(
                    "keyless signing needs an OIDC identity token, and {} is empty",
                    path.display()
                ),
                None => "keyless signing needs an OIDC identity token, and none was given".into(),
            },
            "pass --identity-token or set SIGSTORE_ID_TOKEN (in GitHub Actions, request one \
             with the audience sigstore; see docs/guide/signatures.md)",
        ));
    };
    IdentityToken::parse(raw, now()).map_err(|e| {
        let origin = file
            .filter(|_| given.is_none())
            .map_or_else(String::new, |p| format!(" of {}", p.display()));
        flags(
            format!(
                "the identity token{origin} for Fulcio at {}: {e}",
                crate::fetch::redact(fulcio)
            ),
            "pass a fresh OIDC identity token (audience sigstore) with --identity-token or \
             SIGSTORE_ID_TOKEN, or have the token helper refresh the identity token file",
        )
    })
}

/// The signing configuration `--signing-config` names, read; none: no service named.
fn configured(opts: &KeylessOptions) -> Result<keyless::Services, SignError> {
    match &opts.signing_config {
        Some(path) => read_signing_config(path),
        None => Ok(keyless::Services::default()),
    }
}

/// The Rekor v1 signatures are entered in, keyless or `--tlog`: `--rekor-url`, else the signing
/// configuration's, else the configuration file's `rekor-url:`, else the public-good one.
fn rekor_url(
    opts: &KeylessOptions,
    configured: keyless::Services,
    settings: &Defaults<'_>,
) -> String {
    (opts.rekor_url.clone())
        .or(configured.rekor)
        .or_else(|| settings.rekor_url.map(str::to_owned))
        .unwrap_or_else(|| keyless::PUBLIC_GOOD_REKOR.to_owned())
}

/// The trusted root what the services answer is checked against before a bundle is written
/// (read quietly: a build named it already), and the HTTP client that follows no redirect.
fn root_and_client(
    opts: &KeylessOptions,
    settings: &Defaults<'_>,
) -> Result<(TrustedRoot, reqwest::Client), SignError> {
    let flags = |message: String, hint: &str| SignError::Flags {
        message,
        hint: Some(hint.to_owned()),
    };
    let (root, _, origin) =
        super::read_trusted_root(opts.trusted_root.as_deref(), settings.trusted_root).map_err(
            |e| {
                flags(
                    e.to_string(),
                    "pass --trusted-root with a trusted_root.json",
                )
            },
        )?;
    tracing::debug!("signatures made are checked against the trusted root {origin}");
    let client = crate::fetch::build_client_without_redirects(settings.http)
        .map_err(|e| flags(e.to_string(), "check the HTTP settings (--ca-file)"))?;
    Ok((root, client))
}

/// POSTs `body` (JSON) to `url`, with the bearer `token` when given (Fulcio's, never Rekor's);
/// the answer's body on a 2xx, else the status and what the service said.
async fn post(
    client: &reqwest::Client,
    service: &'static str,
    url: &str,
    body: Vec<u8>,
    token: Option<&str>,
) -> Result<Vec<u8>, SignError> {
    let mut request = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    send(request, service, url).await?.ok(service, url)
}

/// What a service answered: its status, its `Location` (Rekor names an entry it already holds
/// there) and its body, read within [`keyless::MAX_REPLY`].
struct Answer {
    status: u16,
    location: Option<String>,
    body: Vec<u8>,
}

impl Answer {
    /// The body of a 2xx; else the status and what the service said.
    fn ok(self, service: &'static str, url: &str) -> Result<Vec<u8>, SignError> {
        match (200..300).contains(&self.status) {
            true => Ok(self.body),
            false => Err(SignError::Service {
                service,
                url: crate::fetch::redact(url),
                status: Some(self.status),
                reason: said(&self.body),
            }),
        }
    }
}

/// Sends `request` (JSON accepted) and reads the answer.
async fn send(
    request: reqwest::RequestBuilder,
    service: &'static str,
    url: &str,
) -> Result<Answer, SignError> {
    let failed = |status: Option<u16>, reason: String| SignError::Service {
        service,
        url: crate::fetch::redact(url),
        status,
        reason,
    };
    let mut response = (request.header(reqwest::header::ACCEPT, "application/json"))
        .send()
        .await
        .map_err(|e| failed(None, crate::failure::one_line(&e.without_url())))?;
    let status = response.status().as_u16();
    let location = (response.headers().get(reqwest::header::LOCATION))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut body = Vec::new();
    while let Some(chunk) =
        (response.chunk().await).map_err(|e| failed(Some(status), e.without_url().to_string()))?
    {
        if (body.len() + chunk.len()) as u64 > keyless::MAX_REPLY {
            return Err(failed(
                Some(status),
                format!("an answer larger than {} bytes", keyless::MAX_REPLY),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer {
        status,
        location,
        body,
    })
}

/// Rekor, ready to take key signatures (`--sign-key … --tlog`): where it is, the root its
/// answers are checked against, the HTTP client. No token: Rekor asks for none.
#[derive(Debug)]
pub struct KeyLog {
    rekor: String,
    root: TrustedRoot,
    client: reqwest::Client,
}

impl KeyLog {
    /// Picks the Rekor as keyless signing picks it (`--rekor-url`, the signing configuration,
    /// the configuration's `rekor-url:`, the public-good one); with `--offline`, a usage error.
    pub fn new(opts: &KeylessOptions, settings: &Defaults<'_>) -> Result<Self, SignError> {
        if settings.http.offline {
            return Err(SignError::Flags {
                message: "--tlog enters each signature in Rekor, and --offline forbids the \
                          network"
                    .into(),
                hint: Some(
                    "leave --tlog out to sign offline (a key signature needs no log), or leave \
                     --offline out"
                        .into(),
                ),
            });
        }
        let rekor = rekor_url(opts, configured(opts)?, settings);
        let (root, client) = root_and_client(opts, settings)?;
        tracing::info!(
            "key signatures are entered in Rekor {}",
            crate::fetch::redact(&rekor)
        );
        Ok(Self {
            rekor: rekor.trim_end_matches('/').to_owned(),
            root,
            client,
        })
    }

    /// Signs the ISO at `iso` whose SHA-256 is `digest` with `key`, enters the signature in
    /// Rekor (a `hashedrekord` with the public key), checks the entry against the trusted root,
    /// and writes `<iso>.sig` and `<iso>.sigstore.json` (the entry in it), each whole or not at
    /// all.
    pub async fn sign_iso(
        &self,
        iso: &Path,
        digest: &[u8; 32],
        key: &SigningKey,
    ) -> Result<(), SignError> {
        let start = std::time::Instant::now();
        let signature = key.sign_digest(digest);
        let url = format!("{}{}", self.rekor, keyless::REKOR_ENTRIES_PATH);
        let body = keyless::hashedrekord(digest, &signature, &key.public_pem());
        let reply = self.enter(&url, body).await?;
        let spki = key.public_spki();
        let entry =
            rekor::key_entry(&reply, digest, &signature, spki).map_err(|e| SignError::Service {
                service: "Rekor",
                url: crate::fetch::redact(&self.rekor),
                status: None,
                reason: e.to_string(),
            })?;
        rekor::verify_key_entry(&self.root, spki, digest, &signature, &entry).map_err(|f| {
            SignError::Unverifiable {
                iso: iso.to_owned(),
                reason: format!(
                    "its log entry fails the {} check: {}",
                    f.step.name(),
                    f.reason
                ),
            }
        })?;
        super::sign::write_signature(iso, digest, &signature, spki, Some(&entry))?;
        tracing::info!(
            "signed {} with the key {}, logged at index {} of {} ({:.3} s)",
            iso.display(),
            cks_iso_sigstore::keyed::fingerprint(spki),
            entry.log_index,
            crate::fetch::redact(&self.rekor),
            start.elapsed().as_secs_f64()
        );
        Ok(())
    }
}

/// A refusal's reason as the service said it (`message` of its JSON error), cut short.
fn said(body: &[u8]) -> String {
    let message = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    let message: String = message
        .chars()
        .filter(|c| !c.is_control())
        .take(300)
        .collect();
    match message.is_empty() {
        true => "no reason given".into(),
        false => message,
    }
}

/// The evidence of Rekor's answer to the entry just proposed: the entry must log this digest,
/// signature and certificate.
fn evidence(
    digest: &[u8; 32],
    signature: &[u8],
    leaf_pem: &str,
    reply: &[u8],
) -> Result<Evidence, Invalid> {
    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let (sig, cert) = (b64(signature), b64(leaf_pem.as_bytes()));
    let entries = rekor::entries(reply).map_err(|e| Invalid::from(format!("its answer: {e}")))?;
    let entry = entries
        .values()
        .find(|e| Evidence::logged_by(digest, sig.as_bytes(), cert.as_bytes(), e))
        .ok_or_else(|| Invalid::from("its answer holds no entry of this signature"))?;
    Evidence::from_rekor(digest, sig.as_bytes(), cert.as_bytes(), entry)
        .map_err(|e| Invalid::from(format!("its entry: {e}")))
}

fn read_signing_config(path: &Path) -> Result<keyless::Services, SignError> {
    let text = crate::input::read_private_text(path, 1024 * 1024).map_err(|source| {
        SignError::Unreadable {
            what: "the signing config",
            path: path.to_owned(),
            source,
        }
    })?;
    keyless::signing_config(text.as_bytes(), now()).map_err(|e| SignError::Flags {
        message: format!("the signing config {}: {e}", path.display()),
        hint: Some(
            "pass a Sigstore signing config v0.2 (`signing_config.v0.2.json` of a TUF \
             repository), or name the services with --fulcio-url and --rekor-url"
                .into(),
        ),
    })
}

impl KeyLog {
    /// Proposes the entry `body` at `url`: Rekor's answer, or, when it holds the entry already
    /// (409: a key signature is deterministic, so signing the same ISO again proposes the same
    /// entry), the entry it names in `Location`, fetched from this Rekor by its UUID.
    async fn enter(&self, url: &str, body: Vec<u8>) -> Result<Vec<u8>, SignError> {
        let request = (self.client.post(url))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        let answer = send(request, "Rekor", url).await?;
        let uuid = (answer.location.as_deref())
            .and_then(|l| l.rsplit('/').next())
            .filter(|u| !u.is_empty() && u.bytes().all(|b| b.is_ascii_hexdigit()))
            .map(str::to_owned);
        let (409, Some(uuid)) = (answer.status, uuid) else {
            return answer.ok("Rekor", url);
        };
        tracing::info!("Rekor holds this signature already, as entry {uuid}");
        let url = format!("{}{}/{uuid}", self.rekor, keyless::REKOR_ENTRIES_PATH);
        send(self.client.get(&url), "Rekor", &url)
            .await?
            .ok("Rekor", &url)
    }
}

/// Signs ISOs already written with `key`, each entered in `log` (`cks-iso sign --key --tlog`):
/// each read once to be hashed.
pub fn sign_files_logged(
    isos: &[PathBuf],
    key: &SigningKey,
    log: &KeyLog,
    runtime: &tokio::runtime::Runtime,
) -> Result<(), SignError> {
    for iso in isos {
        let digest = super::sign::hash(iso)?;
        runtime.block_on(log.sign_iso(iso, &digest, key))?;
    }
    Ok(())
}

/// Signs ISOs already written (`cks-iso sign --identity-token`): each read once to be hashed.
pub fn sign_files(
    isos: &[PathBuf],
    signer: &KeylessSigner,
    runtime: &tokio::runtime::Runtime,
) -> Result<(), SignError> {
    for iso in isos {
        let digest = super::sign::hash(iso)?;
        runtime.block_on(signer.sign_iso(iso, &digest))?;
    }
    Ok(())
}
