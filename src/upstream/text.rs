//! The small bodies a build reads rather than ships (checksum files, manifests' text, git refs,
//! Rekor queries): through the mirrors with the transport retries, and texts remembered in the
//! cache by URL so an offline build reads them again. Apart from `get.rs`, which downloads the
//! files that go into the ISO and verifies them.

use std::io::Read as _;

use reqwest::header::HeaderMap;

use super::get::{Fetcher, keyed_by, url_key};
use crate::fetch::{FetchError, get_bytes, redact, strip_userinfo};
use crate::image::Digest;

impl Fetcher<'_> {
    /// Where a request for the upstream `url` goes: through the mirrors, credentials hidden (for
    /// what `resolve` shows).
    pub fn fetch_url(&self, url: &str) -> String {
        redact(&self.mirrors.rewrite(url))
    }

    /// GETs at most `limit` bytes of the upstream `url` through the mirrors, with the transport
    /// retries; no cache (the caller keeps what it verified).
    pub async fn bytes(&self, url: &str, limit: u64) -> Result<Vec<u8>, FetchError> {
        let (bytes, _) = get_bytes(
            &self.download,
            &self.mirrors.rewrite(url),
            &HeaderMap::new(),
            limit,
        )
        .await?;
        Ok(bytes)
    }

    /// POSTs `body` as JSON to the upstream `url` through the mirrors; at most `limit` bytes of
    /// the reply (a Rekor index query).
    pub async fn post_json(
        &self,
        url: &str,
        body: &[u8],
        limit: u64,
    ) -> Result<Vec<u8>, FetchError> {
        crate::fetch::post_json(&self.download, &self.mirrors.rewrite(url), body, limit).await
    }

    /// The refs under `prefix` of the upstream git repository `repo`, through the mirrors, with
    /// the transport retries; offline, [`crate::release::ResolveError::Refused`].
    pub async fn git_refs(
        &self,
        repo: &str,
        prefix: &str,
    ) -> Result<crate::release::git::Listing, crate::release::ResolveError> {
        let repo = self.mirrors.rewrite(repo);
        self.download
            .admit(&repo)
            .map_err(crate::release::ResolveError::Refused)?;
        let tries = std::cell::Cell::new(0);
        crate::fetch::retrying(
            self.download.retry,
            || {
                tries.set(tries.get() + 1);
                crate::release::git::ls_remote(self.download.client, &repo, prefix)
            },
            |e: &crate::release::ResolveError| e.is_transient().then_some(None),
        )
        .await
        .map_err(|e| e.after(tries.get()))
    }

    /// GETs a small text through the mirrors (a checksum file, kubeadm's constants). Offline, the
    /// copy the cache recorded for `url`.
    pub async fn text(&self, url: &str, limit: u64) -> Result<String, FetchError> {
        let recalled = || Ok::<_, FetchError>(self.recalled_text(url, limit));
        let (bytes, _) = self
            .download
            .or_cached(recalled, self.fetch_text(url, limit))
            .await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// [`Fetcher::text`] from the network only, never the store's copy; offline the client
    /// refuses it ([`FetchError::Offline`]).
    pub async fn fresh_text(&self, url: &str, limit: u64) -> Result<String, FetchError> {
        let bytes = self.fetch_text(url, limit).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The bytes the store recorded for `url`, at most `limit`, when they still hash to it.
    pub(super) fn recalled_text(&self, url: &str, limit: u64) -> Option<Vec<u8>> {
        let store = self.store?;
        let found = store.recall(&url_key(url))?;
        let file = store.open(&found.digest).ok()?;
        let mut bytes = Vec::new();
        file.take(limit).read_to_end(&mut bytes).ok()?;
        (Digest::of(&bytes) == found.digest).then_some(bytes)
    }

    /// [`Fetcher::text`] from the network, kept in the store.
    async fn fetch_text(&self, url: &str, limit: u64) -> Result<Vec<u8>, FetchError> {
        let mut refetch = self.download.refetch();
        let bytes = loop {
            let (bytes, _) = get_bytes(
                &refetch.download(&self.download),
                &self.mirrors.rewrite(url),
                &HeaderMap::new(),
                limit,
            )
            .await
            .map_err(|e| keyed_by(e, url))?;
            // Text that is not UTF-8 was damaged on the way until proven otherwise; past the
            // budget it is taken as it is (a lossy read names the damage where it is used).
            let damaged = format!("{} sent text that is not UTF-8", redact(url));
            if std::str::from_utf8(&bytes).is_ok() || !refetch.again(&damaged, "fetching it").await
            {
                break bytes;
            }
        };
        if let Some(store) = self.store {
            let recorded = strip_userinfo(url);
            let kept = store.put_bytes(&bytes).and_then(|digest| {
                store.remember(&url_key(url), &digest, bytes.len() as u64, &recorded)
            });
            if let Err(e) = kept {
                tracing::warn!("cannot keep {recorded} in the cache: {e}");
            }
        }
        Ok(bytes)
    }
}
