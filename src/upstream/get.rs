//! Downloads one [`Artifact`] through the mirrors, verifies it, and names it only when it passed.

use std::path::{Path, PathBuf};

use reqwest::header::HeaderMap;

use super::{Artifact, Checksum, UpstreamError, file_name};
use crate::cache::{Cache, Key};
use crate::fetch::{
    Download, FetchError, FileSink, HttpConfig, Mirrors, Origin, get_bytes, redact, strip_userinfo,
};
use crate::image::Digest;
use crate::progress::Source;
use cks_iso_io::Sha256Sum;

/// Checksum files are a line; more than this is not one.
const CHECKSUM_LIMIT: u64 = 1 << 20;

/// The largest manifest taken, downloaded or local: the biggest upstream ones (operator CRDs)
/// are a few MiB; more is not a manifest, and is refused before it fills the disk or memory.
pub const MANIFEST_LIMIT: u64 = 32 << 20;

/// Downloads artifacts with one client, retry policy and set of mirrors.
#[derive(Clone, Copy)]
pub struct Fetcher<'a> {
    /// The transfer settings.
    pub download: Download<'a>,
    /// The client file bodies travel on, when not `download`'s: HTTP/1.1 only
    /// ([`crate::fetch::build_bulk_client`]), so files downloading at once from one host (dl.k8s.io,
    /// GitHub's release storage) each get a connection instead of sharing one HTTP/2 connection's
    /// windows. Checksums, texts and git refs stay on `download`'s client.
    pub bulk: Option<&'a reqwest::Client>,
    /// URL prefix rewriting.
    pub mirrors: &'a Mirrors,
    /// Where downloads are kept by content, with an index by URL: a locked build takes what it
    /// has from here, an offline build everything.
    pub store: Option<&'a Cache>,
}

impl<'a> Fetcher<'a> {
    /// A downloader on `client` with `http`'s retries and offline switch, through `mirrors`,
    /// keeping downloads in `store` when given, reporting to `progress`; file bodies on `client`
    /// too until [`Fetcher::with_bulk`].
    pub fn new(
        client: &'a reqwest::Client,
        http: &HttpConfig,
        mirrors: &'a Mirrors,
        store: Option<&'a Cache>,
        progress: &'a dyn crate::progress::Progress,
    ) -> Self {
        Self {
            download: Download {
                client,
                retry: http.retry,
                progress,
                offline: http.offline,
                budget: None,
            },
            bulk: None,
            mirrors,
            store,
        }
    }

    /// File bodies on `bulk` (see [`Fetcher::bulk`]).
    pub fn with_bulk(self, bulk: &'a reqwest::Client) -> Self {
        Self {
            bulk: Some(bulk),
            ..self
        }
    }
}

/// What a locked build expects of a download.
#[derive(Debug, Clone)]
pub struct Expected {
    /// sha256, lowercase hex.
    pub sha256: String,
    /// Bytes, when the lock records them.
    pub size: Option<u64>,
    /// The URL the lock names (the legacy one when that was used).
    pub url: String,
}

/// The cache index key of an upstream URL (without any user or password).
pub(super) fn url_key(url: &str) -> Key {
    Key::Url(strip_userinfo(url))
}

/// The size of a file just written, for progress events (0 if it cannot be read).
fn size_of(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// A verified file at its final path.
#[derive(Debug, Clone)]
pub struct Got {
    /// Where it is.
    pub path: PathBuf,
    /// The upstream URL it stands for (legacy name if that was used), as `versions.txt` records.
    pub url: String,
    /// The URL actually requested (after mirror rewriting).
    pub fetched_from: String,
    /// Its sha256.
    pub sha256: Sha256Sum,
    /// Whether it was checked against a published checksum.
    pub checksum_verified: bool,
    /// Things the user should read (a missing optional checksum, a legacy name, a joined `---`).
    pub notes: Vec<String>,
}

/// A body fetched under an artifact's legacy name: the URL, its checksum, the sink with whether
/// the transport knew where the body ends, and the URL it was fetched from.
type LegacyBody = (String, Option<Checksum>, (FileSink, bool), String);

impl Fetcher<'_> {
    /// Downloads `artifact` to `dest`; on any error nothing is left at `dest` or beside it.
    /// With a store, the file is kept there; offline, it is taken from there.
    pub async fn get(&self, artifact: &Artifact, dest: &Path) -> Result<Got, UpstreamError> {
        self.get_expecting(artifact, dest, None).await
    }

    /// [`Fetcher::get`] for a locked build: the store's copy of `expected` when it has one, else
    /// a download that must hash to it ([`UpstreamError::Drift`] otherwise, nothing left behind).
    pub async fn get_expecting(
        &self,
        artifact: &Artifact,
        dest: &Path,
        expected: Option<&Expected>,
    ) -> Result<Got, UpstreamError> {
        let progress = self.download.progress;
        let locked = expected.and_then(|want| self.locked_copy(want));
        if let Some(got) = locked.and_then(|found| self.copy_out(artifact, dest, found)) {
            progress.item(&got.url, size_of(&got.path), Source::Cache);
            return Ok(got);
        }
        // Offline, what the URL last named: only without a lock, which names its own digest.
        let recalled = || -> Result<Option<Got>, UpstreamError> {
            match (self.store, expected) {
                (Some(store), None) => Ok(self
                    .recalled(store, artifact)?
                    .and_then(|found| self.copy_out(artifact, dest, found))),
                _ => Ok(None),
            }
        };
        let fetched = self.fetch_verified(artifact, dest, expected);
        let (got, origin) = self.download.or_cached(recalled, fetched).await?;
        if origin == Origin::Cache {
            progress.item(&got.url, size_of(&got.path), Source::Cache);
            return Ok(got);
        }
        progress.item(&got.url, size_of(&got.path), Source::Network);
        if let Some(store) = self.store {
            let digest = Digest::sha256(got.sha256);
            let kept = store
                .keep_file(&got.path, &digest)
                .and_then(|size| store.remember(&url_key(&artifact.url), &digest, size, &got.url));
            if let Err(e) = kept {
                tracing::warn!("cannot keep {} in the cache: {e}", artifact.name);
            }
        }
        Ok(got)
    }

    /// Downloads and verifies `artifact`, fetching it and its checksum again while the bytes
    /// fail verification (damaged on the way until proven otherwise), within the budget of a 5xx.
    async fn fetch_verified(
        &self,
        artifact: &Artifact,
        dest: &Path,
        expected: Option<&Expected>,
    ) -> Result<Got, UpstreamError> {
        let mut refetch = self.download.refetch();
        loop {
            let size = expected.and_then(|want| want.size);
            let sha256 = expected.map(|want| want.sha256.as_str());
            // The file and its checksum draw on the item's one budget.
            let budgeted = Fetcher {
                download: refetch.download(&self.download),
                bulk: self.bulk,
                mirrors: self.mirrors,
                store: self.store,
            };
            let err = match budgeted
                .download_verified(artifact, dest, size, sha256)
                .await
            {
                Ok(got) => match expected.filter(|want| want.sha256 != got.sha256.to_string()) {
                    None => return Ok(got),
                    Some(want) => {
                        let _ = std::fs::remove_file(&got.path);
                        UpstreamError::Drift {
                            name: artifact.name.clone(),
                            url: got.fetched_from,
                            expected: want.sha256.clone(),
                            actual: got.sha256.to_string(),
                        }
                    }
                },
                Err(err) => err,
            };
            if !err.is_corruption() || !refetch.again(&err, "downloading it").await {
                return Err(err);
            }
        }
    }

    /// The store's copy of the locked `want`, when it holds that digest at the locked size.
    fn locked_copy(&self, want: &Expected) -> Option<(Digest, String)> {
        let store = self.store?;
        Digest::from_hex(&want.sha256)
            .ok()
            .filter(|d| {
                store
                    .size_of(d)
                    .is_some_and(|size| want.size.is_none_or(|want| want == size))
            })
            .map(|d| (d, want.url.clone()))
    }

    /// What the store last kept for `artifact`'s URL, tied to its published checksum.
    fn recalled(
        &self,
        store: &Cache,
        artifact: &Artifact,
    ) -> Result<Option<(Digest, String)>, UpstreamError> {
        match store.recall(&url_key(&artifact.url)) {
            Some(r) => {
                self.tie(store, artifact, &r)?;
                Ok(Some((r.digest, r.note)))
            }
            None => Ok(None),
        }
    }

    /// The store's blob `digest` copied out to `dest` as `artifact` (`url`, where it was
    /// downloaded from); `None`, after a warning, when the copy fails.
    fn copy_out(&self, artifact: &Artifact, dest: &Path, found: (Digest, String)) -> Option<Got> {
        let store = self.store?;
        let (digest, url) = found;
        match store.copy_out(&digest, dest, artifact.mode) {
            Ok(_) => Some(Got {
                path: dest.to_owned(),
                url,
                fetched_from: format!("the cache ({})", store.root().display()),
                sha256: digest.sum(),
                checksum_verified: true,
                notes: Vec::new(),
            }),
            Err(e) => {
                tracing::warn!(
                    "cached copy of {} is unusable ({e}); downloading it",
                    artifact.name
                );
                None
            }
        }
    }

    /// Ties the offline entry `found` for `artifact` to the published checksum the cache kept
    /// when it was downloaded: an entry planted or imported without one is refused, and so is one
    /// whose blob the checksum does not name.
    fn tie(
        &self,
        store: &Cache,
        artifact: &Artifact,
        found: &crate::cache::Recalled,
    ) -> Result<(), UpstreamError> {
        let Some(checksum) = &artifact.checksum else {
            // Manifests have no published checksum: online they are taken as served too.
            return Ok(());
        };
        let url = found.note.as_str();
        let checksum = match artifact.legacy.as_ref().filter(|l| l.url == url) {
            Some(legacy) => checksum.at(format!("{}.sha256", legacy.url)),
            None => checksum.clone(),
        };
        let unverified = |reason| UpstreamError::Unverified {
            name: artifact.name.clone(),
            key: url_key(&artifact.url).to_string(),
            reason,
        };
        super::tie::against(store, &checksum, url, &found.digest).map_err(unverified)?;
        Ok(())
    }

    /// Downloads and verifies `artifact` (published checksum, content check); a body past
    /// `size` (the lock's) is cut one byte after it.
    async fn download_verified(
        &self,
        artifact: &Artifact,
        dest: &Path,
        size: Option<u64>,
        locked: Option<&str>,
    ) -> Result<Got, UpstreamError> {
        let mut notes = Vec::new();
        let limit = (artifact.content == super::Content::Yaml).then_some(MANIFEST_LIMIT);
        let (url, checksum, (sink, framed), fetched_from) =
            match self.body(&artifact.url, dest, size, limit).await {
                Ok((sink, from)) => (artifact.url.clone(), artifact.checksum.clone(), sink, from),
                Err(err) if err.status() == Some(404) && artifact.legacy.is_some() => {
                    self.legacy_body(artifact, dest, size, limit, &mut notes)
                        .await?
                }
                Err(source) => {
                    return Err(UpstreamError::Fetch {
                        name: artifact.name.clone(),
                        source,
                    });
                }
            };
        let actual = sink.sha256();
        let mut checksum_verified = false;
        if let Some(checksum) = &checksum {
            match self.expected(artifact, checksum, &url, locked).await? {
                Some(expected) if expected != actual.to_string() => {
                    return Err(UpstreamError::Mismatch {
                        name: file_name(&url).to_owned(),
                        url: fetched_from,
                        checksum_url: self.mirrors.rewrite(checksum.url()),
                        expected,
                        actual: actual.to_string(),
                    });
                }
                Some(_) => checksum_verified = true,
                None => notes.push(format!(
                    "no checksum published at {}; only the content check applies",
                    checksum.url()
                )),
            }
        }
        let content_err = |reason| UpstreamError::Content {
            name: file_name(&url).to_owned(),
            url: fetched_from.clone(),
            expected: artifact.content.describe(),
            reason,
            framed,
        };
        notes.extend(
            artifact
                .content
                .check(sink.temp_path())
                .map_err(content_err)?,
        );
        let io = |source| UpstreamError::Io {
            path: dest.to_owned(),
            source,
        };
        sink.set_mode(artifact.mode).map_err(io)?;
        let path = sink.commit().map_err(io)?;
        Ok(Got {
            path,
            url: strip_userinfo(&url),
            fetched_from,
            sha256: actual,
            checksum_verified,
            notes,
        })
    }

    /// After a 404, the body under the artifact's legacy name, with that URL and its checksum;
    /// the note that says so pushed onto `notes`.
    async fn legacy_body(
        &self,
        artifact: &Artifact,
        dest: &Path,
        size: Option<u64>,
        limit: Option<u64>,
        notes: &mut Vec<String>,
    ) -> Result<LegacyBody, UpstreamError> {
        let legacy = artifact.legacy.as_ref().expect("checked");
        tracing::info!(
            "{} answered 404; trying the legacy name {}",
            redact(&artifact.url),
            file_name(&legacy.url)
        );
        let (sink, from) = self
            .body(&legacy.url, dest, size, limit)
            .await
            .map_err(|source| UpstreamError::Fetch {
                name: format!(
                    "{} under its legacy name ({} answered 404)",
                    artifact.name,
                    file_name(&artifact.url)
                ),
                source,
            })?;
        notes.push(format!(
            "used the legacy file name {}",
            file_name(&legacy.url)
        ));
        let checksum = artifact
            .checksum
            .as_ref()
            .map(|c| c.at(format!("{}.sha256", legacy.url)));
        Ok((legacy.url.clone(), checksum, sink, from))
    }

    /// The body of `url` (through the mirrors) in a temporary file beside `dest`, cut one byte
    /// past `size` when given, refused past `limit`; with whether the transport knew where it
    /// ends ([`crate::fetch::Fetched::framed`]).
    async fn body(
        &self,
        url: &str,
        dest: &Path,
        size: Option<u64>,
        limit: Option<u64>,
    ) -> Result<((FileSink, bool), String), FetchError> {
        let from = self.mirrors.rewrite(url);
        let mut sink = FileSink::create(dest)
            .map_err(|source| FetchError::Io {
                path: dest.to_owned(),
                source,
            })?
            .with_bound(size);
        if let Some(limit) = limit {
            sink = sink.with_limit(limit);
        }
        let download = Download {
            client: self.bulk.unwrap_or(self.download.client),
            ..self.download
        };
        let fetched = download
            .to_sink(&from, &HeaderMap::new(), &mut sink)
            .await
            .map_err(|e| keyed_by(e, url))?;
        Ok(((sink, fetched.framed), from))
    }

    /// The published digest for `url`'s file; `None` when an optional checksum is not published.
    ///
    /// Realizing a lock (`locked`: its sha256 of the file), the checksum file the store kept is
    /// taken when it still names that digest: resolving the lock fetched it moments before, and
    /// asking again would only repeat the request (a cold build asked for every checksum twice).
    /// A kept copy that names another digest (an older run's) is not trusted either way: the
    /// published file is fetched as before.
    async fn expected(
        &self,
        artifact: &Artifact,
        checksum: &Checksum,
        url: &str,
        locked: Option<&str>,
    ) -> Result<Option<String>, UpstreamError> {
        let kept = locked.and_then(|want| {
            let text = self.recalled_text(checksum.url(), CHECKSUM_LIMIT)?;
            let named = checksum.expected(&text, file_name(url)).ok()?;
            (named == want).then_some(named)
        });
        if kept.is_some() {
            return Ok(kept);
        }
        let from = self.mirrors.rewrite(checksum.url());
        let body = match get_bytes(&self.download, &from, &HeaderMap::new(), CHECKSUM_LIMIT).await {
            Ok((body, _)) => {
                // Kept, so that an offline build can check the cached file against it again.
                if let Some(store) = self.store {
                    let recorded = strip_userinfo(checksum.url());
                    let kept = store.put_bytes(&body).and_then(|digest| {
                        store.remember(
                            &url_key(checksum.url()),
                            &digest,
                            body.len() as u64,
                            &recorded,
                        )
                    });
                    if let Err(e) = kept {
                        tracing::warn!("cannot keep {recorded} in the cache: {e}");
                    }
                }
                body
            }
            Err(err) if err.status() == Some(404) && !artifact.checksum_required => {
                return Ok(None);
            }
            Err(source) => {
                return Err(UpstreamError::Fetch {
                    name: file_name(checksum.url()).to_owned(),
                    source,
                });
            }
        };
        checksum
            .expected(&body, file_name(url))
            .map(Some)
            .map_err(|reason| UpstreamError::ChecksumFile {
                name: file_name(url).to_owned(),
                url: from,
                reason,
            })
    }
}

/// An `--offline` miss names the upstream URL the cache is keyed by, not the mirror's URL the
/// request would have gone to: that is what `cache ls` lists and a lock records.
pub(super) fn keyed_by(err: FetchError, url: &str) -> FetchError {
    match err {
        FetchError::Offline { .. } => FetchError::Offline {
            url: strip_userinfo(url),
        },
        other => other,
    }
}
