//! The local stand-in for container registries (`test-world.md`): Debian's `docker-registry`
//! (CNCF distribution 2.8) on an ephemeral loopback port, plain or with TLS from a CA generated
//! at test time, and a bearer-token front that 307-redirects blob downloads to a second host.
//!
//! - [`DockerRegistry`]: the real registry with a generated config and its own storage; several
//!   instances may serve one storage directory (the TLS instance reads what the plain one holds).
//! - [`Tls`]: a CA and a server certificate for `127.0.0.1`/`localhost`, made with rcgen.
//! - [`TokenFront`]: a small server in front of a registry that answers 401 with a
//!   `WWW-Authenticate: Bearer` challenge, issues tokens (anonymously, or only for a user name
//!   and password), proxies manifests, and answers blob GETs with 307 to a "CDN" on another port
//!   that records whether it ever saw an `Authorization` header — registry.k8s.io's shape. Its
//!   token service can be made to redirect token requests ([`TokenFront::redirect_token_requests`]).
//!   The other kind of registry, one asking for Basic authentication, is
//!   [`crate::basic_front`]'s.
//! - [`world`]: a plain registry holding [`crate::images::corpus`].

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::http;
use crate::images::{Corpus, corpus};
use crate::server::{HttpServer, Incoming, Outgoing};

/// The binary Debian's `docker-registry` package installs.
pub const DOCKER_REGISTRY: &str = "/usr/bin/docker-registry";

/// Fails the test, naming `make deps`, when docker-registry is missing: never a silent skip.
pub fn require_docker_registry() {
    assert!(
        Path::new(DOCKER_REGISTRY).is_file(),
        "{DOCKER_REGISTRY} is not installed; run `make deps` to install the test tools"
    );
}

/// A CA and a server certificate signed by it, as PEM files in a temporary directory.
pub struct Tls {
    dir: TempDir,
}

impl Tls {
    /// Generates a fresh CA and a certificate for `127.0.0.1` and `localhost`.
    pub fn generate() -> Self {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "cks-iso testworld CA");
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let mut leaf =
            CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
        leaf.distinguished_name
            .push(DnType::CommonName, "cks-iso testworld registry");
        let leaf_key = KeyPair::generate().unwrap();
        let issuer = Issuer::from_params(&ca, &ca_key);
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).unwrap();
        std::fs::write(dir.path().join("cert.pem"), leaf_cert.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), leaf_key.serialize_pem()).unwrap();
        Self { dir }
    }

    /// The CA certificate clients must trust.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The server certificate (for `127.0.0.1` and `localhost`), PEM.
    pub(crate) fn cert(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    /// The server certificate's private key, PEM.
    pub(crate) fn key(&self) -> PathBuf {
        self.dir.path().join("key.pem")
    }
}

/// A running `docker-registry`, killed (by its pid) when dropped.
pub struct DockerRegistry {
    child: Child,
    port: u16,
    tls: bool,
    _config: TempDir,
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().unwrap().port()
}

impl DockerRegistry {
    /// Starts a registry storing into `storage`, over TLS when `tls` is given.
    pub fn start(storage: &Path, tls: Option<&Tls>) -> Self {
        Self::start_with(storage, tls, "")
    }

    /// [`DockerRegistry::start`] with `extra` appended to its configuration (top-level YAML keys,
    /// e.g. an `auth:` section naming a token realm).
    pub fn start_with(storage: &Path, tls: Option<&Tls>, extra: &str) -> Self {
        Self::launch(storage, tls, "", extra)
    }

    /// [`DockerRegistry::start`] over TLS with HTTP/2 turned off (`http.http2.disabled`), so it
    /// answers ALPN with `http/1.1` only: the same registry as HTTP/1.1-only servers and proxies
    /// present it, for comparing the two protocols on one path.
    pub fn start_tls_http1(storage: &Path, tls: &Tls) -> Self {
        Self::launch(storage, Some(tls), "  http2:\n    disabled: true\n", "")
    }

    /// Starts it with `http_extra` inside its `http:` section and `extra` at the top level.
    fn launch(storage: &Path, tls: Option<&Tls>, http_extra: &str, extra: &str) -> Self {
        require_docker_registry();
        let mut last_log = String::new();
        // The port is chosen free but could be taken before the registry binds it: try again.
        for _ in 0..5 {
            let port = free_port();
            let config = tempfile::tempdir().unwrap();
            let tls_yaml = tls.map_or(String::new(), |t| {
                format!(
                    "  tls:\n    certificate: {}\n    key: {}\n",
                    t.cert().display(),
                    t.key().display()
                )
            });
            let yaml = format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: false\n\
                 storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
                 http:\n  addr: 127.0.0.1:{port}\n  secret: cks-iso-testworld\n{tls_yaml}{http_extra}{extra}",
                storage.display()
            );
            let path = config.path().join("config.yml");
            std::fs::write(&path, yaml).unwrap();
            let log = config.path().join("registry.log");
            let mut command = Command::new(DOCKER_REGISTRY);
            // If whoever started it dies without dropping it (a killed `registry-world`, a test
            // binary aborted), the kernel kills the registry too instead of orphaning it. The
            // signal fires when the spawning *thread* exits: each test owns its registries.
            // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                    rustix::process::set_parent_process_death_signal(Some(
                        rustix::process::Signal::KILL,
                    ))
                    .map_err(std::io::Error::from)
                });
            }
            let child = command
                .arg("serve")
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(std::fs::File::create(&log).unwrap())
                .stderr(std::fs::File::create(config.path().join("registry.err")).unwrap())
                .spawn()
                .expect("cannot start docker-registry");
            let mut registry = Self {
                child,
                port,
                tls: tls.is_some(),
                _config: config,
            };
            if registry.wait_ready() {
                return registry;
            }
            last_log = std::fs::read_to_string(registry._config.path().join("registry.err"))
                .unwrap_or_default();
        }
        panic!("docker-registry did not start; its log:\n{last_log}");
    }

    /// Waits until it accepts connections; false if it exited (port taken).
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                let up = self.tls
                    || http::request(&self.host(), "GET", "/v2/", &[], &[])
                        .is_ok_and(|r| r.status == 200);
                if up {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// `127.0.0.1:<port>`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `http(s)://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.host())
    }

    /// Every request it answered so far, as its own access log records them (distribution
    /// writes one line per request in the Apache combined format to its stdout, which goes to
    /// `registry.log`): `(method, path, status)`.
    pub fn access_log(&self) -> Vec<Access> {
        let text =
            std::fs::read_to_string(self._config.path().join("registry.log")).unwrap_or_default();
        text.lines().filter_map(Access::parse).collect()
    }
}

/// One request of a registry's access log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// `GET`, `HEAD`, …
    pub method: String,
    /// The path, query included (`/v2/<name>/blobs/sha256:…`).
    pub path: String,
    /// The status answered.
    pub status: u16,
}

impl Access {
    /// `127.0.0.1 - - [date] "GET /v2/ HTTP/1.1" 200 2 "" "agent"` → `GET`, `/v2/`, 200.
    fn parse(line: &str) -> Option<Self> {
        let (_, rest) = line.split_once('"')?;
        let (request, rest) = rest.split_once('"')?;
        let mut words = request.split(' ');
        let (method, path) = (words.next()?, words.next()?);
        let status = rest.split_whitespace().next()?.parse().ok()?;
        Some(Self {
            method: method.to_owned(),
            path: path.to_owned(),
            status,
        })
    }

    /// Whether it fetched a blob's bytes (a layer, a config).
    pub fn is_blob_get(&self) -> bool {
        self.method == "GET" && self.path.contains("/blobs/sha256:")
    }
}

impl Drop for DockerRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain registry holding the corpus, and the storage it lives in.
pub struct RegistryWorld {
    /// The registry (plain HTTP).
    pub registry: DockerRegistry,
    /// Its storage, which other instances may serve too.
    pub storage: TempDir,
    /// What it holds.
    pub corpus: Corpus,
}

impl RegistryWorld {
    /// `--registry-mirror` arguments that send every upstream host of the corpus to `base`
    /// (`http://127.0.0.1:PORT`), each under its host-named prefix.
    pub fn mirror_args(&self, base: &str) -> Vec<String> {
        let mut hosts: Vec<&str> = self.corpus.fixtures.iter().map(|f| f.host()).collect();
        hosts.sort();
        hosts.dedup();
        hosts
            .into_iter()
            .flat_map(|h| ["--registry-mirror".to_owned(), format!("{h}={base}/{h}")])
            .collect()
    }
}

/// Starts a plain registry and pushes the corpus into it.
pub fn world() -> RegistryWorld {
    let storage = tempfile::tempdir().unwrap();
    let registry = DockerRegistry::start(storage.path(), None);
    let corpus = corpus();
    corpus.push(&registry.host());
    RegistryWorld {
        registry,
        storage,
        corpus,
    }
}

/// Who may get a token from a [`TokenFront`].
#[derive(Debug, Clone)]
pub enum FrontAuth {
    /// Anyone (anonymous pull tokens, like registry.k8s.io and Docker Hub for public images).
    Anonymous,
    /// Only this user with this password (Basic on the token request).
    Password {
        /// The user name.
        user: String,
        /// The password.
        password: String,
    },
    /// Only a client presenting this refresh token the OAuth2 way Docker does for identity
    /// tokens: `POST` with `grant_type=refresh_token&refresh_token=…` as a form.
    RefreshToken(String),
}

#[derive(Default)]
struct FrontState {
    /// Issued tokens, how often each was used, and the scopes it was asked for.
    tokens: Mutex<Vec<(String, usize, Vec<String>)>>,
    /// Whether a token must grant what each request needs ([`crate::scopes`]).
    require_scopes: AtomicBool,
    /// Uses after which a token expires; 0 for never.
    max_uses: AtomicUsize,
    token_requests: AtomicUsize,
    scopes: Mutex<Vec<String>>,
    cdn_requests: AtomicUsize,
    cdn_saw_authorization: AtomicBool,
    unauthorized: AtomicUsize,
    /// A status and a base URL the token service redirects token requests to (`/token` becomes
    /// `<base>/token-moved`), as a token service behind a load balancer or moved elsewhere does.
    token_redirect: Mutex<Option<(u16, String)>>,
}

/// A bearer-token front with a blob "CDN" on a second port; both stop when dropped.
pub struct TokenFront {
    front: HttpServer,
    cdn: HttpServer,
    state: Arc<FrontState>,
}

impl TokenFront {
    /// Starts the front before the registry at `upstream` (`host:port`, plain HTTP).
    pub fn start(upstream: &str, auth: FrontAuth) -> Self {
        let state = Arc::new(FrontState::default());
        let cdn = {
            let (state, upstream) = (state.clone(), upstream.to_owned());
            HttpServer::start(move |request| cdn_request(request, &state, &upstream))
        };
        let cdn_host = cdn.host();
        // The front names itself in its challenge; it learns its port once it is bound.
        let me: Arc<Mutex<String>> = Arc::default();
        let front = {
            let (state, upstream, me) = (state.clone(), upstream.to_owned(), me.clone());
            HttpServer::start(move |request| {
                let front = me.lock().unwrap().clone();
                front_request(request, &state, &upstream, &auth, &front, &cdn_host)
            })
        };
        *me.lock().unwrap() = front.host();
        Self { front, cdn, state }
    }

    /// `127.0.0.1:<port>` of the front.
    pub fn host(&self) -> String {
        self.front.host()
    }

    /// `http://127.0.0.1:<port>` of the front.
    pub fn url(&self) -> String {
        format!("http://{}", self.host())
    }

    /// `127.0.0.1:<port>` of the blob host.
    pub fn cdn_host(&self) -> String {
        self.cdn.host()
    }

    /// Whether the CDN host ever received an `Authorization` header.
    pub fn cdn_saw_authorization(&self) -> bool {
        self.state.cdn_saw_authorization.load(Ordering::SeqCst)
    }

    /// Blob requests the CDN served.
    pub fn cdn_requests(&self) -> usize {
        self.state.cdn_requests.load(Ordering::SeqCst)
    }

    /// Tokens asked for (granted or not).
    pub fn token_requests(&self) -> usize {
        self.state.token_requests.load(Ordering::SeqCst)
    }

    /// The `scope` of every token request.
    pub fn scopes(&self) -> Vec<String> {
        self.state.scopes.lock().unwrap().clone()
    }

    /// Requests answered 401.
    pub fn unauthorized(&self) -> usize {
        self.state.unauthorized.load(Ordering::SeqCst)
    }

    /// Makes the token service answer every request to `/token` with `status` (307 or 308, which
    /// keep a POST's body) and `Location: <base>/token-moved?<the same query>`. With the front's
    /// own [`TokenFront::url`] as `base`, the moved path is served as `/token` is.
    pub fn redirect_token_requests(&self, status: u16, base: &str) {
        *self.state.token_redirect.lock().unwrap() = Some((status, base.to_owned()));
    }

    /// Makes the front refuse a request its token's scopes do not cover, as distribution's token
    /// authorization does ([`crate::scopes`]): 401 with `error="insufficient_scope"` and the
    /// scope needed in the challenge. Tokens are still granted for whatever scope is asked.
    pub fn require_scopes(&self) {
        self.state.require_scopes.store(true, Ordering::SeqCst);
    }

    /// Makes every token expire after `uses` requests, as short-lived tokens do mid-pull.
    pub fn expire_tokens_after(&self, uses: usize) {
        self.state.max_uses.store(uses, Ordering::SeqCst);
    }
}

/// Every value of the query parameter `name` in `url`, decoded as [`query_param`] decodes one.
fn all_params(url: &str, name: &str) -> Vec<String> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    (query.split('&'))
        .filter(|pair| pair.starts_with(&format!("{name}=")))
        .filter_map(|pair| query_param(&format!("?{pair}"), name))
        .collect()
}

fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| {
            v.replace("%3A", ":")
                .replace("%3a", ":")
                .replace("%2F", "/")
                .replace("%2f", "/")
        })
    })
}

fn front_request(
    request: Incoming,
    state: &FrontState,
    upstream: &str,
    auth: &FrontAuth,
    front: &str,
    cdn: &str,
) -> Outgoing {
    let url = request.target.clone();
    if url.starts_with("/token")
        && !url.starts_with("/token-moved")
        && let Some((status, base)) = state.token_redirect.lock().unwrap().clone()
    {
        let query = url.find('?').map_or("", |at| &url[at..]);
        return Outgoing::new(status, Vec::new())
            .with("Location", &format!("{base}/token-moved{query}"));
    }
    if url.starts_with("/token") {
        let n = state.token_requests.fetch_add(1, Ordering::SeqCst) + 1;
        let asked = all_params(&url, "scope");
        if !asked.is_empty() {
            state.scopes.lock().unwrap().push(asked.join(" "));
        }
        let allowed = match auth {
            FrontAuth::Anonymous => true,
            FrontAuth::Password { user, password } => {
                let want = format!(
                    "Basic {}",
                    http::base64(format!("{user}:{password}").as_bytes())
                );
                request.header("authorization") == Some(want.as_str())
            }
            FrontAuth::RefreshToken(refresh) => {
                let form = String::from_utf8_lossy(&request.body).into_owned();
                let field = |name: &str| {
                    form.split('&')
                        .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
                        .map(str::to_owned)
                };
                request.method == "POST"
                    && field("grant_type").as_deref() == Some("refresh_token")
                    && field("refresh_token").as_deref() == Some(refresh.as_str())
                    && field("scope").is_some_and(|scope| {
                        state
                            .scopes
                            .lock()
                            .unwrap()
                            .push(scope.replace("%3A", ":").replace("%2F", "/"));
                        true
                    })
            }
        };
        if !allowed {
            return Outgoing::new(401, "{\"details\":\"bad credentials\"}");
        }
        let token = format!("testworld-token-{n}");
        let granted = (asked.iter())
            .map(|s| s.replace("%2C", ",").replace("%2c", ","))
            .collect();
        state
            .tokens
            .lock()
            .unwrap()
            .push((token.clone(), 0, granted));
        // Both spellings, as Docker Hub and others differ.
        // OAuth2 replies always say `access_token`.
        let oauth = matches!(auth, FrontAuth::RefreshToken(_));
        let body = match n % 2 {
            0 if !oauth => format!("{{\"token\":\"{token}\",\"expires_in\":300}}"),
            _ => format!("{{\"access_token\":\"{token}\",\"expires_in\":300}}"),
        };
        return Outgoing::new(200, body).with("Content-Type", "application/json");
    }
    if let Some(refused) = unauthorized(&request, state, front) {
        return refused;
    }
    if request.method == "GET" && url.contains("/blobs/sha256:") {
        return Outgoing::new(307, Vec::new()).with("Location", &format!("http://{cdn}{url}"));
    }
    proxy(&request, upstream)
}

/// The 401 a request gets when its bearer token is unknown, used up, or (with
/// [`TokenFront::require_scopes`]) short of the scope it needs, which the challenge then names.
fn unauthorized(request: &Incoming, state: &FrontState, front: &str) -> Option<Outgoing> {
    let max_uses = state.max_uses.load(Ordering::SeqCst);
    let needed = crate::scopes::required(&request.method, &request.target);
    let mut short = false;
    let known = request
        .header("authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| {
            let mut tokens = state.tokens.lock().unwrap();
            let Some((_, uses, granted)) = tokens.iter_mut().find(|(k, _, _)| k == t) else {
                return false;
            };
            *uses += 1;
            short = state.require_scopes.load(Ordering::SeqCst)
                && !crate::scopes::covered(granted, &needed);
            (max_uses == 0 || *uses <= max_uses) && !short
        });
    if known {
        return None;
    }
    state.unauthorized.fetch_add(1, Ordering::SeqCst);
    let mut challenge =
        format!("Bearer realm=\"http://{front}/token\",service=\"cks-iso-testworld\"");
    if short {
        let scope = crate::scopes::challenge_scope(&needed);
        challenge.push_str(&format!(",scope=\"{scope}\",error=\"insufficient_scope\""));
    }
    Some(
        Outgoing::new(401, "{\"errors\":[{\"code\":\"UNAUTHORIZED\"}]}")
            .with("WWW-Authenticate", &challenge)
            .with("Content-Type", "application/json"),
    )
}

fn cdn_request(request: Incoming, state: &FrontState, upstream: &str) -> Outgoing {
    state.cdn_requests.fetch_add(1, Ordering::SeqCst);
    if request.header("authorization").is_some() {
        state.cdn_saw_authorization.store(true, Ordering::SeqCst);
    }
    proxy(&request, upstream)
}

/// Forwards `request` to `upstream` and its answer back, with the headers a client needs.
pub fn proxy(request: &Incoming, upstream: &str) -> Outgoing {
    let forwarded: Vec<(&str, &str)> = ["accept", "content-type", "range"]
        .into_iter()
        .filter_map(|name| request.header(name).map(|v| (name, v)))
        .collect();
    let reply = match http::request(
        upstream,
        &request.method,
        &request.target,
        &forwarded,
        &request.body,
    ) {
        Ok(reply) => reply,
        Err(e) => return Outgoing::new(502, e.to_string()),
    };
    let mut out = Outgoing::new(reply.status, Vec::new());
    for name in [
        "content-type",
        "docker-content-digest",
        "content-range",
        "location",
        "www-authenticate",
    ] {
        if let Some(value) = reply.header(name) {
            out = out.with(name, value);
        }
    }
    if request.method == "HEAD" {
        out.length = reply.header("content-length").and_then(|l| l.parse().ok());
    }
    out.body = reply.body;
    out
}

#[cfg(test)]
mod access_tests {
    use super::Access;

    #[test]
    fn an_access_log_line_reads_as_its_request_and_status() {
        let line = r#"127.0.0.1 - - [07/Dec/2026:15:41:44 +0000] "GET /v2/a/b/blobs/sha256:00 HTTP/1.1" 404 157 "" "curl/7.88.1""#;
        let access = Access::parse(line).unwrap();
        assert_eq!(
            (access.method.as_str(), access.path.as_str(), access.status),
            ("GET", "/v2/a/b/blobs/sha256:00", 404)
        );
        assert!(access.is_blob_get());
        assert_eq!(Access::parse("time=\"…\" level=error"), None);
    }
}
