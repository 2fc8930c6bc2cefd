//! Manifests and indexes: a tag resolved with `HEAD`, a digest fetched with the four media types
//! in `Accept`, capped, verified (a damaged reply is fetched again within the retry budget) and
//! stored byte for byte; a cached copy is used unless it no longer hashes to its digest.

use super::{Endpoint, Kind, Registry, RegistryError, accept};
use crate::cache::CacheError;
use crate::fetch;
use crate::image::{Digest, Index, MAX_MANIFEST_SIZE, Manifest, MediaType, Reference};
use reqwest::Method;
use reqwest::header::ACCEPT;

impl Registry {
    /// The bytes of the manifest `digest`, from the cache or else fetched, verified and cached.
    /// A cached copy that does not hash to `digest` (damaged by a power loss) is fetched again.
    pub(super) async fn manifest(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        digest: &Digest,
    ) -> Result<Vec<u8>, RegistryError> {
        let cache_err = |source| RegistryError::Cache {
            reference: reference.to_string(),
            source,
        };
        if self.cache.contains(digest) {
            let bytes = self.cached_manifest(digest).map_err(cache_err)?;
            if Digest::of(&bytes) == *digest {
                return Ok(bytes);
            }
            tracing::warn!("cached manifest {digest} is damaged; fetching it again");
            let path = self.cache.blob_path(digest);
            std::fs::remove_file(&path)
                .map_err(|source| cache_err(CacheError::Io { path, source }))?;
        }
        self.get_manifest(ep, reference, &digest.to_string(), Some(digest))
            .await?;
        self.cached_manifest(digest).map_err(cache_err)
    }

    /// Reads a stored manifest, at most [`MAX_MANIFEST_SIZE`] bytes and one more.
    pub(super) fn cached_manifest(&self, digest: &Digest) -> Result<Vec<u8>, CacheError> {
        let file = self.cache.open(digest)?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(file, MAX_MANIFEST_SIZE + 1),
            &mut bytes,
        )
        .map_err(|source| CacheError::Source {
            digest: digest.clone(),
            source,
        })?;
        Ok(bytes)
    }

    /// `HEAD` on a tag: the digest it points at, `None` when the registry does not say.
    pub(super) async fn head_manifest(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        tag: &str,
    ) -> Result<Option<Digest>, RegistryError> {
        let url = ep.manifest_url(tag);
        let mut renewed = false;
        loop {
            let mut headers = self.auth_headers(ep, reference, renewed).await?;
            headers.insert(ACCEPT, accept());
            let probed = fetch::probe(&self.download(&()), Method::HEAD, &url, &headers)
                .await
                .map_err(|source| RegistryError::Fetch {
                    reference: reference.to_string(),
                    what: format!("manifest {tag}"),
                    source,
                })?;
            match probed.status.as_u16() {
                401 if !renewed => renewed = true,
                401 | 403 => return Err(self.refused(ep, reference, probed.status.as_u16())),
                404 => return Err(self.not_found(ep, reference)),
                200 => {
                    let digest = probed
                        .headers
                        .get("docker-content-digest")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| Digest::parse(v).ok());
                    return Ok(digest);
                }
                // Some servers refuse HEAD; GET will tell.
                _ => return Ok(None),
            }
        }
    }

    /// GETs the manifest `object` (tag or digest), checks it against `expected` when given,
    /// stores it in the cache, and returns its digest.
    pub(super) async fn get_manifest(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        object: &str,
        expected: Option<&Digest>,
    ) -> Result<Digest, RegistryError> {
        let url = ep.manifest_url(object);
        let mut refetch = fetch::Refetch::new(self.retry);
        let bytes = loop {
            let mut renewed = false;
            let bytes = loop {
                let mut headers = self.auth_headers(ep, reference, renewed).await?;
                headers.insert(ACCEPT, accept());
                let download = refetch.download(&self.download(&()));
                match fetch::get_bytes(&download, &url, &headers, MAX_MANIFEST_SIZE).await {
                    Ok((bytes, _)) => break bytes,
                    Err(err) => {
                        renewed =
                            self.judge(err, ep, reference, Kind::Manifest, "manifest", renewed)?;
                    }
                }
            };
            let actual = Digest::of(&bytes);
            // A manifest asked for by tag has no digest to check here; one that does not even
            // parse was damaged on the way as surely as one that does not hash to its digest.
            let damaged = match expected {
                Some(expected) => *expected != actual,
                // Parsed whole: a flipped byte deep in a string still sniffs as a manifest.
                None => match MediaType::sniff(&bytes) {
                    Err(_) => true,
                    Ok(kind) if kind.is_index() => serde_json::from_slice::<Index>(&bytes).is_err(),
                    Ok(_) => serde_json::from_slice::<Manifest>(&bytes).is_err(),
                },
            };
            if !damaged {
                break bytes;
            }
            let err = match expected {
                Some(expected) => RegistryError::Mismatch {
                    reference: reference.to_string(),
                    what: format!("manifest {object}"),
                    expected: expected.clone(),
                    actual,
                    expected_size: bytes.len() as u64,
                    actual_size: bytes.len() as u64,
                },
                None => RegistryError::Protocol {
                    reference: reference.to_string(),
                    registry: ep.host().to_owned(),
                    reason: format!("the manifest {object} is neither a manifest nor an index"),
                },
            };
            if !refetch.again(&err, "fetching it").await {
                return Err(err);
            }
        };
        self.cache
            .put_bytes(&bytes)
            .map_err(|source| RegistryError::Cache {
                reference: reference.to_string(),
                source,
            })
    }
}
