//! The auth flow of a request: the registry's challenge (`GET /v2/`, once per host), a bearer
//! token per repository from the challenge's realm (renewed once on a 401), or basic credentials
//! from the Docker config; `check_access` for `doctor`. Parsing challenges and credential files is
//! `auth`'s.

use super::{
    Challenge, Credentials, Endpoint, Failed, HostState, MAX_TOKEN_SIZE, Registry, RegistryError,
    once,
};
use crate::fetch;
use crate::image::Reference;
use reqwest::Method;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use serde::Deserialize;

/// A token GET that failed: a refusal (HTTP 401 or 403), or a failed fetch.
fn token_get_failed(
    err: fetch::FetchError,
    reference: &Reference,
    token_host: &str,
) -> RegistryError {
    match err.status() {
        Some(status @ (401 | 403)) => RegistryError::Auth {
            reference: reference.to_string(),
            registry: token_host.to_owned(),
            reason: format!("its token service answered HTTP {status}"),
        },
        _ => RegistryError::Fetch {
            reference: reference.to_string(),
            what: "a pull token".into(),
            source: err,
        },
    }
}

impl Registry {
    /// The `Authorization` header for requests on `ep`, fetching a fresh token when `renew`.
    pub(super) async fn auth_headers(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        renew: bool,
    ) -> Result<HeaderMap, RegistryError> {
        let host = self.host(ep);
        let challenge = match once(&host.challenge, ep.host(), self.ping(ep, reference)).await {
            Ok(challenge) => challenge,
            Err(Failed::Here(err)) => return Err(err),
            Err(Failed::Earlier(first)) => {
                return Err(RegistryError::Unreachable {
                    reference: reference.to_string(),
                    registry: ep.host().to_owned(),
                    reason: first.reason,
                    hint: first.hint,
                });
            }
        };
        let value = self
            .authorization(&host, ep, reference, challenge, renew)
            .await?;
        match value {
            Some(value) => authorization_header(&value, ep, reference, "the token or credentials"),
            None => Ok(HeaderMap::new()),
        }
    }

    /// The `Authorization` value `challenge` asks for on `ep`: none when it asks for none (or for
    /// Basic and no credentials are configured), the Basic credentials, or a bearer token for the
    /// repository (the cached one unless `renew`). Pulls and `doctor` ask the same way.
    async fn authorization(
        &self,
        host: &HostState,
        ep: &Endpoint,
        reference: &Reference,
        challenge: &Challenge,
        renew: bool,
    ) -> Result<Option<String>, RegistryError> {
        Ok(Some(match challenge {
            Challenge::None => return Ok(None),
            Challenge::Basic => match self.credentials(host, ep).await? {
                Some(creds) if creds.identity => {
                    withhold_identity(host, ep, &creds);
                    return Ok(None);
                }
                Some(creds) => creds.basic(),
                None => return Ok(None),
            },
            Challenge::Bearer { realm, service } => {
                let cached = host
                    .tokens
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&ep.token_key())
                    .cloned();
                let token = match cached.filter(|_| !renew) {
                    Some(token) => token,
                    None => {
                        let token = self
                            .token(host, ep, reference, realm, service.as_deref())
                            .await?;
                        host.tokens
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(ep.token_key(), token.clone());
                        token
                    }
                };
                format!("Bearer {token}")
            }
        }))
    }

    pub(super) async fn credentials(
        &self,
        host: &HostState,
        ep: &Endpoint,
    ) -> Result<Option<Credentials>, RegistryError> {
        let cell = host
            .credentials
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(ep.name.clone())
            .or_default()
            .clone();
        cell.get_or_try_init(|| async { self.config.auth.lookup(ep.host(), &ep.name) })
            .await
            .cloned()
    }

    /// Checks, as a pull of `reference` would, that its registry (or mirror) answers `GET /v2/`
    /// and, when it asks for authentication, that the configured credentials (or none, for an
    /// anonymous token) get through: a pull token is obtained, or Basic credentials are
    /// accepted. Returns what was found, for `cks-iso doctor`.
    pub async fn check_access(&self, reference: &Reference) -> Result<String, RegistryError> {
        let ep = self.config.routes.endpoint(reference);
        let host = self.host(&ep);
        let challenge = self.ping(&ep, reference).await?;
        let creds = self.credentials(&host, &ep).await?;
        let who = match &creds {
            Some(creds) => format!("with the configured credentials ({})", creds.source),
            None => "anonymously".to_owned(),
        };
        match challenge {
            Challenge::None => Ok(format!(
                "{} answers; no authentication asked",
                ep.ping_url()
            )),
            Challenge::Basic => {
                let Some(creds) = creds else {
                    return Err(RegistryError::Auth {
                        reference: reference.to_string(),
                        registry: ep.host().to_owned(),
                        reason:
                            "it asks for Basic authentication and no credentials are configured"
                                .into(),
                    });
                };
                if creds.identity {
                    return Err(RegistryError::Auth {
                        reference: reference.to_string(),
                        registry: ep.host().to_owned(),
                        reason: format!(
                            "it asks for Basic authentication, and the configured credentials \
                             ({}) are an identity token, which is exchanged only with a token \
                             service a Bearer challenge names, never sent as a password",
                            creds.source
                        ),
                    });
                }
                let headers =
                    authorization_header(&creds.basic(), &ep, reference, "the credentials")?;
                let probed = self.probe_root(&ep, reference, &headers).await?;
                match probed.status.as_u16() {
                    401 | 403 => Err(RegistryError::Auth {
                        reference: reference.to_string(),
                        registry: ep.host().to_owned(),
                        reason: format!(
                            "it refused the configured credentials (HTTP {})",
                            probed.status.as_u16()
                        ),
                    }),
                    _ => Ok(format!(
                        "{} answers; Basic authentication accepted {who}",
                        ep.ping_url()
                    )),
                }
            }
            bearer @ Challenge::Bearer { .. } => {
                self.authorization(&host, &ep, reference, &bearer, true)
                    .await?;
                Ok(format!(
                    "{} answers; pull token obtained {who}",
                    ep.ping_url()
                ))
            }
        }
    }

    /// `GET /v2/` with `headers`, its status and headers (the body is not read).
    async fn probe_root(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        headers: &HeaderMap,
    ) -> Result<fetch::Probed, RegistryError> {
        fetch::probe(&self.download(&()), Method::GET, &ep.ping_url(), headers)
            .await
            .map_err(|source| RegistryError::Fetch {
                reference: reference.to_string(),
                what: "the registry's API root".into(),
                source,
            })
    }

    /// `GET /v2/`: how the registry wants to be authenticated.
    pub(super) async fn ping(
        &self,
        ep: &Endpoint,
        reference: &Reference,
    ) -> Result<Challenge, RegistryError> {
        let probed = self.probe_root(ep, reference, &HeaderMap::new()).await?;
        if probed.status.as_u16() != 401 {
            return Ok(Challenge::None);
        }
        let challenge = probed
            .headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(Challenge::parse);
        challenge.ok_or_else(|| RegistryError::Protocol {
            reference: reference.to_string(),
            registry: ep.host().to_owned(),
            reason: "401 on /v2/ without a Basic or Bearer challenge".into(),
        })
    }

    /// The token request's URL: `realm` with the `service` and the scope for `ep.name`.
    fn token_url(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        realm: &str,
        service: Option<&str>,
    ) -> Result<reqwest::Url, RegistryError> {
        let mut url = reqwest::Url::parse(realm).map_err(|_| RegistryError::Protocol {
            reference: reference.to_string(),
            registry: ep.host().to_owned(),
            reason: format!("the token realm {realm:?} is not a URL"),
        })?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &format!("repository:{}:{}", ep.name, self.actions));
            if let Some(from) = &ep.mount_from {
                query.append_pair("scope", &format!("repository:{from}:pull"));
            }
        }
        Ok(url)
    }

    /// An anonymous (or, with credentials, authenticated) pull token for `ep.name`.
    pub(super) async fn token(
        &self,
        host: &HostState,
        ep: &Endpoint,
        reference: &Reference,
        realm: &str,
        service: Option<&str>,
    ) -> Result<String, RegistryError> {
        let url = self.token_url(ep, reference, realm, service)?;
        // host[:port], named in full in messages.
        let token_host = fetch::host_port(&url);
        if token_host != ep.host() {
            tracing::debug!(
                "{} sends token requests to another host, {token_host}",
                ep.host()
            );
        }
        let headers = match self.credentials(host, ep).await? {
            Some(_) if !self.may_go_plain(&url, ep) => {
                return Err(RegistryError::PlainHttp {
                    reference: reference.to_string(),
                    registry: ep.host().to_owned(),
                    url: fetch::redact(realm),
                });
            }
            Some(creds) if creds.identity => {
                return self
                    .oauth_token(ep, reference, url, service, &creds.password)
                    .await;
            }
            Some(creds) => authorization_header(&creds.basic(), ep, reference, "the credentials")?,
            None => HeaderMap::new(),
        };
        #[derive(Deserialize)]
        struct Reply {
            token: Option<String>,
            access_token: Option<String>,
        }
        let mut attempt = 1;
        let reply: Reply = loop {
            let (bytes, _) =
                fetch::get_bytes(&self.download(&()), url.as_str(), &headers, MAX_TOKEN_SIZE)
                    .await
                    .map_err(|err| token_get_failed(err, reference, &token_host))?;
            match serde_json::from_slice(&bytes) {
                Ok(reply) => break reply,
                // Damaged on the way until proven otherwise.
                Err(_) if attempt < self.retry.attempts => {
                    tracing::debug!("the token reply from {token_host} is not JSON; asking again");
                    tokio::time::sleep(self.retry.delay(attempt, None)).await;
                    attempt += 1;
                }
                Err(_) => {
                    return Err(RegistryError::Protocol {
                        reference: reference.to_string(),
                        registry: token_host,
                        reason: "the token reply is not JSON".into(),
                    });
                }
            }
        };
        reply
            .token
            .or(reply.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| RegistryError::Protocol {
                reference: reference.to_string(),
                registry: token_host,
                reason: "the token reply has neither `token` nor `access_token`".into(),
            })
    }
}

impl Registry {
    /// Whether credentials may go to `url`: over HTTPS, or over plain HTTP to a host the user
    /// chose plain HTTP for (`--insecure-registry`, or the `http://` endpoint itself).
    fn may_go_plain(&self, url: &reqwest::Url, ep: &Endpoint) -> bool {
        let target = fetch::host_port(url);
        url.scheme() == "https"
            || self.config.routes.insecure.contains(&target)
            || (ep.base.starts_with("http://") && target == ep.host())
    }
}

/// Warns, once per registry, that the identity token `creds` is not sent to the Basic registry
/// `ep`. An identity token is an OAuth2 refresh token for a token service: Docker sends its
/// (empty) password to a Basic registry and containerd sends nothing when the user name is empty;
/// neither sends the token itself, and neither do we.
fn withhold_identity(host: &HostState, ep: &Endpoint, creds: &Credentials) {
    if !host
        .identity_withheld
        .swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        tracing::warn!(
            "{} asks for Basic authentication; the identity token from {} is exchanged only with \
             a token service and never sent as a password, so requests to it go without \
             credentials",
            ep.host(),
            creds.source
        );
    }
}

/// `Authorization: <value>`, marked sensitive so that no log shows it; `what` names the value in
/// the error when it cannot be a header.
fn authorization_header(
    value: &str,
    ep: &Endpoint,
    reference: &Reference,
    what: &str,
) -> Result<HeaderMap, RegistryError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| RegistryError::Protocol {
        reference: reference.to_string(),
        registry: ep.host().to_owned(),
        reason: format!("{what} are not a valid header value"),
    })?;
    value.set_sensitive(true);
    Ok(HeaderMap::from_iter([(AUTHORIZATION, value)]))
}
