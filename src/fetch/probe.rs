//! A request whose answer is its status and headers, not a body: `HEAD` on a manifest to learn
//! its digest without spending a Docker Hub pull, and `GET /v2/` to read a registry's
//! `WWW-Authenticate` challenge. Transient failures are retried like downloads; any final status
//! (401 and 404 included) is returned for the caller to judge.

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};

use super::retry::{self, Attempt};
use super::{Download, FetchError};

/// The final status and headers of `method url`.
#[derive(Debug, Clone)]
pub struct Probed {
    /// The status of the last response.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
}

/// Sends `method url` with `headers`, retrying connection errors and 408/429/5xx (honouring
/// `Retry-After`), and returns the first other answer. The body is not read.
pub async fn probe(
    download: &Download<'_>,
    method: Method,
    url: &str,
    headers: &HeaderMap,
) -> Result<Probed, FetchError> {
    download.admit(url)?;
    let method = &method;
    retry::retry_attempts(download.retry, |attempt| async move {
        let sent = download
            .client
            .request(method.clone(), url)
            .headers(headers.clone())
            .send()
            .await;
        match sent {
            Ok(response) if !retry::retryable_status(response.status()) => Ok(Probed {
                status: response.status(),
                headers: response.headers().clone(),
            }),
            Ok(response) => Err(Attempt::again(
                FetchError::Status {
                    method: method.clone(),
                    url: url.to_owned(),
                    status: response.status().as_u16(),
                    attempts: attempt,
                },
                retry::retry_after(response.headers()),
            )),
            Err(source) if retry::is_certificate_error(&source) => {
                Err(Attempt::last(FetchError::Certificate {
                    url: url.to_owned(),
                    source: source.without_url(),
                }))
            }
            Err(source) => {
                let retryable = retry::retryable_error(&source);
                let err = FetchError::Transport {
                    method: method.clone(),
                    url: url.to_owned(),
                    attempts: attempt,
                    source: source.without_url(),
                };
                Err(match retryable {
                    true => Attempt::again(err, None),
                    false => Attempt::last(err),
                })
            }
        }
    })
    .await
}
