//! Fronts before a push target for `push`'s tests: one that records every request (and can
//! refuse uploads as a registry over its quota does), one that breaks a chunk mid-upload.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use cks_iso_testworld::registry::proxy;
use cks_iso_testworld::server::{HttpServer, Outgoing};

/// A front before a registry that records `METHOD target` of every request and, when
/// `refuse_uploads`, answers upload starts as a registry over its quota does.
pub struct Front {
    server: HttpServer,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Front {
    pub fn start(upstream: &str, refuse_uploads: bool) -> Self {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let server = {
            let (seen, upstream) = (seen.clone(), upstream.to_owned());
            HttpServer::start(move |request| {
                seen.lock()
                    .unwrap()
                    .push(format!("{} {}", request.method, request.target));
                if refuse_uploads && request.method == "POST" {
                    return Outgoing::new(
                        400,
                        r#"{"errors":[{"code":"DENIED","message":"storage quota exceeded"}]}"#,
                    )
                    .with("Content-Type", "application/json");
                }
                proxy(&request, &upstream)
            })
        };
        Self { server, seen }
    }

    pub fn host(&self) -> String {
        self.server.host()
    }

    /// Requests seen whose `METHOD target` starts with `prefix`, and forgets them all.
    pub fn count(&self, prefix: &str) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.iter().filter(|s| s.starts_with(prefix)).count()
    }

    pub fn forget(&self) {
        self.seen.lock().unwrap().clear();
    }
}

/// Bytes of `PATCH` bodies per upload session path, and the digest its `PUT` closed it with.
pub type Sessions = Arc<Mutex<BTreeMap<String, (u64, Option<String>)>>>;

/// A front that forwards everything, upload sessions included (their `Location` is rewritten to
/// itself), and breaks the first `PATCH` of a chunk: it forwards nothing of it (`partial` false),
/// or its first half (`partial`), and answers 503, as a proxy whose upstream connection dropped
/// does. Counts `PATCH` bytes per session.
pub struct CuttingFront {
    pub server: HttpServer,
    /// Bytes of `PATCH` bodies received per session path, and the digest its `PUT` closed it with.
    pub sessions: Sessions,
    pub cut: Arc<Mutex<Option<String>>>,
}

impl CuttingFront {
    pub fn start(upstream: &str, partial: bool) -> Self {
        let sessions: Sessions = Arc::default();
        let cut: Arc<Mutex<Option<String>>> = Arc::default();
        let me: Arc<std::sync::OnceLock<String>> = Arc::default();
        let server = {
            let (sessions, cut, me, upstream) = (
                sessions.clone(),
                cut.clone(),
                me.clone(),
                upstream.to_owned(),
            );
            HttpServer::start(move |request| {
                let path = request
                    .target
                    .split('?')
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let mut body = request.body.clone();
                let mut range = request.header("content-range").map(str::to_owned);
                let mut broken = false;
                if request.method == "PATCH" {
                    sessions.lock().unwrap().entry(path.clone()).or_default().0 +=
                        body.len() as u64;
                    let mut cut = cut.lock().unwrap();
                    if cut.is_none() && body.len() >= 2048 {
                        let start: u64 = range
                            .as_deref()
                            .and_then(|r| r.split('-').next()?.parse().ok())
                            .unwrap();
                        let half = body.len() / 2;
                        body.truncate(half);
                        range = Some(format!("{start}-{}", start + half as u64 - 1));
                        *cut = Some(path.clone());
                        broken = true;
                    }
                }
                if request.method == "PUT" && path.contains("/blobs/uploads/") {
                    let digest = request.target.split("digest=").nth(1).map(str::to_owned);
                    sessions.lock().unwrap().entry(path.clone()).or_default().1 = digest;
                }
                let mut headers: Vec<(&str, &str)> = ["accept", "content-type"]
                    .into_iter()
                    .filter_map(|name| request.header(name).map(|v| (name, v)))
                    .collect();
                if let Some(range) = &range {
                    headers.push(("content-range", range));
                }
                if broken && !partial {
                    return Outgoing::new(503, "upstream connection lost");
                }
                let reply = match cks_iso_testworld::http::request(
                    &upstream,
                    &request.method,
                    &request.target,
                    &headers,
                    &body,
                ) {
                    Ok(reply) => reply,
                    Err(e) => return Outgoing::new(502, e.to_string()),
                };
                if broken {
                    return Outgoing::new(503, "upstream connection lost");
                }
                let mut out = Outgoing::new(reply.status, Vec::new());
                for name in ["content-type", "docker-content-digest", "range", "location"] {
                    if let Some(value) = reply.header(name) {
                        let value = value.replace(&upstream, me.get().unwrap());
                        out = out.with(name, &value);
                    }
                }
                if request.method == "HEAD" {
                    out.length = reply.header("content-length").and_then(|l| l.parse().ok());
                }
                out.body = reply.body;
                out
            })
        };
        me.set(server.host()).unwrap();
        Self {
            server,
            sessions,
            cut,
        }
    }
}
