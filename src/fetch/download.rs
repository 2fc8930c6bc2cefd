//! One GET into a [`Sink`], with retries, resume and a completeness check.

use std::path::Path;

use reqwest::header::{CONTENT_RANGE, HeaderMap, RANGE};
use reqwest::{Client, Method, Response, StatusCode};

use super::FetchError;
use super::retry::{self, Budget, RetryPolicy};
use super::sink::{MemSink, Sink};
use crate::progress::Progress;

/// What a finished transfer looked like.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL after redirects.
    pub final_url: String,
    /// The `Content-Type` of the last response, if any.
    pub content_type: Option<String>,
    /// The `Link` header of the last response, if any (the Referrers API's next page).
    pub link: Option<String>,
    /// Bytes in the sink.
    pub len: u64,
    /// Whether the transport knew where the body ends (a `Content-Length`, the chunked transfer
    /// coding, HTTP/2 framing, a range): a body cut short was then an error, resumed or retried
    /// here, so what reached the sink is the whole body the server sent. `false` only for a body
    /// the closing connection ends, which may have been cut short unnoticed.
    pub framed: bool,
    /// Attempts it took.
    pub attempts: u32,
}

/// A configured downloader: the client, the retry policy and where progress goes.
#[derive(Clone, Copy)]
pub struct Download<'a> {
    /// The shared client.
    pub client: &'a Client,
    /// How to retry.
    pub retry: RetryPolicy,
    /// Receives transferred bytes.
    pub progress: &'a dyn Progress,
    /// Offline (`--offline`): every request is refused with [`FetchError::Offline`] and only
    /// the cache answers ([`Download::or_cached`]). Callers never read it: they ask for an
    /// answer and learn where it came from ([`Origin`]).
    pub offline: bool,
    /// The item's budget when a [`super::Refetch`] made this download: every attempt that
    /// follows no progress counts there, and retries stop once it is spent.
    pub budget: Option<&'a Budget>,
}

/// How one attempt ended, when it did not finish the transfer.
enum Failed {
    /// Worth another try, after the server's `Retry-After` if it sent one.
    Retry(Option<std::time::Duration>, FetchError),
    /// Final.
    Fatal(FetchError),
}

/// Where an answer of [`Download::or_cached`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A request answered it.
    Network,
    /// The client is offline and the cache answered it.
    Cache,
}

impl Download<'_> {
    /// Refuses a request to `url` when the client is offline: [`FetchError::Offline`] names the
    /// URL, and its hint says how to fill the cache. Every request this layer sends passes here.
    pub fn admit(&self, url: &str) -> Result<(), FetchError> {
        match self.offline {
            true => Err(FetchError::Offline {
                url: url.to_owned(),
            }),
            false => Ok(()),
        }
    }

    /// The answer to a request the cache may also hold: online, `fetch`'s (the cache is not
    /// asked); offline, what `cached` recalls, and when it recalls nothing, `fetch`'s — whose
    /// request the client refuses, naming its URL. With where the answer came from, so that a
    /// caller keeps only what the network gave and can say when the cache could not vouch.
    pub async fn or_cached<T, E>(
        &self,
        cached: impl FnOnce() -> Result<Option<T>, E>,
        fetch: impl Future<Output = Result<T, E>>,
    ) -> Result<(T, Origin), E> {
        if self.offline
            && let Some(found) = cached()?
        {
            return Ok((found, Origin::Cache));
        }
        fetch.await.map(|answer| (answer, Origin::Network))
    }

    /// A re-fetch budget for one item on this client (see [`super::Refetch`]); offline there is
    /// nothing to fetch again, so it allows no re-fetch.
    pub fn refetch(&self) -> super::Refetch {
        let refetch = super::Refetch::new(self.retry);
        match self.offline {
            true => refetch.refused(),
            false => refetch,
        }
    }

    /// GETs `url` with `headers` into `sink`, resuming with `Range` after an interrupted body.
    pub async fn to_sink(
        &self,
        url: &str,
        headers: &HeaderMap,
        sink: &mut dyn Sink,
    ) -> Result<Fetched, FetchError> {
        self.fetch(url, headers, sink, None).await
    }

    /// GETs bytes `[start, end)` of `url` into `sink` (which starts empty and receives only those
    /// bytes), resuming within the range after an interrupted body. A server that answers anything
    /// but `206` with exactly the asked range (it ignores or refuses ranges) fails at once with
    /// [`FetchError::Status`], its status; the caller falls back to a plain GET.
    pub async fn range_to_sink(
        &self,
        url: &str,
        headers: &HeaderMap,
        sink: &mut dyn Sink,
        start: u64,
        end: u64,
    ) -> Result<Fetched, FetchError> {
        self.fetch(url, headers, sink, Some((start, end))).await
    }

    async fn fetch(
        &self,
        url: &str,
        headers: &HeaderMap,
        sink: &mut dyn Sink,
        span: Option<(u64, u64)>,
    ) -> Result<Fetched, FetchError> {
        self.admit(url)?;
        let mut attempt = 1;
        if let Some(budget) = self.budget {
            budget.spend();
        }
        loop {
            let before = sink.written();
            let result = match span {
                None => self.attempt(url, headers, sink, attempt).await,
                Some((start, end)) => {
                    self.attempt_span(url, headers, sink, start, end, attempt)
                        .await
                }
            };
            match result {
                Ok(fetched) => return Ok(fetched),
                Err(Failed::Fatal(err)) => return Err(err),
                Err(Failed::Retry(wait, err)) => {
                    // A transfer that moved forward earns its retries back: a long download
                    // through a flaky link finishes, and each attempt makes progress.
                    let progressed = sink.written() > before;
                    if progressed {
                        attempt = 1;
                    }
                    let spent = !progressed && self.budget.is_some_and(Budget::exhausted);
                    if attempt >= self.retry.attempts || spent {
                        return Err(err);
                    }
                    let delay = self.retry.delay(attempt, wait);
                    tracing::debug!("{err}; retrying in {delay:?} (attempt {})", attempt + 1);
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                    if let Some(budget) = self.budget.filter(|_| !progressed) {
                        budget.spend();
                    }
                }
            }
        }
    }

    /// One attempt at the rest of bytes `[start, end)`: only a `206` for exactly that rest is
    /// taken.
    async fn attempt_span(
        &self,
        url: &str,
        headers: &HeaderMap,
        sink: &mut dyn Sink,
        start: u64,
        end: u64,
        attempt: u32,
    ) -> Result<Fetched, Failed> {
        let from = start + sink.written();
        let request = self
            .client
            .get(url)
            .headers(headers.clone())
            .header(RANGE, format!("bytes={from}-{}", end - 1));
        let mut response = request
            .send()
            .await
            .map_err(|e| transport(url, attempt, e))?;
        let status = response.status();
        if status != StatusCode::PARTIAL_CONTENT || !resumes_at(&response, from) {
            let err = get_status(url, status.as_u16(), attempt);
            return Err(match retry::retryable_status(status) {
                true => Failed::Retry(retry::retry_after(response.headers()), err),
                false => Failed::Fatal(err),
            });
        }
        let target = sink.path().map_or_else(|| url.into(), Path::to_path_buf);
        let io = |source: std::io::Error| {
            Failed::Fatal(FetchError::Io {
                path: target.clone(),
                source,
            })
        };
        let mut rate = Rate::start();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport(url, attempt, e))?
        {
            // Never past the end of the range, whatever the server sends.
            let room = (end - start - sink.written()) as usize;
            let take = &chunk[..chunk.len().min(room)];
            sink.write(take).map_err(io)?;
            self.progress.advance(take.len() as u64);
            rate.add(take.len() as u64)
                .map_err(|slow| Failed::Fatal(slow.error(url, attempt)))?;
        }
        if start + sink.written() != end {
            // Cut short without a transport error: resume where it stopped.
            return Err(Failed::Retry(
                None,
                get_status(url, StatusCode::PARTIAL_CONTENT.as_u16(), attempt),
            ));
        }
        Ok(Fetched {
            final_url: response.url().to_string(),
            content_type: None,
            link: None,
            len: sink.written(),
            framed: true,
            attempts: attempt,
        })
    }

    async fn attempt(
        &self,
        url: &str,
        headers: &HeaderMap,
        sink: &mut dyn Sink,
        attempt: u32,
    ) -> Result<Fetched, Failed> {
        let offset = sink.written();
        let mut request = self.client.get(url).headers(headers.clone());
        if offset > 0 {
            request = request.header(RANGE, format!("bytes={offset}-"));
        }
        let transport = |source: reqwest::Error| transport(url, attempt, source);
        let mut response = request.send().await.map_err(transport)?;
        let target = sink.path().map_or_else(|| url.into(), Path::to_path_buf);
        let io = |source| {
            Failed::Fatal(FetchError::Io {
                path: target.clone(),
                source,
            })
        };
        self.judge_status(url, &response, sink, attempt, &io)?;
        let expected_total = total_len(&response, sink.written());
        let past_bound = self
            .read_body(url, &mut response, sink, attempt, &io)
            .await?;
        if let Some(total) = expected_total
            && sink.written() != total
            && !past_bound
        {
            // A body cut short without a transport error: resume where it stopped.
            return Err(Failed::Retry(
                None,
                get_status(url, StatusCode::PARTIAL_CONTENT.as_u16(), attempt),
            ));
        }
        Ok(Fetched {
            final_url: response.url().to_string(),
            content_type: response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            link: response
                .headers()
                .get(reqwest::header::LINK)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            len: sink.written(),
            framed: expected_total.is_some() || framed(&response),
            attempts: attempt,
        })
    }

    /// Judges the response's status before its body is read: a refused or other range starts
    /// over, a redirect the client returned is refused, an error status fails (retried when
    /// transient).
    fn judge_status(
        &self,
        url: &str,
        response: &Response,
        sink: &mut dyn Sink,
        attempt: u32,
        io: &dyn Fn(std::io::Error) -> Failed,
    ) -> Result<(), Failed> {
        let offset = sink.written();
        let status = response.status();
        if offset > 0 && matches!(status.as_u16(), 400 | 416) {
            // Some servers and proxies refuse ranges: start over without one.
            sink.restart().map_err(io)?;
            self.progress.advance(0);
            return Err(Failed::Retry(
                None,
                get_status(url, status.as_u16(), attempt),
            ));
        }
        if status.is_redirection()
            && let Some(location) = response.headers().get(reqwest::header::LOCATION)
        {
            // The client follows http(s) redirects itself; one it returned leads elsewhere.
            return Err(Failed::Fatal(FetchError::RedirectRefused {
                url: url.to_owned(),
                location: String::from_utf8_lossy(location.as_bytes()).into_owned(),
            }));
        }
        if !status.is_success() {
            let err = get_status(url, status.as_u16(), attempt);
            return Err(match retry::retryable_status(status) {
                true => Failed::Retry(retry::retry_after(response.headers()), err),
                false => Failed::Fatal(err),
            });
        }
        if offset > 0 && !resumes_at(response, offset) {
            // The server sent the whole body (200) or another range: start over.
            sink.restart().map_err(io)?;
            self.progress.advance(0);
            if status == StatusCode::PARTIAL_CONTENT {
                // Another range than asked is no body to keep: ask again for all of it.
                return Err(Failed::Retry(
                    None,
                    get_status(url, status.as_u16(), attempt),
                ));
            }
        }
        Ok(())
    }

    /// Reads the body into `sink`, at most one byte past its declared size and never slower
    /// than [`MIN_RATE_BYTES`] per [`RATE_WINDOW`]; whether it went past that size.
    async fn read_body(
        &self,
        url: &str,
        response: &mut Response,
        sink: &mut dyn Sink,
        attempt: u32,
        io: &dyn Fn(std::io::Error) -> Failed,
    ) -> Result<bool, Failed> {
        let bound = sink.bound();
        let mut rate = Rate::start();
        let mut past_bound = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|source| transport(url, attempt, source))?
        {
            // One byte past the declared size proves the body is not it: stop reading there.
            let room = bound.map_or(u64::MAX, |b| (b + 1).saturating_sub(sink.written()));
            let take = &chunk[..chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
            let limit = sink.limit().unwrap_or(sink.written());
            sink.write(take).map_err(|source| match source.kind() {
                std::io::ErrorKind::FileTooLarge => Failed::Fatal(FetchError::TooLarge {
                    url: url.to_owned(),
                    limit,
                }),
                _ => io(source),
            })?;
            self.progress.advance(take.len() as u64);
            if bound.is_some_and(|b| sink.written() > b) {
                past_bound = true;
                break;
            }
            rate.add(take.len() as u64)
                .map_err(|slow| Failed::Fatal(slow.error(url, attempt)))?;
        }
        Ok(past_bound)
    }
}

/// Whether `response`'s body ends where its framing says, without a `Content-Length`: the chunked
/// transfer coding (its last chunk) or HTTP/2 and later (the stream's end).
fn framed(response: &Response) -> bool {
    let chunked = response
        .headers()
        .get_all(reqwest::header::TRANSFER_ENCODING)
        .iter()
        .any(|v| {
            v.to_str()
                .is_ok_and(|v| v.to_ascii_lowercase().contains("chunked"))
        });
    chunked || response.version() >= reqwest::Version::HTTP_2
}

/// The least a body must bring in every [`RATE_WINDOW`]: the idle timeout ends a silent
/// transfer, this one a trickle (a byte every few seconds never trips the idle timeout).
pub const MIN_RATE_BYTES: u64 = 1024;

/// The window [`MIN_RATE_BYTES`] is counted over.
pub const RATE_WINDOW: std::time::Duration = std::time::Duration::from_secs(30);

/// Bytes received in the current window.
struct Rate {
    since: std::time::Instant,
    bytes: u64,
}

/// A window that brought less than [`MIN_RATE_BYTES`].
struct TooSlow {
    bytes: u64,
}

impl TooSlow {
    fn error(&self, url: &str, attempt: u32) -> FetchError {
        FetchError::TooSlow {
            url: url.to_owned(),
            bytes: self.bytes,
            seconds: RATE_WINDOW.as_secs(),
            attempts: attempt,
        }
    }
}

impl Rate {
    fn start() -> Self {
        Self {
            since: std::time::Instant::now(),
            bytes: 0,
        }
    }

    fn add(&mut self, n: u64) -> Result<(), TooSlow> {
        self.bytes += n;
        if self.since.elapsed() < RATE_WINDOW {
            return Ok(());
        }
        if self.bytes < MIN_RATE_BYTES {
            return Err(TooSlow { bytes: self.bytes });
        }
        *self = Self::start();
        Ok(())
    }
}

/// How a transport error counts: certificate and redirect trouble is final, a dropped or timed
/// out connection worth another try.
fn transport(url: &str, attempt: u32, source: reqwest::Error) -> Failed {
    if source.is_redirect() {
        return Failed::Fatal(FetchError::Redirects {
            url: url.to_owned(),
            source: source.without_url(),
        });
    }
    if retry::is_certificate_error(&source) {
        return Failed::Fatal(FetchError::Certificate {
            url: url.to_owned(),
            source: source.without_url(),
        });
    }
    let retryable = retry::retryable_error(&source);
    let err = FetchError::Transport {
        method: Method::GET,
        url: url.to_owned(),
        attempts: attempt,
        source: source.without_url(),
    };
    if retryable {
        Failed::Retry(None, err)
    } else {
        Failed::Fatal(err)
    }
}

/// Whether a response continues our partial body at `offset`.
fn resumes_at(response: &Response, offset: u64) -> bool {
    response.status() == StatusCode::PARTIAL_CONTENT
        && response
            .headers()
            .get(CONTENT_RANGE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("bytes "))
            .and_then(|v| v.split('-').next())
            .and_then(|start| start.parse::<u64>().ok())
            == Some(offset)
}

/// The length the sink should have once this response's body is in, when the server said.
fn total_len(response: &Response, already: u64) -> Option<u64> {
    response.content_length().map(|len| already + len)
}

/// GETs a small body (manifest, checksum file, token) into memory, capped at `limit` bytes.
pub async fn get_bytes(
    download: &Download<'_>,
    url: &str,
    headers: &HeaderMap,
    limit: u64,
) -> Result<(Vec<u8>, Fetched), FetchError> {
    let mut sink = MemSink {
        buf: Vec::new(),
        limit,
    };
    let fetched = download.to_sink(url, headers, &mut sink).await?;
    Ok((sink.buf, fetched))
}

/// The error of a GET that ended with `status` on attempt `attempts`.
fn get_status(url: &str, status: u16, attempts: u32) -> FetchError {
    FetchError::Status {
        method: Method::GET,
        url: url.to_owned(),
        status,
        attempts,
    }
}
