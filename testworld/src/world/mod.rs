//! The whole local upstream world a `cks-iso build` runs against: git with autoscaler tags, the
//! upstream stand-in (github.com, dl.k8s.io, raw.githubusercontent.com) and one `docker-registry`
//! holding every image such a build pulls, for amd64 and arm64.
//!
//! The image list is computed here from the world's own snapshot, not by cks-iso: kubeadm's seven
//! images from the snapshot's `constants.go` (rules of `docs/reference/upstream.md` §2), the pinned
//! autoscaler from the git tags, the CCM image, and every `image:` of the snapshot's CSI, CNI and
//! dashboard manifests, normalised as Docker does. Images pinned by digest in a manifest are pushed
//! first and the manifest is rewritten so the pin is the real digest.
//!
//! Repositories are stored under their upstream host (`registry.k8s.io/pause`), so the
//! configuration maps each upstream registry to `http://127.0.0.1:P/<host>`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use regex::Regex;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::git::{GitServer, Repo};
use crate::http::sha256;
use crate::images::{
    DOCKER_MANIFEST, OCI_MANIFEST, Plan, Style, index, layer, noise, platform_manifest, push_blob,
    push_manifest,
};
use crate::registry::DockerRegistry;
use crate::rekor::RekorServer;
use crate::shaper::{Shape, ShapingProxy};
use crate::sigstore::{SignOptions, SignedLayer, Sigstore, signature_manifest, signature_tag};
use crate::upstream::{
    DASHBOARD_PATH, HEADLAMP_PATH, HEADLAMP_PROMOTED_VERSION, HEADLAMP_VERSION, KubeRelease,
    NETWORK_PATH, Snapshot, UpstreamServer,
};

mod names;
mod publish;
mod shell;
mod start;
pub use shell::FAR_SIDE_TRUSTED_ROOT;
#[cfg(test)]
mod tests;

use names::*;
pub use names::{manifest_images, normalise};
use publish::*;

/// The registries a configuration always maps, whether or not an image lives there.
pub const REGISTRIES: [&str; 4] = ["registry.k8s.io", "docker.io", "quay.io", "ghcr.io"];

/// The CCM repository, normalised.
pub const CCM_REPOSITORY: &str = "docker.io/apache/cloudstack-kubernetes-provider";

/// The CCM tag published for amd64 only (`docs/reference/upstream.md` §4).
pub const CCM_AMD64_ONLY: &str = "v1.1.0";

/// What world to start.
#[derive(Debug, Clone)]
pub struct Options {
    /// Kubernetes release (`1.33.1`, with or without `v`).
    pub kubernetes: String,
    /// The snapshot to serve; `None` builds one for [`Options::kubernetes`] (see
    /// [`default_snapshot`]).
    pub snapshot: Option<Snapshot>,
    /// The CCM tag published multi-arch (`v1.2.0`); with the default snapshot, another tag
    /// also gets its `deployment.yaml`.
    pub ccm_tag: String,
    /// A normalised reference as listed by [`World::images`] (`registry.k8s.io/pause:3.10`) to
    /// publish without arm64: an OCI index listing amd64 and an attestation only.
    pub without_arm64: Option<String>,
    /// Normalised references (as [`World::images`] lists them, without `@digest`) of
    /// registry.k8s.io images to leave unsigned; every other registry.k8s.io image is signed by
    /// the world's [`Sigstore`], its index and each platform manifest.
    pub unsigned: Vec<String>,
    /// A WAN shape for the registry, the upstream stand-in (origin and CDN) and Rekor: each is
    /// then reached through a [`ShapingProxy`] and the configuration names the proxies (git stays
    /// direct: a handful of small requests). For `make bench`'s signature cost on a far link.
    pub shape: Option<Shape>,
    /// More Kubernetes releases the world serves beside [`Options::kubernetes`] (with the
    /// default snapshot): each one's binaries and `constants.go`, the crictl and etcd releases a
    /// build of it picks by default, and kubeadm's images, published after every other image so
    /// that those keep their bytes. For upgrades: two patches of one minor, or the minor before.
    pub also_kubernetes: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            kubernetes: "1.33.1".into(),
            snapshot: None,
            ccm_tag: "v1.2.0".into(),
            without_arm64: None,
            unsigned: Vec::new(),
            shape: None,
            also_kubernetes: Vec::new(),
        }
    }
}

/// The snapshot a world for Kubernetes `version` serves by default: its binaries and
/// `constants.go` (extras from `docs/reference/upstream.md` §2), CNI 1.6.2, crictl `1.<minor>.0`,
/// the etcd kubeadm names, autoscaler examples `1.<minor-1>.2`, `1.<minor>.0`, `.1`, `.3` (a gap),
/// CCM v1.2.0 and v1.1.0, CSI v3.0.0. Panics when `docs/reference/upstream.md` records no extras
/// for `version`.
pub fn default_snapshot(version: &str) -> Snapshot {
    let release = KubeRelease::known(version)
        .unwrap_or_else(|| panic!("no kubeadm extras known for {version}: pass Options::snapshot"));
    snapshot_of(release)
}

/// [`default_snapshot`] for a release whose extras the caller chooses (one
/// `docs/reference/upstream.md` §2 does not record, or a form of `constants.go` to test).
pub fn snapshot_of(release: KubeRelease) -> Snapshot {
    let minor = minor_of(&release.version).expect("a Kubernetes version x.y.z");
    let etcd = release
        .etcd
        .split('-')
        .next()
        .unwrap_or_default()
        .to_owned();
    Snapshot::new(1)
        .kubernetes(release)
        .cni("1.6.2")
        .crictl(&format!("1.{minor}.0"))
        .etcd(&etcd)
        .autoscaler(&format!("1.{}.2", minor.saturating_sub(1)))
        .autoscaler(&format!("1.{minor}.0"))
        .autoscaler(&format!("1.{minor}.1"))
        .autoscaler(&format!("1.{minor}.3"))
        .ccm("v1.2.0")
        .ccm(CCM_AMD64_ONLY)
        .csi("v3.0.0")
}

/// One image the world published.
#[derive(Debug, Clone)]
pub struct Image {
    /// The normalised reference a build names (`docker.io/calico/node:v3.29.1@sha256:…`).
    pub reference: String,
    /// `host/path` (`docker.io/calico/node`), also the repository in the local registry.
    pub repository: String,
    /// The tag, if any.
    pub tag: Option<String>,
    /// The digest the reference resolves to: the index, or the manifest of a single-platform
    /// image.
    pub digest: String,
    /// Whether the reference carries `@digest`.
    pub pinned: bool,
    /// The architectures it is published for (`amd64`, `arm64`).
    pub arches: Vec<String>,
    /// `OCI index`, `Docker manifest list` or `Docker manifest`, with details.
    pub shape: String,
    /// Why a build pulls it (`kubeadm`, `autoscaler`, `ccm`, `csi`, `network`, `dashboard`,
    /// `headlamp`), or
    /// `autoscaler-other` for the autoscaler releases a default build does not pin.
    pub source: &'static str,
    /// The platform manifests per architecture (`amd64` → `sha256:…`); for a single-platform
    /// image, the manifest itself.
    pub manifests: BTreeMap<String, String>,
}

/// A running world; dropping it stops git, the stand-in and the registry and removes their files.
pub struct World {
    kubernetes: String,
    autoscaler: Option<String>,
    images: Vec<Image>,
    config_yaml: String,
    config_path: PathBuf,
    network_url: String,
    dashboard_url: String,
    headlamp_url: String,
    upstream: UpstreamServer,
    git: GitServer,
    repo: Repo,
    registry: DockerRegistry,
    sigstore: Arc<Sigstore>,
    rekor: RekorServer,
    oidc: crate::oidc::OidcIssuer,
    fulcio: crate::fulcio::FulcioServer,
    signing_config: PathBuf,
    trusted_root: PathBuf,
    _shapers: Vec<ShapingProxy>,
    _storage: TempDir,
    _dir: TempDir,
}

impl World {
    /// Starts everything and publishes every image; panics (naming `make deps` for a missing
    /// tool) when something cannot start.
    pub fn start(options: Options) -> Self {
        let kubernetes = options.kubernetes.trim_start_matches('v').to_owned();
        let mut snapshot = start::snapshot_for(&options, &kubernetes);
        let files = snapshot.files();
        let autoscaler = start::AutoscalerGit::start(&files, &kubernetes);
        let (wanted, manifests) = start::wanted(&files, &kubernetes, &autoscaler, &options);

        let storage = tempfile::tempdir().expect("temp dir");
        let registry = DockerRegistry::start(storage.path(), None);
        let addr = registry.host();
        let (images, renamed) = start::publish_all(&addr, wanted, &options);
        let sigstore = Arc::new(Sigstore::generate());
        start::sign_images(&sigstore, &addr, &images, &options);
        snapshot = start::pin_digests(snapshot, &files, &manifests, &renamed);
        let rekor = RekorServer::start();
        snapshot = start::sign_binaries(snapshot, &files, &sigstore, &rekor);
        // Keyless signing: an OIDC issuer, a Fulcio trusting it, and the Rekor taking entries.
        rekor.accept_entries(sigstore.clone());
        let oidc = crate::oidc::OidcIssuer::start();
        let fulcio = crate::fulcio::FulcioServer::start(sigstore.clone(), vec![oidc.url().into()]);
        let upstream = UpstreamServer::start(&snapshot);
        let shaped = Shaped::start(options.shape, &upstream, &addr, &rekor);

        let dir = tempfile::tempdir().expect("temp dir");
        let trusted_root = dir.path().join("trusted_root.json");
        std::fs::write(&trusted_root, sigstore.trusted_root()).expect("write the trusted root");
        let yaml = start::config_yaml(&shaped, &autoscaler.git_url(), &images);
        let signing_config = dir.path().join("signing_config.json");
        let config = crate::fulcio::signing_config(&fulcio.url(), &shaped.rekor, oidc.url());
        std::fs::write(&signing_config, config.to_string()).expect("write the signing config");
        let config_path = dir.path().join("cks-iso.yaml");
        std::fs::write(&config_path, &yaml).expect("write the configuration");

        Self {
            kubernetes,
            autoscaler: autoscaler.newest,
            images,
            config_yaml: yaml,
            config_path,
            network_url: format!("https://raw.githubusercontent.com/{NETWORK_PATH}"),
            dashboard_url: format!("https://raw.githubusercontent.com/{DASHBOARD_PATH}"),
            headlamp_url: format!("https://raw.githubusercontent.com/{HEADLAMP_PATH}"),
            upstream,
            git: autoscaler.git,
            repo: autoscaler.repo,
            registry,
            sigstore,
            rekor,
            oidc,
            fulcio,
            signing_config,
            trusted_root,
            _shapers: shaped.proxies,
            _storage: storage,
            _dir: dir,
        }
    }

    /// Every request the world's registry answered so far (its access log).
    pub fn registry_log(&self) -> Vec<crate::registry::Access> {
        self.registry.access_log()
    }

    /// The Kubernetes release (`1.33.1`).
    pub fn kubernetes(&self) -> &str {
        &self.kubernetes
    }

    /// The autoscaler release a build pins by default (newest tag of the minor), if any.
    pub fn autoscaler_version(&self) -> Option<&str> {
        self.autoscaler.as_deref()
    }

    /// Every image published, in the order computed (kubeadm's first).
    pub fn images(&self) -> &[Image] {
        &self.images
    }

    /// The image whose normalised reference is `reference`, with or without its `@digest`.
    pub fn image(&self, reference: &str) -> &Image {
        self.images
            .iter()
            .find(|i| i.reference == reference || i.reference.split('@').next() == Some(reference))
            .unwrap_or_else(|| panic!("no image {reference} in the world"))
    }

    /// The cks-iso configuration: download and git mirrors, registry mirrors, insecure
    /// registries.
    pub fn config_yaml(&self) -> &str {
        &self.config_yaml
    }

    /// Where [`World::config_yaml`] is written (for `CKS_ISO_CONFIG`).
    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    /// The upstream URL of the CNI manifest to pass as `--network`.
    pub fn network_url(&self) -> &str {
        &self.network_url
    }

    /// The upstream URL of the dashboard manifest to pass as `--dashboard`.
    pub fn dashboard_url(&self) -> &str {
        &self.dashboard_url
    }

    /// The Headlamp release whose manifest (`:latest`, no pull policy, as upstream publishes
    /// it) and image `ghcr.io/headlamp-k8s/headlamp:v<version>` the world serves, for
    /// `--headlamp-version` and CloudStack 4.23's positional form.
    pub fn headlamp_version(&self) -> &'static str {
        HEADLAMP_VERSION
    }

    /// The Headlamp release the world serves as registry.k8s.io does a promoted one: its
    /// manifest, and its image `registry.k8s.io/headlamp/headlamp:v<version>` (signed), not on
    /// ghcr.io.
    pub fn headlamp_promoted_version(&self) -> &'static str {
        HEADLAMP_PROMOTED_VERSION
    }

    /// The upstream URL of the Headlamp manifest to pass as `--headlamp`.
    pub fn headlamp_url(&self) -> &str {
        &self.headlamp_url
    }

    /// The registry, `127.0.0.1:P`.
    pub fn registry_host(&self) -> String {
        self.registry.host()
    }

    /// The registry, `http://127.0.0.1:P`.
    pub fn registry_url(&self) -> String {
        self.registry.url()
    }

    /// The upstream stand-in.
    pub fn upstream(&self) -> &UpstreamServer {
        &self.upstream
    }

    /// The world's Sigstore, to sign more (or spoiled) signatures.
    pub fn sigstore(&self) -> &Sigstore {
        &self.sigstore
    }

    /// The world's Rekor stand-in, which logs the binaries' signatures.
    pub fn rekor(&self) -> &RekorServer {
        &self.rekor
    }

    /// The world's OpenID Connect issuer (mints identity tokens).
    pub fn oidc(&self) -> &crate::oidc::OidcIssuer {
        &self.oidc
    }

    /// The world's Fulcio.
    pub fn fulcio(&self) -> &crate::fulcio::FulcioServer {
        &self.fulcio
    }

    /// A Sigstore signing configuration (v0.2) naming the world's Fulcio, Rekor and issuer.
    pub fn signing_config_path(&self) -> &Path {
        &self.signing_config
    }

    /// Signs `body` (a file served at `path`, host-prefixed) with `opts` and serves the new
    /// `.sig`/`.cert` beside it; `logged_hash` (hex) makes the Rekor entry log another blob.
    pub fn sign_binary(
        &self,
        path: &str,
        body: &[u8],
        opts: &SignOptions,
        logged_hash: Option<&str>,
    ) {
        let blob = self
            .sigstore
            .sign_blob(body, self.rekor.next_index(), logged_hash, opts);
        let (sig, cert) = (blob.sig.clone(), blob.cert.clone());
        self.rekor
            .add(&self.sigstore, blob, &crate::upstream::sha256_hex(body));
        let text = "text/plain; charset=utf-8";
        self.upstream.put(&format!("{path}.sig"), sig, text);
        self.upstream.put(&format!("{path}.cert"), cert, text);
    }

    /// The world's `trusted_root.json`, beside [`World::config_path`]; the configuration names it
    /// as `trusted-root: trusted_root.json`, relative to itself.
    pub fn trusted_root_path(&self) -> &Path {
        &self.trusted_root
    }

    /// Pushes (or replaces) the `.sig` tag of `digest` in `repository` with `layers`; returns
    /// the signature manifest's digest.
    pub fn push_signature(&self, repository: &str, digest: &str, layers: &[SignedLayer]) -> String {
        push_signature(&self.registry.host(), repository, digest, layers)
    }

    /// The git URL standing in for `https://github.com/kubernetes/autoscaler`.
    pub fn autoscaler_git_url(&self) -> String {
        self.git.url(&self.repo)
    }
}

/// Options that sign as Kubernetes' release tooling signs binaries.
pub fn binary_signer() -> SignOptions {
    SignOptions {
        identity: crate::sigstore::K8S_BINARY_IDENTITY.into(),
        ..SignOptions::default()
    }
}

/// A dl.k8s.io Kubernetes binary of a release that upstream signs (1.26 and later).
fn signed_binary(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("dl.k8s.io/release/v") else {
        return false;
    };
    let version = rest.split('/').next().unwrap_or_default();
    rest.contains("/bin/linux/")
        && !rest.ends_with(".sha256")
        && numbers(version).is_some_and(|(major, minor, _)| major == 1 && minor >= 26)
}
