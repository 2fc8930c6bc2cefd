//! Putting images into the world's registry: the layers (shared bases, an own layer per image),
//! the index/manifest shapes, attestations, signatures, and the optional shaping proxies in front
//! of the servers.

use super::*;

/// Base layers shared across images, per (arch, style).
#[derive(Default)]
pub(super) struct Bases(BTreeMap<(String, Style), crate::images::Layer>);

impl Bases {
    fn get(&mut self, arch: &str, style: Style) -> crate::images::Layer {
        self.0
            .entry((arch.to_owned(), style))
            .or_insert_with(|| {
                let seed = 500 + u64::from(arch == "arm64") * 2 + u64::from(style == Style::Docker);
                layer(&[
                    (
                        "etc/os-release",
                        format!("ID=cks-world\nARCH={arch}\n").into_bytes(),
                    ),
                    ("lib/libworld.so", noise(seed, 16 * 1024)),
                ])
            })
            .clone()
    }
}

pub(super) fn seed_of(text: &str) -> u64 {
    let digest = sha256(text.as_bytes());
    u64::from_str_radix(&digest["sha256:".len()..][..16], 16).unwrap_or(1)
}

/// KiB of noise in each image's own layer: 4, or `CKS_WORLD_OWN_LAYER_KIB` for full-size images
/// in benchmarks (the layer is incompressible, so its blob is about that size).
pub(super) fn own_layer_kib() -> usize {
    std::env::var("CKS_WORLD_OWN_LAYER_KIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
}

pub(super) fn own_layer(repository: &str, tag: Option<&str>, arch: &str) -> crate::images::Layer {
    let name = repository.rsplit('/').next().unwrap_or_default();
    let what = format!("{repository}:{} {arch}\n", tag.unwrap_or_default());
    layer(&[
        (
            &format!("usr/bin/{name}"),
            noise(seed_of(&what), own_layer_kib() * 1024),
        ),
        ("etc/image", what.into_bytes()),
    ])
}

/// A multi-arch image; the `n`th image's shape cycles through OCI index with attestations, Docker
/// list with arm64 `v8`, OCI index with `v8` and attestations, plain Docker list. `no_arm64`
/// makes an OCI index of amd64 and an attestation only.
pub(super) fn multi(
    plan: &mut Plan,
    bases: &mut Bases,
    repository: &str,
    tag: Option<&str>,
    n: usize,
    no_arm64: bool,
) -> (String, Vec<String>, String) {
    let (style, variant, attest) = match (no_arm64, n % 4) {
        (true, _) => (Style::Oci, None, true),
        (_, 0) => (Style::Oci, None, true),
        (_, 1) => (Style::Docker, Some("v8"), false),
        (_, 2) => (Style::Oci, Some("v8"), true),
        _ => (Style::Docker, None, false),
    };
    let arches: &[&str] = if no_arm64 {
        &["amd64"]
    } else {
        &["amd64", "arm64"]
    };
    let mut entries = Vec::new();
    for arch in arches {
        let base = bases.get(arch, style);
        let own = own_layer(repository, tag, arch);
        let v = variant.filter(|_| *arch == "arm64");
        let (desc, _) = platform_manifest(plan, style, arch, v, &[&base, &own]);
        let att = attest.then(|| attestation(plan, &desc));
        entries.push(desc);
        entries.extend(att);
    }
    let top = index(plan, style, entries, tag);
    let shape = format!(
        "{}{}{}",
        match style {
            Style::Oci => "OCI index",
            Style::Docker => "Docker manifest list",
        },
        if variant.is_some() && !no_arm64 {
            ", arm64 v8"
        } else {
            ""
        },
        if attest { ", attestations" } else { "" }
    );
    (top, arches.iter().map(|a| (*a).to_owned()).collect(), shape)
}

/// An amd64-only single-platform Docker v2 manifest.
pub(super) fn single(
    plan: &mut Plan,
    bases: &mut Bases,
    repository: &str,
    tag: Option<&str>,
) -> (String, Vec<String>, String) {
    let base = bases.get("amd64", Style::Docker);
    let own = own_layer(repository, tag, "amd64");
    let (desc, _) = platform_manifest(plan, Style::Docker, "amd64", None, &[&base, &own]);
    let (_, _, bytes) = plan.manifests.last().expect("a manifest").clone();
    if let Some(tag) = tag {
        plan.manifests
            .push((tag.to_owned(), DOCKER_MANIFEST.into(), bytes));
    }
    let digest = desc["digest"].as_str().unwrap_or_default().to_owned();
    (
        digest,
        vec!["amd64".into()],
        "Docker manifest, amd64 only".into(),
    )
}

/// A buildx-style attestation manifest for `of`, listed as `unknown/unknown`.
pub(super) fn attestation(plan: &mut Plan, of: &Value) -> Value {
    let statement = br#"{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://spdx.dev/Document"}"#;
    let config = br#"{"architecture":"unknown","os":"unknown","config":{},"rootfs":{"type":"layers","diff_ids":["sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"]}}"#;
    plan.blobs.insert(sha256(statement), statement.to_vec());
    plan.blobs.insert(sha256(config), config.to_vec());
    let descriptor = |media: &str, digest: String, size: usize| json!({"mediaType": media, "digest": digest, "size": size});
    let manifest = json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": descriptor("application/vnd.oci.image.config.v1+json", sha256(config), config.len()),
        "layers": [descriptor("application/vnd.in-toto+json", sha256(statement), statement.len())],
    });
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let digest = sha256(&bytes);
    let mut desc = descriptor(OCI_MANIFEST, digest.clone(), bytes.len());
    desc["platform"] = json!({"architecture": "unknown", "os": "unknown"});
    desc["annotations"] = json!({
        "vnd.docker.reference.type": "attestation-manifest",
        "vnd.docker.reference.digest": of["digest"],
    });
    plan.manifests.push((digest, OCI_MANIFEST.into(), bytes));
    desc
}

/// The platform manifests `top` lists per architecture (attestations left out), or `top` itself
/// for amd64 when it is a single-platform manifest.
pub(super) fn platform_manifests(plan: &Plan, top: &str) -> BTreeMap<String, String> {
    let bytes = plan
        .manifests
        .iter()
        .find(|(_, _, b)| sha256(b) == top)
        .map(|(_, _, b)| b.clone())
        .expect("the top manifest was pushed");
    let value: Value = serde_json::from_slice(&bytes).expect("manifest JSON");
    match value["manifests"].as_array() {
        Some(entries) => entries
            .iter()
            .filter(|e| e["platform"]["os"] == "linux")
            .map(|e| {
                (
                    e["platform"]["architecture"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    e["digest"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect(),
        None => BTreeMap::from([("amd64".to_owned(), top.to_owned())]),
    }
}

/// Where the configuration sends cks-iso: the servers themselves, or shaping proxies in front.
pub(super) struct Shaped {
    /// The upstream stand-in's base URL.
    pub(super) upstream: String,
    /// The registry's `host:port`.
    pub(super) registry: String,
    /// Rekor's base URL.
    pub(super) rekor: String,
    pub(super) proxies: Vec<ShapingProxy>,
}

impl Shaped {
    pub(super) fn start(
        shape: Option<Shape>,
        upstream: &UpstreamServer,
        registry: &str,
        rekor: &RekorServer,
    ) -> Self {
        let Some(shape) = shape else {
            return Self {
                upstream: upstream.url(),
                registry: registry.to_owned(),
                rekor: rekor.url(),
                proxies: Vec::new(),
            };
        };
        let host = |url: String| url.trim_start_matches("http://").to_owned();
        let proxies = vec![
            ShapingProxy::start(&host(upstream.url()), shape),
            ShapingProxy::start(&host(upstream.cdn_url()), shape),
            ShapingProxy::start(registry, shape),
            ShapingProxy::start(&host(rekor.url()), shape),
        ];
        // The origin's redirects to the CDN go through the CDN's proxy too.
        upstream.redirect_cdn_to(&format!("http://{}", proxies[1].host()));
        Self {
            upstream: format!("http://{}", proxies[0].host()),
            registry: proxies[2].host(),
            rekor: format!("http://{}", proxies[3].host()),
            proxies,
        }
    }
}

pub(super) fn push_signature(
    addr: &str,
    repository: &str,
    digest: &str,
    layers: &[SignedLayer],
) -> String {
    let (manifest, blobs) = signature_manifest(layers);
    for (blob, bytes) in &blobs {
        push_blob(addr, repository, blob, bytes)
            .unwrap_or_else(|e| panic!("push {repository} {blob}: {e}"));
    }
    push_manifest(
        addr,
        repository,
        &signature_tag(digest),
        OCI_MANIFEST,
        &manifest,
    )
    .unwrap_or_else(|e| panic!("push {repository} signature of {digest}: {e}"));
    sha256(&manifest)
}

pub(super) fn push(addr: &str, repository: &str, plan: &Plan) {
    for (digest, bytes) in &plan.blobs {
        push_blob(addr, repository, digest, bytes)
            .unwrap_or_else(|e| panic!("push {repository} {digest}: {e}"));
    }
    for (object, media, bytes) in &plan.manifests {
        push_manifest(addr, repository, object, media, bytes)
            .unwrap_or_else(|e| panic!("push {repository}:{object}: {e}"));
    }
}
