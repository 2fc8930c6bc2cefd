//! The synthetic images, stored in a blob cache the way a pull would leave them.

use std::collections::BTreeMap;
use std::io::Write;

use cks_iso::cache::Cache;
use cks_iso::image::{Arch, Descriptor, Digest, MediaType, Platform, Reference};
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::json;
use tempfile::TempDir;

const OCI_LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
const DOCKER_LAYER: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";
const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";

/// An image of the world: how it is referenced, what that resolves to, and what it is built for.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The reference as a user writes it.
    pub text: String,
    /// Normalised.
    pub reference: Reference,
    /// The digest of the index or manifest the reference resolves to.
    pub top: Digest,
    /// Per architecture it is published for: the manifest's digest and the layers' uncompressed
    /// digests.
    pub per_arch: BTreeMap<Arch, (Digest, Vec<Digest>)>,
}

/// A cache holding every fixture's blobs.
pub struct World {
    pub dir: TempDir,
    pub cache: Cache,
    pub images: Vec<Fixture>,
}

impl World {
    /// The fixture whose reference text is `text`.
    pub fn image(&self, text: &str) -> &Fixture {
        self.images.iter().find(|f| f.text == text).unwrap()
    }
}

/// Whether an image is written with OCI or Docker media types.
#[derive(Clone, Copy, PartialEq)]
enum Style {
    Oci,
    Docker,
}

struct Layer {
    desc: Descriptor,
    diff_id: Digest,
}

/// A deterministic gzip tar holding `files`.
fn layer(cache: &Cache, style: Style, files: &[(&str, String)]) -> Layer {
    let mut tar = tar::Builder::new(Vec::new());
    for (path, content) in files {
        let mut header = tar::Header::new_ustar();
        header.set_path(path).unwrap();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        tar.append(&header, content.as_bytes()).unwrap();
    }
    let plain = tar.into_inner().unwrap();
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&plain).unwrap();
    let blob = gz.finish().unwrap();
    let media = if style == Style::Oci {
        OCI_LAYER
    } else {
        DOCKER_LAYER
    };
    let digest = cache.put_bytes(&blob).unwrap();
    Layer {
        desc: Descriptor::new(media, digest, blob.len() as u64),
        diff_id: Digest::of(&plain),
    }
}

fn platform(arch: Arch, variant: Option<&str>) -> Platform {
    Platform {
        architecture: arch.as_str().into(),
        os: "linux".into(),
        variant: variant.map(Into::into),
    }
}

fn stored(cache: &Cache, media: impl std::fmt::Display, bytes: &[u8]) -> Descriptor {
    Descriptor::new(media, cache.put_bytes(bytes).unwrap(), bytes.len() as u64)
}

/// Stores a config and manifest for one platform; returns the manifest's descriptor.
fn manifest(cache: &Cache, style: Style, p: &Platform, layers: &[&Layer]) -> Descriptor {
    let diff_ids: Vec<String> = layers.iter().map(|l| l.diff_id.to_string()).collect();
    let mut config = json!({
        "architecture": p.architecture, "os": p.os,
        "config": {"Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    });
    if let Some(variant) = &p.variant {
        config["variant"] = json!(variant);
    }
    let (config_type, manifest_type) = match style {
        Style::Oci => (OCI_CONFIG, MediaType::OciManifest),
        Style::Docker => (DOCKER_CONFIG, MediaType::DockerManifest),
    };
    let config = stored(cache, config_type, &serde_json::to_vec(&config).unwrap());
    let manifest = json!({
        "schemaVersion": 2, "mediaType": manifest_type.as_str(),
        "config": config,
        "layers": layers.iter().map(|l| &l.desc).collect::<Vec<_>>(),
    });
    let mut desc = stored(
        cache,
        manifest_type,
        &serde_json::to_vec_pretty(&manifest).unwrap(),
    );
    desc.platform = Some(p.clone());
    desc
}

/// A buildx-style attestation manifest for `of`, listed as `unknown/unknown`.
fn attestation(cache: &Cache, of: &Descriptor) -> Descriptor {
    let statement = br#"{"_type":"https://in-toto.io/Statement/v0.1"}"#;
    let layer = stored(cache, "application/vnd.in-toto+json", statement);
    let config =
        br#"{"architecture":"unknown","os":"unknown","rootfs":{"type":"layers","diff_ids":[]}}"#;
    let config = stored(cache, OCI_CONFIG, config);
    let bytes = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": MediaType::OciManifest.as_str(),
        "config": config, "layers": [layer],
    }))
    .unwrap();
    let mut desc = stored(cache, MediaType::OciManifest, &bytes);
    desc.platform = Some(Platform {
        architecture: "unknown".into(),
        os: "unknown".into(),
        variant: None,
    });
    desc.annotations = BTreeMap::from([
        (
            "vnd.docker.reference.type".into(),
            "attestation-manifest".into(),
        ),
        ("vnd.docker.reference.digest".into(), of.digest.to_string()),
    ]);
    desc
}

fn index(cache: &Cache, style: Style, entries: &[Descriptor]) -> Digest {
    let media = match style {
        Style::Oci => MediaType::OciIndex,
        Style::Docker => MediaType::DockerList,
    };
    let bytes = serde_json::to_vec_pretty(&json!({
        "schemaVersion": 2, "mediaType": media.as_str(), "manifests": entries,
    }))
    .unwrap();
    cache.put_bytes(&bytes).unwrap()
}

/// One multi-arch image: per arch a base layer shared with other images, plus its own layer.
struct Spec {
    text: &'static str,
    style: Style,
    arm64_variant: Option<&'static str>,
    attestations: bool,
}

const SPECS: [Spec; 3] = [
    Spec {
        text: "registry.k8s.io/kube-apiserver:v1.33.1",
        style: Style::Oci,
        arm64_variant: None,
        attestations: true,
    },
    Spec {
        text: "busybox:1.36",
        style: Style::Docker,
        arm64_variant: Some("v8"),
        attestations: false,
    },
    Spec {
        text: "registry.k8s.io/pause:3.10",
        style: Style::Oci,
        arm64_variant: Some("v8"),
        attestations: true,
    },
];

/// Builds the world: the three multi-arch images above, the pause index pinned by `tag@digest`,
/// and a single-platform Docker v2 image for amd64 only.
pub fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path().join("cache"));
    let mut bases = BTreeMap::new();
    for arch in [Arch::Amd64, Arch::Arm64] {
        for style in [Style::Oci, Style::Docker] {
            let release = format!("ID=cks-test\nARCH={arch}\n");
            let base = layer(&cache, style, &[("etc/os-release", release)]);
            bases.insert((arch, style == Style::Oci), base);
        }
    }
    let mut images = Vec::new();
    for spec in SPECS {
        let mut entries = Vec::new();
        let mut per_arch = BTreeMap::new();
        for arch in [Arch::Amd64, Arch::Arm64] {
            let base = &bases[&(arch, spec.style == Style::Oci)];
            let file = format!("usr/share/{arch}/image");
            let own = layer(&cache, spec.style, &[(&file, spec.text.to_owned())]);
            let variant = spec.arm64_variant.filter(|_| arch == Arch::Arm64);
            let desc = manifest(&cache, spec.style, &platform(arch, variant), &[base, &own]);
            let diff_ids = vec![base.diff_id.clone(), own.diff_id.clone()];
            per_arch.insert(arch, (desc.digest.clone(), diff_ids));
            let att = spec.attestations.then(|| attestation(&cache, &desc));
            entries.push(desc);
            entries.extend(att);
        }
        let top = index(&cache, spec.style, &entries);
        images.push(Fixture {
            text: spec.text.to_owned(),
            reference: Reference::parse(spec.text).unwrap(),
            top,
            per_arch,
        });
    }
    let pause = images[2].clone();
    let pinned = format!("{}@{}", pause.text, pause.top);
    images.push(Fixture {
        reference: Reference::parse(&pinned).unwrap(),
        text: pinned,
        ..pause
    });
    let base = &bases[&(Arch::Amd64, false)];
    let own = layer(&cache, Style::Docker, &[("opt/tool", "tool".into())]);
    let desc = manifest(
        &cache,
        Style::Docker,
        &platform(Arch::Amd64, None),
        &[base, &own],
    );
    let text = "quay.io/example/amd64-only:1.0";
    let diff_ids = vec![base.diff_id.clone(), own.diff_id];
    images.push(Fixture {
        text: text.into(),
        reference: Reference::parse(text).unwrap(),
        top: desc.digest.clone(),
        per_arch: BTreeMap::from([(Arch::Amd64, (desc.digest, diff_ids))]),
    });
    World { dir, cache, images }
}
