//! The bearer-token front ([`TokenFront`]): registry.k8s.io's shape in front of a real registry
//! (a 401 challenge, tokens, blob downloads redirected to a "CDN" that records whether it saw an
//! `Authorization` header). Apart from the registry process it stands in front of (`mod.rs`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::proxy;
use crate::http;
use crate::server::{HttpServer, Incoming, Outgoing};

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

/// A value of an `application/x-www-form-urlencoded` body: `+` is a space, `%XX` a byte.
fn form_decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| {
            (bytes.get(at..at + 2))
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        };
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if hex(i + 1).is_some() => {
                out.extend(hex(i + 1));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The scopes a token is granted: for OAuth2 the POSTed form's one `scope` field, its scopes
/// separated by spaces (distribution's OAuth2 spec, `docs/spec/auth/oauth.md`; containerd's
/// client joins its scopes so, `remotes/docker/auth/fetch.go`); otherwise the GET query's
/// `scope` parameters.
fn granted(auth: &FrontAuth, request: &Incoming, asked: &[String]) -> Vec<String> {
    match auth {
        FrontAuth::RefreshToken(_) => {
            let form = String::from_utf8_lossy(&request.body).into_owned();
            (form.split('&'))
                .filter_map(|pair| pair.strip_prefix("scope="))
                .flat_map(|s| {
                    form_decoded(s)
                        .split(' ')
                        .map(str::to_owned)
                        .collect::<Vec<_>>()
                })
                .filter(|s| !s.is_empty())
                .collect()
        }
        _ => (asked.iter())
            .map(|s| s.replace("%2C", ",").replace("%2c", ","))
            .collect(),
    }
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
                        state.scopes.lock().unwrap().push(form_decoded(&scope));
                        true
                    })
            }
        };
        if !allowed {
            return Outgoing::new(401, "{\"details\":\"bad credentials\"}");
        }
        let token = format!("testworld-token-{n}");
        let granted = granted(auth, &request, &asked);
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
