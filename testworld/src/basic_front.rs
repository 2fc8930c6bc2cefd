//! A registry that asks for Basic authentication, the other kind of challenge a client meets:
//! distribution's `auth: htpasswd` and registries behind a reverse proxy answer `GET /v2/` with
//! `401` and `WWW-Authenticate: Basic realm="…"` and then want the user name and password on
//! every request (distribution's `registry/auth/htpasswd` access controller is the model). It sits
//! in front of a real `docker-registry` of the world, like [`crate::registry::TokenFront`], and
//! records every `Authorization` header it receives, so that a test can prove which secret
//! reached it.

use std::sync::{Arc, Mutex};

use crate::http;
use crate::registry::proxy;
use crate::server::{HttpServer, Outgoing};

/// A Basic-auth front before a registry; stops when dropped.
pub struct BasicFront {
    server: HttpServer,
    seen: Arc<Mutex<Vec<String>>>,
}

impl BasicFront {
    /// Starts a front before the plain registry at `upstream` (`host:port`) that lets through
    /// only `user` with `password`.
    pub fn start(upstream: &str, user: &str, password: &str) -> Self {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let want = format!(
            "Basic {}",
            http::base64(format!("{user}:{password}").as_bytes())
        );
        let server = {
            let (seen, upstream) = (seen.clone(), upstream.to_owned());
            HttpServer::start(move |request| {
                let given = request.header("authorization").map(str::to_owned);
                if let Some(given) = &given {
                    seen.lock().unwrap().push(given.clone());
                }
                if given.as_deref() != Some(want.as_str()) {
                    return Outgoing::new(401, "{\"errors\":[{\"code\":\"UNAUTHORIZED\"}]}")
                        .with("WWW-Authenticate", "Basic realm=\"cks-iso-testworld\"")
                        .with("Content-Type", "application/json");
                }
                proxy(&request, &upstream)
            })
        };
        Self { server, seen }
    }

    /// `127.0.0.1:<port>`.
    pub fn host(&self) -> String {
        self.server.host()
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.host())
    }

    /// Every `Authorization` header received, as sent.
    pub fn authorizations(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}
