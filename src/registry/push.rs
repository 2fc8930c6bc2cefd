//! One image into a push target, as the source holds it: the blobs of each manifest first, then
//! the manifests by digest (the platform manifests before the index that lists them), then the
//! tag, then the cosign signatures that were accepted for it: `.sig` manifests under their tags,
//! cosign 3 referrers by digest — listed by the target itself where it has the OCI 1.1 Referrers
//! API (it answers the referrer's `PUT` with `OCI-Subject`), else added to the tag-schema
//! fallback index `sha256-<hex>` of their subject, as cosign does there. Nothing is
//! re-serialised: what goes up is the cache's bytes, so the digests the lock names are the
//! digests the target serves.
//!
//! An index names every platform its image is published for, and distribution (so Harbor, GitLab
//! and most others) refuses an index whose manifests it does not hold. A source that holds one
//! platform (an ISO, an `--offline` cache) has the rest fetched first when the network may be
//! used ([`Registry::complete`]); where it may not, the index is still offered and, when refused
//! so, the tag is pointed at the platform manifest the source holds instead — its digest is
//! upstream's too — and the outcome says so.

use futures_util::TryStreamExt;
use reqwest::header::HeaderMap;

use super::target::Target;
use super::upload::{Pushed, Tally};
use super::{Endpoint, Registry, RegistryError};
use crate::image::{
    Descriptor, Digest, ImageError, Index, MAX_MANIFEST_SIZE, Manifest, MediaType, Reference, parse,
};
use futures_util::{StreamExt, stream};
use reqwest::Method;
use reqwest::header::ACCEPT;
use serde::Deserialize;

/// An OCI image index: what a referrers fallback tag holds.
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// An OCI image manifest, for a referrer that does not say its own type.
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// One image to push: its name in the source, what it resolved to, and its signatures.
#[derive(Debug, Clone)]
pub struct PushImage {
    /// The source's name for it (a tag, a digest, or both).
    pub reference: Reference,
    /// What the reference resolved to (the index, or the manifest of a single-platform image).
    pub top: Digest,
    /// The platform manifests the source chose for it (one per arch of the lock).
    pub platforms: Vec<Digest>,
    /// The cosign signature manifests accepted for it: their `.sig` tag and digest.
    pub signatures: Vec<(String, Digest)>,
}

/// What became of one pushed image.
#[derive(Debug, Clone)]
pub struct PushOutcome {
    /// The pushed copy's name: `host[:port]/<repository>`.
    pub name: String,
    /// Its tag, when the source named one.
    pub tag: Option<String>,
    /// The digest the tag (or the name) now resolves to at the target.
    pub digest: Digest,
    /// Why that is not the source's top digest, when it is not.
    pub note: Option<String>,
    /// Signature manifests put or found there.
    pub signatures: usize,
    /// The `.sig` tags of accepted signatures the source does not hold whole, not pushed.
    pub unsigned: Vec<String>,
}

impl Registry {
    /// Source side: fetches into the cache every manifest `image`'s index lists that the cache
    /// lacks, with their blobs, and its signature manifests' blobs, so that the index can go
    /// up whole.
    pub async fn complete(&self, image: &PushImage) -> Result<(), RegistryError> {
        let reference = &image.reference;
        let ep = self.config.routes.endpoint(reference);
        let top = self.manifest(&ep, reference, &image.top).await?;
        let mut manifests: Vec<Digest> = Vec::new();
        if MediaType::sniff(&top).is_ok_and(|m| m.is_index()) {
            let index: Index = parse(&top, &image.top, "index")?;
            manifests.extend(index.manifests.iter().map(|d| d.digest.clone()));
        } else {
            manifests.push(image.top.clone());
        }
        manifests.extend(image.signatures.iter().map(|(_, d)| d.clone()));
        for digest in manifests {
            let bytes = self.manifest(&ep, reference, &digest).await?;
            let manifest: Manifest = parse(&bytes, &digest, "manifest")?;
            let blobs = std::iter::once(&manifest.config).chain(&manifest.layers);
            stream::iter(blobs.map(Ok))
                .try_for_each_concurrent(self.jobs(), |desc| {
                    let ep = &ep;
                    async move { self.blob(ep, reference, desc, "blob", &()).await }
                })
                .await?;
        }
        Ok(())
    }

    /// Target side: the blobs of the cached manifest `digest`, then the manifest by digest; the
    /// headers the target answered its `PUT` with, `None` when it held it already.
    async fn push_manifest_tree(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        digest: &Digest,
        chunk: u64,
        tally: &Tally,
    ) -> Result<Option<HeaderMap>, RegistryError> {
        let bytes = self.cached(reference, digest)?;
        let manifest: Manifest = parse(&bytes, digest, "manifest")?;
        let blobs = std::iter::once(&manifest.config).chain(&manifest.layers);
        let pushed: Vec<Pushed> = stream::iter(blobs)
            .map(|desc| self.push_blob(ep, reference, desc, chunk, tally))
            .buffer_unordered(self.config.jobs.max(1))
            .try_collect()
            .await?;
        tracing::debug!(
            "{reference}: {} blobs of {digest} at the target",
            pushed.len()
        );
        let media = media_of(&bytes);
        let answer = self
            .put_manifest_answer(ep, reference, &digest.to_string(), (digest, &media, &bytes))
            .await?;
        if answer.is_some() {
            tally
                .manifests
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(answer)
    }

    /// Whether the cache holds the manifest `digest` and every blob it names, at their sizes.
    fn holds_whole(&self, digest: &Digest) -> bool {
        let Ok(bytes) = self.cached_manifest(digest) else {
            return false;
        };
        serde_json::from_slice::<Manifest>(&bytes).is_ok_and(|m| {
            std::iter::once(&m.config)
                .chain(&m.layers)
                .all(|d| self.cache.size_of(&d.digest) == Some(d.size))
        })
    }

    /// A cached manifest's bytes, checked against its digest; a missing one is named.
    fn cached(&self, reference: &Reference, digest: &Digest) -> Result<Vec<u8>, RegistryError> {
        let bytes = self
            .cached_manifest(digest)
            .map_err(|source| RegistryError::Cache {
                reference: reference.to_string(),
                source,
            })?;
        if Digest::of(&bytes) != *digest {
            return Err(RegistryError::Mismatch {
                reference: reference.to_string(),
                what: format!("the cached manifest {digest}"),
                expected: digest.clone(),
                actual: Digest::of(&bytes),
                expected_size: bytes.len() as u64,
                actual_size: bytes.len() as u64,
            });
        }
        Ok(bytes)
    }

    /// Pushes `image` to `target`: see the module's doc for the order and the index rule.
    pub async fn push_image(
        &self,
        target: &Target,
        image: &PushImage,
        chunk: u64,
        tally: &Tally,
    ) -> Result<PushOutcome, RegistryError> {
        let reference = &image.reference;
        let ep = target.endpoint(reference);
        let top = self.cached(reference, &image.top)?;
        let object = reference
            .tag()
            .map_or_else(|| image.top.to_string(), str::to_owned);
        let mut outcome = PushOutcome {
            name: target.name(reference),
            tag: reference.tag().map(str::to_owned),
            digest: image.top.clone(),
            note: None,
            signatures: 0,
            unsigned: Vec::new(),
        };
        if !MediaType::sniff(&top).is_ok_and(|m| m.is_index()) {
            self.push_manifest_tree(&ep, reference, &image.top, chunk, tally)
                .await?;
            if object != image.top.to_string() {
                self.put_tagged(&ep, reference, &object, &image.top, &top, tally)
                    .await?;
            }
        } else {
            self.push_index(&ep, image, &object, &top, chunk, tally, &mut outcome)
                .await?;
        }
        for (tag, digest) in &image.signatures {
            // An ISO carries no signature manifests, an offline cache not always their config.
            if !self.holds_whole(digest) {
                outcome.unsigned.push(tag.clone());
                continue;
            }
            let answer = self
                .push_manifest_tree(&ep, reference, digest, chunk, tally)
                .await?;
            let bytes = self.cached(reference, digest)?;
            match tag.ends_with(".sig") {
                true => {
                    self.put_tagged(&ep, reference, tag, digest, &bytes, tally)
                        .await?
                }
                // A cosign 3 referrer goes by digest; the target lists it by its subject when
                // it has the Referrers API, else it is listed in the fallback index its lock tag
                // names.
                false => {
                    let listed = self
                        .listed_by_subject(&ep, reference, (digest, &bytes), answer)
                        .await?;
                    if listed {
                        tally
                            .by_referrers_api
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    } else {
                        self.list_referrer(&ep, reference, tag, (digest, &bytes), tally)
                            .await?
                    }
                }
            }
            outcome.signatures += 1;
        }
        Ok(outcome)
    }

    async fn put_tagged(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        tag: &str,
        digest: &Digest,
        bytes: &[u8],
        tally: &Tally,
    ) -> Result<(), RegistryError> {
        let media = media_of(bytes);
        if self
            .put_manifest(ep, reference, tag, (digest, &media, bytes))
            .await?
        {
            tally
                .manifests
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    /// The platform manifests the cache holds, then the index under `object`; the fallback of
    /// the module's doc when the target refuses an index it does not hold every manifest of.
    #[allow(clippy::too_many_arguments)]
    async fn push_index(
        &self,
        ep: &Endpoint,
        image: &PushImage,
        object: &str,
        top: &[u8],
        chunk: u64,
        tally: &Tally,
        outcome: &mut PushOutcome,
    ) -> Result<(), RegistryError> {
        let reference = &image.reference;
        let index: Index = parse(top, &image.top, "index")?;
        let mut missing = 0;
        for child in &index.manifests {
            match self.cache.size_of(&child.digest) == Some(child.size) {
                true => {
                    self.push_manifest_tree(ep, reference, &child.digest, chunk, tally)
                        .await?;
                }
                false => missing += 1,
            }
        }
        let put = self.put_tagged(ep, reference, object, &image.top, top, tally);
        let refused = match put.await {
            Ok(()) => return Ok(()),
            Err(err @ RegistryError::Refused { status: 400, .. }) if missing > 0 => err,
            Err(err) => return Err(err),
        };
        // The source holds only some platforms; point the tag at the one it was built for.
        let Some(platform) = image
            .platforms
            .first()
            .filter(|_| object != image.top.to_string())
        else {
            return Err(refused);
        };
        let bytes = self.cached(reference, platform)?;
        self.put_tagged(ep, reference, object, platform, &bytes, tally)
            .await?;
        outcome.digest = platform.clone();
        outcome.note = Some(format!(
            "the index {} lists {missing} manifest(s) the source does not hold, and the target \
             refused it without them ({}); the tag points at the platform manifest {platform}",
            image.top,
            crate::failure::one_line(&refused)
        ));
        Ok(())
    }

    /// Whether the target lists the referrer `digest` by its `subject` itself (the OCI 1.1
    /// Referrers API): it answered the referrer's `PUT` (`answer`) with `OCI-Subject` naming the
    /// subject, as the distribution spec has a registry with the API do; for a referrer it held
    /// already, its Referrers API lists it. A referrer without `subject` is listed by nobody.
    async fn listed_by_subject(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        (digest, bytes): (&Digest, &[u8]),
        answer: Option<HeaderMap>,
    ) -> Result<bool, RegistryError> {
        #[derive(Deserialize)]
        struct Subject {
            subject: Option<Descriptor>,
        }
        let subject = serde_json::from_slice::<Subject>(bytes)
            .ok()
            .and_then(|s| s.subject);
        let Some(subject) = subject else {
            return Ok(false);
        };
        if let Some(headers) = answer {
            let named = headers.get("oci-subject").and_then(|v| v.to_str().ok());
            return Ok(named == Some(subject.digest.to_string().as_str()));
        }
        let url = format!("{}/v2/{}/referrers/{}", ep.base, ep.name, subject.digest);
        let what = format!("the referrers of {}", subject.digest);
        let r = self
            .send_retried(
                &self.client,
                ep,
                reference,
                (Method::GET, &url, &what),
                |b| b.header(ACCEPT, OCI_INDEX),
            )
            .await?;
        if r.status().as_u16() != 200 {
            return Ok(false);
        }
        let body = r.bytes().await.unwrap_or_default();
        let body = &body[..body.len().min(MAX_MANIFEST_SIZE as usize)];
        let index = serde_json::from_slice::<serde_json::Value>(body).unwrap_or_default();
        let listed = index["manifests"].as_array().is_some_and(|m| {
            m.iter()
                .any(|d| d["digest"].as_str() == Some(digest.to_string().as_str()))
        });
        Ok(listed)
    }

    /// Lists the referrer `digest` in the tag-schema fallback index `tag` (`sha256-<hex>` of its
    /// subject), as cosign does on a registry without the Referrers API: the index the target
    /// holds under that tag with this referrer added, or a new one.
    async fn list_referrer(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        tag: &str,
        (digest, bytes): (&Digest, &[u8]),
        tally: &Tally,
    ) -> Result<(), RegistryError> {
        let manifest: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| ImageError::Malformed {
                digest: digest.clone(),
                what: "referrer",
                reason: e.to_string(),
            })?;
        let mut entry = serde_json::json!({
            "mediaType": manifest["mediaType"].as_str().unwrap_or(OCI_MANIFEST),
            "digest": digest.to_string(),
            "size": bytes.len(),
        });
        let artifact = (manifest.get("artifactType"))
            .or_else(|| manifest.get("config").and_then(|c| c.get("mediaType")));
        if let Some(artifact) = artifact {
            entry["artifactType"] = artifact.clone();
        }
        if let Some(annotations) = manifest.get("annotations") {
            entry["annotations"] = annotations.clone();
        }
        let mut index = match self.target_index(ep, reference, tag).await? {
            Some(index) => index,
            None => serde_json::json!({
                "schemaVersion": 2,
                "mediaType": OCI_INDEX,
                "manifests": [],
            }),
        };
        let Some(listed) = index["manifests"].as_array_mut() else {
            return Err(RegistryError::Protocol {
                reference: reference.to_string(),
                registry: ep.host().to_owned(),
                reason: format!("its {tag} is not an index of referrers"),
            });
        };
        if listed.iter().any(|m| m["digest"] == entry["digest"]) {
            return Ok(());
        }
        listed.push(entry);
        let bytes = serde_json::to_vec(&index).expect("an index serialises");
        let digest = Digest::of(&bytes);
        if self
            .put_manifest(ep, reference, tag, (&digest, OCI_INDEX, &bytes))
            .await?
        {
            tally
                .manifests
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    /// The index the target holds under `tag`, parsed; `None` when it has none.
    async fn target_index(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        tag: &str,
    ) -> Result<Option<serde_json::Value>, RegistryError> {
        let url = ep.manifest_url(tag);
        let what = format!("manifest {tag}");
        let r = self
            .send_retried(
                &self.client,
                ep,
                reference,
                (Method::GET, &url, &what),
                |b| b.header(ACCEPT, OCI_INDEX),
            )
            .await?;
        match r.status().as_u16() {
            404 => Ok(None),
            200 => {
                let body = r.bytes().await.unwrap_or_default();
                let body = &body[..body.len().min(MAX_MANIFEST_SIZE as usize)];
                Ok(serde_json::from_slice(body).ok())
            }
            _ => Err(self.answered(ep, reference, &what, r).await),
        }
    }

    /// The blobs of `image` the target lacks, for `--dry-run`: (what, digest, size), each once.
    pub async fn missing_at(
        &self,
        target: &Target,
        image: &PushImage,
    ) -> Result<Vec<(String, Digest, u64)>, RegistryError> {
        let reference = &image.reference;
        let ep = target.endpoint(reference);
        let top = self.cached(reference, &image.top)?;
        let mut manifests = Vec::new();
        match MediaType::sniff(&top).is_ok_and(|m| m.is_index()) {
            true => {
                let index: Index = parse(&top, &image.top, "index")?;
                manifests.extend(
                    (index.manifests.iter())
                        .filter(|c| self.cache.size_of(&c.digest) == Some(c.size))
                        .map(|c| c.digest.clone()),
                );
            }
            false => manifests.push(image.top.clone()),
        }
        let signatures = image.signatures.iter().map(|(_, d)| d);
        manifests.extend(signatures.filter(|d| self.holds_whole(d)).cloned());
        let mut out: Vec<(String, Digest, u64)> = Vec::new();
        for digest in manifests {
            let bytes = self.cached(reference, &digest)?;
            let manifest: Manifest = parse(&bytes, &digest, "manifest")?;
            for (i, desc) in std::iter::once(&manifest.config)
                .chain(&manifest.layers)
                .enumerate()
            {
                if out.iter().any(|(_, d, _)| *d == desc.digest)
                    || self.blob_present(&ep, reference, &desc.digest).await?
                {
                    continue;
                }
                let what = match i {
                    0 => format!("config of {digest}"),
                    n => format!("layer {n} of {digest}"),
                };
                out.push((what, desc.digest.clone(), desc.size));
            }
        }
        Ok(out)
    }
}

/// The media type a manifest declares in its own `mediaType`, else the one it sniffs as.
fn media_of(bytes: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Declared {
        #[serde(rename = "mediaType")]
        media_type: Option<String>,
    }
    serde_json::from_slice::<Declared>(bytes)
        .ok()
        .and_then(|d| d.media_type)
        .or_else(|| MediaType::sniff(bytes).ok().map(|m| m.as_str().to_owned()))
        .unwrap_or_else(|| "application/vnd.oci.image.manifest.v1+json".to_owned())
}
