//! cosign 3's signatures: OCI 1.1 referrers of an image digest holding a Sigstore bundle v0.3
//! (what cosign writes is described in [`crate::signature::referrer`]), found through the same
//! routes (mirrors), auth, retries and cache as the image and its `.sig` tags.
//!
//! Discovery, as the distribution spec 1.1 and go-containerregistry (which cosign uses) do it:
//! `GET /v2/<name>/referrers/<digest>?artifactType=<bundle v0.3>` with an OCI image index in
//! `Accept`. A `200` whose `Content-Type` is an OCI image index is the list (the registry may
//! ignore the filter: [`crate::signature::referrer::candidates`] filters again). Any other
//! answer a registry without the API gives — `404` (Debian's docker-registry 2.8 answers so),
//! `400`, `405`, `406`, or a `200` of another type — falls back to the tag schema: the image index
//! tagged `sha256-<hex>`, whose `404` means no referrers. Every list is capped at
//! [`MAX_MANIFEST_SIZE`] and at most [`crate::signature::referrer::MAX_REFERRERS`] referrers are
//! fetched; each referrer manifest by its digest, its bundle layer as a blob checked against its
//! descriptor, both kept in the cache. A listed manifest that is no signature referrer of this
//! digest (another subject, more layers) is passed over with a warning, as cosign passes over
//! referrers it cannot read.
//!
//! The list is recorded in the cache's index under the digest it lists for, so that offline the
//! referrers are those the cache last saw (none when it never saw the list).

use super::{Endpoint, Kind, Registry, RegistryError, fetch};
use crate::cache::Key;
use crate::image::{Digest, MAX_MANIFEST_SIZE, Reference};
use crate::signature::SignatureManifest;
use crate::signature::referrer::{self, BUNDLE_ARTIFACT_TYPE, fallback_tag};
use reqwest::header::{ACCEPT, HeaderValue};

/// The media type a referrers list is.
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

impl Registry {
    /// The cosign 3 signature referrers of `signs` in `reference`'s repository, each with its
    /// bundle; empty when there are none.
    pub async fn referrers(
        &self,
        reference: &Reference,
        signs: &Digest,
    ) -> Result<Vec<SignatureManifest>, RegistryError> {
        let ep = self.config.routes.endpoint(reference);
        let key = Key::referrers(reference, signs);
        let cache_err = |source| RegistryError::Cache {
            reference: reference.to_string(),
            source,
        };
        let list_digest = match self.offline {
            true => match self.cache.recall(&key) {
                Some(found) => found.digest,
                None => return Ok(Vec::new()),
            },
            false => match self.referrers_list(&ep, reference, signs).await? {
                Some(digest) => digest,
                None => return Ok(Vec::new()),
            },
        };
        let list = self.cached_manifest(&list_digest).map_err(cache_err)?;
        if Digest::of(&list) != list_digest {
            return Err(self.protocol(
                &ep,
                reference,
                format!("the cache's referrers list {list_digest} of {signs} is damaged"),
            ));
        }
        if !self.offline
            && let Err(e) = self.cache.remember(
                &key,
                &list_digest,
                list.len() as u64,
                &format!("referrers of {signs}"),
            )
        {
            tracing::warn!("cannot record the referrers of {signs} in the cache index: {e}");
        }
        let candidates = referrer::candidates(&list)
            .map_err(|e| self.protocol(&ep, reference, format!("the referrers of {signs}: {e}")))?;
        let mut found = Vec::new();
        for (digest, size) in candidates {
            if size > MAX_MANIFEST_SIZE {
                tracing::warn!(
                    "{reference}: referrer {digest} of {signs} is listed as {size} bytes; passed \
                     over"
                );
                continue;
            }
            match self.referrer(&ep, reference, signs, &digest).await? {
                Some(manifest) => found.push(manifest),
                None => continue,
            }
        }
        Ok(found)
    }

    /// The referrer `digest` that a lock names for `signs`, with its bundle: from the cache, else
    /// fetched by digest; `Ok(None)` when the registry no longer has it.
    pub async fn locked_referrer(
        &self,
        reference: &Reference,
        signs: &Digest,
        digest: &Digest,
    ) -> Result<Option<SignatureManifest>, RegistryError> {
        let ep = self.config.routes.endpoint(reference);
        match self.referrer(&ep, reference, signs, digest).await {
            Err(RegistryError::NotFound { .. }) => Ok(None),
            Ok(None) => Err(self.protocol(
                &ep,
                reference,
                format!("the locked referrer {digest} is not a signature referrer of {signs}"),
            )),
            other => other,
        }
    }

    /// One referrer manifest and its bundle layer; `None` (with a warning) when it is not a
    /// signature referrer of `signs`.
    async fn referrer(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        signs: &Digest,
        digest: &Digest,
    ) -> Result<Option<SignatureManifest>, RegistryError> {
        let cache_err = |source| RegistryError::Cache {
            reference: reference.to_string(),
            source,
        };
        let bytes = self.manifest(ep, reference, digest).await?;
        let layer = match referrer::bundle_layer(&bytes, signs) {
            Ok(layer) => layer,
            Err(why) => {
                tracing::warn!("{reference}: referrer {digest} of {signs} passed over: {why}");
                return Ok(None);
            }
        };
        if layer.size > MAX_MANIFEST_SIZE {
            return Err(self.protocol(
                ep,
                reference,
                format!(
                    "the bundle {} of referrer {digest} is {} bytes",
                    layer.digest, layer.size
                ),
            ));
        }
        let what = format!("the signature bundle of referrer {digest}");
        self.blob(ep, reference, &layer, &what, &()).await?;
        let bundle = self.cached_manifest(&layer.digest).map_err(cache_err)?;
        Ok(Some(SignatureManifest {
            signs: signs.clone(),
            digest: digest.clone(),
            bytes,
            layers: vec![(layer, bundle)],
        }))
    }

    /// The digest of `signs`'s referrers list, stored in the cache: the Referrers API's answer,
    /// else the fallback tag's index; `None` when neither exists.
    async fn referrers_list(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        signs: &Digest,
    ) -> Result<Option<Digest>, RegistryError> {
        let url = format!(
            "{}/v2/{}/referrers/{signs}?artifactType={}",
            ep.base,
            ep.name,
            BUNDLE_ARTIFACT_TYPE.replace('+', "%2B")
        );
        let what = format!("the referrers of {signs}");
        let mut renewed = false;
        loop {
            let mut headers = self.auth_headers(ep, reference, renewed).await?;
            headers.insert(ACCEPT, HeaderValue::from_static(OCI_INDEX));
            match fetch::get_bytes(&self.download(&()), &url, &headers, MAX_MANIFEST_SIZE).await {
                Ok((bytes, fetched))
                    if fetched
                        .content_type
                        .as_deref()
                        .is_some_and(|t| t.split(';').next() == Some(OCI_INDEX)) =>
                {
                    let digest =
                        self.cache
                            .put_bytes(&bytes)
                            .map_err(|source| RegistryError::Cache {
                                reference: reference.to_string(),
                                source,
                            })?;
                    tracing::debug!("{reference}: {what} from the Referrers API");
                    return Ok(Some(digest));
                }
                Ok(_) => break,
                Err(err) if matches!(err.status(), Some(400 | 404 | 405 | 406)) => break,
                Err(err) => {
                    renewed = self.judge(err, ep, reference, Kind::Blob, &what, renewed)?;
                }
            }
        }
        // No Referrers API: the tag schema's index.
        let tag = fallback_tag(signs);
        match self.get_manifest(ep, reference, &tag, None).await {
            Ok(digest) => {
                tracing::debug!("{reference}: {what} from the tag {tag}");
                Ok(Some(digest))
            }
            Err(RegistryError::NotFound { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }

    fn protocol(&self, ep: &Endpoint, reference: &Reference, reason: String) -> RegistryError {
        RegistryError::Protocol {
            reference: reference.to_string(),
            registry: ep.host().to_owned(),
            reason,
        }
    }
}
