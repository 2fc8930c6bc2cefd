//! The fixed corpus of images ([`corpus`]) the registry tests pull: the specs and how each is
//! generated. Apart from the image generator and the distribution API client in `mod.rs`, which
//! the world's own image list also uses.

use std::collections::BTreeMap;

use super::{
    Corpus, DOCKER_MANIFEST, Fixture, Layer, Style, attestation, index, layer, noise,
    platform_manifest,
};

struct Spec {
    name: &'static str,
    tag: Option<&'static str>,
    style: Style,
    arm64_variant: Option<&'static str>,
    attestations: bool,
}

const SPECS: [Spec; 4] = [
    Spec {
        name: "registry.k8s.io/kube-apiserver",
        tag: Some("v1.33.1"),
        style: Style::Oci,
        arm64_variant: None,
        attestations: true,
    },
    Spec {
        name: "docker.io/library/busybox",
        tag: Some("1.36"),
        style: Style::Docker,
        arm64_variant: Some("v8"),
        attestations: false,
    },
    Spec {
        name: "registry.k8s.io/pause",
        tag: Some("3.10"),
        style: Style::Oci,
        arm64_variant: Some("v8"),
        attestations: true,
    },
    Spec {
        name: "registry.k8s.io/coredns/coredns",
        tag: None,
        style: Style::Docker,
        arm64_variant: None,
        attestations: false,
    },
];

/// The base layer of each architecture and manifest style.
type Bases = BTreeMap<(&'static str, Style), Layer>;

/// One base layer per architecture and style, under every image of that kind.
fn corpus_bases() -> Bases {
    let mut bases = BTreeMap::new();
    for arch in ["amd64", "arm64"] {
        for (i, style) in [Style::Oci, Style::Docker].into_iter().enumerate() {
            let release = format!("ID=cks-testworld\nARCH={arch}\n").into_bytes();
            let lib = noise(7 + i as u64 + (arch == "arm64") as u64 * 10, 24 * 1024);
            let base = layer(&[("etc/os-release", release), ("lib/libbase.so", lib)]);
            bases.insert((arch, style), base);
        }
    }
    bases
}

/// The amd64-only images: a Docker v2 image, and an OCI index that lists amd64 and an
/// attestation only (arm64 must be refused by name).
fn amd64_only(corpus: &mut Corpus, bases: &Bases) {
    let name = "quay.io/example/amd64-only";
    let plan = corpus.repos.entry(name.to_owned()).or_default();
    let base = &bases[&("amd64", Style::Docker)];
    let own = layer(&[("opt/tool", noise(99, 4096))]);
    let (desc, image) = platform_manifest(plan, Style::Docker, "amd64", None, &[base, &own]);
    let (_, _, bytes) = plan.manifests.last().unwrap().clone();
    plan.manifests
        .push(("1.0".into(), DOCKER_MANIFEST.into(), bytes));
    corpus.fixtures.push(Fixture {
        name: name.into(),
        tag: Some("1.0".into()),
        pinned: false,
        top: desc["digest"].as_str().unwrap().to_owned(),
        per_arch: BTreeMap::from([("amd64".to_owned(), image)]),
        platforms: vec!["linux/amd64".into()],
    });
    let name = "ghcr.io/example/amd64-index";
    let plan = corpus.repos.entry(name.to_owned()).or_default();
    let base = &bases[&("amd64", Style::Oci)];
    let own = layer(&[("opt/indexed", noise(98, 4096))]);
    let (desc, image) = platform_manifest(plan, Style::Oci, "amd64", None, &[base, &own]);
    let att = attestation(plan, &desc);
    let top = index(plan, Style::Oci, vec![desc, att], Some("2.0"));
    corpus.fixtures.push(Fixture {
        name: name.into(),
        tag: Some("2.0".into()),
        pinned: false,
        top,
        per_arch: BTreeMap::from([("amd64".to_owned(), image)]),
        platforms: vec!["linux/amd64".into()],
    });
}

/// The corpus described in the module doc: four multi-arch images (one only by digest), the
/// pause index also as `tag@digest`, an amd64-only Docker v2 image and an amd64-only OCI index.
pub fn corpus() -> Corpus {
    let mut corpus = Corpus::default();
    let bases = corpus_bases();
    for (n, spec) in SPECS.iter().enumerate() {
        let plan = corpus.repos.entry(spec.name.to_owned()).or_default();
        let mut entries = Vec::new();
        let mut per_arch = BTreeMap::new();
        let mut platforms = Vec::new();
        for arch in ["amd64", "arm64"] {
            let base = &bases[&(arch, spec.style)];
            let own = layer(&[
                (
                    &format!("usr/bin/{}", spec.name.rsplit('/').next().unwrap()),
                    noise(100 + n as u64, 8 * 1024),
                ),
                ("etc/image", format!("{} {arch}\n", spec.name).into_bytes()),
            ]);
            let variant = spec.arm64_variant.filter(|_| arch == "arm64");
            let (desc, image) = platform_manifest(plan, spec.style, arch, variant, &[base, &own]);
            platforms.push(match variant {
                Some(v) => format!("linux/{arch}/{v}"),
                None => format!("linux/{arch}"),
            });
            let att = spec.attestations.then(|| attestation(plan, &desc));
            entries.push(desc);
            entries.extend(att);
            per_arch.insert(arch.to_owned(), image);
        }
        let top = index(plan, spec.style, entries, spec.tag);
        corpus.fixtures.push(Fixture {
            name: spec.name.into(),
            tag: spec.tag.map(Into::into),
            pinned: spec.tag.is_none(),
            top,
            per_arch,
            platforms,
        });
    }
    let pause = corpus.fixtures[2].clone();
    corpus.fixtures.push(Fixture {
        pinned: true,
        ..pause
    });
    amd64_only(&mut corpus, &bases);
    corpus
}
