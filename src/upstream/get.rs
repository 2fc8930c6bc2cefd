//! Downloads one [`Artifact`] through the mirrors, verifies it, and names it only when it passed.

use std::path::{Path, PathBuf};

use reqwest::header::HeaderMap;

use super::{Artifact, Checksum, UpstreamError, file_name};
use crate::fetch::{Download, FetchError, FileSink, Mirrors, get_bytes};

/// Checksum files are a line; more than this is not one.
const CHECKSUM_LIMIT: u64 = 1 << 20;

/// Downloads artifacts with one client, retry policy and set of mirrors.
#[derive(Clone, Copy)]
pub struct Fetcher<'a> {
    /// The transfer settings.
    pub download: Download<'a>,
    /// URL prefix rewriting.
    pub mirrors: &'a Mirrors,
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
    pub sha256: String,
    /// Whether it was checked against a published checksum.
    pub checksum_verified: bool,
    /// Things the user should read (a missing optional checksum, a legacy name, a joined `---`).
    pub notes: Vec<String>,
}

impl Fetcher<'_> {
    /// GETs a small text through the mirrors (a checksum file, kubeadm's constants).
    pub async fn text(&self, url: &str, limit: u64) -> Result<String, FetchError> {
        let (bytes, _) = get_bytes(
            &self.download,
            &self.mirrors.rewrite(url),
            &HeaderMap::new(),
            limit,
        )
        .await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Downloads `artifact` to `dest`; on any error nothing is left at `dest` or beside it.
    pub async fn get(&self, artifact: &Artifact, dest: &Path) -> Result<Got, UpstreamError> {
        let mut notes = Vec::new();
        let (url, checksum, sink, fetched_from) = match self.body(&artifact.url, dest).await {
            Ok((sink, from)) => (artifact.url.clone(), artifact.checksum.clone(), sink, from),
            Err(err) if err.status() == Some(404) && artifact.legacy.is_some() => {
                let legacy = artifact.legacy.as_ref().expect("checked");
                tracing::info!(
                    "{} answered 404; trying the legacy name {}",
                    artifact.url,
                    file_name(&legacy.url)
                );
                let (sink, from) =
                    self.body(&legacy.url, dest)
                        .await
                        .map_err(|source| UpstreamError::Fetch {
                            name: artifact.name.clone(),
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
                (legacy.url.clone(), checksum, sink, from)
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
            match self.expected(artifact, checksum, &url).await? {
                Some(expected) if expected != actual => {
                    return Err(UpstreamError::Mismatch {
                        name: file_name(&url).to_owned(),
                        url: fetched_from,
                        checksum_url: self.mirrors.rewrite(checksum.url()),
                        expected,
                        actual,
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
            url,
            fetched_from,
            sha256: actual,
            checksum_verified,
            notes,
        })
    }

    /// The body of `url` (through the mirrors) in a temporary file beside `dest`.
    async fn body(&self, url: &str, dest: &Path) -> Result<(FileSink, String), FetchError> {
        let from = self.mirrors.rewrite(url);
        let mut sink = FileSink::create(dest).map_err(|source| FetchError::Io {
            path: dest.to_owned(),
            source,
        })?;
        self.download
            .to_sink(&from, &HeaderMap::new(), &mut sink)
            .await?;
        Ok((sink, from))
    }

    /// The published digest for `url`'s file; `None` when an optional checksum is not published.
    async fn expected(
        &self,
        artifact: &Artifact,
        checksum: &Checksum,
        url: &str,
    ) -> Result<Option<String>, UpstreamError> {
        let from = self.mirrors.rewrite(checksum.url());
        let body = match get_bytes(&self.download, &from, &HeaderMap::new(), CHECKSUM_LIMIT).await {
            Ok((body, _)) => body,
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
