//! HTTP for everything cks-iso downloads: the one place with retries, timeouts, TLS roots, proxies,
//! mirrors and resumable, verified transfers.
//!
//! Upstream's `curl` without `-f` saved 404 pages as binaries, and a multi-URL `curl` reported only
//! the last file's status. Here every request is one file, any HTTP error status is an error naming
//! the URL, transient failures (connection errors, 408, 429, 5xx) are retried with exponential
//! backoff and jitter (honouring `Retry-After`), an interrupted body resumes with `Range`, and the
//! bytes are hashed while they are written: a file gets its final name only once verified.
//!
//! The registry client (`registry`) and upstream downloads share this layer; `archive`, `iso` and
//! `plan` never touch the network.

mod client;
mod download;
mod error;
mod mirror;
mod probe;
mod retry;
mod sink;

pub use client::{
    HttpConfig, Protocols, build_bulk_client, build_client, build_client_without_redirects,
    host_port, install_crypto_provider,
};
pub use download::{Download, Fetched, Origin, Posted, get_bytes, post, post_hop, post_json};
pub(crate) use error::AUTH_HINT;
pub use error::FetchError;
pub(crate) use error::attempts_note;
pub use mirror::{Mirror, Mirrors, redact, strip_userinfo};
pub use probe::{Probed, probe};
pub use retry::{
    Attempt, Budget, Refetch, RetryPolicy, retry_after, retry_attempts, retryable_error,
    retryable_status, retrying,
};
pub use sink::{FileSink, Sink};
