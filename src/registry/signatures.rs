//! cosign's `sha256-<digest>.sig` tags: the signature manifest and its payload layers, fetched
//! through the same routes, auth, retries and cache as the image itself.
//!
//! Fetched by tag and hashed here, never fetched again by digest: registry.k8s.io has served a
//! `.sig` tag whose manifest was unknown by digest at another backend (registry.k8s.io#324). A
//! 404 on the tag means "unsigned". Payloads are blobs, checked against their descriptors like
//! every blob. Offline, the tag resolves to what the cache's index recorded when it was last
//! fetched; a tag never seen counts as unsigned.
//!
//! A locked build names the signature manifest by digest ([`Registry::locked_signature`]): the
//! cache's copy, else fetched by that digest and checked against it, else — for registries that
//! only know it by tag — the tag, taken only when it still points at that digest.
//!
//! To find them without pulling the image (`verify-image`): the digest a reference names, the
//! platform manifest an index lists, and the host that serves them.

use super::{Registry, RegistryError};
use crate::cache::Key;
use crate::fetch::Origin;
use crate::image::{
    Arch, Digest, ImageError, Index, MAX_MANIFEST_SIZE, Manifest, MediaType, Reference, parse,
};
use cks_iso_sigstore::{SignatureManifest, tag_for};

impl Registry {
    /// `host[:port]` that serves `reference`'s API requests: its mirror's, else its registry's.
    pub fn serving_host(&self, reference: &Reference) -> String {
        self.config.routes.endpoint(reference).host().to_owned()
    }

    /// The digest `reference` names: its own `@digest` (no request, reported as the network's
    /// answer: nothing was recalled), else what its tag points at (a `HEAD`, or a `GET` where the
    /// registry does not say; offline, what the cache recorded), and which answered.
    pub async fn digest_of(
        &self,
        reference: &Reference,
    ) -> Result<(Digest, Origin), RegistryError> {
        match reference.digest() {
            Some(digest) => Ok((digest.clone(), Origin::Network)),
            None => {
                let (top, origin) = self.tag_digest(reference).await?;
                self.remember_tag(reference, &top, origin);
                Ok((top, origin))
            }
        }
    }

    /// Records that `reference`'s tag points at `top` when the registry said so (`origin`) and
    /// the cache holds that manifest, so that offline the tag resolves to it as after a pull.
    pub fn remember_tag(&self, reference: &Reference, top: &Digest, origin: Origin) {
        if origin == Origin::Cache || reference.digest().is_some() {
            return;
        }
        let Some(size) = self.cache.size_of(top) else {
            return;
        };
        let key = Key::tag(reference);
        if let Err(e) = self.cache.remember(&key, top, size, &reference.to_string()) {
            tracing::warn!("cannot record {reference} in the cache index: {e}");
        }
    }

    /// The platform manifest `top` lists for linux/`arch` when `top` is an index (its bytes
    /// fetched through the cache and checked against `top`; the platform manifest itself is not
    /// fetched, the index pins it); `None` when `top` is a single-platform manifest.
    pub async fn platform_of(
        &self,
        reference: &Reference,
        top: &Digest,
        arch: Arch,
    ) -> Result<Option<Digest>, RegistryError> {
        let ep = self.config.routes.endpoint(reference);
        let bytes = self.manifest(&ep, reference, top).await?;
        let media = MediaType::sniff(&bytes).map_err(|reason| ImageError::Unsupported {
            image: reference.to_string(),
            digest: top.clone(),
            reason: reason.0,
        })?;
        if !media.is_index() {
            return Ok(None);
        }
        let index: Index = parse(&bytes, top, "index")?;
        let entry = crate::image::select(&index.manifests, arch).map_err(|available| {
            ImageError::NoPlatform {
                image: reference.to_string(),
                wanted: arch,
                available,
            }
        })?;
        Ok(Some(entry.digest.clone()))
    }

    /// The signature manifest of `signs` in `reference`'s repository with its payloads, or
    /// `None` when there is none; with which answered, the registry or (offline) the cache.
    pub async fn signature(
        &self,
        reference: &Reference,
        signs: &Digest,
    ) -> Result<(Option<SignatureManifest>, Origin), RegistryError> {
        let ep = self.config.routes.endpoint(reference);
        let tag = tag_for(signs);
        let key = Key::signature(reference, &tag);
        let cache_err = |source| RegistryError::Cache {
            reference: reference.to_string(),
            source,
        };
        // Offline, a tag the cache never saw counts as unsigned, as a 404 does online.
        let recalled = || Ok(Some(self.cache.recall(&key).map(|found| found.digest)));
        let asked = async {
            match self.get_manifest(&ep, reference, &tag, None).await {
                Ok(digest) => Ok::<_, RegistryError>(Some(digest)),
                Err(RegistryError::NotFound { .. }) => Ok(None),
                Err(err) => Err(err),
            }
        };
        let (digest, origin) = self.download(&()).or_cached(recalled, asked).await?;
        let Some(digest) = digest else {
            return Ok((None, origin));
        };
        let bytes = self.cached_manifest(&digest).map_err(cache_err)?;
        let layers = self
            .signature_payloads(&ep, reference, &tag, &digest, &bytes)
            .await?;
        if origin == Origin::Network
            && let Err(e) = self.cache.remember(&key, &digest, bytes.len() as u64, &tag)
        {
            tracing::warn!("cannot record {tag} in the cache index: {e}");
        }
        let found = SignatureManifest {
            signs: signs.clone(),
            digest,
            bytes,
            layers,
        };
        Ok((Some(found), origin))
    }

    /// The signature manifest `digest` that a lock names for `signs` in `reference`'s repository,
    /// with its payloads: from the cache, else fetched by digest, else by its tag when the tag
    /// still points at it. `Ok(None)` when the registry no longer has it (the tag moved on);
    /// offline, a manifest the cache lacks is an [`crate::fetch::FetchError::Offline`] error.
    pub async fn locked_signature(
        &self,
        reference: &Reference,
        signs: &Digest,
        digest: &Digest,
    ) -> Result<Option<SignatureManifest>, RegistryError> {
        let ep = self.config.routes.endpoint(reference);
        let tag = tag_for(signs);
        let bytes = match self.manifest(&ep, reference, digest).await {
            Ok(bytes) => bytes,
            Err(RegistryError::NotFound { .. }) => {
                // Known only by tag at some backends (registry.k8s.io#324): the tag will do if it
                // still points at the locked manifest.
                match self.get_manifest(&ep, reference, &tag, None).await {
                    Ok(found) if found == *digest => {
                        let cache_err = |source| RegistryError::Cache {
                            reference: reference.to_string(),
                            source,
                        };
                        self.cached_manifest(digest).map_err(cache_err)?
                    }
                    Ok(_) | Err(RegistryError::NotFound { .. }) => return Ok(None),
                    Err(err) => return Err(err),
                }
            }
            Err(err) => return Err(err),
        };
        let layers = self
            .signature_payloads(&ep, reference, &tag, digest, &bytes)
            .await?;
        Ok(Some(SignatureManifest {
            signs: signs.clone(),
            digest: digest.clone(),
            bytes,
            layers,
        }))
    }

    /// The payload layers of the signature manifest `bytes` (`digest`, of `tag`), each fetched
    /// through the cache and checked against its descriptor.
    async fn signature_payloads(
        &self,
        ep: &super::Endpoint,
        reference: &Reference,
        tag: &str,
        digest: &Digest,
        bytes: &[u8],
    ) -> Result<Vec<(crate::image::Descriptor, Vec<u8>)>, RegistryError> {
        let cache_err = |source| RegistryError::Cache {
            reference: reference.to_string(),
            source,
        };
        if Digest::of(bytes) != *digest {
            return Err(RegistryError::Image(
                crate::image::ImageError::DigestMismatch {
                    image: reference.to_string(),
                    what: format!("signature manifest {tag} in the cache"),
                    expected: digest.clone(),
                    actual: Digest::of(bytes),
                },
            ));
        }
        let manifest: Manifest = parse(bytes, digest, "signature manifest")?;
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
            self.blob(ep, reference, desc, &what, &()).await?;
            let payload = self.cached_manifest(&desc.digest).map_err(cache_err)?;
            layers.push((desc.clone(), payload));
        }
        Ok(layers)
    }
}
