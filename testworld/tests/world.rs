//! The whole world judged by real tools: `skopeo inspect` reads every sampled image for amd64
//! and arm64 through the registry the configuration names, the configuration parses and maps
//! each upstream registry, the CNI manifest's digest pin is the real digest, and the images meant
//! to lack arm64 do. No cks-iso involved.
//!
//! A missing tool fails with a message naming `make deps`: never a silent skip.

use std::net::TcpStream;
use std::process::Command;

use cks_iso_testworld::http;
use cks_iso_testworld::upstream::NETWORK_PATH;
use cks_iso_testworld::world::{Image, Options, World};
use serde_json::Value;

fn require(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{tool} is not installed; run `make deps` to install the test tools"
    );
}

/// What `skopeo inspect` said on stderr when it refused.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `skopeo inspect` of `host/repo[:tag|@digest]` in the world's registry for `arch`.
fn inspect(world: &World, reference: &str, arch: &str, raw: bool) -> Result<Value, Refused> {
    let mut cmd = Command::new("skopeo");
    cmd.args(["inspect", "--tls-verify=false", "--override-os", "linux"])
        .args(["--override-arch", arch]);
    if raw {
        cmd.arg("--raw");
    }
    let out = cmd
        .arg(format!("docker://{}/{reference}", world.registry_host()))
        .output()
        .expect("run skopeo");
    match out.status.success() {
        true => Ok(serde_json::from_slice(&out.stdout).expect("skopeo prints JSON")),
        false => Err(Refused(String::from_utf8_lossy(&out.stderr).into_owned())),
    }
}

/// Every manifest media type: distribution answers 404 for a type the client does not accept.
const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
    application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.list.v2+json, \
    application/vnd.docker.distribution.manifest.v2+json";

#[test]
fn a_build_finds_every_image_for_both_arches() {
    require("skopeo");
    let world = World::start(Options::default());
    assert_eq!(world.autoscaler_version(), Some("1.33.3"));

    every_image_is_in_the_registry(&world);
    let pinned = sample_images_have_both_arches(&world);
    every_shape_is_served(&world);
    the_cni_manifest_pins_the_real_digest(&world, pinned);
    the_old_ccm_is_amd64_only(&world);
    the_configuration_maps_every_registry(&world);
}

/// Every listed image is in the registry, by its digest.
fn every_image_is_in_the_registry(world: &World) {
    for image in world.images() {
        let reply = http::request(
            &world.registry_host(),
            "HEAD",
            &format!("/v2/{}/manifests/{}", image.repository, image.digest),
            &[("Accept", ACCEPT)],
            &[],
        )
        .expect("registry answers");
        assert_eq!(
            reply.status, 200,
            "{} is not in the registry",
            image.reference
        );
    }
}

/// A sample of images, one pinned by digest, each with both arches; the pinned one.
fn sample_images_have_both_arches(world: &World) -> &Image {
    let sample = [
        "registry.k8s.io/kube-apiserver:v1.33.1",
        "registry.k8s.io/pause:3.10",
        "registry.k8s.io/etcd:3.5.21-0",
        "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.3",
        "docker.io/apache/cloudstack-kubernetes-provider:v1.2.0",
        "ghcr.io/cloudstack/cloudstack-csi-driver:3.0.0",
        "registry.k8s.io/sig-storage/livenessprobe:v2.12.0",
        "quay.io/tigera/kube-controllers:v3.29.1",
        "docker.io/kubernetesui/dashboard:v2.7.0",
        "docker.io/calico/node:v3.29.1",
        // What a build from a Headlamp version pins to, and what the release manifest names.
        "ghcr.io/headlamp-k8s/headlamp:v0.40.1",
        "ghcr.io/headlamp-k8s/headlamp:latest",
    ];
    let pinned = world.image("docker.io/calico/node:v3.29.1");
    assert!(
        pinned.pinned,
        "calico/node is pinned by digest in the manifest"
    );
    let by_digest = format!("docker.io/calico/node@{}", pinned.digest);
    for reference in sample.iter().copied().chain([by_digest.as_str()]) {
        let image = match reference == by_digest {
            true => pinned,
            false => world.image(reference),
        };
        assert_eq!(image.arches, ["amd64", "arm64"], "{reference}");
        for arch in ["amd64", "arm64"] {
            let seen = inspect(world, reference, arch, false)
                .unwrap_or_else(|e| panic!("skopeo inspect {reference} for {arch}: {e}"));
            assert_eq!(seen["Architecture"], arch, "{reference}");
            assert_eq!(seen["Os"], "linux", "{reference}");
            assert_eq!(seen["Digest"], image.digest.as_str(), "{reference}");
        }
    }
    pinned
}

/// Shapes: OCI indexes with attestations, Docker lists, arm64 v8.
fn every_shape_is_served(world: &World) {
    let shapes: Vec<&str> = world.images().iter().map(|i| i.shape.as_str()).collect();
    for want in [
        "OCI index",
        "Docker manifest list",
        "arm64 v8",
        "attestations",
    ] {
        assert!(
            shapes.iter().any(|s| s.contains(want)),
            "no image is {want}"
        );
    }
    let raw = inspect(
        world,
        "registry.k8s.io/kube-apiserver:v1.33.1",
        "amd64",
        true,
    )
    .unwrap();
    let platforms: Vec<String> = raw["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}/{}", m["platform"]["os"], m["platform"]["architecture"]))
        .collect();
    assert!(
        platforms.iter().any(|p| p.contains("unknown")),
        "{platforms:?}"
    );
}

/// The CNI manifest the stand-in serves pins the real digest.
fn the_cni_manifest_pins_the_real_digest(world: &World, pinned: &Image) {
    let upstream = world.upstream().url();
    let addr = upstream.trim_start_matches("http://");
    let reply = http::request(
        addr,
        "GET",
        &format!("/raw.githubusercontent.com/{NETWORK_PATH}"),
        &[],
        &[],
    )
    .unwrap();
    let text = String::from_utf8(reply.body).unwrap();
    assert!(
        text.contains(&format!("calico/node:v3.29.1@{}", pinned.digest)),
        "{text}"
    );
    assert!(
        world
            .network_url()
            .starts_with("https://raw.githubusercontent.com/")
    );
}

/// The amd64-only CCM v1.1.0: a single Docker manifest, no arm64 to be had.
fn the_old_ccm_is_amd64_only(world: &World) {
    let old = "docker.io/apache/cloudstack-kubernetes-provider:v1.1.0";
    assert_eq!(world.image(old).arches, ["amd64"]);
    let raw = inspect(world, old, "arm64", true).unwrap();
    assert_eq!(
        raw["mediaType"],
        "application/vnd.docker.distribution.manifest.v2+json"
    );
    let seen = inspect(world, old, "arm64", false).unwrap();
    assert_eq!(seen["Architecture"], "amd64");
}

/// The configuration parses and maps every upstream registry to the world's registry.
fn the_configuration_maps_every_registry(world: &World) {
    let config: Value = serde_saphyr::from_str(world.config_yaml()).expect("YAML");
    let on_disk = std::fs::read_to_string(world.config_path()).unwrap();
    assert_eq!(on_disk, world.config_yaml());
    for host in ["registry.k8s.io", "docker.io", "quay.io", "ghcr.io"] {
        assert_eq!(
            config["registry-mirrors"][host],
            format!("{}/{host}", world.registry_url()),
            "{host}"
        );
    }
    assert_eq!(config["insecure-registries"][0], world.registry_host());
    assert_eq!(
        config["mirrors"]["https://github.com/kubernetes/autoscaler"],
        world.autoscaler_git_url()
    );
    for from in [
        "https://github.com",
        "https://dl.k8s.io",
        "https://raw.githubusercontent.com",
    ] {
        assert!(
            config["mirrors"][from].is_string(),
            "{from} is not mirrored"
        );
    }
}

#[test]
fn another_release_and_an_image_without_arm64() {
    require("skopeo");
    let world = World::start(Options {
        kubernetes: "1.30.5".into(),
        without_arm64: Some("registry.k8s.io/pause:3.9".into()),
        ..Options::default()
    });
    // kubeadm's list for 1.30.5 from docs/reference/upstream.md §2: coredns v1.11.3, etcd 3.5.15-0,
    // pause 3.9.
    let kubeadm: Vec<&str> = world
        .images()
        .iter()
        .filter(|i| i.source == "kubeadm")
        .map(|i| i.reference.as_str())
        .collect();
    assert_eq!(
        kubeadm,
        [
            "registry.k8s.io/kube-apiserver:v1.30.5",
            "registry.k8s.io/kube-controller-manager:v1.30.5",
            "registry.k8s.io/kube-scheduler:v1.30.5",
            "registry.k8s.io/kube-proxy:v1.30.5",
            "registry.k8s.io/coredns/coredns:v1.11.3",
            "registry.k8s.io/pause:3.9",
            "registry.k8s.io/etcd:3.5.15-0",
        ]
    );
    assert_eq!(world.autoscaler_version(), Some("1.30.3"));
    assert_eq!(
        world
            .image("registry.k8s.io/autoscaling/cluster-autoscaler:v1.30.3")
            .source,
        "autoscaler"
    );
    // Another minor's release, for AUTOSCALER_VERSION.
    let other = world.image("registry.k8s.io/autoscaling/cluster-autoscaler:v1.29.2");
    assert_eq!(other.source, "autoscaler-other");

    let pause = "registry.k8s.io/pause:3.9";
    assert_eq!(world.image(pause).arches, ["amd64"]);
    assert!(inspect(&world, pause, "amd64", false).is_ok());
    let err = inspect(&world, pause, "arm64", false).expect_err("pause has no arm64");
    assert!(err.0.contains("arm64"), "{err}");
    // Everything else still has it.
    let proxy = inspect(&world, "registry.k8s.io/kube-proxy:v1.30.5", "arm64", false).unwrap();
    assert_eq!(proxy["Architecture"], "arm64");

    // Dropping the world stops its servers.
    let (registry, upstream) = (world.registry_host(), world.upstream().url());
    drop(world);
    assert!(TcpStream::connect(&registry).is_err(), "registry still up");
    let upstream = upstream.trim_start_matches("http://").to_owned();
    assert!(TcpStream::connect(&upstream).is_err(), "stand-in still up");
}

#[test]
fn cks_iso_world_runs_a_command_inside_the_world() {
    let out = Command::new(env!("CARGO_BIN_EXE_cks-iso-world"))
        .args(["sh", "-c"])
        .arg(
            "grep -q '^registry-mirrors:' \"$CKS_ISO_CONFIG\" && \
             echo \"$CKS_WORLD_NETWORK\" && echo \"$CKS_WORLD_DASHBOARD\" && exit 7",
        )
        .output()
        .expect("run cks-iso-world");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(7),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "https://raw.githubusercontent.com/projectcalico/calico/v3.29.1/manifests/calico.yaml",
            "https://raw.githubusercontent.com/kubernetes/dashboard/v2.7.0/aio/deploy/recommended.yaml",
        ]
    );
}

/// The command gets a cache of the world's own, whatever `XDG_CACHE_HOME` the caller has (the
/// world's stand-ins carry the real upstream URLs: they must never land in the user's cache),
/// and `CKS_WORLD_FAR_SIDE` keeps the world's trusted root after it stops.
#[test]
fn cks_iso_world_gives_its_command_a_cache_of_its_own_and_keeps_the_root_for_the_far_side() {
    let tmp = tempfile::tempdir().unwrap();
    let (mine, far) = (tmp.path().join("mine"), tmp.path().join("far"));
    let out = Command::new(env!("CARGO_BIN_EXE_cks-iso-world"))
        .args(["sh", "-c"])
        .arg("echo \"$XDG_CACHE_HOME\" && cmp \"$CKS_WORLD_TRUSTED_ROOT\" \"$FAR/trusted_root.json\"")
        .env("XDG_CACHE_HOME", &mine)
        .env("CKS_WORLD_FAR_SIDE", &far)
        .env("FAR", &far)
        .output()
        .expect("run cks-iso-world");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let cache = std::path::Path::new(stdout.trim());
    assert!(
        cache.is_absolute() && !cache.starts_with(tmp.path()),
        "the command's XDG_CACHE_HOME: {stdout}"
    );
    assert!(
        !cache.exists(),
        "the world's cache outlived it: {}",
        cache.display()
    );
    assert!(!mine.exists(), "the caller's cache was used");
    let root: Value =
        serde_json::from_slice(&std::fs::read(far.join("trusted_root.json")).unwrap()).unwrap();
    assert!(root["tlogs"].is_array(), "{root}");
    assert!(
        stderr.contains("wrote the trusted root for the far side"),
        "{stderr}"
    );
}
