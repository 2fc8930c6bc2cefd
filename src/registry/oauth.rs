//! Docker's OAuth2 flow for identity-token logins: `docker login` against some registries stores
//! an `identitytoken` (a refresh token) instead of a password. It is never sent as Basic; like
//! Docker, we POST it to the challenge's realm (`grant_type=refresh_token`, `client_id=docker`)
//! and use the `access_token` of the reply.
//!
//! The refresh token goes to that realm and nowhere else: the exchange follows no redirect by
//! itself (reqwest, like Go's client, would carry a POST body along a 307 or 308 to any host).
//! A redirect is followed only on the realm's own host and port, and never from HTTPS to plain
//! HTTP; anything else fails naming where it led.

use super::{Endpoint, MAX_TOKEN_SIZE, Registry, RegistryError};
use crate::fetch;
use crate::image::Reference;
use serde::Deserialize;

/// Redirects on the realm's own host an identity token's exchange follows.
const MAX_TOKEN_REDIRECTS: u32 = 5;

/// The token request's body: application/x-www-form-urlencoded, as a URL's query encodes it.
/// The scopes are the GET request's (`url`'s `scope` pairs: the repository with the actions the
/// caller needs, `pull,push` for a push, and a mount's source), in one `scope` field separated
/// by spaces, as distribution's OAuth2 spec says and containerd's client sends them
/// (`remotes/docker/auth/fetch.go`, `FetchTokenWithOAuth`); a URL with none asks
/// `pull` on `name`.
fn form(url: &reqwest::Url, name: &str, service: Option<&str>, refresh: &str) -> Vec<u8> {
    let scopes: Vec<String> = (url.query_pairs())
        .filter(|(k, _)| k == "scope")
        .map(|(_, v)| v.into_owned())
        .collect();
    let scope = match scopes.is_empty() {
        true => format!("repository:{name}:pull"),
        false => scopes.join(" "),
    };
    let mut form = url.clone();
    form.query_pairs_mut()
        .clear()
        .append_pair("grant_type", "refresh_token")
        .append_pair("refresh_token", refresh)
        .append_pair("client_id", "docker")
        .append_pair("service", service.unwrap_or_default())
        .append_pair("scope", &scope);
    form.query().unwrap_or_default().as_bytes().to_vec()
}

/// A token POST that failed: a refusal of the identity token, or a failed fetch.
fn post_failed(err: fetch::FetchError, reference: &Reference, token_host: &str) -> RegistryError {
    match err.status() {
        Some(status @ (400 | 401 | 403)) => RegistryError::Auth {
            reference: reference.to_string(),
            registry: token_host.to_owned(),
            reason: format!("its token service answered HTTP {status} to the identity token"),
        },
        _ => RegistryError::Fetch {
            reference: reference.to_string(),
            what: "a token for the identity token".into(),
            source: err,
        },
    }
}

impl Registry {
    /// A token for `ep.name` from `realm` (`url`, its query holding `service` and the scopes)
    /// in exchange for the identity token `refresh`.
    pub(super) async fn oauth_token(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        url: reqwest::Url,
        service: Option<&str>,
        refresh: &str,
    ) -> Result<String, RegistryError> {
        let mut realm = url.clone();
        realm.set_query(None);
        let body = form(&url, &ep.name, service, refresh);
        let token_host = fetch::host_port(&realm);
        let mut target = realm.clone();
        let mut hops = 0;
        let bytes = loop {
            let posted = fetch::post_hop(
                &self.token_download(),
                target.as_str(),
                "application/x-www-form-urlencoded",
                &body,
                MAX_TOKEN_SIZE,
            )
            .await
            .map_err(|err| post_failed(err, reference, &token_host))?;
            let (status, location) = match posted {
                fetch::Posted::Reply(bytes) => break bytes,
                fetch::Posted::Redirect { status, location } => (status, location),
            };
            hops += 1;
            let next = target.join(&location).ok();
            let refused = |reason: String| RegistryError::TokenRedirect {
                reference: reference.to_string(),
                registry: token_host.clone(),
                status,
                location: fetch::redact(&location),
                reason,
            };
            let Some(next) = next else {
                return Err(refused("it is not a URL".into()));
            };
            if let Some(reason) = refusal(&realm, &next) {
                return Err(refused(reason));
            }
            if hops > MAX_TOKEN_REDIRECTS {
                return Err(refused(format!(
                    "more than {MAX_TOKEN_REDIRECTS} redirects"
                )));
            }
            tracing::debug!(
                "the token service {token_host} redirects the identity token exchange (HTTP \
                 {status}) to {}",
                fetch::redact(next.as_str())
            );
            target = next;
        };
        #[derive(Deserialize)]
        struct Reply {
            access_token: Option<String>,
        }
        let reply: Reply = serde_json::from_slice(&bytes).map_err(|_| RegistryError::Protocol {
            reference: reference.to_string(),
            registry: token_host.clone(),
            reason: "the OAuth2 token reply is not JSON".into(),
        })?;
        tracing::debug!(
            "pull token for {} from {token_host} by identity token",
            ep.name
        );
        reply
            .access_token
            .filter(|t| !t.is_empty())
            .ok_or_else(|| RegistryError::Protocol {
                reference: reference.to_string(),
                registry: token_host,
                reason: "the OAuth2 token reply has no `access_token`".into(),
            })
    }
}

/// Why an identity token's exchange at `realm` may not follow a redirect to `next`: another
/// host or port, or plain HTTP where the realm was HTTPS. `None` when it may.
fn refusal(realm: &reqwest::Url, next: &reqwest::Url) -> Option<String> {
    if fetch::host_port(next) != fetch::host_port(realm) {
        return Some(format!(
            "it leads to another host, {}",
            fetch::host_port(next)
        ));
    }
    if next.scheme() != "https" && next.scheme() != realm.scheme() {
        return Some(format!(
            "it leads from {} to {}",
            realm.scheme(),
            next.scheme()
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::refusal;

    #[test]
    fn the_refresh_token_stays_on_the_realms_host_and_never_drops_to_plain_http() {
        let url = |u: &str| reqwest::Url::parse(u).unwrap();
        let https = url("https://auth.example/token");
        assert_eq!(refusal(&https, &url("https://auth.example/v2/token")), None);
        assert!(
            refusal(&https, &url("http://auth.example/token"))
                .unwrap()
                .contains("from https to http")
        );
        for other in [
            "https://elsewhere.example/token",
            "https://auth.example:8443/token",
            "https://sub.auth.example/token",
        ] {
            assert!(
                refusal(&https, &url(other))
                    .unwrap()
                    .contains("another host"),
                "{other}"
            );
        }
        // A realm on plain HTTP (allowed with --insecure-registry) may stay there, or go to HTTPS
        // on its host; another plain-HTTP host is refused like any other.
        let plain = url("http://10.0.0.5:5000/token");
        assert_eq!(refusal(&plain, &url("http://10.0.0.5:5000/moved")), None);
        assert!(refusal(&plain, &url("http://10.0.0.6:5000/token")).is_some());
    }
}
