//! Generated container images and the code that pushes them into a registry through the
//! distribution API, so the registry holds the exact bytes and digests the tests compare with.
//!
//! The corpus ([`corpus`]) has what real registries serve CKS: OCI indexes and Docker manifest
//! lists, buildx attestation entries (`unknown/unknown`), an arm64 `variant: v8`, base layers
//! shared across images, an amd64-only single-platform image, an image referenced by digest and
//! one by `tag@digest`. Layers are small but real gzip tars whose configs carry the right
//! `diff_ids`, so containerd can unpack them. Everything is deterministic.
//!
//! Repositories are stored under their upstream host (`registry.k8s.io/pause`), the way a
//! namespaced mirror holds several upstreams: `--registry-mirror
//! registry.k8s.io=http://127.0.0.1:PORT/registry.k8s.io` serves `registry.k8s.io/pause:3.10`.

use std::collections::BTreeMap;
use std::io::{self, Write};

use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::http::{self, request, sha256};

/// OCI image index.
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// Docker manifest list.
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// Docker image manifest v2.
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
const OCI_LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
const DOCKER_LAYER: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";
const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";

/// One platform's image within a fixture.
#[derive(Debug, Clone)]
pub struct ArchImage {
    /// The platform's manifest.
    pub manifest: String,
    /// Its config blob.
    pub config: String,
    /// The compressed layers, base first.
    pub layers: Vec<String>,
    /// The uncompressed layers' digests, as the config lists them.
    pub diff_ids: Vec<String>,
}

/// An image of the corpus as the tests know it.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// `host/path` (`registry.k8s.io/kube-apiserver`, `docker.io/library/busybox`).
    pub name: String,
    /// The tag the reference carries, if any.
    pub tag: Option<String>,
    /// Whether the reference carries `@<top>`.
    pub pinned: bool,
    /// The digest the reference resolves to (index, or manifest for single-platform images).
    pub top: String,
    /// Per architecture (`amd64`, `arm64`) it is published for.
    pub per_arch: BTreeMap<String, ArchImage>,
    /// The platforms its index lists, attestations left out (`linux/arm64/v8`).
    pub platforms: Vec<String>,
}

impl Fixture {
    /// The full reference: `host/path[:tag][@digest]`.
    pub fn reference(&self) -> String {
        let mut text = self.name.clone();
        if let Some(tag) = &self.tag {
            text.push(':');
            text.push_str(tag);
        }
        if self.pinned {
            text.push('@');
            text.push_str(&self.top);
        }
        text
    }

    /// The upstream registry host (`registry.k8s.io`).
    pub fn host(&self) -> &str {
        self.name.split('/').next().unwrap_or_default()
    }
}

/// What to push into one repository: blobs, then manifests in order (children first).
#[derive(Debug, Default, Clone)]
pub struct Plan {
    /// Blobs by digest.
    pub blobs: BTreeMap<String, Vec<u8>>,
    /// `(tag or digest, media type, bytes)`.
    pub manifests: Vec<(String, String, Vec<u8>)>,
}

/// The corpus: repositories to push, and the fixtures the tests check against.
#[derive(Debug, Default, Clone)]
pub struct Corpus {
    /// Repository (`registry.k8s.io/pause`) → what to push there.
    pub repos: BTreeMap<String, Plan>,
    /// The images.
    pub fixtures: Vec<Fixture>,
}

impl Corpus {
    /// The fixture whose full reference is `reference`.
    pub fn get(&self, reference: &str) -> &Fixture {
        self.fixtures
            .iter()
            .find(|f| f.reference() == reference)
            .unwrap_or_else(|| panic!("no fixture {reference}"))
    }

    /// Pushes every repository into the registry at `addr` (`host:port`, plain HTTP).
    pub fn push(&self, addr: &str) {
        for (repo, plan) in &self.repos {
            for (digest, bytes) in &plan.blobs {
                push_blob(addr, repo, digest, bytes).unwrap_or_else(|e| panic!("{repo}: {e}"));
            }
            for (object, media, bytes) in &plan.manifests {
                push_manifest(addr, repo, object, media, bytes)
                    .unwrap_or_else(|e| panic!("{repo}:{object}: {e}"));
            }
        }
    }
}

fn check(reply: &http::Reply, want: u16, what: &str) -> io::Result<()> {
    match reply.status == want {
        true => Ok(()),
        false => Err(io::Error::other(format!(
            "{what}: HTTP {} {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        ))),
    }
}

/// The path and query of an upload `Location`, which may be absolute.
fn upload_target(location: &str) -> String {
    match location.split_once("://") {
        Some((_, rest)) => rest
            .find('/')
            .map_or("/".to_owned(), |i| rest[i..].to_owned()),
        None => location.to_owned(),
    }
}

/// Monolithic upload: `POST /v2/<repo>/blobs/uploads/`, then `PUT <location>&digest=`.
pub fn push_blob(addr: &str, repo: &str, digest: &str, bytes: &[u8]) -> io::Result<()> {
    let head = request(
        addr,
        "HEAD",
        &format!("/v2/{repo}/blobs/{digest}"),
        &[],
        &[],
    )?;
    if head.status == 200 {
        return Ok(());
    }
    let start = request(
        addr,
        "POST",
        &format!("/v2/{repo}/blobs/uploads/"),
        &[],
        &[],
    )?;
    check(&start, 202, "start upload")?;
    let location = upload_target(start.header("location").unwrap_or_default());
    let sep = if location.contains('?') { '&' } else { '?' };
    let done = request(
        addr,
        "PUT",
        &format!("{location}{sep}digest={digest}"),
        &[("Content-Type", "application/octet-stream")],
        bytes,
    )?;
    check(&done, 201, "finish upload")
}

/// Streamed upload of a blob too big for memory: `PATCH` with a chunked body produced by
/// `write`, then `PUT ?digest=` with the digest hashed on the way. Returns digest and size.
pub fn push_blob_streamed(
    addr: &str,
    repo: &str,
    write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
) -> io::Result<(String, u64)> {
    let start = request(
        addr,
        "POST",
        &format!("/v2/{repo}/blobs/uploads/"),
        &[],
        &[],
    )?;
    check(&start, 202, "start upload")?;
    let location = upload_target(start.header("location").unwrap_or_default());
    let mut hasher = sha2::Sha256::new();
    let mut size = 0u64;
    let patched = http::request_streamed(
        addr,
        "PATCH",
        &location,
        &[("Content-Type", "application/octet-stream")],
        &mut |out| {
            let mut tee = Tee {
                out,
                hasher: &mut hasher,
                size: &mut size,
            };
            write(&mut tee)
        },
    )?;
    check(&patched, 202, "upload chunk")?;
    let digest = format!("sha256:{}", http::hex(&hasher.finalize()));
    let location = upload_target(patched.header("location").unwrap_or_default());
    let sep = if location.contains('?') { '&' } else { '?' };
    let done = request(
        addr,
        "PUT",
        &format!("{location}{sep}digest={digest}"),
        &[],
        &[],
    )?;
    check(&done, 201, "finish upload")?;
    Ok((digest, size))
}

struct Tee<'a> {
    out: &'a mut dyn Write,
    hasher: &'a mut sha2::Sha256,
    size: &'a mut u64,
}

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        *self.size += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// `PUT /v2/<repo>/manifests/<object>` with the exact bytes.
pub fn push_manifest(
    addr: &str,
    repo: &str,
    object: &str,
    media: &str,
    bytes: &[u8],
) -> io::Result<()> {
    let reply = request(
        addr,
        "PUT",
        &format!("/v2/{repo}/manifests/{object}"),
        &[("Content-Type", media)],
        bytes,
    )?;
    check(&reply, 201, "put manifest")?;
    match reply.header("docker-content-digest") {
        Some(d) if d != sha256(bytes) => Err(io::Error::other(format!(
            "registry says {d}, bytes hash to {}",
            sha256(bytes)
        ))),
        _ => Ok(()),
    }
}

/// Deterministic incompressible bytes.
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    fill_noise(seed, &mut out);
    out
}

/// Fills `buf` with xorshift noise from `seed`; returns the next state.
pub fn fill_noise(seed: u64, buf: &mut [u8]) -> u64 {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in buf.chunks_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
    state
}

/// A compressed layer: gzip bytes, their digest, and the tar's digest (the diff_id).
#[derive(Debug, Clone)]
pub struct Layer {
    /// The gzip tar.
    pub gz: Vec<u8>,
    /// `sha256:` of `gz`.
    pub digest: String,
    /// `sha256:` of the tar.
    pub diff_id: String,
}

/// A deterministic gzip tar of `files` (path, content), mode 0644, dated 0.
pub fn layer(files: &[(&str, Vec<u8>)]) -> Layer {
    let mut tar = tar::Builder::new(Vec::new());
    for (path, content) in files {
        let mut header = tar::Header::new_ustar();
        header.set_path(path).unwrap();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        tar.append(&header, &content[..]).unwrap();
    }
    let plain = tar.into_inner().unwrap();
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(&plain).unwrap();
    let gz = gz.finish().unwrap();
    Layer {
        digest: sha256(&gz),
        diff_id: sha256(&plain),
        gz,
    }
}

/// Media types of one style of image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Style {
    /// OCI index, manifest, config, layers.
    Oci,
    /// Docker list v2, manifest v2, container config, rootfs layers.
    Docker,
}

impl Style {
    fn layer(self) -> &'static str {
        match self {
            Self::Oci => OCI_LAYER,
            Self::Docker => DOCKER_LAYER,
        }
    }
    fn config(self) -> &'static str {
        match self {
            Self::Oci => OCI_CONFIG,
            Self::Docker => DOCKER_CONFIG,
        }
    }
    /// The manifest media type.
    pub fn manifest(self) -> &'static str {
        match self {
            Self::Oci => OCI_MANIFEST,
            Self::Docker => DOCKER_MANIFEST,
        }
    }
    /// The index media type.
    pub fn index(self) -> &'static str {
        match self {
            Self::Oci => OCI_INDEX,
            Self::Docker => DOCKER_LIST,
        }
    }
}

/// The config's `created`, as builders write it (the OCI image spec's `config.md`: an RFC 3339
/// section 5.6 date-time, optional; docker and buildkit write UTC with nanoseconds): a date in the
/// 60 days after 2025-04-01 taken from the image's own layer, so that each image (and each
/// platform of one image, built apart as real multi-arch images are) has its own, always the same.
fn created(layers: &[&Layer]) -> String {
    let own = layers.last().map_or("", |l| l.digest.as_str());
    let hex = own.trim_start_matches("sha256:");
    let n = u64::from_str_radix(hex.get(..8).unwrap_or("0"), 16).unwrap_or(0);
    let seconds = 1_743_465_600 + n % (60 * 86_400);
    let at = time::OffsetDateTime::from_unix_timestamp(seconds as i64).expect("a 2025 date");
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        n % 1_000_000_000
    )
}

fn descriptor(media: &str, digest: &str, size: usize) -> Value {
    json!({"mediaType": media, "digest": digest, "size": size})
}

/// Adds one platform's config and manifest to `plan`; returns the manifest's descriptor (with
/// platform) and what the tests need to know about it.
pub fn platform_manifest(
    plan: &mut Plan,
    style: Style,
    arch: &str,
    variant: Option<&str>,
    layers: &[&Layer],
) -> (Value, ArchImage) {
    let diff_ids: Vec<&str> = layers.iter().map(|l| l.diff_id.as_str()).collect();
    let mut config = json!({
        "architecture": arch, "os": "linux",
        "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
        "created": created(layers),
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    });
    if let Some(variant) = variant {
        config["variant"] = json!(variant);
    }
    let config = serde_json::to_vec(&config).unwrap();
    let config_digest = sha256(&config);
    let mut layer_descs = Vec::new();
    for layer in layers {
        plan.blobs.insert(layer.digest.clone(), layer.gz.clone());
        layer_descs.push(descriptor(style.layer(), &layer.digest, layer.gz.len()));
    }
    let manifest = json!({
        "schemaVersion": 2, "mediaType": style.manifest(),
        "config": descriptor(style.config(), &config_digest, config.len()),
        "layers": layer_descs,
    });
    plan.blobs.insert(config_digest.clone(), config);
    let bytes = serde_json::to_vec_pretty(&manifest).unwrap();
    let digest = sha256(&bytes);
    let mut desc = descriptor(style.manifest(), &digest, bytes.len());
    let mut platform = json!({"architecture": arch, "os": "linux"});
    if let Some(variant) = variant {
        platform["variant"] = json!(variant);
    }
    desc["platform"] = platform;
    plan.manifests
        .push((digest.clone(), style.manifest().into(), bytes));
    let image = ArchImage {
        manifest: digest,
        config: config_digest,
        layers: layers.iter().map(|l| l.digest.clone()).collect(),
        diff_ids: layers.iter().map(|l| l.diff_id.clone()).collect(),
    };
    (desc, image)
}

/// A buildx-style attestation manifest for `of`, listed as `unknown/unknown`.
fn attestation(plan: &mut Plan, of: &Value) -> Value {
    let statement = br#"{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://spdx.dev/Document"}"#;
    let config = br#"{"architecture":"unknown","os":"unknown","config":{},"rootfs":{"type":"layers","diff_ids":["sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"]}}"#;
    plan.blobs.insert(sha256(statement), statement.to_vec());
    plan.blobs.insert(sha256(config), config.to_vec());
    let manifest = json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": descriptor(OCI_CONFIG, &sha256(config), config.len()),
        "layers": [descriptor("application/vnd.in-toto+json", &sha256(statement), statement.len())],
    });
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let digest = sha256(&bytes);
    let mut desc = descriptor(OCI_MANIFEST, &digest, bytes.len());
    desc["platform"] = json!({"architecture": "unknown", "os": "unknown"});
    desc["annotations"] = json!({
        "vnd.docker.reference.type": "attestation-manifest",
        "vnd.docker.reference.digest": of["digest"],
    });
    plan.manifests.push((digest, OCI_MANIFEST.into(), bytes));
    desc
}

/// Adds an index of `entries` to `plan` under `tag` (or its own digest); returns its digest.
pub fn index(plan: &mut Plan, style: Style, entries: Vec<Value>, tag: Option<&str>) -> String {
    let bytes = serde_json::to_vec_pretty(&json!({
        "schemaVersion": 2, "mediaType": style.index(), "manifests": entries,
    }))
    .unwrap();
    let digest = sha256(&bytes);
    let object = tag.map_or(digest.clone(), str::to_owned);
    plan.manifests.push((object, style.index().into(), bytes));
    digest
}

mod corpus;
pub use corpus::corpus;
