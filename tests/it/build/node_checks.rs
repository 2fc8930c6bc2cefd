//! What a CKS node does with a built ISO, replayed on its extracted tree (the globs, the units,
//! the autoscaler template, `ctr import` of every archive, air-gap completeness), and the SBOMs
//! judged by the formats' own validators and against `versions.txt`. Shared by the `build`
//! suites that check whole ISOs.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::containerd::Containerd;
use crate::support::*;
use cks_iso_testworld::world::World;

/// The one file of `dir` named `prefix*suffix`, as the node scripts' globs find it.
fn glob_one(dir: &Path, prefix: &str, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(prefix) && n.ends_with(suffix)
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{prefix}*{suffix} in {} must match exactly one file: {found:?}",
        dir.display()
    );
    found[0].clone()
}

/// Everything a node does with the extracted tree, apart from containerd.
pub fn replay_node_side(root: &Path, arch: &str, world: &World) {
    assert_cni_and_crictl_archives_of(root, arch);
    assert_units_run_opt_bin_kubelet(root);
    assert_autoscaler_template_is_pinned(root, world);
    assert_manifests_pin_their_images(root);
    assert_versions_txt_matches_the_tree(root, arch);
}

/// `tar -xzf cni/cni-plugins-*64.tgz` and `cri-tools/crictl-linux-*64.tar.gz` find `arch`'s.
fn assert_cni_and_crictl_archives_of(root: &Path, arch: &str) {
    for (dir, prefix, suffix) in [
        ("cni", "cni-plugins-", "64.tgz"),
        ("cri-tools", "crictl-linux-", "64.tar.gz"),
    ] {
        let file = glob_one(&root.join(dir), prefix, suffix);
        assert!(file.to_string_lossy().contains(arch), "{}", file.display());
        tool("tar", ["-tzf", p(&file)]);
    }
}

/// The kubelet units run `/opt/bin/kubelet`, never one under `/usr/bin`.
fn assert_units_run_opt_bin_kubelet(root: &Path) {
    for unit in ["kubelet.service", "10-kubeadm.conf"] {
        let text = fs::read_to_string(root.join(unit)).unwrap();
        assert!(
            text.contains("/opt/bin/kubelet") && !text.contains("/usr/bin"),
            "{unit}:\n{text}"
        );
    }
}

/// `autoscaler.yaml` keeps the placeholders CloudStack fills, holds the example's objects and
/// the two extra ones, and names the world's autoscaler release.
fn assert_autoscaler_template_is_pinned(root: &Path, world: &World) {
    let autoscaler = fs::read_to_string(root.join("autoscaler.yaml")).unwrap();
    for placeholder in ["<min>", "<max>", "<cluster-id>"] {
        assert!(
            autoscaler.contains(placeholder),
            "autoscaler.yaml lost {placeholder}"
        );
    }
    let docs: Vec<serde_json::Value> = serde_saphyr::from_str_multiple(&autoscaler).unwrap();
    let docs: Vec<&serde_json::Value> = docs.iter().filter(|d| !d.is_null()).collect();
    assert_eq!(
        docs.len(),
        8,
        "the six objects of the example plus the two extra ones"
    );
    let extra: Vec<_> = docs
        .iter()
        .filter(|d| d["metadata"]["name"] == "cluster-autoscaler-extra")
        .collect();
    assert_eq!(extra.len(), 2);
    let pinned = format!(
        "registry.k8s.io/autoscaling/cluster-autoscaler:v{}",
        world.autoscaler_version().unwrap()
    );
    assert!(
        autoscaler.contains(&format!("image: {pinned}")),
        "autoscaler.yaml must name {pinned}"
    );
}

/// Headlamp and the provider name their pinned images, and every `imagePullPolicy:` of every
/// manifest is `IfNotPresent` (an air-gapped node cannot pull).
fn assert_manifests_pin_their_images(root: &Path) {
    let headlamp = fs::read_to_string(root.join("headlamp.yaml")).unwrap();
    assert!(
        headlamp.contains("image: ghcr.io/headlamp-k8s/headlamp:v0.30.1"),
        "{headlamp}"
    );
    let provider = fs::read_to_string(root.join("provider.yaml")).unwrap();
    assert!(
        provider.contains("image: apache/cloudstack-kubernetes-provider:v1.2.0"),
        "{provider}"
    );
    for path in yaml_files(root) {
        let text = fs::read_to_string(&path).unwrap();
        for line in text.lines().filter(|l| l.contains("imagePullPolicy:")) {
            assert!(
                line.trim_end()
                    .trim_end_matches('"')
                    .ends_with("IfNotPresent"),
                "{}: {line}",
                path.display()
            );
        }
    }
}

/// The `.yaml` files at the top of `root`.
fn yaml_files(root: &Path) -> Vec<PathBuf> {
    fs::read_dir(root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect()
}

/// `versions.txt` names `arch`, has one line per archive, and each file's sha256 is the file's.
fn assert_versions_txt_matches_the_tree(root: &Path, arch: &str) {
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    assert!(versions.contains(&format!("\narch {arch}\n")), "{versions}");
    let images = versions.lines().filter(|l| l.starts_with("image ")).count();
    let archives = fs::read_dir(root.join("docker")).unwrap().count();
    assert_eq!(images, archives, "one versions.txt line per archive");
    for line in versions.lines().filter(|l| l.starts_with("file ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (out, _) = tool("sha256sum", [p(&root.join(f[1]))]);
        assert_eq!(format!("sha256:{}", &out[..64]), f[2], "{line}");
    }
}

/// The value of the CycloneDX property `name` of component `c`.
fn property(c: &serde_json::Value, name: &str) -> Option<String> {
    c["properties"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)?["value"]
        .as_str()
        .map(str::to_owned)
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// The four SBOMs of `iso` (extracted into `root`) pass the formats' own validators and list what
/// `versions.txt` lists: every image as a `pkg:oci` component with its registry digest and a
/// platform manifest that is in its archive, every file with its sha256; the copies beside the
/// ISO also carry the ISO's sha256.
pub fn check_sboms(iso: &Path, root: &Path, arch: &str) {
    let beside = |suffix: &str| PathBuf::from(format!("{}{suffix}", p(iso)));
    let (cdx_beside, spdx_beside) = (beside(".cdx.json"), beside(".spdx.json"));
    let (cdx_inside, spdx_inside) = (root.join("sbom.cdx.json"), root.join("sbom.spdx.json"));
    validate_sboms(&[&cdx_inside, &cdx_beside], &[&spdx_inside, &spdx_beside]);
    let (iso_sha, _) = tool("sha256sum", [p(iso)]);
    let iso_sha = &iso_sha[..64];
    let (cdx, spdx) = (read_json(&cdx_inside), read_json(&spdx_inside));
    assert_iso_hashes(&cdx, &spdx, None, arch);
    check_sbom_records(&cdx, &spdx, root, arch);
    let (cdx, spdx) = (read_json(&cdx_beside), read_json(&spdx_beside));
    let named = format!("{} and {}", cdx_beside.display(), spdx_beside.display());
    assert_iso_hashes(&cdx, &spdx, Some((iso_sha, &named)), arch);
    check_sbom_records(&cdx, &spdx, root, arch);
}

/// The SBOMs' ISO component is `arch`'s and carries `beside`'s sha256 (the copies beside the ISO)
/// or none (the copies inside it, which cannot hash the ISO that holds them).
fn assert_iso_hashes(
    cdx: &serde_json::Value,
    spdx: &serde_json::Value,
    beside: Option<(&str, &str)>,
    arch: &str,
) {
    let main = &cdx["metadata"]["component"];
    assert_eq!(property(main, "cks-iso:arch").as_deref(), Some(arch));
    let iso_hash = main["hashes"][0]["content"].as_str();
    let spdx_iso = &spdx["packages"][0];
    assert_eq!(spdx_iso["SPDXID"], "SPDXRef-ISO");
    let spdx_iso_hash = spdx_iso["checksums"][0]["checksumValue"].as_str();
    match beside {
        Some((iso_sha, named)) => {
            assert_eq!(iso_hash, Some(iso_sha), "{named} name the ISO's sha256");
            assert_eq!(spdx_iso_hash, Some(iso_sha), "{named}");
        }
        None => assert_eq!((iso_hash, spdx_iso_hash), (None, None)),
    }
}

/// One CycloneDX component and one SPDX package per `versions.txt` record (and the ISO's
/// package), each record's hash in both.
fn check_sbom_records(cdx: &serde_json::Value, spdx: &serde_json::Value, root: &Path, arch: &str) {
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    let components = cdx["components"].as_array().unwrap();
    let packages = spdx["packages"].as_array().unwrap();
    let lines: Vec<&str> = versions
        .lines()
        .filter(|l| l.starts_with("file ") || l.starts_with("image "))
        .collect();
    assert_eq!(
        components.len(),
        lines.len(),
        "one component per versions.txt record"
    );
    assert_eq!(
        packages.len(),
        lines.len() + 1,
        "one package per record, and the ISO"
    );
    for line in lines {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (path, hash) = match f[0] {
            "image" => (f[3], None),
            _ => (f[1], Some(f[2].trim_start_matches("sha256:"))),
        };
        let c = components
            .iter()
            .find(|c| property(c, "cks-iso:path").as_deref() == Some(path))
            .unwrap_or_else(|| panic!("no component for {line}"));
        let package = packages
            .iter()
            .find(|p| p["packageFileName"] == path)
            .unwrap_or_else(|| panic!("no SPDX package for {line}"));
        let c_hash = c["hashes"][0]["content"].as_str().unwrap();
        assert_eq!(package["checksums"][0]["checksumValue"], c_hash, "{line}");
        match hash {
            Some(hash) => assert_eq!(c_hash, hash, "{line}"),
            None => check_image_record(line, c, package, &root.join(path), arch),
        }
    }
}

/// An image's component: a container with the record's index digest, a `pkg:oci` purl naming the
/// platform manifest (also the SPDX package's locator), which is in the archive.
fn check_image_record(
    line: &str,
    c: &serde_json::Value,
    package: &serde_json::Value,
    archive: &Path,
    arch: &str,
) {
    let f: Vec<&str> = line.split_whitespace().collect();
    let c_hash = c["hashes"][0]["content"].as_str().unwrap();
    assert_eq!(c["type"], "container", "{line}");
    assert_eq!(
        property(c, "cks-iso:index-digest").as_deref(),
        Some(f[2]),
        "{line}"
    );
    let purl = c["purl"].as_str().unwrap();
    assert!(
        purl.starts_with("pkg:oci/") && purl.contains(&format!("@sha256%3A{c_hash}?arch={arch}&")),
        "{line}: {purl}"
    );
    assert_eq!(package["externalRefs"][0]["referenceLocator"], purl);
    // The platform manifest the SBOM names is in the archive.
    let (listing, _) = tool("bsdtar", ["-tf", p(archive)]);
    assert!(
        listing
            .lines()
            .any(|l| l == format!("blobs/sha256/{c_hash}")),
        "{} holds no blob {c_hash}:\n{listing}",
        f[3]
    );
}

/// Rewrites the JSON document `rel` under `root` with `change`.
fn edit_json(root: &Path, rel: &str, change: impl Fn(&mut serde_json::Value)) {
    let path = root.join(rel);
    let mut doc = read_json(&path);
    change(&mut doc);
    fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
}

/// Tampers with the extracted ISO's SBOMs, authors it again with `cks-iso iso`, and expects
/// `verify` to name what no longer agrees.
pub fn tampered_sboms_fail_verify(root: &Path, dir: &Path, iso_name: &str) {
    edit_json(root, "sbom.cdx.json", |bom| {
        for c in bom["components"].as_array_mut().unwrap() {
            if c["bom-ref"] == "k8s/kubelet" {
                c["hashes"][0]["content"] = "0".repeat(64).into();
            }
        }
    });
    edit_json(root, "sbom.spdx.json", |doc| {
        doc["packages"]
            .as_array_mut()
            .unwrap()
            .retain(|p| p["packageFileName"] != "docker/pause:3.10.tar");
    });
    let tampered = dir.join("tampered");
    fs::create_dir_all(&tampered).unwrap();
    let iso = tampered.join(iso_name);
    build_iso(root, &iso);
    let out = cks_iso().args(["verify", p(&iso)]).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    for named in [
        format!(
            "sbom.cdx.json: k8s/kubelet: sha256 is {} here",
            "0".repeat(64)
        ),
        "sbom.spdx.json: docker/pause:3.10.tar is in the ISO but not listed".to_owned(),
    ] {
        assert!(report.contains(&named), "{named:?} not in:\n{report}");
    }
}

/// `ctr -n k8s.io images import` of every archive, as the node scripts do, keeping the registry
/// digests; then every image named in a root manifest is in containerd (air-gap completeness).
pub fn replay_containerd(root: &Path, arch: &str) {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    for entry in fs::read_dir(root.join("docker")).unwrap() {
        let tar = entry.unwrap().path();
        containerd.ctr(&[
            "images",
            "import",
            "--platform",
            &format!("linux/{arch}"),
            "--snapshotter",
            "native",
            p(&tar),
        ]);
    }
    let listing = String::from_utf8_lossy(&containerd.ctr(&["images", "ls"]).stdout).into_owned();
    assert_imported_with_their_digests(root, &listing);
    assert_every_manifest_image_imported(root, &listing);
}

/// Every image of `versions.txt` is in containerd's `listing`, with its registry digest.
fn assert_imported_with_their_digests(root: &Path, listing: &str) {
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    for line in versions.lines().filter(|l| l.starts_with("image ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let row = listing
            .lines()
            .find(|l| l.split_whitespace().next() == Some(f[1]))
            .unwrap_or_else(|| panic!("{} not imported:\n{listing}", f[1]));
        assert!(
            row.contains(f[2]),
            "{} imported with another digest than {}:\n{row}",
            f[1],
            f[2]
        );
    }
}

/// Every image a root manifest names is in containerd's `listing` (air-gap completeness).
fn assert_every_manifest_image_imported(root: &Path, listing: &str) {
    for path in yaml_files(root) {
        for image in cks_iso_testworld::world::manifest_images(&fs::read_to_string(&path).unwrap())
        {
            let name = cks_iso_testworld::world::normalise(&image);
            assert!(
                listing
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(name.as_str())),
                "{} names {name}, which containerd does not have after the imports",
                path.display()
            );
        }
    }
}
