//! Why a transfer failed, naming the URL, with what the user can do.

use std::path::PathBuf;

/// Errors of the fetch layer.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The server answered with an error status (after retries, for transient ones).
    #[error("{method} {url} answered HTTP {status}{}", attempts_note(*attempts))]
    Status {
        /// `GET`, or `HEAD` for probes.
        method: reqwest::Method,
        /// The URL requested (after mirror rewriting).
        url: String,
        /// The status code.
        status: u16,
        /// Attempts made.
        attempts: u32,
    },
    /// The server's certificate is not trusted.
    #[error("TLS certificate of {url} is not trusted")]
    Certificate {
        /// The URL requested.
        url: String,
        /// The TLS library's reason.
        #[source]
        source: reqwest::Error,
    },
    /// Connection, timeout, redirect or body errors (after retries).
    #[error("{method} {url} failed{}", attempts_note(*attempts))]
    Transport {
        /// `GET`, or `HEAD` for probes.
        method: reqwest::Method,
        /// The URL requested.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// Redirects did not end (a loop, or more than the limit).
    #[error("GET {url}: the redirects do not end (a redirect loop, or too many redirects)")]
    Redirects {
        /// The URL requested.
        url: String,
        /// The client's reason, naming the last location.
        #[source]
        source: reqwest::Error,
    },
    /// A body larger than the limit for its kind (manifests, checksums, tokens).
    #[error("GET {url}: the body is larger than {limit} bytes")]
    TooLarge {
        /// The URL requested.
        url: String,
        /// The limit.
        limit: u64,
    },
    /// Writing the downloaded bytes failed.
    #[error("cannot write {}", path.display())]
    Io {
        /// The file being written.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A CA file could not be used.
    #[error("cannot use the CA file {}: {reason}", path.display())]
    CaFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// `--offline` forbids the request, and the cache did not have what it would fetch.
    #[error("offline: {url} is not in the cache")]
    Offline {
        /// The URL that would have been requested.
        url: String,
    },
    /// The HTTP client could not be set up.
    #[error("cannot set up the HTTP client: {reason}")]
    Client {
        /// Why.
        reason: String,
    },
}

fn attempts_note(attempts: u32) -> String {
    match attempts {
        0 | 1 => String::new(),
        n => format!(" (after {n} attempts)"),
    }
}

impl FetchError {
    /// The HTTP status, when the server answered with an error.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Status { status: 404, .. } => {
                "check the version or URL; behind a mirror, check that it holds this file (--mirror)".into()
            }
            Self::Status { status: 401 | 403, .. } => {
                "the server wants credentials: log in (docker login) or pass --authfile".into()
            }
            Self::Status { status: 429, .. } => {
                "the server is rate limiting: wait, log in for a higher limit, or use a mirror".into()
            }
            Self::Certificate { .. } => {
                "pass the CA that signed the server's certificate with --ca-file".into()
            }
            Self::Transport { .. } => {
                "check the network and HTTPS_PROXY/NO_PROXY, or point --mirror (files) or \
                 --registry-mirror (images) at a reachable copy"
                    .into()
            }
            Self::Redirects { .. } => {
                "the server or mirror redirects in a circle; check the --mirror rules and the \
                 mirror's configuration"
                    .into()
            }
            Self::Offline { .. } => {
                "run the same build once with network and this --cache-dir, or bring the cache over \
                 with `cks-iso cache export`/`cache import`"
                    .into()
            }
            Self::CaFile { .. } => "--ca-file takes a PEM file with one or more certificates".into(),
            _ => return None,
        })
    }
}
