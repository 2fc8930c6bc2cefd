//! When and how long to wait before trying a request again.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};

/// Bounded exponential backoff with full jitter.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = no retry).
    pub attempts: u32,
    /// Delay before the first retry (before jitter).
    pub base: Duration,
    /// Longest delay between attempts, also for `Retry-After`.
    pub max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            base: Duration::from_millis(500),
            max: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` (attempt counts from 1): the server's `Retry-After`
    /// when it gave one, else `base * 2^(attempt-1)` with jitter, capped at `max`.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max);
        }
        let exp = self
            .base
            .saturating_mul(
                1u32.checked_shl(attempt.saturating_sub(1))
                    .unwrap_or(u32::MAX),
            )
            .min(self.max);
        // Half fixed, half random: spreads retries of concurrent transfers without ever waiting 0.
        let half = exp / 2;
        half + half.mul_f64(fastrand::f64())
    }
}

/// Whether a response status is worth another try.
pub fn retryable_status(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 429 | 500 | 502 | 503 | 504)
}

/// Whether a transport error is worth another try (connection refused/reset, timeouts, a body
/// cut short), as opposed to a permanent one (bad certificate, invalid URL, too many redirects).
pub fn retryable_error(err: &reqwest::Error) -> bool {
    if err.is_redirect() || err.is_builder() {
        return false;
    }
    if is_certificate_error(err) {
        return false;
    }
    err.is_timeout() || err.is_connect() || err.is_request() || err.is_body() || err.is_decode()
}

/// Whether the error chain is a TLS certificate failure, which no retry fixes.
pub fn is_certificate_error(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        let text = e.to_string();
        if text.contains("certificate") || text.contains("UnknownIssuer") {
            return true;
        }
        cur = e.source();
    }
    false
}

/// Runs `op` again while it fails with an error `transient` accepts, waiting as `policy` says,
/// for requests that are not a download into a sink (the git tag listing). `transient` returns
/// `Some(server's wait)` for an error worth another try and `None` for a final one.
pub async fn retrying<T, E, Fut>(
    policy: RetryPolicy,
    mut op: impl FnMut() -> Fut,
    transient: impl Fn(&E) -> Option<Option<Duration>>,
) -> Result<T, E>
where
    Fut: std::future::Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    let mut attempt = 1;
    loop {
        match op().await {
            Ok(value) => return Ok(value),
            Err(err) => {
                let Some(wait) = transient(&err) else {
                    return Err(err);
                };
                if attempt >= policy.attempts {
                    return Err(err);
                }
                let delay = policy.delay(attempt, wait);
                tracing::debug!("{err}; retrying in {delay:?} (attempt {})", attempt + 1);
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
        }
    }
}

/// What one attempt of [`retry_attempts`] failed with: the error, and whether another attempt
/// may follow (`Some`, with the server's `Retry-After` when it gave one) or not (`None`).
#[derive(Debug)]
pub struct Attempt<E> {
    /// The error this attempt ended with.
    pub error: E,
    /// `Some(server's wait)` when it is worth another try.
    pub again: Option<Option<Duration>>,
}

impl<E> Attempt<E> {
    /// An error worth another attempt, after `wait` when the server said how long.
    pub fn again(error: E, wait: Option<Duration>) -> Self {
        Self {
            error,
            again: Some(wait),
        }
    }

    /// An error no other attempt fixes.
    pub fn last(error: E) -> Self {
        Self { error, again: None }
    }
}

impl<E: std::fmt::Display> std::fmt::Display for Attempt<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// [`retrying`] for a request whose every attempt says itself whether another may follow
/// ([`Attempt`]): `op` is given the attempt's number (from 1), for errors that count attempts.
/// The one loop of the requests sent as they are (`probe`'s `HEAD` and `GET /v2/`, the push
/// uploader's requests), so their backoff, `Retry-After` and budget are the same.
pub async fn retry_attempts<T, E, Fut>(
    policy: RetryPolicy,
    mut op: impl FnMut(u32) -> Fut,
) -> Result<T, E>
where
    Fut: std::future::Future<Output = Result<T, Attempt<E>>>,
    E: std::fmt::Display,
{
    let mut attempt = 0;
    let numbered = || {
        attempt += 1;
        op(attempt)
    };
    retrying(policy, numbered, |a: &Attempt<E>| a.again)
        .await
        .map_err(|a| a.error)
}

/// The re-fetch of bytes that arrived but failed verification (a digest or checksum mismatch, a
/// manifest that does not parse, text that is not UTF-8, a signature that does not verify):
/// damaged on the way until proven otherwise, so fetched again within the same budget as a 5xx,
/// and at least once even with `--retries 1`. Every such loop (blobs, manifests, downloads, texts,
/// binaries' signature material) counts and waits through this, so the rule lives in one place.
///
/// The budget is shared with the transport retries inside each fetch: a [`Download`] made with
/// [`Refetch::download`] counts every attempt it makes here and stops retrying once the item has
/// used `policy.attempts`, so a server that fails twice and then sends damaged bytes costs
/// `attempts + 1` requests, not `attempts` squared.
///
/// [`Download`]: super::Download
#[derive(Debug)]
pub struct Refetch {
    policy: RetryPolicy,
    budget: Budget,
    refetches: u32,
    /// The client refuses requests (offline): [`Refetch::again`] is always `false`.
    refused: bool,
}

/// Attempts an item has used, counted by every [`super::Download`] that draws on it.
#[derive(Debug)]
pub struct Budget {
    attempts: u32,
    spent: AtomicU32,
}

impl Budget {
    /// Counts one attempt.
    pub(super) fn spend(&self) {
        self.spent.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether another retry would go past the budget.
    pub(super) fn exhausted(&self) -> bool {
        self.spent.load(Ordering::Relaxed) >= self.attempts
    }
}

impl Refetch {
    /// A budget of `policy.attempts` requests in all, plus the one re-fetch damage always earns.
    pub fn new(policy: RetryPolicy) -> Self {
        Self {
            policy,
            budget: Budget {
                attempts: policy.attempts,
                spent: AtomicU32::new(0),
            },
            refetches: 0,
            refused: false,
        }
    }

    /// This budget for a client that refuses requests: nothing is fetched again.
    pub(super) fn refused(self) -> Self {
        Self {
            refused: true,
            ..self
        }
    }

    /// `base`, its attempts counted against this budget.
    pub fn download<'a>(&'a self, base: &super::Download<'a>) -> super::Download<'a> {
        super::Download {
            budget: Some(&self.budget),
            ..*base
        }
    }

    /// After `err` on the latest fetch: when the budget allows another, logs
    /// "`err`; `action` again", waits as the policy says and returns `true`; else `false`. A
    /// fetch that did not draw on the budget (no [`Refetch::download`]) counts as one attempt.
    pub async fn again(&mut self, err: &dyn std::fmt::Display, action: &str) -> bool {
        let spent = self.budget.spent.load(Ordering::Relaxed);
        let spent = spent.max(self.refetches + 1);
        if self.refused || (self.refetches > 0 && spent >= self.policy.attempts) {
            return false;
        }
        tracing::warn!("{err}; {action} again");
        self.refetches += 1;
        tokio::time::sleep(self.policy.delay(self.refetches, None)).await;
        self.budget.spent.store(spent, Ordering::Relaxed);
        true
    }
}

/// The `Retry-After` header as a duration: delta-seconds or an HTTP date.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn backoff_grows_exponentially_within_jitter_and_cap() {
        let p = RetryPolicy {
            attempts: 10,
            base: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        for (attempt, full) in [(1, 100), (2, 200), (3, 400), (4, 800), (5, 1000), (9, 1000)] {
            let d = p.delay(attempt, None).as_millis() as u64;
            assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d} ms");
        }
    }

    #[tokio::test]
    async fn a_refetch_is_allowed_at_least_once_and_never_past_the_budget() {
        let quick = |attempts| RetryPolicy {
            attempts,
            base: Duration::from_millis(1),
            max: Duration::from_millis(1),
        };
        for (attempts, fetches) in [(1, 2), (2, 2), (5, 5)] {
            let mut refetch = Refetch::new(quick(attempts));
            let mut done = 1;
            while refetch.again(&"damaged", "fetching it").await {
                done += 1;
            }
            assert_eq!(done, fetches, "--retries {attempts}");
        }
    }

    #[test]
    fn retry_after_is_honoured_but_capped() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(p.delay(1, Some(Duration::from_secs(3600))), p.max);
    }

    #[test]
    fn retry_after_parses_seconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(
            retry_after(&h),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[tokio::test]
    async fn retrying_stops_at_success_a_final_error_or_the_attempt_limit() {
        let p = RetryPolicy {
            attempts: 3,
            base: Duration::from_millis(1),
            max: Duration::from_millis(2),
        };
        let calls = std::cell::Cell::new(0);
        let op = || {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move {
                if n < 3 {
                    Err(format!("try {n}"))
                } else {
                    Ok(n)
                }
            }
        };
        assert_eq!(retrying(p, op, |_: &String| Some(None)).await, Ok(3));
        calls.set(0);
        assert_eq!(
            retrying(p, op, |_: &String| None).await,
            Err("try 1".into())
        );
        calls.set(-5);
        let err = retrying(p, op, |_: &String| Some(None)).await.unwrap_err();
        assert_eq!(err, "try -2", "gave up after 3 attempts");
    }

    #[tokio::test]
    async fn numbered_attempts_say_themselves_whether_another_may_follow() {
        let p = RetryPolicy {
            attempts: 4,
            base: Duration::from_millis(1),
            max: Duration::from_millis(2),
        };
        let seen = std::cell::RefCell::new(Vec::new());
        let op = |last_at: u32| {
            let seen = &seen;
            move |attempt: u32| async move {
                seen.borrow_mut().push(attempt);
                match attempt >= last_at {
                    true => Err::<(), _>(Attempt::last(format!("final at {attempt}"))),
                    false => Err(Attempt::again(format!("try {attempt}"), None)),
                }
            }
        };
        assert_eq!(retry_attempts(p, op(2)).await, Err("final at 2".into()));
        assert_eq!(
            *seen.borrow(),
            [1, 2],
            "numbered from 1, stopped by a last error"
        );
        seen.borrow_mut().clear();
        assert_eq!(retry_attempts(p, op(9)).await, Err("try 4".into()));
        assert_eq!(
            *seen.borrow(),
            [1, 2, 3, 4],
            "stopped by the policy's attempts"
        );
        let ok = retry_attempts(p, |n| async move {
            match n {
                3 => Ok(n),
                _ => Err(Attempt::again("busy".to_owned(), None)),
            }
        });
        assert_eq!(ok.await, Ok(3));
    }

    #[test]
    fn only_transient_statuses_are_retried() {
        for s in [408, 429, 500, 502, 503, 504] {
            assert!(retryable_status(StatusCode::from_u16(s).unwrap()), "{s}");
        }
        for s in [400, 401, 403, 404, 410, 501] {
            assert!(!retryable_status(StatusCode::from_u16(s).unwrap()), "{s}");
        }
    }
}
