//! cosign 3's signatures: OCI 1.1 referrers of an image digest holding a Sigstore bundle v0.3
//! (what cosign writes is described in [`cks_iso_sigstore::referrer`]), found through the same
//! routes (mirrors), auth, retries and cache as the image and its `.sig` tags.
//!
//! Discovery, as the distribution spec 1.1 and go-containerregistry (which cosign uses) do it:
//! `GET /v2/<name>/referrers/<digest>?artifactType=<bundle v0.3>` with an OCI image index in
//! `Accept`. A `200` whose `Content-Type` is an OCI image index is the list (the registry may
//! ignore the filter: [`cks_iso_sigstore::referrer::candidates`] filters again). Any other
//! answer a registry without the API gives — `404` (Debian's docker-registry 2.8 answers so),
//! `400`, `405`, `406`, or a `200` of another type — falls back to the tag schema: the image
//! index tagged `sha256-<hex>`, whose `404` means no referrers.
//!
//! The Referrers API may answer in pages: as go-containerregistry does, its
//! `Link: <…>; rel="next"` is followed, on the same host, for at most [`MAX_REFERRER_PAGES`]
//! pages, and the pages' lists are kept as one index (one page byte for byte). Every page
//! is capped at [`MAX_MANIFEST_SIZE`] and at most [`cks_iso_sigstore::referrer::MAX_REFERRERS`]
//! signature referrers are fetched; each referrer manifest by its digest, its bundle layer as a
//! blob checked against its descriptor, both kept in the cache.
//!
//! What is not a signature never fails or slows a check (registry.k8s.io attaches promotion
//! attestations, SBOMs and more beside the signature): a listed attestation, SBOM or other
//! artifact is passed over by its artifact type or predicate annotation without a request, and
//! a bundle whose statement is an attestation by its predicate type, whatever the annotations;
//! one debug line each. As cosign skips referrers it cannot fetch, a listed referrer that is gone
//! (404), oversized, or does not match its descriptor (digest, size) is passed over with a debug
//! line, so that it never fails an image whose valid signature is listed beside it. A
//! bundle-typed manifest that is no signature referrer of this digest (another subject, more
//! layers) is passed over with a warning.
//!
//! The list is recorded in the cache's index under the digest it lists for, so that offline the
//! referrers are those the cache last saw (none when it never saw the list).

use super::{Endpoint, Kind, Registry, RegistryError, fetch};
use crate::cache::Key;
use crate::fetch::Origin;
use crate::image::{Digest, MAX_MANIFEST_SIZE, Reference};
use cks_iso_sigstore::SignatureManifest;
use cks_iso_sigstore::referrer::{self, BUNDLE_ARTIFACT_TYPE, fallback_tag};
use reqwest::header::{ACCEPT, HeaderValue};

/// The media type a referrers list is.
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// The most pages of one Referrers API answer read. A registry pages a long list (the
/// distribution spec lets it; go-containerregistry follows `Link` to the end); 16 pages of the
/// usual 100 or more entries hold thousands of referrers, and each page is a request of at most
/// 4 MiB, so a registry that pages forever costs a bounded wait. Past it, the pages read are used.
pub const MAX_REFERRER_PAGES: usize = 16;

/// One listed referrer: a signature, or why it was passed over.
enum Taken {
    Signature(SignatureManifest),
    /// Not a signature (an attestation), or not one cks-iso reads: why, for the debug line.
    PassedOver(String),
}

impl Registry {
    /// The cosign 3 signature referrers of `signs` in `reference`'s repository, each with its
    /// bundle; empty when there are none; with which answered, the registry or (offline) the
    /// cache.
    pub async fn referrers(
        &self,
        reference: &Reference,
        signs: &Digest,
    ) -> Result<(Vec<SignatureManifest>, Origin), RegistryError> {
        let ep = self.config.routes.endpoint(reference);
        let key = Key::referrers(reference, signs);
        let cache_err = |source| RegistryError::Cache {
            reference: reference.to_string(),
            source,
        };
        // Offline, referrers the cache never saw count as none, as an empty list does online.
        let recalled = || Ok(Some(self.cache.recall(&key).map(|found| found.digest)));
        let asked = self.referrers_list(&ep, reference, signs);
        let (list_digest, origin) = self.download(&()).or_cached(recalled, asked).await?;
        let Some(list_digest) = list_digest else {
            return Ok((Vec::new(), origin));
        };
        let list = self.cached_manifest(&list_digest).map_err(cache_err)?;
        if Digest::of(&list) != list_digest {
            return Err(self.protocol(
                &ep,
                reference,
                format!("the cache's referrers list {list_digest} of {signs} is damaged"),
            ));
        }
        if origin == Origin::Network
            && let Err(e) = self.cache.remember(
                &key,
                &list_digest,
                list.len() as u64,
                &format!("referrers of {signs}"),
            )
        {
            tracing::warn!("cannot record the referrers of {signs} in the cache index: {e}");
        }
        let listing = referrer::listing(&list)
            .map_err(|e| self.protocol(&ep, reference, format!("the referrers of {signs}: {e}")))?;
        for (digest, why) in &listing.passed_over {
            tracing::debug!("{reference}: referrer {digest} of {signs} passed over: {why}");
        }
        let mut found = Vec::new();
        for (digest, size) in listing.candidates {
            let why = match size > MAX_MANIFEST_SIZE {
                true => format!("it is listed as {size} bytes, more than a manifest may have"),
                false => match self
                    .referrer(&ep, reference, signs, &digest, Some(size))
                    .await
                {
                    Ok(Taken::Signature(manifest)) => {
                        found.push(manifest);
                        continue;
                    }
                    Ok(Taken::PassedOver(why)) => why,
                    Err(err) if unfetchable(&err) => {
                        format!("it cannot be fetched as listed: {err}")
                    }
                    Err(err) => return Err(err),
                },
            };
            tracing::debug!("{reference}: referrer {digest} of {signs} passed over: {why}");
        }
        Ok((found, origin))
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
        match self.referrer(&ep, reference, signs, digest, None).await {
            Err(RegistryError::NotFound { .. }) => Ok(None),
            Ok(Taken::PassedOver(why)) => Err(self.protocol(
                &ep,
                reference,
                format!(
                    "the locked referrer {digest} is not a signature referrer of {signs}: {why}"
                ),
            )),
            Ok(Taken::Signature(manifest)) => Ok(Some(manifest)),
            Err(err) => Err(err),
        }
    }

    /// One referrer manifest (of `listed` bytes, when a list gave its size) and its bundle
    /// layer; passed over (a warning when it is a bundle-typed manifest that is no signature
    /// referrer of `signs`) when it is not a signature, or its bundle is bigger than a manifest
    /// may be.
    async fn referrer(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        signs: &Digest,
        digest: &Digest,
        listed: Option<u64>,
    ) -> Result<Taken, RegistryError> {
        let cache_err = |source| RegistryError::Cache {
            reference: reference.to_string(),
            source,
        };
        let bytes = self.manifest(ep, reference, digest).await?;
        if let Some(size) = listed.filter(|size| *size != bytes.len() as u64) {
            return Ok(Taken::PassedOver(format!(
                "it is {} bytes, its descriptor says {size}",
                bytes.len()
            )));
        }
        let layer = match referrer::bundle_layer(&bytes, signs) {
            Ok(layer) => layer,
            Err(why) => {
                tracing::warn!("{reference}: referrer {digest} of {signs} passed over: {why}");
                return Ok(Taken::PassedOver(why.into()));
            }
        };
        if layer.size > MAX_MANIFEST_SIZE {
            return Ok(Taken::PassedOver(format!(
                "its bundle {} is listed as {} bytes, more than a bundle may have",
                layer.digest, layer.size
            )));
        }
        let what = format!("the signature bundle of referrer {digest}");
        self.blob(ep, reference, &layer, &what, &()).await?;
        let bundle = self.cached_manifest(&layer.digest).map_err(cache_err)?;
        if let Some(predicate) = referrer::predicate_type(&bundle)
            .filter(|p| p != cks_iso_sigstore::dsse::COSIGN_SIGN_PREDICATE)
        {
            return Ok(Taken::PassedOver(format!(
                "its statement is a {predicate:?} attestation, not a signature"
            )));
        }
        Ok(Taken::Signature(SignatureManifest {
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
        let mut pages: Vec<Vec<u8>> = Vec::new();
        let mut next = Some(url);
        // The pages are kept as one list, read back within the manifest cap.
        let mut budget = MAX_MANIFEST_SIZE - 1024;
        while let Some(url) = next.take() {
            let Some((bytes, link)) = self.referrers_page(ep, reference, &url, &what).await? else {
                break;
            };
            if !pages.is_empty() && bytes.len() as u64 > budget {
                tracing::debug!(
                    "{reference}: {what}: page {} would take the list past {}; the pages \
                     before it are read",
                    pages.len() + 1,
                    indicatif::HumanBytes(MAX_MANIFEST_SIZE)
                );
                break;
            }
            budget = budget.saturating_sub(bytes.len() as u64);
            pages.push(bytes);
            next = link.and_then(|link| next_page(&url, &link));
            if next.is_some() && pages.len() == MAX_REFERRER_PAGES {
                tracing::debug!(
                    "{reference}: {what}: the Referrers API has more than {MAX_REFERRER_PAGES} \
                     pages; the first {MAX_REFERRER_PAGES} are read"
                );
                next = None;
            }
        }
        if !pages.is_empty() {
            let count = pages.len();
            // One page is kept byte for byte, as it always was; several as one index.
            let bytes = match count {
                1 => pages.swap_remove(0),
                _ => joined(&pages)
                    .map_err(|reason| self.protocol(ep, reference, reason.to_string()))?,
            };
            let digest = self
                .cache
                .put_bytes(&bytes)
                .map_err(|source| RegistryError::Cache {
                    reference: reference.to_string(),
                    source,
                })?;
            tracing::debug!("{reference}: {what} from the Referrers API ({count} page(s))");
            return Ok(Some(digest));
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

    /// One page of the Referrers API's answer at `url`, with its `Link` header; `None` when the
    /// registry has no Referrers API (see the module's comment).
    async fn referrers_page(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        url: &str,
        what: &str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, RegistryError> {
        let mut renewed = false;
        loop {
            let mut headers = self.auth_headers(ep, reference, renewed).await?;
            headers.insert(ACCEPT, HeaderValue::from_static(OCI_INDEX));
            match fetch::get_bytes(&self.download(&()), url, &headers, MAX_MANIFEST_SIZE).await {
                Ok((bytes, fetched))
                    if fetched
                        .content_type
                        .as_deref()
                        .is_some_and(|t| t.split(';').next() == Some(OCI_INDEX)) =>
                {
                    return Ok(Some((bytes, fetched.link)));
                }
                Ok(_) => return Ok(None),
                Err(err) if matches!(err.status(), Some(400 | 404 | 405 | 406)) => return Ok(None),
                Err(err) => {
                    renewed = self.judge(err, ep, reference, Kind::Blob, what, renewed)?;
                }
            }
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

/// Whether a listed referrer failed to arrive as its descriptor names it: gone (404), not the
/// bytes of its digest or size, or (offline) never cached because it was gone online.
fn unfetchable(err: &RegistryError) -> bool {
    match err {
        RegistryError::NotFound { .. } | RegistryError::Mismatch { .. } => true,
        RegistryError::Image(crate::image::ImageError::DigestMismatch { .. }) => true,
        RegistryError::Fetch { source, .. } => {
            source.status() == Some(404)
                || matches!(source, crate::fetch::FetchError::Offline { .. })
        }
        _ => false,
    }
}

/// The next page `Link` names (`<url>; rel="next"`, RFC 8288), resolved against the page's
/// `url`; `None` when there is none, or when it leaves the page's scheme, host and port (the
/// registry's credentials go with every request).
fn next_page(url: &str, link: &str) -> Option<String> {
    let base = reqwest::Url::parse(url).ok()?;
    let target = link.split(',').find_map(|part| {
        let (target, params) = part.trim().split_once(';')?;
        let next = params.split(';').any(|p| {
            let p = p.trim().to_ascii_lowercase();
            p == "rel=\"next\"" || p == "rel=next"
        });
        next.then(|| target.trim().trim_start_matches('<').trim_end_matches('>'))
    })?;
    let next = base.join(target).ok()?;
    (next.origin() == base.origin()).then(|| next.to_string())
}

/// A page of a referrers list that is not an image index.
#[derive(Debug, thiserror::Error)]
#[error("page {page} of the referrers is not an image index: {source}")]
struct NotAnIndex {
    /// 1-based.
    page: usize,
    source: serde_json::Error,
}

/// The manifests of every page as one OCI image index.
fn joined(pages: &[Vec<u8>]) -> Result<Vec<u8>, NotAnIndex> {
    let mut manifests = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        let index: serde_json::Value =
            serde_json::from_slice(page).map_err(|source| NotAnIndex {
                page: i + 1,
                source,
            })?;
        if let Some(listed) = index.get("manifests").and_then(|m| m.as_array()) {
            manifests.extend(listed.iter().cloned());
        }
    }
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": manifests,
    });
    Ok(serde_json::to_vec(&index).expect("plain JSON"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_page_is_resolved_on_the_same_host_only() {
        let page = "https://r.example/v2/pause/referrers/sha256:ab?artifactType=x";
        assert_eq!(
            next_page(
                page,
                r#"</v2/pause/referrers/sha256:ab?n=2&last=c>; rel="next""#
            )
            .as_deref(),
            Some("https://r.example/v2/pause/referrers/sha256:ab?n=2&last=c")
        );
        assert_eq!(
            next_page(
                page,
                "<https://r.example/p2>; rel=next, </p0>; rel=\"prev\""
            )
            .as_deref(),
            Some("https://r.example/p2")
        );
        assert_eq!(next_page(page, "</p0>; rel=\"prev\""), None);
        assert_eq!(
            next_page(page, "<https://elsewhere.example/p2>; rel=\"next\""),
            None
        );
        assert_eq!(next_page(page, "<http://r.example/p2>; rel=\"next\""), None);
    }

    #[test]
    fn pages_join_into_one_index_in_their_order() {
        let page = |d: &str| format!(r#"{{"schemaVersion":2,"manifests":[{{"digest":"{d}"}}]}}"#);
        let both = joined(&[page("a").into_bytes(), page("b").into_bytes()]).unwrap();
        let index: serde_json::Value = serde_json::from_slice(&both).unwrap();
        assert_eq!(index["manifests"][0]["digest"], "a");
        assert_eq!(index["manifests"][1]["digest"], "b");
        assert_eq!(index["mediaType"], OCI_INDEX);
        assert!(joined(&[b"[".to_vec()]).is_err());
    }
}
