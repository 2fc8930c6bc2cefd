//! cosign's `sha256-<digest>.sig` tags: the signature manifest and its payload layers, fetched
//! through the same routes, auth, retries and cache as the image itself.
//!
//! Fetched by tag and hashed here, never fetched again by digest: registry.k8s.io has served a
//! `.sig` tag whose manifest was unknown by digest at another backend (registry.k8s.io#324). A
//! 404 on the tag means "unsigned". Payloads are blobs, checked against their descriptors like
//! every blob. Offline, the tag resolves to what the cache's index recorded when it was last
//! fetched; a tag never seen counts as unsigned.

use super::{Registry, RegistryError};
use crate::image::{Digest, MAX_MANIFEST_SIZE, Manifest, Reference, parse};
use crate::signature::{SignatureManifest, tag_for};

impl Registry {
    /// The signature manifest of `signs` in `reference`'s repository with its payloads, or
    /// `None` when there is none.
    pub async fn signature(
        &self,
        reference: &Reference,
        signs: &Digest,
    ) -> Result<Option<SignatureManifest>, RegistryError> {
        let ep = self.config.routes.endpoint(reference);
        let tag = tag_for(signs);
        let key = format!("sig:{}/{}:{tag}", reference.domain(), reference.path());
        let cache_err = |source| RegistryError::Cache {
            reference: reference.to_string(),
            source,
        };
        let digest = match self.offline {
            true => match self.cache.recall(&key) {
                Some(found) => found.digest,
                None => return Ok(None),
            },
            false => match self.get_manifest(&ep, reference, &tag, None).await {
                Ok(digest) => digest,
                Err(RegistryError::NotFound { .. }) => return Ok(None),
                Err(err) => return Err(err),
            },
        };
        let bytes = self.cached_manifest(&digest).map_err(cache_err)?;
        if Digest::of(&bytes) != digest {
            return Err(RegistryError::Image(
                crate::image::ImageError::DigestMismatch {
                    image: reference.to_string(),
                    what: format!("signature manifest {tag} in the cache"),
                    expected: digest,
                    actual: Digest::of(&bytes),
                },
            ));
        }
        let manifest: Manifest = parse(&bytes, &digest, "signature manifest")?;
        let mut layers = Vec::new();
        for (i, desc) in manifest.layers.iter().enumerate() {
            if desc.size > MAX_MANIFEST_SIZE {
                return Err(RegistryError::Protocol {
                    reference: reference.to_string(),
                    registry: ep.host().to_owned(),
                    reason: format!("signature payload {} is {} bytes", desc.digest, desc.size),
                });
            }
            let what = format!("signature payload {} of {tag}", i + 1);
            self.blob(&ep, reference, desc, &what, &()).await?;
            let payload = self.cached_manifest(&desc.digest).map_err(cache_err)?;
            layers.push((desc.clone(), payload));
        }
        if !self.offline
            && let Err(e) = self.cache.remember(&key, &digest, bytes.len() as u64, &tag)
        {
            tracing::warn!("cannot record {tag} in the cache index: {e}");
        }
        Ok(Some(SignatureManifest {
            signs: signs.clone(),
            digest,
            bytes,
            layers,
        }))
    }
}
