//! Chunked uploads for `cks-iso push`: a blob larger than the chunk size goes up as `PATCH`es
//! with `Content-Range`, each chunk streamed from the cache as it is sent (memory stays at one
//! frame per transfer, see `file_body`). A connection broken mid-chunk is not retried blindly — the registry may
//! have kept part of it, and distribution refuses a `PATCH` that does not start where the
//! session stands —: the session's status (`GET`, answering `Range: 0-<last byte>`) says where
//! to resume, so what is sent again is the rest of that chunk, never the blob. distribution
//! (`docker-registry`, Harbor) cancels a session whose size no longer matches the offset its URL's
//! `_state` carries — when part of the broken chunk reached it —; the blob then starts again in a
//! new session, which the summary counts apart.

use super::file_body::Resend;
use super::upload::{Tally, next_offset, with_digest};
use super::{Endpoint, Registry, RegistryError};
use crate::fetch;
use crate::image::{Descriptor, Reference};
use reqwest::Method;

use std::sync::atomic::Ordering;

use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE};

impl Registry {
    /// Uploads the cached blob `desc` into `session` in chunks of `chunk` bytes and closes it
    /// with its digest.
    pub(super) async fn upload_chunked(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        desc: &Descriptor,
        mut session: String,
        chunk: u64,
        tally: &Tally,
    ) -> Result<(), RegistryError> {
        let what = format!("blob {}", desc.digest);
        let mut offset = 0u64;
        let mut breaks = 0u32;
        while offset < desc.size {
            let len = chunk.min(desc.size - offset);
            let first = self.open_blob(reference, &desc.digest, offset, len)?;
            let body = Resend::new(first, || {
                (self.open_blob(reference, &desc.digest, offset, len)).ok()
            });
            let range = format!("{offset}-{}", offset + len - 1);
            let patch = |b: reqwest::RequestBuilder| {
                b.header(CONTENT_TYPE, "application/octet-stream")
                    .header("Content-Range", range.as_str())
                    .header(CONTENT_LENGTH, len)
                    .body(body.take())
            };
            let sent = self
                .send_authed(
                    &self.bulk_client,
                    ep,
                    reference,
                    patch,
                    Method::PATCH,
                    &session,
                )
                .await?;
            let cause = match sent {
                Ok(r) if r.status().as_u16() == 202 => {
                    session = self.location(ep, reference, &r)?;
                    offset += len;
                    continue;
                }
                Ok(r) if !fetch::retryable_status(r.status()) => {
                    return Err(self.answered(ep, reference, &what, r).await);
                }
                Ok(r) => format!("HTTP {}", r.status().as_u16()),
                Err(e) => crate::failure::one_line(&e.without_url()),
            };
            breaks += 1;
            if breaks >= self.retry.attempts.max(2) {
                return Err(RegistryError::Protocol {
                    reference: reference.to_string(),
                    registry: ep.host().to_owned(),
                    reason: format!(
                        "the upload of {what} broke {breaks} times at byte {offset} of {} ({cause})",
                        desc.size
                    ),
                });
            }
            tracing::debug!("{what}: chunk {range} broke ({cause}); asking where to resume");
            tokio::time::sleep(self.retry.delay(breaks, None)).await;
            (offset, session) = self.resume(ep, reference, session, &what, tally).await?;
        }
        let url = with_digest(&session, &desc.digest);
        let r = self
            .send_retried(
                &self.client,
                ep,
                reference,
                (Method::PUT, &url, &what),
                |b| b.header(CONTENT_LENGTH, 0),
            )
            .await?;
        match r.status().as_u16() {
            201 | 204 => Ok(()),
            _ => Err(self.answered(ep, reference, &what, r).await),
        }
    }

    /// After a broken chunk: where the session resumes (`(offset, session)`), or a new session
    /// from byte 0 when distribution cancelled the old one.
    async fn resume(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        session: String,
        what: &str,
        tally: &Tally,
    ) -> Result<(u64, String), RegistryError> {
        match self.upload_status(ep, reference, &session, what).await {
            Ok(resume) => {
                tally.resumed.fetch_add(1, Ordering::Relaxed);
                Ok(resume)
            }
            // distribution cancels a session whose size no longer matches the state its
            // URL carries (part of the broken chunk was written): start again.
            Err(RegistryError::Refused {
                status: 400 | 404 | 416,
                answer,
                ..
            }) => {
                tracing::debug!("{what}: the upload session is gone ({answer}); a new one");
                let session = self.new_session(ep, reference, what).await?;
                tally.restarted.fetch_add(1, Ordering::Relaxed);
                Ok((0, session))
            }
            Err(other) => Err(other),
        }
    }

    /// A fresh upload session in `ep`.
    async fn new_session(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        what: &str,
    ) -> Result<String, RegistryError> {
        let url = format!("{}/v2/{}/blobs/uploads/", ep.base, ep.name);
        let r = self
            .send_retried(
                &self.client,
                ep,
                reference,
                (Method::POST, &url, what),
                |b| b.header(CONTENT_LENGTH, 0),
            )
            .await?;
        match r.status().as_u16() {
            202 => self.location(ep, reference, &r),
            _ => Err(self.answered(ep, reference, what, r).await),
        }
    }

    /// Where the upload `session` stands: the next byte it expects, and its current URL.
    async fn upload_status(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        session: &str,
        what: &str,
    ) -> Result<(u64, String), RegistryError> {
        let r = self
            .send_retried(
                &self.client,
                ep,
                reference,
                (Method::GET, session, what),
                |b| b,
            )
            .await?;
        if r.status().as_u16() != 204 {
            return Err(self.answered(ep, reference, what, r).await);
        }
        let range = r.headers().get("range").and_then(|v| v.to_str().ok());
        let next = next_offset(range).ok_or_else(|| RegistryError::Protocol {
            reference: reference.to_string(),
            registry: ep.host().to_owned(),
            reason: format!("the status of the upload of {what} has no usable Range"),
        })?;
        let location = self
            .location(ep, reference, &r)
            .unwrap_or_else(|_| session.to_owned());
        Ok((next, location))
    }
}
