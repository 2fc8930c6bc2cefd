//! Blobs into the cache: each fetched once however many images share it (single-flight per
//! digest and repository), streamed into the cache's [`crate::cache::BlobWriter`] (hashed while
//! written, resumed with `Range`, named only when digest and size match); a mismatch is fetched
//! again within the retry budget.

use super::{Endpoint, Failed, Kind, Registry, RegistryError, adapt, once, ranged};
use crate::cache::CacheError;
use crate::fetch;
use crate::image::{Descriptor, Reference};
use crate::progress::{Progress, Source};

/// The largest blob cks-iso takes: far above any real layer, far below what a file system
/// holds, so a descriptor declaring exabytes fails as the lie it is.
pub const MAX_BLOB_SIZE: u64 = 1 << 40;

impl Registry {
    /// Makes sure the blob `desc` is in the cache, downloading it once however many images ask.
    /// When that download fails, the image that ran it gets its error, and the others sharing the
    /// blob *through the same repository* fail at once, naming that first failure, instead of
    /// downloading it again; an image whose repository (or registry) differs tries its own, once.
    pub(super) async fn blob(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        desc: &Descriptor,
        what: &str,
        progress: &dyn Progress,
    ) -> Result<(), RegistryError> {
        if desc.size > MAX_BLOB_SIZE {
            return Err(RegistryError::Protocol {
                reference: reference.to_string(),
                registry: ep.host().to_owned(),
                reason: format!(
                    "its {what} {} declares {} bytes, more than the {} a blob may have",
                    desc.digest,
                    desc.size,
                    indicatif::HumanBytes(MAX_BLOB_SIZE)
                ),
            });
        }
        if self.cache.contains_sized(&desc.digest, desc.size) {
            let item = format!("{reference} {what} {}", desc.digest);
            progress.item(&item, desc.size, Source::Cache);
            return Ok(());
        }
        let scope = ep.scope();
        // First whoever asks first, from wherever; then, if that failed elsewhere, from here.
        for attempt in [None, Some(scope.clone())] {
            let cell = {
                let mut inflight = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
                let key = (desc.digest.clone(), attempt);
                inflight.entry(key).or_default().clone()
            };
            let work = async {
                if self.cache.size_of(&desc.digest) == Some(desc.size) {
                    return Ok(());
                }
                let _permit = self.blob_permits.acquire().await.expect("never closed");
                let progress = adapt::Counted {
                    inner: progress,
                    adaptive: &self.adaptive,
                    permits: &self.blob_permits,
                };
                if desc.size >= ranged::RANGED_MIN {
                    match self.download_ranged(ep, reference, desc, &progress).await {
                        Ok(()) => {
                            let item = format!("{reference} {what} {}", desc.digest);
                            progress.item(&item, desc.size, Source::Network);
                            return Ok(());
                        }
                        Err(ranged::GaveUp::Cache(err)) => return Err(err),
                        Err(ranged::GaveUp::Fallback(why)) => {
                            tracing::debug!("{what} {} in parts: {why}; one GET", desc.digest);
                        }
                    }
                }
                self.download_blob(ep, reference, desc, what, &progress)
                    .await
            };
            match once(&cell, &scope, work).await {
                Ok(()) => return Ok(()),
                Err(Failed::Here(err)) => return Err(err),
                Err(Failed::Earlier(first)) if first.scope != scope => continue,
                // Another repository may have fetched it since.
                Err(Failed::Earlier(_)) if self.cache.size_of(&desc.digest) == Some(desc.size) => {
                    return Ok(());
                }
                Err(Failed::Earlier(first)) => {
                    return Err(RegistryError::SharedBlob {
                        reference: reference.to_string(),
                        what: format!("{what} {}", desc.digest),
                        reason: first.text,
                        hint: first.hint,
                    });
                }
            }
        }
        unreachable!("the attempt scoped to this repository fails only with this scope")
    }

    pub(super) async fn download_blob(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        desc: &Descriptor,
        what: &str,
        progress: &dyn Progress,
    ) -> Result<(), RegistryError> {
        let url = ep.blob_url(&desc.digest);
        let what = format!("{what} {}", desc.digest);
        let cache_err = |source: CacheError| RegistryError::Cache {
            reference: reference.to_string(),
            source,
        };
        let mut refetch = fetch::Refetch::new(self.retry);
        loop {
            let mut writer = self
                .cache
                .blob_writer(&desc.digest)
                .map_err(cache_err)?
                .bounded(desc.size);
            let mut renewed = false;
            loop {
                let headers = self.auth_headers(ep, reference, renewed).await?;
                match refetch
                    .download(&self.blob_download(progress))
                    .to_sink(&url, &headers, &mut writer)
                    .await
                {
                    Ok(_) => break,
                    Err(err) => {
                        renewed = self.judge(err, ep, reference, Kind::Blob, &what, renewed)?
                    }
                }
            }
            // The unverified file is removed here if it is not the blob.
            let err = match writer.commit(Some(desc.size)) {
                Ok(_) => {
                    progress.item(&format!("{reference} {what}"), desc.size, Source::Network);
                    return Ok(());
                }
                Err(CacheError::Mismatch {
                    actual,
                    actual_size,
                    ..
                }) => RegistryError::Mismatch {
                    reference: reference.to_string(),
                    what: what.clone(),
                    expected: desc.digest.clone(),
                    actual,
                    expected_size: desc.size,
                    actual_size,
                },
                Err(other) => return Err(cache_err(other)),
            };
            if !refetch.again(&err, "downloading it").await {
                return Err(err);
            }
        }
    }
}
