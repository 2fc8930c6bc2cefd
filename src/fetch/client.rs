//! The shared `reqwest` clients: rustls on ring with the system's roots (or, on a host without
//! any, the bundled Mozilla roots of webpki-roots) plus the user's CA files, proxies
//! from `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`, connect and idle timeouts, and redirects that are
//! followed across hosts without forwarding `Authorization` (reqwest drops sensitive headers when
//! the host changes; a test against a real second host proves it).
//!
//! Two kinds of client ([`Protocols`]): one that offers HTTP/2 by ALPN, for manifests, tokens and
//! every small request (one multiplexed connection per host), and one that speaks only HTTP/1.1,
//! for bodies: every registry blob and every upstream file, whatever its size. HTTP/2 puts every
//! transfer to a host on one TCP connection, whose flow-control windows and congestion window cap
//! a far registry at a fraction of the path (10.5 s against 2.9 s over HTTP/1.1 on a 50 ms path);
//! over HTTP/1.1 each concurrent transfer is its own connection, so the transfer slots and ranged
//! parts count real connections. All clients of a process share one TLS configuration: one
//! session cache (reqwest's default is one per client) and one certificate verifier (rustls
//! resumes a session only under the verifier that made it), so a body's connection resumes the
//! session its host's manifest connection began, and a redirect's storage host gets one full
//! handshake per transfer in flight at first, resumed ones after.
//!
//! reqwest 0.13 would verify with rustls-platform-verifier; the [`rustls::ClientConfig`] is built
//! here instead so the root rule above (system roots, else bundled ones, never both) holds on every
//! host, including the static binaries in a scratch container.

use std::path::PathBuf;
use std::time::Duration;

use super::{FetchError, RetryPolicy};

/// The most a `--ca-file` may hold: Debian's whole `ca-certificates.crt` is about 220 KiB.
const MAX_CA_FILE: u64 = 4 << 20;

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

/// Which HTTP versions a client offers a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocols {
    /// HTTP/2 when the server agrees by ALPN, else HTTP/1.1: one connection per host.
    Any,
    /// HTTP/1.1 only: one connection per request in flight, for bulk bodies.
    Http1,
}

/// Builds the client every download and registry request goes through.
pub fn build_client(config: &HttpConfig) -> Result<reqwest::Client, FetchError> {
    client_with(
        config,
        redirects(config.max_redirects, config.plain_http_hosts.clone()),
        Protocols::Any,
    )
}

/// Builds a client like [`build_client`]'s that speaks HTTP/1.1 only: for blob and file bodies,
/// which then travel on as many connections as transfers run (see the module doc for why not
/// HTTP/2).
pub fn build_bulk_client(config: &HttpConfig) -> Result<reqwest::Client, FetchError> {
    client_with(
        config,
        redirects(config.max_redirects, config.plain_http_hosts.clone()),
        Protocols::Http1,
    )
}

/// Builds a client like [`build_client`]'s that follows no redirect: for a request whose body is
/// a secret (an identity token's exchange), which reqwest would carry along a 307 or 308 to any
/// host. Its caller sees the redirect and decides whether the secret may go there.
pub fn build_client_without_redirects(config: &HttpConfig) -> Result<reqwest::Client, FetchError> {
    client_with(config, reqwest::redirect::Policy::none(), Protocols::Any)
}

fn client_with(
    config: &HttpConfig,
    redirect: reqwest::redirect::Policy,
    protocols: Protocols,
) -> Result<reqwest::Client, FetchError> {
    install_crypto_provider();
    let builder = reqwest::Client::builder()
        .user_agent(concat!("cks-iso/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(config.connect_timeout)
        .read_timeout(config.idle_timeout)
        .redirect(redirect)
        .tls_backend_preconfigured(tls_config(config, protocols)?);
    let builder = match protocols {
        Protocols::Any => builder,
        Protocols::Http1 => builder.http1_only(),
    };
    builder.build().map_err(|e| FetchError::Client {
        reason: e.to_string(),
    })
}

/// Makes ring the process's rustls provider (once; reqwest's own TLS setup, as a test's bare
/// `reqwest::Client::builder()` uses it, needs one with the `rustls-no-provider` feature).
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err only when a provider is already installed, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The TLS configuration of a client: the process's one for `config`'s CA files (see
/// [`shared_tls`]) with ALPN for `protocols`.
fn tls_config(
    config: &HttpConfig,
    protocols: Protocols,
) -> Result<rustls::ClientConfig, FetchError> {
    let mut tls = shared_tls(config)?;
    tls.alpn_protocols = match protocols {
        Protocols::Any => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        Protocols::Http1 => vec![b"http/1.1".to_vec()],
    };
    Ok(tls)
}

/// The TLS configuration every client of the process with `config`'s CA files starts from, built
/// once: rustls resumes a session only under the certificate verifier (and client-certificate
/// resolver) that made it, compared by identity, so clients built each with their own would each
/// pay a full handshake with every host. Clones share both, and the session cache.
fn shared_tls(config: &HttpConfig) -> Result<rustls::ClientConfig, FetchError> {
    type Shared = std::collections::HashMap<Vec<PathBuf>, rustls::ClientConfig>;
    static SHARED: std::sync::OnceLock<std::sync::Mutex<Shared>> = std::sync::OnceLock::new();
    let shared = SHARED.get_or_init(Default::default);
    let lock = || shared.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(tls) = lock().get(&config.ca_files) {
        return Ok(tls.clone());
    }
    let tls = new_tls(config)?;
    // Another thread may have built one meanwhile: the first stays, so all share it.
    Ok(lock().entry(config.ca_files.clone()).or_insert(tls).clone())
}

/// A new TLS configuration: the roots (see [`system_roots`]) plus `config`'s CA files, and the
/// process's shared session cache.
fn new_tls(config: &HttpConfig) -> Result<rustls::ClientConfig, FetchError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;

    let mut roots = rustls::RootCertStore::empty();
    match system_roots() {
        [] => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        certs => {
            // A system certificate rustls cannot parse is skipped, as reqwest 0.12 did.
            roots.add_parsable_certificates(certs.iter().cloned());
        }
    }
    for path in &config.ca_files {
        let ca_err = |reason: String| FetchError::CaFile {
            path: path.clone(),
            reason,
            advice: None,
        };
        // A CA decides whom the client trusts, so it is read as the other trust files are:
        // a regular file of bounded size that no one else could have written.
        let pem =
            crate::input::read_private_text(path, MAX_CA_FILE).map_err(|e| FetchError::CaFile {
                path: path.clone(),
                reason: e.to_string(),
                advice: crate::input::hint(&e, path, "PEM CA certificates"),
            })?;
        let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ca_err(format!("not PEM certificates: {e}")))?;
        if certs.is_empty() {
            return Err(ca_err("no PEM certificate in the file".into()));
        }
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| ca_err(format!("a certificate rustls cannot use: {e}")))?;
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| FetchError::Client {
            reason: e.to_string(),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.resumption = sessions();
    Ok(tls)
}

/// The TLS session cache every client of the process shares (rustls keeps tickets per server
/// name), so a second client's first connection to a host resumes instead of a full handshake.
fn sessions() -> rustls::client::Resumption {
    static SESSIONS: std::sync::OnceLock<rustls::client::Resumption> = std::sync::OnceLock::new();
    SESSIONS
        .get_or_init(|| rustls::client::Resumption::in_memory_sessions(256))
        .clone()
}

/// The CA certificates the system offers (`SSL_CERT_FILE`/`SSL_CERT_DIR`, else the
/// distribution's bundle), read once per process. None (a static binary in a scratch container,
/// a minimal chroot) means the bundled Mozilla roots are trusted instead: trusting both always
/// would keep a CA the host's administrator removed.
fn system_roots() -> &'static [rustls::pki_types::CertificateDer<'static>] {
    static CERTS: std::sync::OnceLock<Vec<rustls::pki_types::CertificateDer<'static>>> =
        std::sync::OnceLock::new();
    CERTS.get_or_init(|| {
        let certs = rustls_native_certs::load_native_certs().certs;
        match certs.len() {
            0 => tracing::debug!(
                "TLS roots: the system has no CA certificate; trusting the bundled Mozilla roots"
            ),
            n => tracing::debug!("TLS roots: the system's {n} CA certificates"),
        }
        certs
    })
}
