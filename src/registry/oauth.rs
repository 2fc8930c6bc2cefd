//! Docker's OAuth2 flow for identity-token logins: `docker login` against some registries stores
//! an `identitytoken` (a refresh token) instead of a password. It is never sent as Basic; like
//! Docker, we POST it to the challenge's realm (`grant_type=refresh_token`, `client_id=docker`)
//! and use the `access_token` of the reply.

use super::*;

impl Registry {
    /// A pull token for `ep.name` from `realm` (`url`, its query holding `service` and `scope`)
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
        // application/x-www-form-urlencoded, as a URL's query encodes it.
        let mut form = url.clone();
        form.query_pairs_mut()
            .clear()
            .append_pair("grant_type", "refresh_token")
            .append_pair("refresh_token", refresh)
            .append_pair("client_id", "docker")
            .append_pair("service", service.unwrap_or_default())
            .append_pair("scope", &format!("repository:{}:pull", ep.name));
        let body = form.query().unwrap_or_default().as_bytes().to_vec();
        let token_host = match realm.port() {
            Some(port) => format!("{}:{port}", realm.host_str().unwrap_or_default()),
            None => realm.host_str().unwrap_or_default().to_owned(),
        };
        let bytes = fetch::post(
            &self.download(&()),
            realm.as_str(),
            "application/x-www-form-urlencoded",
            &body,
            MAX_TOKEN_SIZE,
        )
        .await
        .map_err(|err| match err.status() {
            Some(status @ (400 | 401 | 403)) => RegistryError::Auth {
                reference: reference.to_string(),
                registry: token_host.clone(),
                reason: format!("its token service answered HTTP {status} to the identity token"),
            },
            _ => RegistryError::Fetch {
                reference: reference.to_string(),
                what: "a pull token for the identity token".into(),
                source: err,
            },
        })?;
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
