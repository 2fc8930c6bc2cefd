//! The shared `reqwest` client: rustls with the system's roots (or, on a host without any, the
//! bundled Mozilla roots of webpki-roots) plus the user's CA files, proxies
//! from `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`, connect and idle timeouts, and redirects that are
//! followed across hosts without forwarding `Authorization` (reqwest drops sensitive headers when
//! the host changes; a test against a real second host proves it).

use std::path::PathBuf;
use std::time::Duration;

use super::{FetchError, RetryPolicy};

/// How to reach the network; filled from flags and the configuration file.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Extra PEM CA certificates to trust besides the system's.
    pub ca_files: Vec<PathBuf>,
    /// Time to establish a connection.
    pub connect_timeout: Duration,
    /// Longest silence while reading a response before the transfer counts as stalled.
    pub idle_timeout: Duration,
    /// How transient failures are retried.
    pub retry: RetryPolicy,
    /// Most redirects followed for one request.
    pub max_redirects: usize,
    /// Refuse every request (`--offline`): everything must come from the cache.
    pub offline: bool,
    /// `host[:port]`s reached over plain HTTP by choice (`--insecure-registry`): the only
    /// targets an `https` redirect may lead to over `http`.
    pub plain_http_hosts: Vec<String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            ca_files: Vec::new(),
            connect_timeout: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            max_redirects: 10,
            offline: false,
            plain_http_hosts: Vec::new(),
        }
    }
}

/// `host[:port]` of `url`, as `--insecure-registry` names hosts.
pub fn host_port(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// Follows at most `max` redirects, only to `http` and `https` URLs, and from `https` to plain
/// `http` only into one of `plain` (a secure request's answer must not travel in clear).
fn redirects(max: usize, plain: Vec<String>) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let scheme = attempt.url().scheme().to_owned();
        let from_https = attempt
            .previous()
            .last()
            .is_some_and(|u| u.scheme() == "https");
        if !matches!(scheme.as_str(), "http" | "https") {
            let to = super::redact(attempt.url().as_str());
            attempt.error(format!(
                "a redirect to {to} is refused: only http and https are followed"
            ))
        } else if from_https && scheme == "http" && !plain.contains(&host_port(attempt.url())) {
            let to = super::redact(attempt.url().as_str());
            attempt.error(format!(
                "a redirect from https to {to} is refused: plain HTTP is followed only to a host \
                 named with --insecure-registry"
            ))
        } else if attempt.previous().len() > max {
            attempt.error(format!("more than {max} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// Builds the client every download and registry request goes through.
pub fn build_client(config: &HttpConfig) -> Result<reqwest::Client, FetchError> {
    client_with(
        config,
        redirects(config.max_redirects, config.plain_http_hosts.clone()),
    )
}

/// Builds a client like [`build_client`]'s that follows no redirect: for a request whose body is
/// a secret (an identity token's exchange), which reqwest would carry along a 307 or 308 to any
/// host. Its caller sees the redirect and decides whether the secret may go there.
pub fn build_client_without_redirects(config: &HttpConfig) -> Result<reqwest::Client, FetchError> {
    client_with(config, reqwest::redirect::Policy::none())
}

fn client_with(
    config: &HttpConfig,
    redirect: reqwest::redirect::Policy,
) -> Result<reqwest::Client, FetchError> {
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("cks-iso/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(config.connect_timeout)
        .read_timeout(config.idle_timeout)
        .redirect(redirect)
        .tls_built_in_native_certs(system_roots() > 0)
        .tls_built_in_webpki_certs(system_roots() == 0);
    for path in &config.ca_files {
        let pem = std::fs::read(path).map_err(|source| FetchError::CaFile {
            path: path.clone(),
            reason: source.to_string(),
        })?;
        let certs =
            reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| FetchError::CaFile {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        if certs.is_empty() {
            return Err(FetchError::CaFile {
                path: path.clone(),
                reason: "no PEM certificate in the file".into(),
            });
        }
        for cert in certs {
            builder = builder.add_root_certificate(cert);
        }
    }
    builder.build().map_err(|e| FetchError::Client {
        reason: e.to_string(),
    })
}

/// How many CA certificates the system offers (`SSL_CERT_FILE`/`SSL_CERT_DIR`, else the
/// distribution's bundle), counted once per process. None (a static binary in a scratch container,
/// a minimal chroot) means the bundled Mozilla roots are trusted instead: trusting both always
/// would keep a CA the host's administrator removed.
fn system_roots() -> usize {
    static COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *COUNT.get_or_init(|| {
        let count = rustls_native_certs::load_native_certs().certs.len();
        match count {
            0 => tracing::debug!(
                "TLS roots: the system has no CA certificate; trusting the bundled Mozilla roots"
            ),
            n => tracing::debug!("TLS roots: the system's {n} CA certificates"),
        }
        count
    })
}
