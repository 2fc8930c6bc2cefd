//! Why a transfer failed, naming the URL, with what the user can do.

use std::path::PathBuf;

/// Errors of the fetch layer.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The server answered with an error status (after retries, for transient ones).
    #[error("{method} {shown_url} answered HTTP {status}{}", attempts_note(*attempts), shown_url = crate::fetch::redact(url))]
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
    #[error("TLS certificate of {shown_url} is not trusted", shown_url = crate::fetch::redact(url))]
    Certificate {
        /// The URL requested.
        url: String,
        /// The TLS library's reason.
        #[source]
        source: reqwest::Error,
    },
    /// Connection, timeout, redirect or body errors (after retries).
    #[error("{method} {shown_url} failed{}", attempts_note(*attempts), shown_url = crate::fetch::redact(url))]
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
    #[error(
        "GET {shown_url}: a redirect was not followed (a loop, too many, or not to http/https)",
        shown_url = crate::fetch::redact(url)
    )]
    Redirects {
        /// The URL requested.
        url: String,
        /// The client's reason, naming the last location.
        #[source]
        source: reqwest::Error,
    },
    /// A body that keeps arriving, too slowly to ever finish (a trickle under the idle timeout).
    #[error(
        "GET {shown_url} arrives too slowly: {bytes} bytes in {seconds} seconds, less than {} per \
         {seconds} seconds{}",
        crate::fetch::download::MIN_RATE_BYTES,
        attempts_note(*attempts),
        shown_url = crate::fetch::redact(url)
    )]
    TooSlow {
        /// The URL requested.
        url: String,
        /// Bytes received in the window.
        bytes: u64,
        /// The window.
        seconds: u64,
        /// Attempts made.
        attempts: u32,
    },
    /// A body larger than the limit for its kind (manifests, checksums, tokens).
    #[error("GET {shown_url}: the body is larger than {}", indicatif::HumanBytes(*limit), shown_url = crate::fetch::redact(url))]
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
        /// What to do, when the file was refused as `crate::input` refuses trust files.
        advice: Option<String>,
    },
    /// A redirect the client did not follow (to a scheme other than http or https).
    #[error(
        "GET {shown_url} redirects to {shown_location}, which is not followed: only http and https are",
        shown_url = crate::fetch::redact(url),
        shown_location = crate::fetch::redact(location)
    )]
    RedirectRefused {
        /// The URL requested.
        url: String,
        /// Where it redirects.
        location: String,
    },
    /// `--offline` forbids the request, and the cache did not have what it would fetch.
    #[error("cannot fetch {shown_url} with --offline: it is not in the cache", shown_url = crate::fetch::redact(url))]
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

/// What to do when a registry refuses the credentials (or wants some), wherever it happens: a
/// 401 or 403 here, or the registry client's own authentication errors. It lives in this lower
/// layer so that the registry client can use it without the fetch layer depending on the registry.
pub(crate) const AUTH_HINT: &str = "log in with `docker login` or `podman login`, or pass \
     --authfile FILE with credentials for this registry";

/// ` (after N attempts)` when a request was tried more than once; the git listing's errors say it
/// the same way.
pub(crate) fn attempts_note(attempts: u32) -> String {
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
            Self::Status { status: 401 | 403, .. } => format!(
                "the server wants credentials; for a registry: {}; for a file: point --mirror at \
                 a copy that needs none",
                AUTH_HINT
            ),
            Self::Status { status: 429, .. } => {
                "the server is rate limiting: wait, log in (`docker login`, or --authfile) for a \
                 higher limit, or point --registry-mirror (images) or --mirror (files) at a copy"
                    .into()
            }
            Self::Status { status: 500..=599, .. } => {
                "the server fails on every attempt; try again later, or point --mirror (files) \
                 or --registry-mirror (images) at another copy"
                    .into()
            }
            Self::Certificate { .. } => {
                "pass the CA that signed the server's certificate with --ca-file".into()
            }
            Self::Transport { .. } | Self::TooSlow { .. } => {
                "check the network and HTTPS_PROXY/NO_PROXY, or point --mirror (files) or \
                 --registry-mirror (images) at a reachable copy"
                    .into()
            }
            Self::Redirects { .. } => {
                "the server or mirror redirects in a circle; check the --mirror rules and the \
                 mirror's configuration"
                    .into()
            }
            Self::RedirectRefused { .. } => {
                "the server or mirror redirects out of HTTP; check the --mirror rules and the \
                 mirror's configuration"
                    .into()
            }
            Self::Offline { .. } => {
                "run the same build once with network and this --cache-dir, or bring the cache over \
                 with `cks-iso cache export --locked LOCK` and `cks-iso cache import --locked LOCK` \
                 (a carried download comes in only with the lock that names it)"
                    .into()
            }
            Self::CaFile {
                advice: Some(advice),
                ..
            } => advice.clone(),
            Self::CaFile { .. } => "--ca-file takes a PEM file with one or more certificates".into(),
            _ => return None,
        })
    }
}
