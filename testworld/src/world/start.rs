//! The steps of [`World::start`](super::World::start), in the order it takes them: the snapshot,
//! git's autoscaler tags, the image list read from the snapshot, the images published and signed,
//! the manifests' digest pins made real, the binaries signed, and the configuration a build reads.
//! Apart from `mod.rs` (the world's options and what a test asks of it) so that each step reads
//! on its own.

use std::collections::BTreeMap;

use super::names::*;
use super::publish::*;
use super::{CCM_AMD64_ONLY, CCM_REPOSITORY, Image, Options, REGISTRIES, binary_signer};
use super::{default_snapshot, signed_binary};
use crate::git::{GitServer, Mode, Repo, Tag};
use crate::images::Plan;
use crate::rekor::RekorServer;
use crate::sigstore::{SignOptions, Sigstore};
use crate::upstream::{
    DASHBOARD_PATH, File, HEADLAMP_PATH, HEADLAMP_PROMOTED_RELEASE_PATH, HEADLAMP_PROMOTED_VERSION,
    HEADLAMP_RELEASE_PATH, HEADLAMP_VERSION, KubeRelease, NETWORK_PATH, Snapshot, UpstreamServer,
};

/// An image to publish (normalised reference) and what it is for (`kubeadm`, `ccm`, …).
pub(super) type Wanted = (String, &'static str);

/// The snapshot the world serves: the options' own, else the default one for `kubernetes` (with
/// the options' CCM tag), plus every release of `also_kubernetes`.
pub(super) fn snapshot_for(options: &Options, kubernetes: &str) -> Snapshot {
    let mut snapshot = options.snapshot.clone().unwrap_or_else(|| {
        let snapshot = default_snapshot(kubernetes);
        match ["v1.2.0", CCM_AMD64_ONLY].contains(&options.ccm_tag.as_str()) {
            true => snapshot,
            false => snapshot.ccm(&options.ccm_tag),
        }
    });
    for version in &options.also_kubernetes {
        let release = KubeRelease::known(version)
            .unwrap_or_else(|| panic!("no kubeadm extras known for {version}"));
        let minor = minor_of(&release.version).expect("a Kubernetes version x.y.z");
        let etcd = release
            .etcd
            .split('-')
            .next()
            .unwrap_or_default()
            .to_owned();
        snapshot = snapshot
            .kubernetes(release)
            .crictl(&format!("1.{minor}.0"))
            .etcd(&etcd);
    }
    snapshot
}

/// git serving the autoscaler's repository: a tag per autoscaler example in the snapshot, plus
/// upstream-like noise.
pub(super) struct AutoscalerGit {
    /// Every autoscaler release the snapshot holds an example of.
    pub(super) versions: Vec<String>,
    /// The release a build for the world's Kubernetes picks.
    pub(super) newest: Option<String>,
    pub(super) repo: Repo,
    pub(super) git: GitServer,
}

impl AutoscalerGit {
    pub(super) fn start(files: &BTreeMap<String, File>, kubernetes: &str) -> Self {
        let versions: Vec<String> = files
            .keys()
            .filter_map(|p| {
                p.strip_prefix(
                    "raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-",
                )
                .and_then(|rest| rest.split('/').next())
                .map(str::to_owned)
            })
            .collect();
        let tags = autoscaler_tags(&versions);
        let tag_refs: Vec<Tag<'_>> = tags
            .iter()
            .map(|(t, annotated)| match annotated {
                true => Tag::Annotated(t),
                false => Tag::Light(t),
            })
            .collect();
        let repo = Repo::with_tags("kubernetes/autoscaler.git", &tag_refs);
        let git = GitServer::start(repo.project_root(), Mode::Backend);
        let tag_names: Vec<&str> = tags.iter().map(|(t, _)| t.as_str()).collect();
        let newest = newest_autoscaler(&tag_names, kubernetes);
        Self {
            versions,
            newest,
            repo,
            git,
        }
    }

    /// The repository's URL.
    pub(super) fn git_url(&self) -> String {
        self.git.url(&self.repo)
    }
}

/// The image list, from the snapshot: kubeadm's, the autoscalers', the CCM's, every image of
/// the manifests (returned too, each with what it is for), Headlamp's, and last the other
/// releases' kubeadm images (so the images before them keep their bytes).
pub(super) fn wanted(
    files: &BTreeMap<String, File>,
    kubernetes: &str,
    autoscaler: &AutoscalerGit,
    options: &Options,
) -> (Vec<Wanted>, Vec<Wanted>) {
    let mut wanted = kubeadm_images(files, kubernetes);
    if let Some(v) = &autoscaler.newest {
        wanted.push((
            format!("registry.k8s.io/autoscaling/cluster-autoscaler:v{v}"),
            "autoscaler",
        ));
    }
    // The other releases, for a build given AUTOSCALER_VERSION of another release or minor.
    for v in (autoscaler.versions.iter()).filter(|v| Some(*v) != autoscaler.newest.as_ref()) {
        wanted.push((
            format!("registry.k8s.io/autoscaling/cluster-autoscaler:v{v}"),
            "autoscaler-other",
        ));
    }
    wanted.push((format!("{CCM_REPOSITORY}:{}", options.ccm_tag), "ccm"));
    wanted.push((format!("{CCM_REPOSITORY}:{CCM_AMD64_ONLY}"), "ccm"));
    let mut manifests: Vec<Wanted> = Vec::new();
    for path in files.keys() {
        let Some(source) = manifest_role(path) else {
            continue;
        };
        manifests.push((path.clone(), source));
        let text = String::from_utf8_lossy(&files[path].body);
        for image in manifest_images(&text) {
            wanted.push((normalise(&image), source));
        }
    }
    // The tag a build from a Headlamp version pins the release manifest's `:latest` to.
    wanted.push((
        format!("ghcr.io/headlamp-k8s/headlamp:v{HEADLAMP_VERSION}"),
        "headlamp",
    ));
    // A promoted release's image is taken from registry.k8s.io (signed below, as there).
    wanted.push((
        format!("registry.k8s.io/headlamp/headlamp:v{HEADLAMP_PROMOTED_VERSION}"),
        "headlamp",
    ));
    for version in &options.also_kubernetes {
        wanted.extend(kubeadm_images(files, version.trim_start_matches('v')));
    }
    (wanted, manifests)
}

/// What the manifest at `path` is for, when it is one whose images a build pulls.
fn manifest_role(path: &str) -> Option<&'static str> {
    let raw = |p: &str| path == format!("raw.githubusercontent.com/{p}");
    if path.starts_with("raw.githubusercontent.com/apache/cloudstack-kubernetes-provider/")
        && path.ends_with("/deployment.yaml")
    {
        Some("ccm")
    } else if path.starts_with("github.com/cloudstack/cloudstack-csi-driver/")
        && path.ends_with("/manifest.yaml")
    {
        Some("csi")
    } else if raw(NETWORK_PATH) {
        Some("network")
    } else if raw(DASHBOARD_PATH) {
        Some("dashboard")
    } else if raw(HEADLAMP_PATH)
        || raw(HEADLAMP_RELEASE_PATH)
        || raw(HEADLAMP_PROMOTED_RELEASE_PATH)
    {
        Some("headlamp")
    } else {
        None
    }
}

/// Publishes every wanted image to the registry at `addr`, each repository:tag once; with the
/// digests written in manifests mapped to the real ones (`renamed`).
pub(super) fn publish_all(
    addr: &str,
    wanted: Vec<Wanted>,
    options: &Options,
) -> (Vec<Image>, BTreeMap<String, String>) {
    let mut images: Vec<Image> = Vec::new();
    let mut bases = Bases::default();
    let mut renamed: BTreeMap<String, String> = BTreeMap::new(); // written → real reference
    for (reference, source) in wanted {
        let (repository, tag, digest) = split_reference(&reference);
        let key = format!("{repository}:{}", tag.clone().unwrap_or_default());
        if let Some(done) = images
            .iter()
            .find(|i| format!("{}:{}", i.repository, i.tag.clone().unwrap_or_default()) == key)
        {
            if let Some(old) = &digest {
                renamed.insert(old.clone(), done.digest.clone());
            }
            continue;
        }
        let amd64_only = reference == format!("{CCM_REPOSITORY}:{CCM_AMD64_ONLY}");
        let no_arm64 = options.without_arm64.as_deref() == Some(reference.as_str());
        let n = images.len();
        let mut plan = Plan::default();
        let (top, arches, shape) = if amd64_only {
            single(&mut plan, &mut bases, &repository, tag.as_deref())
        } else {
            multi(
                &mut plan,
                &mut bases,
                &repository,
                tag.as_deref(),
                n,
                no_arm64,
            )
        };
        push(addr, &repository, &plan);
        // registry.k8s.io serves everything k8s.gcr.io held, under the same paths.
        if let Some(path) = repository.strip_prefix("k8s.gcr.io/") {
            push(addr, &format!("registry.k8s.io/{path}"), &plan);
        }
        let manifests = platform_manifests(&plan, &top);
        if let Some(old) = &digest {
            renamed.insert(old.clone(), top.clone());
        }
        let pinned = digest.is_some();
        let mut reference = repository.clone();
        if let Some(t) = &tag {
            reference.push(':');
            reference.push_str(t);
        }
        if pinned {
            reference.push('@');
            reference.push_str(&top);
        }
        images.push(Image {
            reference,
            repository,
            tag,
            digest: top,
            pinned,
            arches,
            shape,
            source,
            manifests,
        });
    }
    if let Some(missing) = &options.without_arm64 {
        assert!(
            images.iter().any(|i| &i.reference == missing
                || i.reference.split('@').next() == Some(missing.as_str())),
            "without_arm64: {missing} is not an image of this world"
        );
    }
    (images, renamed)
}

/// Signs registry.k8s.io's images, as its promoter does: the index and every platform (but the
/// images the options leave unsigned).
pub(super) fn sign_images(sigstore: &Sigstore, addr: &str, images: &[Image], options: &Options) {
    for image in images
        .iter()
        .filter(|i| i.repository.starts_with("registry.k8s.io/"))
    {
        let name = image.reference.split('@').next().unwrap_or_default();
        if options.unsigned.iter().any(|u| u == name) {
            continue;
        }
        let mut digests = vec![image.digest.clone()];
        digests.extend(image.manifests.values().cloned());
        digests.dedup();
        for digest in digests {
            let layer = sigstore.sign(&image.repository, &digest, &SignOptions::default());
            push_signature(addr, &image.repository, &digest, &[layer]);
        }
    }
}

/// Makes the digest pins in the manifests the real digests.
pub(super) fn pin_digests(
    mut snapshot: Snapshot,
    files: &BTreeMap<String, File>,
    manifests: &[Wanted],
    renamed: &BTreeMap<String, String>,
) -> Snapshot {
    for (path, _) in manifests {
        let text = String::from_utf8_lossy(&files[path].body).into_owned();
        let mut new = text.clone();
        for (old, real) in renamed {
            new = new.replace(old.as_str(), real);
        }
        if new != text {
            snapshot = snapshot.replace(path, new, "text/plain; charset=utf-8");
        }
    }
    snapshot
}

/// Signs the Kubernetes binaries as dl.k8s.io does from 1.26 on (`.sig`/`.cert` beside each,
/// logged in the world's Rekor); older releases stay unsigned, as upstream's are.
pub(super) fn sign_binaries(
    mut snapshot: Snapshot,
    files: &BTreeMap<String, File>,
    sigstore: &Sigstore,
    rekor: &RekorServer,
) -> Snapshot {
    let binaries: Vec<(&String, &Vec<u8>)> = files
        .iter()
        .filter(|(path, _)| signed_binary(path))
        .map(|(path, file)| (path, &file.body))
        .collect();
    for (path, body) in binaries {
        let blob = sigstore.sign_blob(body, rekor.next_index(), None, &binary_signer());
        let (sig, cert) = (blob.sig.clone(), blob.cert.clone());
        rekor.add(sigstore, blob, &crate::upstream::sha256_hex(body));
        snapshot = snapshot
            .replace(&format!("{path}.sig"), sig, "text/plain; charset=utf-8")
            .replace(&format!("{path}.cert"), cert, "text/plain; charset=utf-8");
    }
    snapshot
}

/// The configuration a build against the world reads: its mirrors, registry mirrors for every
/// registry an image lives on, the world's trusted root and Rekor.
pub(super) fn config_yaml(shaped: &Shaped, git_url: &str, images: &[Image]) -> String {
    let mut yaml = String::from(
        "# written by cks-iso-world: the local upstream world (testworld/src/world.rs)\nmirrors:\n",
    );
    for rule in UpstreamServer::mirror_rules_via(&shaped.upstream) {
        let (from, to) = rule.split_once('=').expect("FROM=TO");
        yaml.push_str(&format!("  {from}: {to}\n"));
    }
    yaml.push_str(&format!(
        "  https://github.com/kubernetes/autoscaler: {git_url}\n"
    ));
    yaml.push_str("registry-mirrors:\n");
    let mut hosts: Vec<String> = REGISTRIES.iter().map(|h| (*h).to_owned()).collect();
    for image in images {
        let host = image.repository.split('/').next().unwrap_or_default();
        if !hosts.iter().any(|h| h == host) {
            hosts.push(host.to_owned());
        }
    }
    for host in &hosts {
        yaml.push_str(&format!(
            "  {host}: \"http://{}/{host}\"\n",
            shaped.registry
        ));
    }
    yaml.push_str(&format!("insecure-registries: [\"{}\"]\n", shaped.registry));
    // Relative to the configuration file: a copy of both side by side still works.
    yaml.push_str(
        "# the world's own Sigstore signs registry.k8s.io's images and dl.k8s.io's binaries\ntrusted-root: trusted_root.json\n",
    );
    yaml.push_str(&format!("rekor-url: {}\n", shaped.rekor));
    yaml
}
