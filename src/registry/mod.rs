//! A client for the distribution API (the registry HTTP API v2) that pulls images straight into
//! the verified blob cache, for a target platform that need not be the host's.
//!
//! Upstream pulled through containerd: root, a daemon, the host's platform only, and races with
//! its garbage collector. Here, on the shared [`crate::fetch`] client and retry policy:
//!
//! - **Auth** (`auth` parses challenges, `credentials` reads the auth files, `token` runs the flow): `GET /v2/`
//!   tells how the registry wants to be spoken to; bearer tokens are fetched from the challenge's realm per repository (`scope=repository:<name>:pull`),
//!   cached, and fetched again once on a 401; basic credentials come from the Docker or Podman auth
//!   files or a credential helper (`credentials`). No credential is logged or put into an error.
//! - **Manifests** (`manifests`): a tag is resolved with `HEAD` (Docker Hub does not count those
//!   against its pull limit), a manifest already cached under that digest is not fetched again, others are
//!   fetched by digest with the four manifest media types in `Accept`, capped at
//!   [`crate::image::MAX_MANIFEST_SIZE`], verified, and stored byte for byte. The platform is chosen by
//!   [`crate::image::select`]; [`Image::load`] then re-reads and re-checks everything from the
//!   cache, so the registry path and the offline path share one set of rules.
//! - **Blobs** (`blobs`) stream into the cache through a temporary file hashed while written,
//!   resumed with `Range` after a cut, renamed only when digest and size match (a mismatch is
//!   fetched again within the retry budget, like a 5xx). A blob in the cache with its descriptor's size is not fetched again (its
//!   content is checked when copied, see [`crate::cache`]); a blob several images share is
//!   fetched once, however many images wait for it, and a failure is not retried for other
//!   images of the same repository. A cached manifest that does not hash to its digest is
//!   fetched again.
//! - **Routes** (`endpoint`): mirrors, `--insecure-registry`, Docker Hub's API host.
//!   Redirects to other hosts (registry.k8s.io's CDN) are followed by the fetch layer's client,
//!   which drops `Authorization` when the host or port changes.
//!
//! Concurrency: images resolve and blobs download concurrently, bounded by `jobs`; when it was not
//! chosen, blob transfers start at the default and grow while throughput does (`adapt`), and a
//! large blob is fetched as several `Range` requests at once (`ranged`). Manifests and tokens
//! share one connection per host (HTTP/2 where the registry offers it); every blob body travels
//! over HTTP/1.1, one connection per transfer or part, so the slots of `adapt` and `ranged` are
//! connections, not streams of one connection.

mod adapt;
mod auth;
mod blobs;
mod chunked;
mod credentials;
mod endpoint;
mod error;
mod file_body;
mod helper;
mod manifests;
mod oauth;
mod push;
mod ranged;
mod referrers;
mod signatures;
mod target;
mod token;
mod upload;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use futures_util::stream;
use reqwest::header::HeaderValue;
use tokio::sync::{OnceCell, Semaphore};

pub use adapt::MAX_JOBS;
pub use auth::Challenge;
pub use credentials::{AuthFiles, Credentials, DOCKER_HUB_AUTH_KEY};
pub use endpoint::{DOCKER_HUB_API, Endpoint, RegistryMirror, Routes};
pub use error::RegistryError;
pub use push::{PushImage, PushOutcome};
pub use target::{Mapping, Target, TargetError};
pub use upload::{DEFAULT_CHUNK, Pushed, Tally};

use crate::cache::{Cache, CacheError, Key};
use crate::fetch::{self, Download, FetchError, HttpConfig, Origin, RetryPolicy};
use crate::image::{Arch, Digest, Image, ImageError, Index, Manifest, MediaType, Reference, parse};
use crate::progress::Progress;

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
    /// Whether `jobs` is where blob transfers start rather than a fixed count: then they grow
    /// while throughput does, up to [`MAX_JOBS`] (see `adapt`).
    pub adaptive: bool,
}

/// What we know about one registry endpoint (`scheme://host[:port]`).
#[derive(Default)]
struct HostState {
    /// The answer to `GET /v2/`, or why there was none: asked once per run, so a registry that
    /// is down fails every image at once instead of each retrying it again.
    challenge: Once<Challenge>,
    /// The user's credentials per repository name (an auth file may scope them by repository).
    credentials: Mutex<HashMap<String, Arc<OnceCell<Option<Credentials>>>>>,
    /// Bearer tokens per repository name.
    tokens: Mutex<HashMap<String, String>>,
    /// Whether the warning that an identity token is not sent to this Basic registry was given.
    identity_withheld: std::sync::atomic::AtomicBool,
}

/// A registry client sharing connections, tokens and in-flight blobs across images.
pub struct Registry {
    client: reqwest::Client,
    /// The HTTP/1.1-only client blob bodies travel on: one connection per transfer, whatever
    /// the registry negotiates for `client` (see [`fetch::Protocols`]).
    bulk_client: reqwest::Client,
    /// The client identity tokens are exchanged through: it follows no redirect, so that
    /// `oauth` judges where the token may go.
    token_client: reqwest::Client,
    retry: RetryPolicy,
    offline: bool,
    config: RegistryConfig,
    cache: Cache,
    blob_permits: Semaphore,
    adaptive: adapt::Adaptive,
    part_slots: ranged::PartSlots,
    hosts: Mutex<HashMap<String, Arc<HostState>>>,
    /// Blob downloads, each done once per run: the first by whichever image asks first
    /// (`None`), and after a failure, once per other repository that serves it (`Some(scope)`).
    inflight: Mutex<HashMap<Attempt, Arc<Once<()>>>>,
    /// The actions bearer tokens are asked for: `pull`, or `pull,push` for a push target.
    actions: &'static str,
    /// Blobs a push put into a repository of its target this run, to mount them elsewhere.
    pushed: Mutex<HashMap<Digest, String>>,
    /// One upload of a blob at a time: another image's waits, then mounts it.
    uploading: Mutex<HashMap<Digest, Arc<tokio::sync::Mutex<()>>>>,
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
            bulk_client: fetch::build_bulk_client(http)?,
            token_client: fetch::build_client_without_redirects(http)?,
            retry: http.retry,
            offline: http.offline,
            blob_permits: Semaphore::new(config.jobs.max(1)),
            adaptive: adapt::Adaptive::new(config.jobs.max(1), config.adaptive),
            part_slots: ranged::PartSlots::default(),
            config,
            cache,
            hosts: Mutex::default(),
            inflight: Mutex::default(),
            actions: "pull",
            pushed: Mutex::default(),
            uploading: Mutex::default(),
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
            budget: None,
        }
    }

    /// [`Registry::download`] for a blob body, whatever its size: on the HTTP/1.1 client, so
    /// each transfer slot and ranged part is a connection of its own and no body waits behind
    /// another on the multiplexed connection the manifests and tokens use.
    fn blob_download<'a>(&'a self, progress: &'a dyn Progress) -> Download<'a> {
        Download {
            client: &self.bulk_client,
            ..self.download(progress)
        }
    }

    /// [`Registry::download`] through the client that follows no redirect.
    fn token_download(&self) -> Download<'_> {
        Download {
            client: &self.token_client,
            ..self.download(&())
        }
    }

    fn host(&self, ep: &Endpoint) -> Arc<HostState> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        hosts.entry(ep.base.clone()).or_default().clone()
    }

    /// Transfers at once, as configured; with `adaptive`, the most they may grow to (the blob
    /// slots themselves start at `jobs` and grow only while throughput does).
    pub fn jobs(&self) -> usize {
        match self.config.adaptive {
            true => self.config.jobs.max(MAX_JOBS),
            false => self.config.jobs.max(1),
        }
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
        let (top, _) = self.tag_digest(reference).await?;
        let image = self.resolve_at(reference, &top, arch).await?;
        let key = Key::tag(reference);
        let size = image.top.bytes.len() as u64;
        if let Err(e) = self
            .cache
            .remember(&key, &top, size, &reference.to_string())
        {
            tracing::warn!("cannot record {reference} in the cache index: {e}");
        }
        Ok(image)
    }

    /// What the tag of `reference` points at (offline: what the cache's index recorded), and
    /// which of the two answered.
    async fn tag_digest(&self, reference: &Reference) -> Result<(Digest, Origin), RegistryError> {
        let key = Key::tag(reference);
        let recalled = || Ok(self.cache.recall(&key).map(|found| found.digest));
        let asked = async {
            let ep = self.config.routes.endpoint(reference);
            // A reference without a digest always has a tag (`latest` by default).
            let tag = reference.tag().unwrap_or("latest");
            Ok::<_, RegistryError>(match self.head_manifest(&ep, reference, tag).await? {
                Some(digest) => digest,
                None => self.get_manifest(&ep, reference, tag, None).await?,
            })
        };
        self.download(&()).or_cached(recalled, asked).await
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
            if let Ok(entry) = crate::image::select(&index.manifests, arch) {
                self.manifest(&ep, reference, &entry.digest).await?;
            }
        } else {
            let manifest: Manifest = parse(&top_bytes, &top, "manifest")?;
            self.blob(&ep, reference, &manifest.config, "config", &())
                .await?;
        }
        Ok(Image::load(reference.clone(), &top, arch, &self.cache)?)
    }

    /// The config blob of `image` (a few KiB), fetched into the cache when missing, verified, and
    /// read back: what an unlocked build's date is taken from (`lock::epoch`).
    pub async fn config(&self, image: &Image) -> Result<Vec<u8>, RegistryError> {
        use std::io::Read;
        let ep = self.config.routes.endpoint(&image.reference);
        self.blob(&ep, &image.reference, &image.config, "config", &())
            .await?;
        let cache_failed = |source| RegistryError::Cache {
            reference: image.reference.to_string(),
            source,
        };
        let digest = &image.config.digest;
        let file = self.cache.open(digest).map_err(cache_failed)?;
        let mut bytes = Vec::new();
        file.take(image.config.size)
            .read_to_end(&mut bytes)
            .map_err(|e| cache_failed(CacheError::io(&self.cache.blob_path(digest), e)))?;
        Ok(bytes)
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
