//! A client for the distribution API (the registry HTTP API v2) that pulls images straight into
//! the verified blob cache, for a target platform that need not be the host's.
//!
//! Upstream pulled through containerd: root, a daemon, the host's platform only, and races with
//! its garbage collector. Here, on the shared [`crate::fetch`] client and retry policy:
//!
//! - **Auth** (`auth`): `GET /v2/` tells how the registry wants to be spoken to; bearer tokens
//!   are fetched from the challenge's realm per repository (`scope=repository:<name>:pull`),
//!   cached, and fetched again once on a 401; basic credentials come from the Docker config or a
//!   credential helper. No credential is logged or put into an error.
//! - **Manifests**: a tag is resolved with `HEAD` (Docker Hub does not count those against its
//!   pull limit), a manifest already cached under that digest is not fetched again, others are
//!   fetched by digest with the four manifest media types in `Accept`, capped at
//!   [`MAX_MANIFEST_SIZE`], verified, and stored byte for byte. The platform is chosen by
//!   [`crate::image::platform`]; [`Image::load`] then re-reads and re-checks everything from the
//!   cache, so the registry path and the offline path share one set of rules.
//! - **Blobs** stream into the cache through a temporary file hashed while written, resumed with
//!   `Range` after a cut, renamed only when digest and size match (one fresh download is tried
//!   after a mismatch). A blob in the cache with its descriptor's size is not fetched again (its
//!   content is checked when copied, see [`crate::cache`]); a blob several images share is
//!   fetched once, however many images wait for it, and a failure is not retried for other
//!   images of the same repository. A cached manifest that does not hash to its digest is
//!   fetched again.
//! - **Routes** (`endpoint`): mirrors, `--insecure-registry`, Docker Hub's API host.
//!   Redirects to other hosts (registry.k8s.io's CDN) are followed by the fetch layer's client,
//!   which drops `Authorization` when the host or port changes.
//!
//! Concurrency: images resolve and blobs download concurrently, bounded by `jobs`.

mod auth;
mod endpoint;
mod error;
mod signatures;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use futures_util::stream;
use reqwest::Method;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use serde::Deserialize;
use tokio::sync::{OnceCell, Semaphore};

pub use auth::{AuthFiles, Challenge, Credentials};
pub use endpoint::{DOCKER_HUB_API, Endpoint, RegistryMirror, Routes};
pub use error::RegistryError;

use crate::cache::{Cache, CacheError};
use crate::fetch::{self, Download, FetchError, FileSink, HttpConfig, RetryPolicy, Sink};
use crate::image::{
    Arch, Descriptor, Digest, Image, ImageError, Index, MAX_MANIFEST_SIZE, Manifest, MediaType,
    Reference, parse,
};
use crate::progress::{Progress, Source};

/// Largest token reply we read.
const MAX_TOKEN_SIZE: u64 = 1024 * 1024;

/// How to reach registries and where to keep what they send.
#[derive(Debug, Clone)]
pub struct RegistryConfig {
    /// Mirrors and insecure registries.
    pub routes: Routes,
    /// Where credentials come from.
    pub auth: AuthFiles,
    /// Transfers at once (images resolving, blobs downloading).
    pub jobs: usize,
}

/// What we know about one registry endpoint (`scheme://host[:port]`).
#[derive(Default)]
struct HostState {
    /// The answer to `GET /v2/`, or why there was none: asked once per run, so a registry that
    /// is down fails every image at once instead of each retrying it again.
    challenge: Once<Challenge>,
    credentials: OnceCell<Option<Credentials>>,
    /// Bearer tokens per repository name.
    tokens: Mutex<HashMap<String, String>>,
}

/// A registry client sharing connections, tokens and in-flight blobs across images.
pub struct Registry {
    client: reqwest::Client,
    retry: RetryPolicy,
    offline: bool,
    config: RegistryConfig,
    cache: Cache,
    blob_permits: Semaphore,
    hosts: Mutex<HashMap<String, Arc<HostState>>>,
    /// Blob downloads, each done once per run: the first by whichever image asks first
    /// (`None`), and after a failure, once per other repository that serves it (`Some(scope)`).
    inflight: Mutex<HashMap<Attempt, Arc<Once<()>>>>,
}

/// Which request a 401 or 404 came from, to word the error.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Manifest,
    Blob,
}

impl Registry {
    /// A client on a fresh [`fetch::build_client`] with `http`'s timeouts, CA files and retries.
    pub fn new(
        config: RegistryConfig,
        http: &HttpConfig,
        cache: Cache,
    ) -> Result<Self, FetchError> {
        Ok(Self {
            client: fetch::build_client(http)?,
            retry: http.retry,
            offline: http.offline,
            blob_permits: Semaphore::new(config.jobs.max(1)),
            config,
            cache,
            hosts: Mutex::default(),
            inflight: Mutex::default(),
        })
    }

    /// The cache blobs go to.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    fn download<'a>(&'a self, progress: &'a dyn Progress) -> Download<'a> {
        Download {
            client: &self.client,
            retry: self.retry,
            progress,
            offline: self.offline,
        }
    }

    fn host(&self, ep: &Endpoint) -> Arc<HostState> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        hosts.entry(ep.base.clone()).or_default().clone()
    }

    /// Transfers at once, as configured.
    pub fn jobs(&self) -> usize {
        self.config.jobs.max(1)
    }

    /// Resolves `references` for `arch`, `jobs` at a time; one result per reference, in order.
    pub async fn resolve_all(
        &self,
        references: &[Reference],
        arch: Arch,
    ) -> Vec<Result<Image, RegistryError>> {
        stream::iter(references)
            .map(|reference| self.resolve(reference, arch))
            .buffered(self.jobs())
            .collect()
            .await
    }

    /// Bytes of config and layer blobs of `images` not yet in the cache, each blob once: what
    /// progress should expect.
    pub fn missing_bytes<'a>(&self, images: impl IntoIterator<Item = &'a Image>) -> u64 {
        let mut missing: BTreeMap<&Digest, u64> = BTreeMap::new();
        for image in images {
            for blob in std::iter::once(&image.config).chain(&image.layers) {
                if self.cache.size_of(&blob.digest) != Some(blob.size) {
                    missing.insert(&blob.digest, blob.size);
                }
            }
        }
        missing.values().sum()
    }

    /// Resolves `reference` to an [`Image`] for `arch`: its manifests (and, for a single-platform
    /// image, its config) end up verified in the cache; layers are not fetched.
    /// Offline, a tag resolves to what the cache recorded when it was last resolved online.
    pub async fn resolve(&self, reference: &Reference, arch: Arch) -> Result<Image, RegistryError> {
        if let Some(digest) = reference.digest() {
            return self.resolve_at(reference, digest, arch).await;
        }
        let top = self.tag_digest(reference).await?;
        let image = self.resolve_at(reference, &top, arch).await?;
        let key = format!("tag:{reference}");
        let size = image.top.bytes.len() as u64;
        if let Err(e) = self
            .cache
            .remember(&key, &top, size, &reference.to_string())
        {
            tracing::warn!("cannot record {reference} in the cache index: {e}");
        }
        Ok(image)
    }

    /// What the tag of `reference` points at (offline: what the cache's index recorded).
    async fn tag_digest(&self, reference: &Reference) -> Result<Digest, RegistryError> {
        let key = format!("tag:{reference}");
        if self.offline
            && let Some(found) = self.cache.recall(&key)
        {
            return Ok(found.digest);
        }
        let ep = self.config.routes.endpoint(reference);
        // A reference without a digest always has a tag (`latest` by default).
        let tag = reference.tag().unwrap_or("latest");
        Ok(match self.head_manifest(&ep, reference, tag).await? {
            Some(digest) => digest,
            None => self.get_manifest(&ep, reference, tag, None).await?,
        })
    }

    /// Resolves `reference` as the index or manifest `top` (a locked build pulls by digest and
    /// keeps the reference's name), like [`Registry::resolve`].
    pub async fn resolve_at(
        &self,
        reference: &Reference,
        top: &Digest,
        arch: Arch,
    ) -> Result<Image, RegistryError> {
        let ep = self.config.routes.endpoint(reference);
        let top = top.clone();
        let top_bytes = self.manifest(&ep, reference, &top).await?;
        let media = MediaType::sniff(&top_bytes).map_err(|reason| ImageError::Unsupported {
            image: reference.to_string(),
            digest: top.clone(),
            reason: reason.0,
        })?;
        if media.is_index() {
            let index: Index = parse(&top_bytes, &top, "index")?;
            // No match is left to `Image::load`, which words the error with the platforms.
            if let Ok(entry) = crate::image::platform::select(&index.manifests, arch) {
                self.manifest(&ep, reference, &entry.digest).await?;
            }
        } else {
            let manifest: Manifest = parse(&top_bytes, &top, "manifest")?;
            self.blob(&ep, reference, &manifest.config, "config", &())
                .await?;
        }
        Ok(Image::load(reference.clone(), &top, arch, &self.cache)?)
    }

    /// Downloads the config and layers of `image` into the cache.
    pub async fn fetch_blobs(
        &self,
        image: &Image,
        progress: &dyn Progress,
    ) -> Result<(), RegistryError> {
        let ep = self.config.routes.endpoint(&image.reference);
        let count = image.layers.len();
        let mut blobs = vec![(&image.config, "config".to_owned())];
        for (i, layer) in image.layers.iter().enumerate() {
            blobs.push((layer, format!("layer {} of {count}", i + 1)));
        }
        let results: Vec<Result<(), RegistryError>> = stream::iter(blobs)
            .map(|(desc, what)| {
                let ep = &ep;
                async move { self.blob(ep, &image.reference, desc, &what, progress).await }
            })
            .buffer_unordered(self.jobs())
            .collect()
            .await;
        results.into_iter().collect()
    }

    /// The bytes of the manifest `digest`, from the cache or else fetched, verified and cached.
    /// A cached copy that does not hash to `digest` (damaged by a power loss) is fetched again.
    async fn manifest(
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
    fn cached_manifest(&self, digest: &Digest) -> Result<Vec<u8>, CacheError> {
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
    async fn head_manifest(
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
    async fn get_manifest(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        object: &str,
        expected: Option<&Digest>,
    ) -> Result<Digest, RegistryError> {
        let url = ep.manifest_url(object);
        let mut attempt = 1;
        let bytes = loop {
            let mut renewed = false;
            let bytes = loop {
                let mut headers = self.auth_headers(ep, reference, renewed).await?;
                headers.insert(ACCEPT, accept());
                match fetch::get_bytes(&self.download(&()), &url, &headers, MAX_MANIFEST_SIZE).await
                {
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
                None => MediaType::sniff(&bytes).is_err(),
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
            if attempt >= self.retry.attempts.max(2) {
                return Err(err);
            }
            tracing::warn!("{err}; fetching it again");
            tokio::time::sleep(self.retry.delay(attempt, None)).await;
            attempt += 1;
        };
        self.cache
            .put_bytes(&bytes)
            .map_err(|source| RegistryError::Cache {
                reference: reference.to_string(),
                source,
            })
    }

    /// Turns a failed request into the error to return, or `Ok(true)` to try once more with a
    /// fresh token after a first 401.
    fn judge(
        &self,
        err: FetchError,
        ep: &Endpoint,
        reference: &Reference,
        kind: Kind,
        what: &str,
        renewed: bool,
    ) -> Result<bool, RegistryError> {
        match err.status() {
            Some(401) if !renewed => Ok(true),
            Some(status @ (401 | 403)) => Err(self.refused(ep, reference, status)),
            Some(404) if kind == Kind::Manifest => Err(self.not_found(ep, reference)),
            _ => Err(RegistryError::Fetch {
                reference: reference.to_string(),
                what: what.to_owned(),
                source: err,
            }),
        }
    }

    fn not_found(&self, ep: &Endpoint, reference: &Reference) -> RegistryError {
        RegistryError::NotFound {
            reference: reference.to_string(),
            registry: ep.host().to_owned(),
        }
    }

    fn refused(&self, ep: &Endpoint, reference: &Reference, status: u16) -> RegistryError {
        RegistryError::Auth {
            reference: reference.to_string(),
            registry: ep.host().to_owned(),
            reason: format!("HTTP {status} for repository {}", ep.name),
        }
    }

    /// Makes sure the blob `desc` is in the cache, downloading it once however many images ask.
    /// When that download fails, the image that ran it gets its error, and the others sharing the
    /// blob *through the same repository* fail at once, naming that first failure, instead of
    /// downloading it again; an image whose repository (or registry) differs tries its own, once.
    async fn blob(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        desc: &Descriptor,
        what: &str,
        progress: &dyn Progress,
    ) -> Result<(), RegistryError> {
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
                self.download_blob(ep, reference, desc, what, progress)
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

    async fn download_blob(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        desc: &Descriptor,
        what: &str,
        progress: &dyn Progress,
    ) -> Result<(), RegistryError> {
        let url = ep.blob_url(&desc.digest);
        let target = self.cache.blob_path(&desc.digest);
        let what = format!("{what} {}", desc.digest);
        let io_err = |source: std::io::Error| RegistryError::Cache {
            reference: reference.to_string(),
            source: CacheError::Io {
                path: target.clone(),
                source,
            },
        };
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).map_err(io_err)?;
        }
        let mut attempt = 1;
        loop {
            let mut sink = FileSink::create(&target).map_err(io_err)?;
            let mut renewed = false;
            loop {
                let headers = self.auth_headers(ep, reference, renewed).await?;
                match self
                    .download(progress)
                    .to_sink(&url, &headers, &mut sink)
                    .await
                {
                    Ok(_) => break,
                    Err(err) => {
                        renewed = self.judge(err, ep, reference, Kind::Blob, &what, renewed)?
                    }
                }
            }
            let actual = Digest::parse(&format!("sha256:{}", sink.sha256()))
                .expect("sha256 hex is a digest");
            if actual == desc.digest && sink.written() == desc.size {
                sink.set_mode(0o644).map_err(io_err)?;
                sink.commit_unsynced().map_err(io_err)?;
                self.cache.mark_verified(&desc.digest);
                progress.item(&format!("{reference} {what}"), desc.size, Source::Network);
                return Ok(());
            }
            let err = RegistryError::Mismatch {
                reference: reference.to_string(),
                what: what.clone(),
                expected: desc.digest.clone(),
                actual,
                expected_size: desc.size,
                actual_size: sink.written(),
            };
            // The sink is dropped here, and with it the unverified file.
            drop(sink);
            // Damaged on the way until proven otherwise: the same budget as a 5xx.
            if attempt >= self.retry.attempts.max(2) {
                return Err(err);
            }
            tracing::warn!("{err}; downloading it again");
            tokio::time::sleep(self.retry.delay(attempt, None)).await;
            attempt += 1;
        }
    }

    /// The `Authorization` header for requests on `ep`, fetching a fresh token when `renew`.
    async fn auth_headers(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        renew: bool,
    ) -> Result<HeaderMap, RegistryError> {
        let host = self.host(ep);
        let challenge = match once(&host.challenge, ep.host(), self.ping(ep, reference)).await {
            Ok(challenge) => challenge,
            Err(Failed::Here(err)) => return Err(err),
            Err(Failed::Earlier(first)) => {
                return Err(RegistryError::Unreachable {
                    reference: reference.to_string(),
                    registry: ep.host().to_owned(),
                    reason: first.reason,
                    hint: first.hint,
                });
            }
        };
        let mut headers = HeaderMap::new();
        let value = match challenge {
            Challenge::None => return Ok(headers),
            Challenge::Basic => match self.credentials(&host, ep).await? {
                Some(creds) => creds.basic(),
                None => return Ok(headers),
            },
            Challenge::Bearer { realm, service } => {
                let cached = host
                    .tokens
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&ep.name)
                    .cloned();
                let token = match cached.filter(|_| !renew) {
                    Some(token) => token,
                    None => {
                        let token = self
                            .token(&host, ep, reference, realm, service.as_deref())
                            .await?;
                        host.tokens
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(ep.name.clone(), token.clone());
                        token
                    }
                };
                format!("Bearer {token}")
            }
        };
        let mut value = HeaderValue::from_str(&value).map_err(|_| RegistryError::Protocol {
            reference: reference.to_string(),
            registry: ep.host().to_owned(),
            reason: "the token or credentials are not a valid header value".into(),
        })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
        Ok(headers)
    }

    async fn credentials(
        &self,
        host: &HostState,
        ep: &Endpoint,
    ) -> Result<Option<Credentials>, RegistryError> {
        host.credentials
            .get_or_try_init(|| async { self.config.auth.lookup(ep.host()) })
            .await
            .cloned()
    }

    /// Checks, as a pull of `reference` would, that its registry (or mirror) answers `GET /v2/`
    /// and, when it asks for authentication, that the configured credentials (or none, for an
    /// anonymous token) get through: a pull token is obtained, or Basic credentials are
    /// accepted. Returns what was found, for `cks-iso doctor`.
    pub async fn check_access(&self, reference: &Reference) -> Result<String, RegistryError> {
        let ep = self.config.routes.endpoint(reference);
        let host = self.host(&ep);
        let challenge = self.ping(&ep, reference).await?;
        let creds = self.credentials(&host, &ep).await?;
        let who = match creds {
            Some(_) => "with the configured credentials",
            None => "anonymously",
        };
        match challenge {
            Challenge::None => Ok(format!(
                "{} answers; no authentication asked",
                ep.ping_url()
            )),
            Challenge::Basic => {
                let Some(creds) = creds else {
                    return Err(RegistryError::Auth {
                        reference: reference.to_string(),
                        registry: ep.host().to_owned(),
                        reason:
                            "it asks for Basic authentication and no credentials are configured"
                                .into(),
                    });
                };
                let mut headers = HeaderMap::new();
                let mut value =
                    HeaderValue::from_str(&creds.basic()).map_err(|_| RegistryError::Protocol {
                        reference: reference.to_string(),
                        registry: ep.host().to_owned(),
                        reason: "the credentials are not a valid header value".into(),
                    })?;
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
                let probed =
                    fetch::probe(&self.download(&()), Method::GET, &ep.ping_url(), &headers)
                        .await
                        .map_err(|source| RegistryError::Fetch {
                            reference: reference.to_string(),
                            what: "the registry's API root".into(),
                            source,
                        })?;
                match probed.status.as_u16() {
                    401 | 403 => Err(RegistryError::Auth {
                        reference: reference.to_string(),
                        registry: ep.host().to_owned(),
                        reason: format!(
                            "it refused the configured credentials (HTTP {})",
                            probed.status.as_u16()
                        ),
                    }),
                    _ => Ok(format!(
                        "{} answers; Basic authentication accepted {who}",
                        ep.ping_url()
                    )),
                }
            }
            Challenge::Bearer { realm, service } => {
                self.token(&host, &ep, reference, &realm, service.as_deref())
                    .await?;
                Ok(format!(
                    "{} answers; pull token obtained {who}",
                    ep.ping_url()
                ))
            }
        }
    }

    /// `GET /v2/`: how the registry wants to be authenticated.
    async fn ping(&self, ep: &Endpoint, reference: &Reference) -> Result<Challenge, RegistryError> {
        let url = ep.ping_url();
        let probed = fetch::probe(&self.download(&()), Method::GET, &url, &HeaderMap::new())
            .await
            .map_err(|source| RegistryError::Fetch {
                reference: reference.to_string(),
                what: "the registry's API root".into(),
                source,
            })?;
        if probed.status.as_u16() != 401 {
            return Ok(Challenge::None);
        }
        let challenge = probed
            .headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(Challenge::parse);
        challenge.ok_or_else(|| RegistryError::Protocol {
            reference: reference.to_string(),
            registry: ep.host().to_owned(),
            reason: "401 on /v2/ without a Basic or Bearer challenge".into(),
        })
    }

    /// An anonymous (or, with credentials, authenticated) pull token for `ep.name`.
    async fn token(
        &self,
        host: &HostState,
        ep: &Endpoint,
        reference: &Reference,
        realm: &str,
        service: Option<&str>,
    ) -> Result<String, RegistryError> {
        let mut url = reqwest::Url::parse(realm).map_err(|_| RegistryError::Protocol {
            reference: reference.to_string(),
            registry: ep.host().to_owned(),
            reason: format!("the token realm {realm:?} is not a URL"),
        })?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &format!("repository:{}:pull", ep.name));
        }
        let mut headers = HeaderMap::new();
        if let Some(creds) = self.credentials(host, ep).await? {
            let mut value =
                HeaderValue::from_str(&creds.basic()).map_err(|_| RegistryError::Protocol {
                    reference: reference.to_string(),
                    registry: ep.host().to_owned(),
                    reason: "the credentials are not a valid header value".into(),
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let token_host = url.host_str().unwrap_or_default().to_owned();
        #[derive(Deserialize)]
        struct Reply {
            token: Option<String>,
            access_token: Option<String>,
        }
        let mut attempt = 1;
        let reply: Reply = loop {
            let (bytes, _) =
                fetch::get_bytes(&self.download(&()), url.as_str(), &headers, MAX_TOKEN_SIZE)
                    .await
                    .map_err(|err| match err.status() {
                        Some(status @ (401 | 403)) => RegistryError::Auth {
                            reference: reference.to_string(),
                            registry: token_host.clone(),
                            reason: format!("its token service answered HTTP {status}"),
                        },
                        _ => RegistryError::Fetch {
                            reference: reference.to_string(),
                            what: "a pull token".into(),
                            source: err,
                        },
                    })?;
            match serde_json::from_slice(&bytes) {
                Ok(reply) => break reply,
                // Damaged on the way until proven otherwise.
                Err(_) if attempt < self.retry.attempts => {
                    tracing::debug!("the token reply from {token_host} is not JSON; asking again");
                    tokio::time::sleep(self.retry.delay(attempt, None)).await;
                    attempt += 1;
                }
                Err(_) => {
                    return Err(RegistryError::Protocol {
                        reference: reference.to_string(),
                        registry: token_host,
                        reason: "the token reply is not JSON".into(),
                    });
                }
            }
        };
        reply
            .token
            .or(reply.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| RegistryError::Protocol {
                reference: reference.to_string(),
                registry: token_host,
                reason: "the token reply has neither `token` nor `access_token`".into(),
            })
    }
}

/// The first failure of something the images of a run share (a registry's API root, a blob),
/// kept to fail the other images without asking again.
#[derive(Debug, Clone)]
struct FirstFailure {
    /// Where it failed: the registry, or the registry and repository.
    scope: String,
    /// The causes only (the top line names the image that asked first), or the top line when
    /// there are none.
    reason: String,
    /// The whole error: the first image, what failed and why.
    text: String,
    hint: Option<String>,
}

impl FirstFailure {
    fn new(err: &RegistryError, scope: &str) -> Self {
        let mut causes = Vec::new();
        let mut source = std::error::Error::source(err);
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        let top = err.to_string();
        let text = std::iter::once(top.clone())
            .chain(causes.iter().cloned())
            .collect::<Vec<_>>()
            .join(": ");
        let reason = match causes.is_empty() {
            true => top,
            false => causes.join(": "),
        };
        Self {
            scope: scope.to_owned(),
            reason,
            text,
            hint: err.hint(),
        }
    }
}

/// One download of a blob: from any repository (`None`), or from this one (`Some(scope)`).
type Attempt = (Digest, Option<String>);

/// Work done once for all callers, with how it ended (see [`once`]).
type Once<T> = OnceCell<Result<T, FirstFailure>>;

/// How [`once`] failed.
enum Failed {
    /// This caller ran the work, and this is its error.
    Here(RegistryError),
    /// Another caller ran it and failed so.
    Earlier(FirstFailure),
}

/// Runs `work` at most once for all callers sharing `cell`, success or failure: the caller whose
/// `work` ran gets its own error, the others the [`FirstFailure`] (in `scope`), without trying
/// again.
async fn once<'a, T, F>(cell: &'a Once<T>, scope: &str, work: F) -> Result<&'a T, Failed>
where
    F: std::future::Future<Output = Result<T, RegistryError>>,
{
    let mut own = None;
    let outcome = cell
        .get_or_init(|| async {
            work.await.map_err(|err| {
                let first = FirstFailure::new(&err, scope);
                own = Some(err);
                first
            })
        })
        .await;
    match (own, outcome) {
        (Some(err), _) => Err(Failed::Here(err)),
        (None, Ok(value)) => Ok(value),
        (None, Err(first)) => Err(Failed::Earlier(first.clone())),
    }
}

fn accept() -> HeaderValue {
    let all: Vec<&str> = MediaType::ALL.iter().map(|m| m.as_str()).collect();
    HeaderValue::from_str(&all.join(", ")).expect("media types are ASCII")
}
