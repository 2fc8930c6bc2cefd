//! `cks-iso build` end to end against the whole local world (git, the upstream stand-in and a
//! docker-registry, through the mirror configuration), for amd64 and arm64, judged by real readers
//! and by replaying what CKS nodes do with the ISO (`node_checks`: the globs, the units, the
//! autoscaler template, `ctr import` of every archive, and air-gap completeness; the SBOMs by the
//! formats' own validators and against `versions.txt`). Also: upstream's positional form, an
//! unprivileged user, Headlamp, a release from before registry.k8s.io (k8s.gcr.io images), and a
//! damaged cached blob that must fail the run and leave nothing behind.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use super::common::{assert_verify_accepts, build, edited_config, extract, flags, work_dirs};
use super::node_checks::{
    check_sboms, replay_containerd, replay_node_side, tampered_sboms_fail_verify,
};
use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// `out`, `cache` and `tmp` under `dir`, open to all (the build runs as nobody), the cache
/// nobody's own: a cache others can write is refused.
fn dirs_for_nobody(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (out, cache, tmp) = (dir.join("out"), dir.join("cache"), dir.join("tmp"));
    for d in [&out, &cache, &tmp] {
        fs::create_dir_all(d).unwrap();
        fs::set_permissions(d, fs::Permissions::from_mode(0o777)).unwrap();
    }
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o755)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&cache, Some(65534), Some(65534)).unwrap();
    }
    (out, cache, tmp)
}

/// Both arches built as nobody, with HOME in a temp dir: no root, no daemon.
fn build_both_arches_as_nobody(world: &World, out: &Path, cache: &Path, tmp: &Path) -> Output {
    let mut args = flags(world, p(out), p(cache));
    args.extend(["--arch", "amd64", "--arch", "arm64"]);
    let mut cmd = build(world, tmp, &args);
    cmd.env("HOME", p(tmp));
    ok(as_nobody(cmd).output().unwrap())
}

/// A default build in the world that mirrors upstream warns about nothing: upstream's joined
/// `---` in the CSI manifest, which cks-iso splits, is one information line, said once.
fn assert_no_warning_and_one_repair_line(log: &str) {
    assert!(!log.contains("warning"), "a default build warns:\n{log}");
    let repaired: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("split the `---`"))
        .collect();
    assert_eq!(repaired.len(), 1, "one line per repair:\n{log}");
    assert!(repaired[0].starts_with("manifest.yaml: "), "{log}");
}

/// `arch`'s ISO (`uname` in its name) is summarised, readable by isoinfo with its `.sha256`
/// right, replays on the node side and in containerd, and `verify` accepts it.
fn check_arch_iso(world: &World, dir: &Path, out: &Path, stdout: &str, arch: &str, uname: &str) {
    let k = world.kubernetes().trim_start_matches('v');
    let iso = out.join(format!("setup-v{k}-{uname}.iso"));
    assert!(
        stdout.contains(p(&iso)),
        "summary names {}:\n{stdout}",
        iso.display()
    );
    let (info, _) = tool("isoinfo", ["-d", "-i", p(&iso)]);
    assert!(info.contains("Volume id: CDROM"), "{info}");
    let sums = fs::read_to_string(format!("{}.sha256", p(&iso))).unwrap();
    let (actual, _) = tool("sha256sum", [p(&iso)]);
    assert_eq!(
        sums[..64],
        actual[..64],
        "the .sha256 beside the ISO is right"
    );
    let root = dir.join(format!("x-{arch}"));
    extract(&iso, &root);
    check_sboms(&iso, &root, arch);
    replay_node_side(&root, arch, world);
    replay_containerd(&root, arch);
    let (code, report) = {
        let o = cks_iso().args(["verify", p(&iso)]).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    assert_eq!(code, Some(0), "{report}");
    if arch == "amd64" {
        tampered_sboms_fail_verify(&root, dir, &format!("setup-v{k}-{uname}.iso"));
    }
}

/// Upstream's positional form builds the same ISO as the flags in `out`, byte for byte, and the
/// same SBOMs beside it: the same inputs and epoch, the same bytes.
fn assert_positional_form_builds_the_same(
    world: &World,
    dir: &Path,
    out: &Path,
    cache: &Path,
    tmp: &Path,
) {
    let k = world.kubernetes().trim_start_matches('v');
    let positional = dir.join("positional");
    fs::create_dir_all(&positional).unwrap();
    let crictl = format!("1.{}.0", k.split('.').nth(1).unwrap());
    let name = format!("setup-v{k}");
    // The next build runs as root: the cache becomes root's, as a cache is its user's alone.
    if is_root() {
        run_tool("chown", &["-R", "0:0", p(cache)]);
    }
    let args = [
        p(&positional),
        k,
        "1.6.2",
        &crictl,
        world.network_url(),
        world.dashboard_url(),
        &name,
        "x86_64",
        "--headlamp",
        world.headlamp_url(),
        "--cache-dir",
        p(cache),
    ];
    ok(build(world, tmp, &args).output().unwrap());
    let a = out.join(format!("setup-v{k}-x86_64.iso"));
    let b = positional.join(format!("setup-v{k}-x86_64.iso"));
    assert!(
        crate::support::same_bytes(&a, &b),
        "positional and flag forms differ"
    );
    for suffix in [".cdx.json", ".spdx.json"] {
        let (a, b) = (format!("{}{suffix}", p(&a)), format!("{}{suffix}", p(&b)));
        assert_eq!(
            fs::read(&a).unwrap(),
            fs::read(&b).unwrap(),
            "{a} and {b} differ"
        );
    }
}

#[test]
fn both_arches_build_verify_and_replay_on_the_node_side() {
    let world = World::start(Options::default());
    let dir = open_tempdir();
    let (out, cache, tmp) = dirs_for_nobody(dir.path());
    let built = build_both_arches_as_nobody(&world, &out, &cache, &tmp);
    let stdout = String::from_utf8_lossy(&built.stdout);
    assert_no_warning_and_one_repair_line(&String::from_utf8_lossy(&built.stderr));
    for (arch, uname) in [("amd64", "x86_64"), ("arm64", "aarch64")] {
        check_arch_iso(&world, dir.path(), &out, &stdout, arch, uname);
    }
    assert_eq!(
        names(&tmp)
            .iter()
            .filter(|n| n.starts_with("cks-iso-build"))
            .count(),
        0,
        "work dir removed"
    );
    assert_positional_form_builds_the_same(&world, dir.path(), &out, &cache, &tmp);
}

/// Before 1.25 (and its late patches) kubeadm names its images on k8s.gcr.io. With a mirror for
/// registry.k8s.io only (as most corporate mirrors are set up today), a 1.21 build fetches them
/// from registry.k8s.io's mirror, which serves the same content, and keeps the k8s.gcr.io names;
/// the ISO passes the contract.
#[test]
fn kubernetes_before_1_25_bundles_its_images_from_k8s_gcr_io() {
    let world = World::start(Options {
        kubernetes: "1.21.14".into(),
        ..Options::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (out, cache, tmp) = work_dirs(dir.path());
    let (config, yaml) = edited_config(&world, dir.path(), "no-gcr-mirror.yaml", |l| {
        match l.trim_start().starts_with("k8s.gcr.io:") {
            true => String::new(),
            false => format!("{l}\n"),
        }
    });
    assert!(
        yaml.contains("registry.k8s.io:") && !yaml.contains("k8s.gcr.io"),
        "{yaml}"
    );
    let mut args = flags(&world, p(&out), p(&cache));
    args.extend(["--arch", "arm64"]);
    let mut cmd = build(&world, &tmp, &args);
    cmd.env("CKS_ISO_CONFIG", &config);
    ok(cmd.output().unwrap());
    let iso = out.join("setup-v1.21.14-aarch64.iso");
    let root = dir.path().join("x");
    extract(&iso, &root);
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    for component in [
        "kube-apiserver",
        "kube-proxy",
        "pause",
        "etcd",
        "coredns/coredns",
    ] {
        assert!(
            versions.contains(&format!("image k8s.gcr.io/{component}:")),
            "{component} is not from k8s.gcr.io:\n{versions}"
        );
    }
    assert!(
        !versions.contains("image registry.k8s.io/kube-"),
        "{versions}"
    );
    replay_containerd(&root, "arm64");
    assert_verify_accepts(&iso);
}

/// The layers of `arch`'s images, by the platform manifests the lock names (read from the cache).
fn layers_of(lock: &serde_json::Value, arch: &str, cache: &Path) -> Vec<(String, String)> {
    let mut layers = Vec::new();
    for image in lock["arches"][arch]["images"].as_array().unwrap() {
        let manifest = image["manifest"].as_str().unwrap();
        let hex = manifest.strip_prefix("sha256:").unwrap();
        let text = fs::read(cache.join("blobs/sha256").join(hex)).unwrap();
        let manifest: serde_json::Value = serde_json::from_slice(&text).unwrap();
        for layer in manifest["layers"].as_array().unwrap() {
            let digest = layer["digest"].as_str().unwrap().to_owned();
            layers.push((image["reference"].as_str().unwrap().to_owned(), digest));
        }
    }
    layers
}

/// A layer only the arm64 images of the run's lock hold, and the images holding it (arm64 images
/// may share it).
fn arm64_only_layer(lock_path: &Path, cache: &Path) -> (String, Vec<String>) {
    let lock: serde_json::Value = serde_json::from_slice(&fs::read(lock_path).unwrap()).unwrap();
    let amd64: Vec<String> = layers_of(&lock, "amd64", cache)
        .into_iter()
        .map(|(_, digest)| digest)
        .collect();
    let arm64 = layers_of(&lock, "arm64", cache);
    let (_, digest) = arm64
        .iter()
        .find(|(_, digest)| !amd64.contains(digest))
        .cloned()
        .expect("an arm64 layer no amd64 image has");
    let holders = arm64
        .iter()
        .filter(|(_, d)| *d == digest)
        .map(|(image, _)| image.clone())
        .collect();
    (digest, holders)
}

/// Flips the last byte of the cached blob `digest`.
fn damage_cached_blob(cache: &Path, digest: &str) {
    let blob = cache
        .join("blobs/sha256")
        .join(digest.strip_prefix("sha256:").unwrap());
    let mut bytes = fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&blob, &bytes).unwrap();
}

/// Both ISOs are written at once; when a cached blob only the arm64 ISO holds turns out damaged
/// on disk, the run fails with that blob's mismatch (not with the amd64 writer it stopped), and
/// leaves neither ISO, nor anything beside them.
#[test]
fn a_damaged_blob_of_one_arch_fails_the_run_with_its_own_error_and_removes_both_isos() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (out, cache, tmp) = work_dirs(dir.path());
    let lock_path = dir.path().join("run.lock");
    let mut args = flags(&world, p(&out), p(&cache));
    args.extend(["--arch", "amd64", "--arch", "arm64"]);
    args.extend(["--lock-file", p(&lock_path)]);
    ok(build(&world, &tmp, &args).output().unwrap());
    // The images holding it: the error names the first written.
    let (digest, holders) = arm64_only_layer(&lock_path, &cache);
    damage_cached_blob(&cache, &digest);
    fs::remove_dir_all(&out).unwrap();

    let failed = build(&world, &tmp, &args).output().unwrap();
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    for part in [digest.as_str(), "does not match", "cache verify --fix"] {
        assert!(stderr.contains(part), "{part:?} missing from:\n{stderr}");
    }
    assert!(
        holders.iter().any(|image| stderr.contains(image.as_str())),
        "none of {holders:?} named in:\n{stderr}"
    );
    assert!(
        !stderr.contains("another architecture failed"),
        "the error of the stopped writer was reported:\n{stderr}"
    );
    let left: Vec<_> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left in the output dir: {left:?}");
    assert_eq!(
        fs::read_dir(&tmp).unwrap().count(),
        0,
        "a work dir was left"
    );
}
