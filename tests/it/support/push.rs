//! For `push`'s tests: a lock of the registry world's images, `cks-iso push` isolated from the
//! user's credentials, skopeo's digest of a pushed copy, and fronts before a push target — one
//! that records every request (and can refuse uploads as a registry over its quota does), one
//! that breaks a chunk mid-upload.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cks_iso::lock::{ArchEntry, Autoscaler, ImageEntry, Kubeadm, Lock, LockedRequest, VERSION};
use cks_iso_testworld::images::Fixture;
use cks_iso_testworld::registry::{RegistryWorld, proxy};
use cks_iso_testworld::server::{HttpServer, Incoming, Outgoing};

use super::{cks_iso, require, run_tool, stderr};

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

    /// Whether any request's `METHOD target` contains `text`.
    pub fn seen_any(&self, text: &str) -> bool {
        self.seen.lock().unwrap().iter().any(|s| s.contains(text))
    }

    pub fn forget(&self) {
        self.seen.lock().unwrap().clear();
    }
}

/// A front that gives Debian's docker-registry (2.8, no Referrers API) the OCI 1.1 Referrers API
/// as zot answers it (project-zot/zot `pkg/api/routes.go`, `UpdateManifest` and `GetReferrers`;
/// the list built as `pkg/storage/common/common.go` `GetReferrers` builds it): a manifest `PUT`
/// whose body has a `subject` is stored, then answered with `OCI-Subject: <subject digest>`;
/// `GET /v2/<name>/referrers/<digest>` answers 200 with an image index of the manifests put with
/// that subject (media type, artifact type — the manifest's `artifactType`, else its config's
/// media type —, size, digest, annotations), an empty one when there are none. Records every
/// `METHOD target`.
pub struct ReferrersFront {
    server: HttpServer,
    seen: Arc<Mutex<Vec<String>>>,
}

/// The manifests put with a subject: (repository, subject digest) → their descriptors.
type Listed = Arc<Mutex<BTreeMap<(String, String), Vec<serde_json::Value>>>>;

impl ReferrersFront {
    pub fn start(upstream: &str) -> Self {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let listed: Listed = Arc::default();
        let server = {
            let (seen, upstream) = (seen.clone(), upstream.to_owned());
            HttpServer::start(move |request| {
                seen.lock()
                    .unwrap()
                    .push(format!("{} {}", request.method, request.target));
                let path = request.target.split('?').next().unwrap_or_default();
                let inner = path.strip_prefix("/v2/").unwrap_or_default();
                if request.method == "GET"
                    && let Some((name, subject)) = inner.split_once("/referrers/")
                {
                    let key = (name.to_owned(), subject.to_owned());
                    let manifests = listed.lock().unwrap().get(&key).cloned();
                    let index = serde_json::json!({
                        "schemaVersion": 2,
                        "mediaType": "application/vnd.oci.image.index.v1+json",
                        "manifests": manifests.unwrap_or_default(),
                        "annotations": {},
                    });
                    return Outgoing::new(200, serde_json::to_vec(&index).unwrap())
                        .with("Content-Type", "application/vnd.oci.image.index.v1+json");
                }
                let mut out = proxy(&request, &upstream);
                let put = request.method == "PUT" && inner.contains("/manifests/");
                let body: Option<serde_json::Value> = serde_json::from_slice(&request.body).ok();
                let subject = (body.as_ref())
                    .and_then(|b| b["subject"]["digest"].as_str())
                    .map(str::to_owned);
                if let (true, 201, Some(subject), Some(body)) = (put, out.status, subject, body) {
                    let name = inner.split("/manifests/").next().unwrap().to_owned();
                    let artifact = (body.get("artifactType"))
                        .or_else(|| body.get("config").and_then(|c| c.get("mediaType")))
                        .cloned()
                        .unwrap_or_default();
                    let entry = serde_json::json!({
                        "mediaType": body["mediaType"],
                        "artifactType": artifact,
                        "size": request.body.len(),
                        "digest": cks_iso_testworld::http::sha256(&request.body),
                        "annotations": body.get("annotations").cloned().unwrap_or_default(),
                    });
                    let mut listed = listed.lock().unwrap();
                    let list = listed.entry((name, subject.clone())).or_default();
                    if !list.iter().any(|e| e["digest"] == entry["digest"]) {
                        list.push(entry);
                    }
                    out = out.with("OCI-Subject", &subject);
                }
                out
            })
        };
        Self { server, seen }
    }

    pub fn host(&self) -> String {
        self.server.host()
    }

    /// Requests seen whose `METHOD target` contains `text`.
    pub fn seen(&self, text: &str) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.iter().filter(|s| s.contains(text)).count()
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
        let cutter = Arc::new(Cutter {
            sessions: Arc::default(),
            cut: Arc::default(),
            me: Arc::default(),
            upstream: upstream.to_owned(),
            partial,
        });
        let server = {
            let cutter = cutter.clone();
            HttpServer::start(move |request| cutter.handle(&request))
        };
        cutter.me.set(server.host()).unwrap();
        Self {
            server,
            sessions: cutter.sessions.clone(),
            cut: cutter.cut.clone(),
        }
    }
}

/// The state of a [`CuttingFront`]'s handler: what it counted and cut, its own address (to
/// rewrite `Location`) and the registry it forwards to.
struct Cutter {
    sessions: Sessions,
    cut: Arc<Mutex<Option<String>>>,
    me: Arc<std::sync::OnceLock<String>>,
    upstream: String,
    partial: bool,
}

impl Cutter {
    /// Counts, maybe cuts, forwards, and answers 503 for the broken chunk.
    fn handle(&self, request: &Incoming) -> Outgoing {
        let path = request
            .target
            .split('?')
            .next()
            .unwrap_or_default()
            .to_owned();
        let mut body = request.body.clone();
        let mut range = request.header("content-range").map(str::to_owned);
        let broken = request.method == "PATCH" && self.count_and_cut(&path, &mut body, &mut range);
        if request.method == "PUT" && path.contains("/blobs/uploads/") {
            let digest = request.target.split("digest=").nth(1).map(str::to_owned);
            self.sessions.lock().unwrap().entry(path).or_default().1 = digest;
        }
        if broken && !self.partial {
            return Outgoing::new(503, "upstream connection lost");
        }
        let reply = match self.forward(request, &body, range.as_deref()) {
            Ok(reply) => reply,
            Err(unreachable) => return unreachable,
        };
        if broken {
            return Outgoing::new(503, "upstream connection lost");
        }
        reply
    }

    /// Counts a `PATCH` body's bytes for its session; the first chunk of 2 KiB or more is cut to
    /// its first half (its `Content-Range` to match). Whether this one was cut.
    fn count_and_cut(&self, path: &str, body: &mut Vec<u8>, range: &mut Option<String>) -> bool {
        self.sessions
            .lock()
            .unwrap()
            .entry(path.to_owned())
            .or_default()
            .0 += body.len() as u64;
        let mut cut = self.cut.lock().unwrap();
        if cut.is_some() || body.len() < 2048 {
            return false;
        }
        let start: u64 = range
            .as_deref()
            .and_then(|r| r.split('-').next()?.parse().ok())
            .unwrap();
        let half = body.len() / 2;
        body.truncate(half);
        *range = Some(format!("{start}-{}", start + half as u64 - 1));
        *cut = Some(path.to_owned());
        true
    }

    /// `request` with `body` and `range` sent on to the registry; its answer, addresses of the
    /// registry in its headers rewritten to this front's (or a 502 when it cannot be reached).
    fn forward(
        &self,
        request: &Incoming,
        body: &[u8],
        range: Option<&str>,
    ) -> Result<Outgoing, Outgoing> {
        let mut headers: Vec<(&str, &str)> = ["accept", "content-type"]
            .into_iter()
            .filter_map(|name| request.header(name).map(|v| (name, v)))
            .collect();
        if let Some(range) = range {
            headers.push(("content-range", range));
        }
        let reply = match cks_iso_testworld::http::request(
            &self.upstream,
            &request.method,
            &request.target,
            &headers,
            body,
        ) {
            Ok(reply) => reply,
            Err(e) => return Err(Outgoing::new(502, e.to_string())),
        };
        let mut out = Outgoing::new(reply.status, Vec::new());
        for name in ["content-type", "docker-content-digest", "range", "location"] {
            if let Some(value) = reply.header(name) {
                let value = value.replace(&self.upstream, self.me.get().unwrap());
                out = out.with(name, &value);
            }
        }
        if request.method == "HEAD" {
            out.length = reply.header("content-length").and_then(|l| l.parse().ok());
        }
        out.body = reply.body;
        Ok(out)
    }
}

/// The tagged amd64 fixtures, a few.
pub fn fixtures(world: &RegistryWorld) -> Vec<Fixture> {
    (world.corpus.fixtures.iter())
        .filter(|f| f.per_arch.contains_key("amd64") && f.tag.is_some() && !f.pinned)
        .take(3)
        .cloned()
        .collect()
}

/// A lock of amd64 naming `images` as resolved in the world.
pub fn lock_of(images: &[Fixture]) -> Lock {
    let images = images
        .iter()
        .map(|f| {
            let mut entry = ImageEntry::new(
                f.reference(),
                f.top.clone(),
                f.per_arch["amd64"].manifest.clone(),
                1,
            );
            entry.extra = Some("image".into());
            entry
        })
        .collect();
    Lock {
        version: VERSION,
        cks_iso: env!("CARGO_PKG_VERSION").into(),
        epoch: 1_700_000_000,
        epoch_from: None,
        request: LockedRequest {
            kubernetes: "1.33.1".into(),
            kubernetes_label: None,
            arches: vec!["amd64".into()],
            cni: "1.6.2".into(),
            crictl: "1.33.0".into(),
            etcd: None,
            csi: None,
            ccm: "v1.2.0".into(),
            autoscaler: "1.33.3".into(),
            headlamp: None,
            headlamp_image: None,
            cloudstack: None,
            volume_id: "CDROM".into(),
            name: "setup-v1.33.1".into(),
        },
        autoscaler: Autoscaler {
            version: "1.33.3".into(),
            tag: "cluster-autoscaler-1.33.3".into(),
            commit: None,
            pinned: false,
        },
        kubeadm: Kubeadm {
            pause: "3.10".into(),
            etcd: "3.5.21-0".into(),
            coredns: "v1.12.0".into(),
            source: "embedded table".into(),
        },
        manifests: vec![],
        arches: BTreeMap::from([(
            "amd64".to_owned(),
            ArchEntry {
                iso: "setup-v1.33.1-x86_64.iso".into(),
                files: vec![],
                images,
            },
        )]),
    }
}

/// `cks-iso push` isolated from the user's credentials and cache.
pub fn push(cache: &Path, args: &[String]) -> std::process::Output {
    let mut cmd = cks_iso();
    cmd.arg("push")
        .args(args)
        .arg("--cache-dir")
        .arg(cache)
        .env("HOME", cache.parent().unwrap())
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("XDG_CACHE_HOME");
    cmd.output().expect("run cks-iso")
}

/// `sha256:` of what `skopeo inspect --raw` reads at `image` (plain HTTP).
pub fn raw_digest(image: &str) -> String {
    require("skopeo");
    let out = run_tool(
        "skopeo",
        &[
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{image}"),
        ],
    );
    assert!(out.status.success(), "skopeo {image}: {}", stderr(&out));
    cks_iso_testworld::http::sha256(&out.stdout)
}

pub fn write_lock(dir: &Path, lock: &Lock) -> PathBuf {
    let path = dir.join("cks-iso.lock");
    std::fs::write(&path, lock.render()).unwrap();
    path
}
