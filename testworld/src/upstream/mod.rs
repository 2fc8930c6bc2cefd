//! The in-process stand-in for github.com release downloads, dl.k8s.io and
//! raw.githubusercontent.com (`test-world.md`): a generated "upstream snapshot" served over HTTP.
//!
//! Nothing here is downloaded. A [`Snapshot`] generates small but real-format content
//! deterministically from a seed — ELF64 executables with the right `e_machine` for x86-64 and
//! aarch64, gzip tarballs shaped like the CNI, crictl and etcd releases, the manifests cks-iso
//! bundles written in upstream's shapes (`docs/reference/upstream.md` §3–4, including the CSI
//! joined-separator defect), kubeadm's `constants.go` per release — plus the checksum files
//! upstream publishes beside them: bare hex `<url>.sha256` for Kubernetes binaries, `hex  name` for
//! CNI and crictl, `SHA256SUMS` for etcd, and the version labels (`release/stable-1.33.txt`…,
//! [`crate::labels`]). Which versions exist is chosen with the builder, so a test can make a
//! release missing, old (the CNI legacy name) or newer than anything cks-iso knows.
//!
//! [`UpstreamServer`] serves a snapshot under host-named prefixes:
//! `http://127.0.0.1:P/dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubeadm`. As on the real hosts,
//! release downloads (`github.com/<o>/<r>/releases/download/…` and `dl.k8s.io/release/…`) answer
//! `302` to a second "CDN" server on another port, which serves the bytes with `Range` support;
//! everything else is served directly. [`UpstreamServer::mirror_rules`] gives the `FROM=TO` pairs a
//! user would pass as `--mirror`. Unknown paths answer 404.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::server::{HttpServer, Incoming, Outgoing};

/// Architectures as Kubernetes names them.
pub const ARCHES: [&str; 2] = ["amd64", "arm64"];

/// The CNI plugin binaries put in each CNI tarball.
const CNI_PLUGINS: [&str; 5] = ["bridge", "host-local", "loopback", "portmap", "bandwidth"];

/// The URL hosts the stand-in answers for, as path prefixes.
pub const HOSTS: [&str; 3] = ["github.com", "dl.k8s.io", "raw.githubusercontent.com"];

mod content;
mod snapshot;
#[cfg(test)]
mod tests;

pub use content::*;
pub use snapshot::*;

/// Path (after the host) of the CNI manifest fixture.
pub const NETWORK_PATH: &str = "projectcalico/calico/v3.29.1/manifests/calico.yaml";
/// Path (after the host) of the dashboard manifest fixture.
pub const DASHBOARD_PATH: &str = "kubernetes/dashboard/v2.7.0/aio/deploy/recommended.yaml";
/// Path (after the host) of the Headlamp manifest fixture (CloudStack 4.23+ prefers it to the
/// dashboard).
pub const HEADLAMP_PATH: &str = "kubernetes-sigs/headlamp/v0.30.1/kubernetes-headlamp.yaml";
/// The Headlamp release whose manifest is served as its tag publishes it (CloudStack 4.23's
/// script takes this version as its sixth argument).
pub const HEADLAMP_VERSION: &str = "0.40.1";
/// Path (after the host) of that release's manifest: `ghcr.io/headlamp-k8s/headlamp:latest`, no
/// `imagePullPolicy`.
pub const HEADLAMP_RELEASE_PATH: &str = "kubernetes-sigs/headlamp/v0.40.1/kubernetes-headlamp.yaml";
/// A Headlamp release whose image registry.k8s.io serves as `registry.k8s.io/headlamp/headlamp`
/// (kubernetes/k8s.io PR #9452 promoted v0.41.0 and v0.42.0, PR #9616 v0.43.0); the world
/// publishes it there, signed as registry.k8s.io's images are, and not on ghcr.io.
pub const HEADLAMP_PROMOTED_VERSION: &str = "0.41.0";
/// Path (after the host) of that release's manifest, in the same shape as [`HEADLAMP_RELEASE_PATH`].
pub const HEADLAMP_PROMOTED_RELEASE_PATH: &str =
    "kubernetes-sigs/headlamp/v0.41.0/kubernetes-headlamp.yaml";
/// Directory (after the host) of the kubelet unit and kubeadm drop-in fixtures.
pub const UNIT_DIR: &str = "kubernetes/release/v0.16.2/cmd/krel/templates/latest";

/// One request the stand-in answered.
#[derive(Debug, Clone)]
pub struct Served {
    /// Which server: `"origin"` or `"cdn"`.
    pub server: &'static str,
    /// `GET`, `HEAD`, …
    pub method: String,
    /// The path requested, query included.
    pub path: String,
    /// The `Range` header, if any.
    pub range: Option<String>,
    /// The status answered.
    pub status: u16,
}

struct Shared {
    files: Mutex<BTreeMap<String, File>>,
    /// Where `302`s send release downloads (the CDN, or a proxy in front of it).
    cdn_base: Mutex<String>,
    log: Mutex<Vec<Served>>,
}

/// The origin and CDN servers for a snapshot; both stop when dropped.
pub struct UpstreamServer {
    origin: HttpServer,
    cdn: HttpServer,
    shared: Arc<Shared>,
}

impl UpstreamServer {
    /// Serves `snapshot` on two ephemeral 127.0.0.1 ports.
    pub fn start(snapshot: &Snapshot) -> Self {
        let shared = Arc::new(Shared {
            files: Mutex::new(snapshot.files()),
            cdn_base: Mutex::new(String::new()),
            log: Mutex::new(Vec::new()),
        });
        let [origin, cdn] = ["origin", "cdn"].map(|role| {
            let shared = shared.clone();
            HttpServer::start(move |request| handle(&request, role, &shared))
        });
        *shared.cdn_base.lock().unwrap() = format!("http://{}", cdn.host());
        Self {
            origin,
            cdn,
            shared,
        }
    }

    /// The origin's base URL, `http://127.0.0.1:P`; a host's files are under `/<host>/`.
    pub fn url(&self) -> String {
        format!("http://{}", self.origin.host())
    }

    /// The CDN's own base URL.
    pub fn cdn_url(&self) -> String {
        format!("http://{}", self.cdn.host())
    }

    /// Makes release downloads redirect to `base` (e.g. a fault proxy in front of
    /// [`UpstreamServer::cdn_url`]) instead of the CDN.
    pub fn redirect_cdn_to(&self, base: &str) {
        *self.shared.cdn_base.lock().unwrap() = base.trim_end_matches('/').to_owned();
    }

    /// The `FROM=TO` mirror rules that send each upstream host to this stand-in through `base`
    /// (the origin's URL, or a proxy in front of it).
    pub fn mirror_rules_via(base: &str) -> Vec<String> {
        HOSTS
            .iter()
            .map(|h| format!("https://{h}={}/{h}", base.trim_end_matches('/')))
            .collect()
    }

    /// The `FROM=TO` mirror rules that send each upstream host to this stand-in.
    pub fn mirror_rules(&self) -> Vec<String> {
        Self::mirror_rules_via(&self.url())
    }

    /// Serves `body` at `path` (host-prefixed) from now on: how a test spoils a `.sig` mid-run.
    pub fn put(&self, path: &str, body: impl Into<Vec<u8>>, content_type: &'static str) {
        self.shared.files.lock().unwrap().insert(
            path.trim_start_matches('/').to_owned(),
            File {
                body: body.into(),
                content_type,
            },
        );
    }

    /// Makes `path` answer 404 from now on; returns what it served.
    pub fn take(&self, path: &str) -> Option<File> {
        self.shared
            .files
            .lock()
            .unwrap()
            .remove(path.trim_start_matches('/'))
    }

    /// Every request answered so far.
    pub fn served(&self) -> Vec<Served> {
        self.shared.log.lock().unwrap().clone()
    }
}

/// Release downloads that answer `302` to the CDN on the real hosts.
fn redirected(path: &str) -> bool {
    path.starts_with("dl.k8s.io/release/")
        || (path.starts_with("github.com/") && path.contains("/releases/download/"))
}

fn handle(request: &Incoming, role: &'static str, shared: &Shared) -> Outgoing {
    let full = &request.target;
    let range = request.header("Range").map(str::to_owned);
    let path = full.split('?').next().unwrap_or("").trim_start_matches('/');
    // The CDN serves `/<cdn-host>/<origin path>?<signature>`.
    let lookup = match role {
        "cdn" => path.split_once('/').map_or("", |(_, rest)| rest),
        _ => path,
    };
    let file = shared.files.lock().unwrap().get(lookup).cloned();
    let response = match file.as_ref() {
        Some(_) if role == "origin" && redirected(lookup) => {
            let cdn_host = match lookup.starts_with("dl.k8s.io/") {
                true => "cdn.dl.k8s.io",
                false => "objects.githubusercontent.com",
            };
            let location = format!(
                "{}/{cdn_host}/{lookup}?X-Signature=cks-iso-testworld",
                shared.cdn_base.lock().unwrap()
            );
            Outgoing::new(302, Vec::new()).with("Location", &location)
        }
        Some(file) => serve_file(file, range.as_deref()),
        None => Outgoing::new(404, "Not Found").with("Content-Type", "text/plain; charset=utf-8"),
    };
    shared.log.lock().unwrap().push(Served {
        server: role,
        method: request.method.clone(),
        path: full.clone(),
        range,
        status: response.status,
    });
    response
}

fn serve_file(file: &File, range: Option<&str>) -> Outgoing {
    let len = file.body.len();
    let start = range
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|s| s.parse::<usize>().ok());
    let base = |status: u16, body: Vec<u8>| {
        Outgoing::new(status, body)
            .with("Content-Type", file.content_type)
            .with("Accept-Ranges", "bytes")
    };
    match start {
        Some(start) if start < len => base(206, file.body[start..].to_vec())
            .with("Content-Range", &format!("bytes {start}-{}/{len}", len - 1)),
        Some(_) => Outgoing::new(416, Vec::new()).with("Content-Range", &format!("bytes */{len}")),
        None => base(200, file.body.clone()),
    }
}

/// A fixture template with each `{name}` replaced by its value.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut text = template.to_owned();
    for (name, value) in values {
        text = text.replace(&format!("{{{name}}}"), value);
    }
    text
}
