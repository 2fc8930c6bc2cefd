//! POSTs with a small reply (a Rekor index query, an OAuth2 token): retried as a GET is, read
//! into memory within a cap. Apart from the GET's resume and completeness machinery, which a
//! POST has no use for.

use reqwest::{Method, StatusCode};

use super::FetchError;
use super::download::Download;
use super::retry;

/// POSTs the JSON `body` to `url` and reads a small reply (a Rekor index query), retrying
/// connection failures and transient statuses like a GET.
pub async fn post_json(
    download: &Download<'_>,
    url: &str,
    body: &[u8],
    limit: u64,
) -> Result<Vec<u8>, FetchError> {
    post(download, url, "application/json", body, limit).await
}

/// POSTs `body` of `content_type` to `url` and reads a small reply, as [`post_json`] does.
pub async fn post(
    download: &Download<'_>,
    url: &str,
    content_type: &str,
    body: &[u8],
    limit: u64,
) -> Result<Vec<u8>, FetchError> {
    match post_hop(download, url, content_type, body, limit).await? {
        Posted::Reply(bytes) => Ok(bytes),
        // A redirect the client did not follow: an error status like any other.
        Posted::Redirect { status, .. } => Err(FetchError::Status {
            method: Method::POST,
            url: url.to_owned(),
            status,
            attempts: 1,
        }),
    }
}

/// How a POST ended.
#[derive(Debug)]
pub enum Posted {
    /// A success status, with its body.
    Reply(Vec<u8>),
    /// A redirect the client did not follow (one built with
    /// [`super::build_client_without_redirects`]): where it leads, for the caller to judge.
    Redirect {
        /// The 3xx status.
        status: u16,
        /// The `Location` header, as sent (possibly relative).
        location: String,
    },
}

/// POSTs `body` to `url` like [`post`], but hands a redirect the client returned back to the
/// caller instead of failing on it.
pub async fn post_hop(
    download: &Download<'_>,
    url: &str,
    content_type: &str,
    body: &[u8],
    limit: u64,
) -> Result<Posted, FetchError> {
    download.admit(url)?;
    let attempts = std::cell::Cell::new(0u32);
    let once = || async {
        attempts.set(attempts.get() + 1);
        let attempt = attempts.get();
        let transport = |source: reqwest::Error| FetchError::Transport {
            method: Method::POST,
            url: url.to_owned(),
            attempts: attempt,
            source: source.without_url(),
        };
        let mut response = download
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body.to_vec())
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok());
        if status.is_redirection()
            && let Some(location) = location
        {
            return Ok(Posted::Redirect {
                status: status.as_u16(),
                location: location.to_owned(),
            });
        }
        if !status.is_success() {
            return Err(FetchError::Status {
                method: Method::POST,
                url: url.to_owned(),
                status: status.as_u16(),
                attempts: attempt,
            });
        }
        let mut buf = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if (buf.len() + chunk.len()) as u64 > limit {
                return Err(FetchError::TooLarge {
                    url: url.to_owned(),
                    limit,
                });
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(Posted::Reply(buf))
    };
    retry::retrying(download.retry, once, |err: &FetchError| match err {
        FetchError::Status { status, .. }
            if retry::retryable_status(StatusCode::from_u16(*status).unwrap_or_default()) =>
        {
            Some(None)
        }
        FetchError::Transport { .. } => Some(None),
        _ => None,
    })
    .await
}
