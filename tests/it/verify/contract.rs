//! `cks-iso verify` passes a contract-abiding ISO and names the problem in ISOs broken the ways
//! real builds break: xorriso/genisoimage defaults (volume ID, staging-dir modes), stray files in
//! `docker/`, a corrupt layer, a stale `versions.txt`, an unbundled image, a joined separator, a
//! second CNI tarball, an `Always` pull policy (written, or Kubernetes' default for an untagged or
//! `:latest` image that says none), images for the wrong platform, and SBOMs that are
//! missing or disagree with the ISO. The tree each case starts from is in `tree.rs`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use super::tree::{Case, IMAGES, case, edit_json, good_tree, tree_of, tree_with, verify, write};
use crate::support::world::world;
use crate::support::*;
use cks_iso::image::Arch;

#[test]
fn a_contract_abiding_iso_passes_for_each_arch() {
    let world = world();
    for (arch, name) in [
        (Arch::Amd64, "setup-v1.33.1-x86_64.iso"),
        (Arch::Arm64, "setup-v1.33.1-aarch64.iso"),
    ] {
        let case = case(&world, arch);
        let iso = case.iso(name);
        let (code, out, err) = verify(&iso);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.starts_with(&format!("ok {}", p(&iso))), "{out}");
        assert!(
            out.contains("3 files and 3 image archives checked"),
            "{out}"
        );
    }
}

/// etcd's release tarball for `arch`, in its upstream shape (a top directory
/// `etcd-v3.5.21-linux-<arch>/` holding etcd, etcdctl and etcdutl), and its upstream URL.
fn etcd_release(arch: &str) -> (Vec<u8>, String) {
    let top = format!("etcd-v3.5.21-linux-{arch}");
    let entries: Vec<(String, Vec<u8>, u32)> = ["etcd", "etcdctl", "etcdutl"]
        .iter()
        .map(|b| {
            let name = format!("{top}/{b}");
            (
                name.clone(),
                cks_iso_testworld::upstream::elf(arch, 7, &name, 4096),
                0o755,
            )
        })
        .collect();
    let url = format!("https://github.com/etcd-io/etcd/releases/download/v3.5.21/{top}.tar.gz");
    (cks_iso_testworld::upstream::tgz(&entries), url)
}

#[test]
fn an_arm64_iso_s_etcd_must_be_arm64_under_the_name_etcd_nodes_read() {
    let world = world();
    let verify_tree = |name: &str, path: &str, binaries: &str| {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        let (bytes, url) = etcd_release(binaries);
        tree_with(&world, &src, Arch::Arm64, &[(path.into(), bytes, url)]);
        let iso = dir.path().join(name);
        build_iso(&src, &iso);
        verify(&iso)
    };
    // What build writes: the arm64 release under etcd/etcd-linux-amd64.tar.gz.
    let (code, out, err) = verify_tree("good-aarch64.iso", "etcd/etcd-linux-amd64.tar.gz", "arm64");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("4 files and 3 image archives checked"),
        "{out}"
    );
    // The amd64 release in an arm64 ISO: the name is right, the executables are not.
    let (code, out, _) = verify_tree(
        "amd64-etcd-aarch64.iso",
        "etcd/etcd-linux-amd64.tar.gz",
        "amd64",
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "etcd/etcd-linux-amd64.tar.gz: this linux/arm64 ISO's etcd nodes cannot run it: \
             member \"etcd-v3.5.21-linux-amd64/etcd\" is not for that architecture: it is an \
             ELF executable for x86-64 (amd64)"
        ),
        "{out}"
    );
    // The arm64 release under its own name, which no etcd node reads.
    let (code, out, _) = verify_tree(
        "own-name-aarch64.iso",
        "etcd/etcd-linux-arm64.tar.gz",
        "arm64",
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "etcd/etcd-linux-arm64.tar.gz: etcd nodes (CloudStack 4.21 and later) extract only \
             etcd/etcd-linux-amd64.tar.gz, whatever their architecture"
        ),
        "{out}"
    );
}

#[test]
fn xorriso_defaults_break_the_volume_id_and_modes() {
    require("xorriso");
    let world = world();
    let case = case(&world, Arch::Amd64);
    fs::set_permissions(&case.src, fs::Permissions::from_mode(0o700)).unwrap();
    let iso = case.dir.path().join("setup-x86_64.iso");
    // What upstream's script effectively did: xorriso's default volume ID, modes from the staging dir.
    let out = Command::new("xorriso")
        .args(["-as", "mkisofs", "-R", "-J", "-o", p(&iso), p(&case.src)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, out, _) = verify(&iso);
    assert_eq!(code, 1);
    assert!(
        out.contains("volume ID is \"ISOIMAGE\"; nodes look for \"CDROM\""),
        "{out}"
    );
    assert!(
        out.contains(": mode 0700;"),
        "the 0700 staging root is named:\n{out}"
    );
}

#[test]
fn a_stray_file_in_docker_is_named() {
    let world = world();
    let case = case(&world, Arch::Amd64);
    write(&case.src, "docker/README.md", "not an image");
    case.fails_naming(
        "stray.iso",
        &["docker/README.md: docker/ must hold image archives"],
    );
}

#[test]
fn a_corrupt_layer_is_named_with_both_digests() {
    let world = world();
    let case = case(&world, Arch::Amd64);
    let tar = case.src.join("docker/busybox:1.36.tar");
    let mut bytes = fs::read(&tar).unwrap();
    // Flip a byte inside the first blob's data (after its 512-byte header, past the dir entries).
    let first_blob = (0..bytes.len())
        .step_by(512)
        .find(|&o| bytes[o..].starts_with(b"blobs/sha256/") && bytes[o + 13] != 0)
        .unwrap();
    bytes[first_blob + 512 + 10] ^= 0xff;
    fs::write(&tar, bytes).unwrap();
    case.fails_naming(
        "corrupt.iso",
        &[
            "docker/busybox:1.36.tar: blobs/sha256/",
            " does not match: expected sha256:",
            ", got sha256:",
        ],
    );
}

#[test]
fn a_stale_versions_txt_is_named() {
    let world = world();
    let case = case(&world, Arch::Amd64);
    write(&case.src, "k8s/kubelet", elf_like(b"kubelet-2", 4096));
    case.fails_naming(
        "stale.iso",
        &["k8s/kubelet: sha256 is", "versions.txt says"],
    );
}

#[test]
fn an_unbundled_image_breaks_air_gap_completeness() {
    let world = world();
    let case = case(&world, Arch::Amd64);
    write(
        &case.src,
        "headlamp.yaml",
        "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - image: ghcr.io/headlamp-k8s/headlamp:v0.30.0\n",
    );
    case.fails_naming(
        "airgap.iso",
        &["headlamp.yaml: references ghcr.io/headlamp-k8s/headlamp:v0.30.0, which is not bundled"],
    );
}

#[test]
fn an_archive_nothing_names_is_unaccounted_for_and_named_with_its_image() {
    let world = world();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    // Listed in versions.txt and the SBOMs as a build would list it, but asked for by no one:
    // neither kubeadm, nor a root manifest, nor the lock's extra images name it.
    let tool = "quay.io/example/amd64-only:1.0";
    tree_of(
        &world,
        &src,
        Arch::Amd64,
        &[],
        &[&IMAGES[..], &[tool]].concat(),
    );
    let case = Case { dir, src };
    case.fails_naming(
        "unaccounted.iso",
        &[&format!(
            "docker/amd64-only:1.0.tar: holds {tool}, which neither kubeadm, a root *.yaml nor \
             the lock's extra images name"
        )],
    );
    let (_, out, _) = verify(&case.dir.path().join("unaccounted.iso"));
    assert_eq!(
        out.lines().count(),
        1,
        "only the stray image is at fault:\n{out}"
    );
    assert!(out.contains(&format!("--image {tool}")), "{out}");
    // Named by a root manifest, the same archive is accounted for.
    write(
        &case.src,
        "tools.yaml",
        format!("kind: Pod\nspec:\n  containers:\n  - image: {tool}\n").as_str(),
    );
    let iso = case.iso("named.iso");
    let (code, out, err) = verify(&iso);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn pull_policies_globs_and_joined_separators_are_named() {
    let world = world();
    let case = case(&world, Arch::Amd64);
    write(
        &case.src,
        "network.yaml",
        "kind: A\nmetadata:\n  name: a---\nspec:\n  imagePullPolicy: Always\n",
    );
    write(&case.src, "cni/cni-plugins-arm64.tgz", noise(3, 10));
    case.fails_naming(
        "mixed.iso",
        &[
            "network.yaml: line 3 joins two documents",
            "network.yaml: line 5: imagePullPolicy: Always",
            "cni/cni-plugins-*64.tgz matches 2 files",
        ],
    );
}

#[test]
fn containers_pulled_always_by_default_are_named_with_their_line() {
    let world = world();
    let case = case(&world, Arch::Amd64);
    // As Headlamp publishes it: `:latest`, no imagePullPolicy; and an untagged init container.
    write(
        &case.src,
        "headlamp.yaml",
        "kind: Deployment\nspec:\n  template:\n    spec:\n      initContainers:\n      - name: init\n        image: busybox\n      containers:\n        - name: headlamp\n          image: ghcr.io/headlamp-k8s/headlamp:latest\n          args:\n            - \"-in-cluster\"\n        - image: busybox:1.36\n",
    );
    case.fails_naming(
        "always.iso",
        &[
            "headlamp.yaml: line 7: busybox has no imagePullPolicy and an untagged or :latest image, so Kubernetes pulls it Always",
            "headlamp.yaml: line 10: ghcr.io/headlamp-k8s/headlamp:latest has no imagePullPolicy",
        ],
    );
    let (_, out, _) = verify(&case.dir.path().join("always.iso"));
    assert!(
        !out.contains("line 13:"),
        "a tagged image without a policy is IfNotPresent by default:\n{out}"
    );
}

#[test]
fn images_of_another_platform_are_named() {
    let world = world();
    let case = case(&world, Arch::Arm64);
    let amd = tempfile::tempdir().unwrap();
    good_tree(&world, amd.path(), Arch::Amd64);
    fs::copy(
        amd.path().join("docker/pause:3.10.tar"),
        case.src.join("docker/pause:3.10.tar"),
    )
    .unwrap();
    case.fails_naming("arch.iso", &["docker/pause:3.10.tar:", "linux/arm64"]);
}

#[test]
fn sboms_that_disagree_with_the_iso_are_named() {
    let world = world();
    let case = case(&world, Arch::Amd64);
    edit_json(&case.src, "sbom.cdx.json", |bom| {
        let components = bom["components"].as_array_mut().unwrap();
        for c in components.iter_mut() {
            if c["bom-ref"] == "k8s/kubeadm" {
                c["hashes"][0]["content"] = "0".repeat(64).into();
            }
        }
        components.retain(|c| c["bom-ref"] != "docker/pause:3.10.tar");
    });
    edit_json(&case.src, "sbom.spdx.json", |doc| {
        let packages = doc["packages"].as_array_mut().unwrap();
        let mut ghost = packages[1].clone();
        ghost["SPDXID"] = "SPDXRef-ghost".into();
        ghost["packageFileName"] = "docker/ghost:1.0.tar".into();
        packages.push(ghost);
        for p in packages.iter_mut() {
            if p["packageFileName"] == "docker/busybox:1.36.tar" {
                p["checksums"][0]["checksumValue"] = "1".repeat(64).into();
            }
        }
    });
    case.fails_naming(
        "sbom.iso",
        &[
            &format!(
                "sbom.cdx.json: k8s/kubeadm: sha256 is {} here",
                "0".repeat(64)
            ),
            "sbom.cdx.json: docker/pause:3.10.tar is in the ISO but not listed",
            "sbom.spdx.json: lists docker/ghost:1.0.tar, which is not in the ISO",
            &format!(
                "sbom.spdx.json: docker/busybox:1.36.tar: sha256 is {} here",
                "1".repeat(64)
            ),
        ],
    );
}

#[test]
fn an_iso_without_its_sboms_is_named() {
    let world = world();
    let case = case(&world, Arch::Arm64);
    fs::remove_file(case.src.join("sbom.cdx.json")).unwrap();
    write(
        &case.src,
        "sbom.spdx.json",
        "{\"spdxVersion\": \"SPDX-2.2\"}",
    );
    case.fails_naming(
        "nosbom.iso",
        &["sbom.cdx.json: missing", "sbom.spdx.json: not a valid SBOM"],
    );
}

/// Issue 44, H1: nodes take any image whose name contains `pause` for their sandbox
/// (`grep pause | sort | tail -n 1`). An ISO otherwise sound, holding an add-on image named so
/// (named by a root manifest, listed everywhere as a build lists an add-on), fails naming it and
/// the image nodes would run; an ISO from elsewhere holding it fails counting both.
#[test]
fn an_image_named_like_pause_beside_kubeadm_s_is_named_as_the_sandbox_nodes_would_run() {
    let world = world();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let evil = "zz.example.org/evil/pause-sandbox:1";
    let renamed = format!("{evil}=busybox:1.36");
    tree_of(
        &world,
        &src,
        Arch::Amd64,
        &[],
        &[&IMAGES[..], &[renamed.as_str()]].concat(),
    );
    write(
        &src,
        "sandbox.yaml",
        format!("kind: Pod\nspec:\n  containers:\n  - image: {evil}\n").as_str(),
    );
    let case = Case { dir, src };
    let words = [
        "docker/pause-sandbox:1.tar: holds zz.example.org/evil/pause-sandbox:1, a second pause image",
        "ctr -n k8s.io images ls -q | grep pause | sort | tail -n 1",
        "nodes would run zz.example.org/evil/pause-sandbox:1",
        "bundle only kubeadm's registry.k8s.io/pause:3.10",
    ];
    case.fails_naming("sandbox.iso", &words);
    let (_, out, _) = verify(&case.dir.path().join("sandbox.iso"));
    assert_eq!(
        out.lines().count(),
        1,
        "only the second pause is at fault:\n{out}"
    );

    // Without versions.txt, the SBOMs and a lock: nothing says kubeadm's tag, so both are counted.
    for own in ["versions.txt", "sbom.cdx.json", "sbom.spdx.json"] {
        fs::remove_file(case.src.join(own)).unwrap();
    }
    let iso = case.iso("foreign-x86_64.iso");
    let (code, out, err) = verify(&iso);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(
            "docker: 2 pause images (zz.example.org/evil/pause-sandbox:1, registry.k8s.io/pause:3.10): \
             CloudStack's node script"
        ),
        "{out}"
    );
    assert!(
        out.contains("nodes would run zz.example.org/evil/pause-sandbox:1; bundle exactly one"),
        "{out}"
    );
}
