//! Uploads into a registry the operator runs (`cks-iso push`): blobs and manifests from the cache,
//! byte for byte, so that every digest — and every signature made over one — stays valid there.
//!
//! The distribution upload protocol, spoken as go-containerregistry's `remote.Write` speaks it:
//!
//! - `HEAD` on each blob first: a blob the target holds is not sent again, so a repeated push
//!   uploads nothing;
//! - a blob this run already put into another repository of the target is mounted
//!   (`POST …/blobs/uploads/?mount=<digest>&from=<repository>`); a registry that does not mount
//!   answers 202 with an upload session, which is then used as any other;
//! - a blob up to the chunk size goes up in one `PUT <session>?digest=…` after the `POST`; a larger
//!   one in `PATCH` chunks with `Content-Range`. After a broken connection, the session's `Range`
//!   (`GET` on it) says how much arrived, and the upload resumes from there: the chunk in flight
//!   is sent again, not the blob;
//! - manifests are `PUT` after their blobs, byte for byte with their own media type, and the
//!   `Docker-Content-Digest` the registry answers is checked against the digest sent.
//!
//! Authentication (challenges, bearer tokens asked for `pull,push`, Basic credentials, helpers),
//! CA files and the retry budget are the pull client's; [`Registry::for_push`] makes one a target.

use std::sync::atomic::{AtomicU64, Ordering};

use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, LOCATION};

use super::file_body::{FileSlice, Resend};
use super::{Endpoint, Registry, RegistryError, accept};
use crate::cache::CacheError;
use crate::fetch;
use crate::fetch::FetchError;
use crate::image::{Descriptor, Digest, Reference};
use reqwest::Method;
use reqwest::header::ACCEPT;
use serde::Deserialize;

/// `PATCH` chunks of blobs larger than this (and the size of those chunks), unless chosen.
pub const DEFAULT_CHUNK: u64 = 16 << 20;

/// What a push did, counted across images: what tests and the summary line report.
#[derive(Debug, Default)]
pub struct Tally {
    /// Blobs uploaded.
    pub uploaded: AtomicU64,
    /// Their bytes.
    pub uploaded_bytes: AtomicU64,
    /// Blobs the target already held.
    pub present: AtomicU64,
    /// Blobs mounted from another repository of the target.
    pub mounted: AtomicU64,
    /// Manifests put (not counting those already there).
    pub manifests: AtomicU64,
    /// Chunked uploads resumed after a broken connection.
    pub resumed: AtomicU64,
    /// Chunked uploads started again in a new session (the registry dropped the broken one).
    pub restarted: AtomicU64,
    /// Referrers the target lists by their subject itself (its Referrers API): no fallback
    /// index was written for them.
    pub by_referrers_api: AtomicU64,
}

impl Tally {
    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The value of one counter.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// How a blob reached the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// It was there already.
    Present,
    /// Mounted from another repository of the target.
    Mounted,
    /// Uploaded.
    Uploaded,
}

/// The answer to one request, or the transport error that stopped it.
type Sent = Result<reqwest::Response, reqwest::Error>;

impl Registry {
    /// This client as a push target: bearer tokens are asked for `pull,push`.
    pub fn for_push(mut self) -> Self {
        self.actions = "pull,push";
        self
    }

    /// Sends one request with the auth `ep` needs, once more with a fresh token after a 401.
    pub(super) async fn send_authed(
        &self,
        client: &reqwest::Client,
        ep: &Endpoint,
        reference: &Reference,
        build: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
        method: Method,
        url: &str,
    ) -> Result<Sent, RegistryError> {
        let mut renewed = false;
        loop {
            let headers = self.auth_headers(ep, reference, renewed).await?;
            let sent = build(client.request(method.clone(), url).headers(headers))
                .send()
                .await;
            match &sent {
                Ok(r) if r.status().as_u16() == 401 && !renewed => renewed = true,
                _ => return Ok(sent),
            }
        }
    }

    /// [`Registry::send_authed`], retrying transport errors and 408/429/5xx within the retry
    /// budget: for requests that may be sent again whole (`HEAD`, `POST`, `PUT`).
    pub(super) async fn send_retried(
        &self,
        client: &reqwest::Client,
        ep: &Endpoint,
        reference: &Reference,
        (method, url, what): (Method, &str, &str),
        build: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, RegistryError> {
        let (method, build) = (&method, &build);
        fetch::retry_attempts(self.retry, |attempt| async move {
            let sent = self
                .send_authed(client, ep, reference, build, method.clone(), url)
                .await
                .map_err(fetch::Attempt::last)?;
            match sent {
                Ok(r) if !fetch::retryable_status(r.status()) => Ok(r),
                Ok(r) => {
                    let wait = fetch::retry_after(r.headers());
                    let err = self.answered(ep, reference, what, r).await;
                    Err(fetch::Attempt::again(err, wait))
                }
                Err(source) => {
                    let retryable = fetch::retryable_error(&source);
                    let err = RegistryError::Fetch {
                        reference: reference.to_string(),
                        what: what.to_owned(),
                        source: FetchError::Transport {
                            method: method.clone(),
                            url: url.to_owned(),
                            attempts: attempt,
                            source: source.without_url(),
                        },
                    };
                    Err(match retryable {
                        true => fetch::Attempt::again(err, None),
                        false => fetch::Attempt::last(err),
                    })
                }
            }
        })
        .await
    }

    /// The error for an answer that is not the one expected: 401/403 as pulls word them, any
    /// other status naming what was refused and the registry's own words.
    pub(super) async fn answered(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        what: &str,
        response: reqwest::Response,
    ) -> RegistryError {
        let status = response.status().as_u16();
        let body = response.bytes().await.unwrap_or_default();
        let answer = registry_words(&body);
        match status {
            401 | 403 => RegistryError::Auth {
                reference: reference.to_string(),
                registry: ep.host().to_owned(),
                reason: format!(
                    "HTTP {status} for {what} in repository {}{}",
                    ep.name,
                    match answer.is_empty() {
                        true => String::new(),
                        false => format!(": {answer}"),
                    }
                ),
            },
            _ => RegistryError::Refused {
                reference: reference.to_string(),
                registry: ep.host().to_owned(),
                what: what.to_owned(),
                status,
                answer,
            },
        }
    }

    /// Whether the target's repository `ep` holds the blob `digest`.
    pub async fn blob_present(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        digest: &Digest,
    ) -> Result<bool, RegistryError> {
        let url = ep.blob_url(digest);
        let what = format!("blob {digest}");
        let r = self
            .send_retried(
                &self.client,
                ep,
                reference,
                (Method::HEAD, &url, &what),
                |b| b,
            )
            .await?;
        match r.status().as_u16() {
            200 => Ok(true),
            404 => Ok(false),
            _ => Err(self.answered(ep, reference, &what, r).await),
        }
    }

    /// Whether the target's `ep` holds the manifest `object` (a tag or digest) as `digest`.
    pub async fn manifest_present(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        object: &str,
        digest: &Digest,
    ) -> Result<bool, RegistryError> {
        let url = ep.manifest_url(object);
        let what = format!("manifest {object}");
        let r = self
            .send_retried(
                &self.client,
                ep,
                reference,
                (Method::HEAD, &url, &what),
                |b| b.header(ACCEPT, accept()),
            )
            .await?;
        match r.status().as_u16() {
            200 => Ok(r
                .headers()
                .get("docker-content-digest")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v == digest.to_string())),
            404 => Ok(false),
            _ => Err(self.answered(ep, reference, &what, r).await),
        }
    }

    /// Puts `bytes` (the manifest `digest`, of `media` type) as `object` (a tag or its digest),
    /// unless it is there already; `true` when it was put.
    pub async fn put_manifest(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        object: &str,
        manifest: (&Digest, &str, &[u8]),
    ) -> Result<bool, RegistryError> {
        let answer = self.put_manifest_answer(ep, reference, object, manifest);
        Ok(answer.await?.is_some())
    }

    /// [`Registry::put_manifest`], with the headers the target answered the `PUT` with (its
    /// `OCI-Subject`); `None` when the manifest was there already.
    pub(super) async fn put_manifest_answer(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        object: &str,
        (digest, media, bytes): (&Digest, &str, &[u8]),
    ) -> Result<Option<reqwest::header::HeaderMap>, RegistryError> {
        if self.manifest_present(ep, reference, object, digest).await? {
            return Ok(None);
        }
        let url = ep.manifest_url(object);
        let what = match object == digest.to_string() {
            true => format!("manifest {digest}"),
            false => format!("manifest {digest} as {object}"),
        };
        let r = self
            .send_retried(
                &self.client,
                ep,
                reference,
                (Method::PUT, &url, &what),
                |b| b.header(CONTENT_TYPE, media).body(bytes.to_vec()),
            )
            .await?;
        if r.status().as_u16() != 201 && r.status().as_u16() != 200 {
            return Err(self.answered(ep, reference, &what, r).await);
        }
        let answered = r
            .headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(answered) = answered.filter(|a| *a != digest.to_string()) {
            return Err(RegistryError::Refused {
                reference: reference.to_string(),
                registry: ep.host().to_owned(),
                what,
                status: r.status().as_u16(),
                answer: format!(
                    "it stored the manifest as {answered}, not as the digest sent: it rewrote it"
                ),
            });
        }
        Ok(Some(r.headers().clone()))
    }

    /// Makes sure the target's `ep` holds the cached blob `desc`: present, mounted from another
    /// repository of this run, or uploaded (whole or in chunks of `chunk` bytes).
    pub async fn push_blob(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        desc: &Descriptor,
        chunk: u64,
        tally: &Tally,
    ) -> Result<Pushed, RegistryError> {
        // Images sharing a blob wait for the first upload of it, then mount it.
        let turn = {
            let mut uploading = self.uploading.lock().unwrap_or_else(|p| p.into_inner());
            uploading.entry(desc.digest.clone()).or_default().clone()
        };
        let _turn = turn.lock().await;
        let _permit = self.blob_permits.acquire().await.expect("never closed");
        if self.blob_present(ep, reference, &desc.digest).await? {
            Tally::add(&tally.present, 1);
            return Ok(Pushed::Present);
        }
        let from = self
            .pushed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&desc.digest)
            .filter(|from| **from != ep.name)
            .cloned();
        let what = format!("blob {}", desc.digest);
        let r = match &from {
            Some(from) => {
                self.start_mount(ep, reference, &desc.digest, from, &what)
                    .await?
            }
            None => None,
        };
        let r = match r {
            Some(r) if r.status().as_u16() == 201 => {
                Tally::add(&tally.mounted, 1);
                self.remember_pushed(ep, &desc.digest);
                return Ok(Pushed::Mounted);
            }
            Some(r) => r,
            None => {
                let session = format!("{}/v2/{}/blobs/uploads/", ep.base, ep.name);
                self.send_retried(
                    &self.client,
                    ep,
                    reference,
                    (Method::POST, &session, &what),
                    |b| b.header(CONTENT_LENGTH, 0),
                )
                .await?
            }
        };
        if r.status().as_u16() != 202 {
            return Err(self.answered(ep, reference, &what, r).await);
        }
        let location = self.location(ep, reference, &r)?;
        let uploaded = match desc.size > chunk {
            true => {
                self.upload_chunked(ep, reference, desc, location, chunk, tally)
                    .await
            }
            false => self.upload_whole(ep, reference, desc, location).await,
        };
        uploaded?;
        Tally::add(&tally.uploaded, 1);
        Tally::add(&tally.uploaded_bytes, desc.size);
        self.remember_pushed(ep, &desc.digest);
        Ok(Pushed::Uploaded)
    }

    /// `POST …/blobs/uploads/?mount=<digest>&from=<from>` with a token that grants `pull` on
    /// `from` too, as distribution requires for a mount: its answer (201 mounted, 202 an upload
    /// session), or `None` when the mount was refused (a token service that would not grant
    /// `from`), for a plain upload instead.
    async fn start_mount(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        digest: &Digest,
        from: &str,
        what: &str,
    ) -> Result<Option<reqwest::Response>, RegistryError> {
        let mount = Endpoint {
            mount_from: Some(from.to_owned()),
            ..ep.clone()
        };
        let url = format!(
            "{}/v2/{}/blobs/uploads/?mount={digest}&from={from}",
            ep.base, ep.name
        );
        let r = self
            .send_retried(
                &self.client,
                &mount,
                reference,
                (Method::POST, &url, what),
                |b| b.header(CONTENT_LENGTH, 0),
            )
            .await?;
        match r.status().as_u16() {
            401 | 403 => {
                tracing::debug!(
                    "{what}: the mount from {from} was refused (HTTP {}); uploading it",
                    r.status().as_u16()
                );
                Ok(None)
            }
            _ => Ok(Some(r)),
        }
    }

    pub(super) fn remember_pushed(&self, ep: &Endpoint, digest: &Digest) {
        let mut pushed = self.pushed.lock().unwrap_or_else(|p| p.into_inner());
        pushed
            .entry(digest.clone())
            .or_insert_with(|| ep.name.clone());
    }

    /// The upload session an answer names (`Location`, made absolute).
    pub(super) fn location(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        r: &reqwest::Response,
    ) -> Result<String, RegistryError> {
        let location = r.headers().get(LOCATION).and_then(|v| v.to_str().ok());
        match location {
            Some(l) if l.starts_with("http://") || l.starts_with("https://") => Ok(l.to_owned()),
            Some(l) if l.starts_with('/') => Ok(format!("{}{l}", ep.base)),
            _ => Err(RegistryError::Protocol {
                reference: reference.to_string(),
                registry: ep.host().to_owned(),
                reason: "an upload answer without a usable Location".into(),
            }),
        }
    }

    /// `len` bytes of the cached blob `digest` from `offset`, opened to be streamed as a body.
    pub(super) fn open_blob(
        &self,
        reference: &Reference,
        digest: &Digest,
        offset: u64,
        len: u64,
    ) -> Result<FileSlice, RegistryError> {
        let cache_err = |source| RegistryError::Cache {
            reference: reference.to_string(),
            source,
        };
        let file = self.cache.open(digest).map_err(cache_err)?;
        FileSlice::new(file, offset, len).map_err(|source| {
            cache_err(CacheError::Source {
                digest: digest.clone(),
                source,
            })
        })
    }

    /// `PUT <session>?digest=…` with the whole blob; after a broken connection, a new session.
    async fn upload_whole(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        desc: &Descriptor,
        session: String,
    ) -> Result<(), RegistryError> {
        let first = self.open_blob(reference, &desc.digest, 0, desc.size)?;
        let body = Resend::new(first, || {
            (self.open_blob(reference, &desc.digest, 0, desc.size)).ok()
        });
        let url = with_digest(&session, &desc.digest);
        let what = format!("blob {}", desc.digest);
        let r = self
            .send_retried(
                &self.bulk_client,
                ep,
                reference,
                (Method::PUT, &url, &what),
                |b| {
                    b.header(CONTENT_TYPE, "application/octet-stream")
                        .header(CONTENT_LENGTH, desc.size)
                        .body(body.take())
                },
            )
            .await?;
        match r.status().as_u16() {
            201 | 204 => Ok(()),
            _ => Err(self.answered(ep, reference, &what, r).await),
        }
    }
}

/// What a registry said in an error body: distribution's `errors` as `CODE: message (detail)`,
/// each once, else the body's first 300 characters on one line.
fn registry_words(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Errors {
        errors: Vec<Entry>,
    }
    #[derive(Deserialize)]
    struct Entry {
        code: Option<String>,
        message: Option<String>,
        detail: Option<serde_json::Value>,
    }
    let Ok(parsed) = serde_json::from_slice::<Errors>(body) else {
        let text = String::from_utf8_lossy(&body[..body.len().min(300)]);
        return text.split_whitespace().collect::<Vec<_>>().join(" ");
    };
    let mut words: Vec<String> = Vec::new();
    for e in parsed.errors {
        let mut word = [e.code, e.message]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(": ");
        match e.detail {
            Some(serde_json::Value::String(d)) => word.push_str(&format!(" ({d})")),
            Some(serde_json::Value::Null) | None => {}
            Some(other) => word.push_str(&format!(" ({other})")),
        }
        if !words.contains(&word) {
            words.push(word);
        }
    }
    words.join("; ")
}

/// `session` with `digest=<digest>` added to its query.
pub(super) fn with_digest(session: &str, digest: &Digest) -> String {
    let sep = if session.contains('?') { '&' } else { '?' };
    format!("{session}{sep}digest={digest}")
}

/// Where an upload stands: the first byte not yet received, from a `Range: 0-<last>` answer.
pub(super) fn next_offset(range: Option<&str>) -> Option<u64> {
    let (_, last) = range?.trim().split_once('-')?;
    let last: u64 = last.trim().parse().ok()?;
    // distribution answers `0-0` for an empty session too: resend from the start then.
    Some(if last == 0 { 0 } else { last + 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_errors_read_as_code_message_and_detail_once() {
        let body = br#"{"errors":[{"code":"MANIFEST_BLOB_UNKNOWN","message":"blob unknown to registry","detail":"sha256:ab"},{"code":"MANIFEST_BLOB_UNKNOWN","message":"blob unknown to registry","detail":"sha256:ab"},{"code":"DENIED","message":"quota"}]}"#;
        assert_eq!(
            registry_words(body),
            "MANIFEST_BLOB_UNKNOWN: blob unknown to registry (sha256:ab); DENIED: quota"
        );
        assert_eq!(
            registry_words(b"<html>\n bad gateway </html>"),
            "<html> bad gateway </html>"
        );
    }

    #[test]
    fn upload_ranges_give_the_next_byte() {
        assert_eq!(next_offset(Some("0-1048575")), Some(1048576));
        assert_eq!(next_offset(Some("0-0")), Some(0));
        assert_eq!(next_offset(Some("bytes")), None);
        assert_eq!(next_offset(None), None);
        let d = Digest::of(b"x");
        assert_eq!(
            with_digest("http://r/u?_state=a", &d),
            format!("http://r/u?_state=a&digest={d}")
        );
        assert_eq!(
            with_digest("http://r/u", &d),
            format!("http://r/u?digest={d}")
        );
    }
}
