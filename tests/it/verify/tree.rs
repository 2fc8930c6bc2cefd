//! A tree that honours the whole ISO contract, with real image archives of the test world's
//! fixtures, `versions.txt` and both SBOMs written as a build writes them, and the ISO authored
//! from it: what the contract suites (`contract.rs`, `foreign_iso.rs`) start from and break one
//! way at a time.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::world::World;
use crate::support::{build_iso, cks_iso, elf_like, noise, p};
use cks_iso::archive;
use cks_iso::image::{Arch, Image};
use cks_iso::sbom::{self, Inventory};
use cks_iso::versions::{FileRecord, ImageRecord, Versions};
use sha2::{Digest as _, Sha256};

pub(crate) const IMAGES: [&str; 3] = [
    "registry.k8s.io/kube-apiserver:v1.33.1",
    "busybox:1.36",
    "registry.k8s.io/pause:3.10",
];

pub(crate) fn sha256(path: &Path) -> String {
    hex::encode(Sha256::digest(fs::read(path).unwrap()))
}

pub(crate) fn write(root: &Path, rel: &str, data: impl AsRef<[u8]>) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, data).unwrap();
}

/// A tree that honours the whole contract, with real image archives for `arch`.
pub(crate) fn good_tree(world: &World, root: &Path, arch: Arch) {
    tree_with(world, root, arch, &[]);
}

/// A downloaded file beyond the three binaries: its ISO path, bytes and upstream URL.
pub(crate) type Extra = (String, Vec<u8>, String);

/// [`good_tree`] with `extra` files listed in `versions.txt` and the SBOMs as a build lists them
/// (an etcd tarball also sets the `etcd` record).
pub(crate) fn tree_with(world: &World, root: &Path, arch: Arch, extra: &[Extra]) {
    tree_of(world, root, arch, extra, &IMAGES);
}

/// [`tree_with`] whose `docker/` holds `images`, each listed as a build lists it; `NAME=FIXTURE`
/// bundles the world's image `FIXTURE` under the name `NAME`.
pub(crate) fn tree_of(world: &World, root: &Path, arch: Arch, extra: &[Extra], images: &[&str]) {
    write_binaries_and_manifests(root, arch);
    let (images, manifests) = write_images(world, root, arch, images);
    let files = write_file_records(root, arch, extra);
    let etcd = extra
        .iter()
        .any(|(path, ..)| path.starts_with("etcd/"))
        .then(|| "v3.5.21".to_owned());
    let versions = Versions {
        kubernetes: "v1.33.1".into(),
        arch: arch.to_string(),
        cni_plugins: "v1.6.2".into(),
        crictl: "v1.33.0".into(),
        etcd,
        autoscaler: "1.33.6".into(),
        ccm: "v1.2.0".into(),
        csi_driver: None,
        cloudstack: None,
        files,
        images,
    };
    write(root, "versions.txt", versions.render());
    // The SBOMs a build writes, from the same records (cks-iso's own writer: verify requires them).
    let inventory = Inventory {
        iso: format!("setup-v1.33.1-{arch}.iso"),
        versions,
        manifests,
        signatures: Default::default(),
        extras: Default::default(),
        epoch: 1_700_000_000,
    };
    write(root, "sbom.cdx.json", sbom::cyclonedx(&inventory, None));
    write(root, "sbom.spdx.json", sbom::spdx(&inventory, None));
}

/// The three binaries (mode 0755), CNI and crictl tarballs, the kubelet units and the five
/// manifests, as a build lays them out.
fn write_binaries_and_manifests(root: &Path, arch: Arch) {
    for bin in ["kubeadm", "kubelet", "kubectl"] {
        write(root, &format!("k8s/{bin}"), elf_like(bin.as_bytes(), 4096));
        fs::set_permissions(
            root.join("k8s").join(bin),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    write(root, &format!("cni/cni-plugins-{arch}.tgz"), noise(1, 999));
    write(
        root,
        &format!("cri-tools/crictl-linux-{arch}.tar.gz"),
        noise(2, 999),
    );
    write(
        root,
        "kubelet.service",
        "[Service]\nExecStart=/opt/bin/kubelet\n",
    );
    write(
        root,
        "10-kubeadm.conf",
        "[Service]\nExecStart=\nExecStart=/opt/bin/kubelet $KUBELET_ARGS\n",
    );
    write(
        root,
        "network.yaml",
        "kind: DaemonSet\nspec:\n  template:\n    spec:\n      containers:\n      - image: busybox:1.36\n        imagePullPolicy: IfNotPresent\n",
    );
    write(
        root,
        "dashboard.yaml",
        "kind: Deployment\nspec:\n  template:\n    spec:\n      initContainers:\n      - image: registry.k8s.io/pause:3.10\n",
    );
    write(
        root,
        "autoscaler.yaml",
        "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - image: registry.k8s.io/kube-apiserver:v1.33.1\n          imagePullPolicy: IfNotPresent\n          command:\n            - --nodes=<min>:<max>:<cluster-id>\n",
    );
    write(
        root,
        "provider.yaml",
        "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - image: registry.k8s.io/kube-apiserver:v1.33.1\n",
    );
}

/// `images` written into `docker/` as real archives of the world's fixtures for `arch`: their
/// `versions.txt` records, and each archive's manifest digest for the SBOMs.
fn write_images(
    world: &World,
    root: &Path,
    arch: Arch,
    images: &[&str],
) -> (Vec<ImageRecord>, BTreeMap<String, String>) {
    fs::create_dir_all(root.join("docker")).unwrap();
    let wanted = images;
    let mut images = Vec::new();
    let mut manifests = BTreeMap::new();
    for text in wanted {
        let (name, source) = text.split_once('=').unwrap_or((text, text));
        let fixture = world.image(source);
        let reference = cks_iso::image::Reference::parse(name).unwrap();
        let image = Image::load(reference.clone(), &fixture.top, arch, &world.cache).unwrap();
        let file = format!("docker/{}.tar", reference.last_component());
        archive::write(&image, &world.cache, &root.join(&file), 0).unwrap();
        manifests.insert(file.clone(), image.manifest.digest.to_string());
        images.push(ImageRecord {
            name: reference.to_string(),
            digest: fixture.top.to_string(),
            archive: file,
        });
    }
    (images, manifests)
}

/// The binaries' records, and `extra` files written and recorded with their upstream URLs.
fn write_file_records(root: &Path, arch: Arch, extra: &[Extra]) -> Vec<FileRecord> {
    let files = ["k8s/kubeadm", "k8s/kubelet", "k8s/kubectl"]
        .map(|p| FileRecord {
            path: p.into(),
            sha256: sha256(&root.join(p)),
            source: format!(
                "https://dl.k8s.io/release/v1.33.1/bin/linux/{arch}/{}",
                &p[4..]
            ),
        })
        .to_vec();
    let mut files = files;
    for (path, bytes, url) in extra {
        write(root, path, bytes);
        files.push(FileRecord {
            path: path.clone(),
            sha256: sha256(&root.join(path)),
            source: url.clone(),
        });
    }
    files
}

/// Edits the JSON document `rel` of the tree in place.
pub(crate) fn edit_json(root: &Path, rel: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = root.join(rel);
    let mut doc: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    edit(&mut doc);
    fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
}

pub(crate) fn verify(iso: &Path) -> (i32, String, String) {
    let out = cks_iso().args(["verify", p(iso)]).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(crate) struct Case {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) src: std::path::PathBuf,
}

pub(crate) fn case(world: &World, arch: Arch) -> Case {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    good_tree(world, &src, arch);
    Case { dir, src }
}

impl Case {
    pub(crate) fn iso(&self, name: &str) -> std::path::PathBuf {
        let iso = self.dir.path().join(name);
        build_iso(&self.src, &iso);
        iso
    }

    /// Builds, verifies, and expects failure naming each of `words`.
    pub(crate) fn fails_naming(&self, name: &str, words: &[&str]) {
        let iso = self.iso(name);
        let (code, out, err) = verify(&iso);
        assert_eq!(code, 1, "{name} should fail verify:\n{out}{err}");
        for word in words {
            assert!(out.contains(word), "{name}: {word:?} not named in:\n{out}");
        }
        assert!(err.contains("contract violation"), "{err}");
        // The closing hint fits the gravest cause: the contract's section, or a damaged image.
        assert!(
            err.contains("hint:")
                && (err.contains("README.md, section \"The ISO contract\"")
                    || err.contains("the image is damaged")),
            "the hint points at a document the user has, or at the damaged image:\n{err}"
        );
    }
}
