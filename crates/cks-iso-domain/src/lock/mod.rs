//! `cks-iso.lock`: everything a build resolved, in a form a later build can repeat byte for byte.
//!
//! Air-gapped operators must answer "what exactly is on this disk, and can we make it again?".
//! `versions.txt` answers the first for the node; the lock answers both for the operator: it
//! records the request (every option that changes content), the epoch, the cks-iso version, and
//! every resolved input — each downloaded file and manifest with its sha256, the autoscaler tag
//! and commit, kubeadm's extras and where they came from, each image with its registry digest and
//! the platform manifest chosen. `build --locked` reads it back and builds exactly that; every ISO
//! carries its own arch's lock at its root (not `*.yaml`, so node scripts ignore it).
//!
//! Schema (`"version": 1`; JSON, keys and arrays sorted, no host paths, no time but the epoch):
//!
//! ```text
//! {
//!   "version": 1,
//!   "cks_iso": "0.1.0",                       the cks-iso that wrote it
//!   "epoch": 1700000000,                      SOURCE_DATE_EPOCH of the ISOs
//!   "epoch_from": { "rule": "image-created",  only when no epoch was given (epoch.rs):
//!                   "image": "registry.k8s.io/kube-apiserver:v1.33.1",  the newest created
//!                   "config": "sha256:…", "created": "2025-05-15T08:19:31Z" }  of kubeadm's
//!               | { "rule": "undated" },                                 linux/amd64 configs
//!   "request": {
//!     "kubernetes": "1.33.1", "arches": ["amd64", "arm64"],
//!     "kubernetes_label": "stable-1.33",       only from a label, only with --lock-file
//!     "cni": "1.6.2", "crictl": "1.33.0", "etcd": null | "3.5.21",
//!     "csi": null | "v3.0.0", "ccm": "v1.2.0", "autoscaler": "1.33.4",
//!     "headlamp": "0.40.1",                   only with a Headlamp version
//!     "headlamp_image": "registry.k8s.io/headlamp/headlamp:v0.41.0",  only when not ghcr.io's
//!     "cloudstack": "4.23",                   only when built for one CloudStack release
//!     "volume_id": "CDROM", "name": "setup-v1.33.1"
//!   },
//!   "autoscaler": { "version": "1.33.4", "tag": "cluster-autoscaler-1.33.4",
//!                   "commit": null | "<40 hex>", "pinned": true },
//!   "kubeadm": { "pause": "3.10", "etcd": "3.5.21-0", "coredns": "v1.12.0",
//!                "source": "kubeadm constants.go at v1.33.1" | "embedded table" },
//!   "manifests": [                            arch-independent, by path
//!     { "path": "network.yaml", "role": "network" | … | "extra",
//!       "source": "https://…" | "file:network.yaml" | "builtin:…",
//!       "sha256_taken": "<hex>", "sha256": "<hex as edited>" } ],
//!   "arches": {
//!     "amd64": {
//!       "iso": "setup-v1.33.1-x86_64.iso",
//!       "files": [ { "path": "k8s/kubeadm", "url": "https://…", "size": 1, "sha256": "<hex>",
//!                    "signature": { "sig": "<hex>", "cert": "<hex>", "rekor": "<hex>" }
//!                               | { "bundle": "<hex>" } } ],
//!       "images": [ { "reference": "registry.k8s.io/pause:3.10", "digest": "sha256:…",
//!                     "manifest": "sha256:…", "size": 1,
//!                     "extra": "image" | "manifest:velero.yaml",   only for add-on images
//!                     "signature": { "tag": "sha256-<hex>.sig",
//!                                    "manifest": "sha256:…" } } ] } }
//! }
//! ```
//!
//! Add-on content (`build --image`, `--images-file`, `--manifest`, the configuration's `extras:`)
//! is locked like the core content, so `--locked … --offline` rebuilds it byte for byte. Each
//! extra manifest is in `manifests` with the role `extra`, under the name it has at the ISO's
//! root. Every image that is not a core one (kubeadm's, or named by a core manifest) is in the
//! arch's `images` with `extra`: `image` when it was asked for by reference — its `reference` is
//! what was asked, normalised as containerd does, and `digest` what that resolved to —, else
//! `manifest:<path>`, the first extra manifest (by path) naming it. An image both core and asked
//! for is core. Locks without these fields (every lock written before add-ons) read as having no
//! add-on content, and build the same ISO as before.
//!
//! A file's `signature` (dl.k8s.io binaries whose `.sig`/`.cert`, or whose published Sigstore
//! bundle, verified) is optional: version 1 locks without it still read, and build with the
//! material fetched anew. So is an image's
//! `signature` (images whose cosign signature verified): `tag` is the `.sig` tag that held it (the
//! platform manifest's or the index's), or for a cosign 3 referrer `sha256-<hex>` (the tag-schema
//! name of the digest it refers to), `manifest` the digest of the exact signature manifest
//! stored in the ISO's `signatures/`. cosign appends to a tag, so the tag moves; `--locked` fetches
//! the signature manifest by this digest instead, and an image without it has its tag resolved
//! anew. `size` of an image is
//! its manifest, config and layers in bytes, as the registry serves them. A file's `size` is 0 in
//! the lock a build resolves before realizing it (the published sha256 is known, the body not
//! yet); the lock it writes records the size taken, and a `0` read back bounds nothing (the
//! sha256 decides). A
//! local manifest's source keeps only its file name (`file:<name>`): hosts differ, content does
//! not, and `--locked` checks the content. Pure: no network, no file system.

use std::collections::BTreeMap;

use cks_iso_oci::image::Arch;
use serde::{Deserialize, Serialize};

/// The schema version this cks-iso writes and reads.
pub const VERSION: u32 = 1;

/// The file name of the lock at the root of every ISO.
pub const FILE_NAME: &str = crate::contract::LOCK;

/// A lock, as written and read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// Schema version, [`VERSION`].
    pub version: u32,
    /// The cks-iso version that wrote it.
    pub cks_iso: String,
    /// The ISOs' `SOURCE_DATE_EPOCH`.
    pub epoch: i64,
    /// Where `epoch` came from when the build was given none ([`epoch`]); absent when it was
    /// given (`--source-date-epoch`, `SOURCE_DATE_EPOCH`) and in locks written before the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch_from: Option<EpochFrom>,
    /// What was asked for.
    pub request: LockedRequest,
    /// The autoscaler release whose example is bundled.
    pub autoscaler: Autoscaler,
    /// kubeadm's pause, etcd and CoreDNS.
    pub kubeadm: Kubeadm,
    /// Every manifest and unit file (the same in every ISO), by path.
    pub manifests: Vec<ManifestEntry>,
    /// Per architecture (`amd64`, `arm64`): the ISO's name, its downloads and its images.
    pub arches: BTreeMap<String, ArchEntry>,
}

/// Every option that changes an ISO's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedRequest {
    /// Kubernetes release, without `v`.
    pub kubernetes: String,
    /// The version label the release was read from (`stable-1.33`), when one was given; only in
    /// the run's lock (`--lock-file`): an ISO's own lock leaves it out, so that the ISO is the one
    /// the release itself builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_label: Option<String>,
    /// Architectures, sorted.
    pub arches: Vec<String>,
    /// CNI plugins, without `v`.
    pub cni: String,
    /// crictl, without `v`.
    pub crictl: String,
    /// etcd without `v`, when bundled.
    pub etcd: Option<String>,
    /// CSI driver tag, or `None` when the CSI manifests are left out.
    pub csi: Option<String>,
    /// CCM tag.
    pub ccm: String,
    /// Autoscaler release.
    pub autoscaler: String,
    /// The Headlamp release (without `v`) whose manifest is `headlamp.yaml`, its image pinned;
    /// absent when none was given (locks written before it read the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headlamp: Option<String>,
    /// The image that Headlamp release is pinned to when it is not ghcr.io's
    /// (`registry.k8s.io/headlamp/headlamp:v0.41.0`, for the releases promoted there); absent for
    /// ghcr.io's, so that locks written before it read the same and build the same ISO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headlamp_image: Option<String>,
    /// The CloudStack release the ISOs are for (`4.23`), when one was given or implied; absent
    /// otherwise (locks written before it read the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloudstack: Option<String>,
    /// The ISO's volume ID.
    pub volume_id: String,
    /// The ISO name before `-<uname>.iso`.
    pub name: String,
}

/// The autoscaler release and where it pointed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Autoscaler {
    /// `1.33.4`.
    pub version: String,
    /// `cluster-autoscaler-1.33.4`.
    pub tag: String,
    /// The commit the tag pointed at, when the tags were listed.
    pub commit: Option<String>,
    /// Whether it was given rather than chosen as the newest.
    pub pinned: bool,
}

/// kubeadm's extra images' versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kubeadm {
    /// Pause tag.
    pub pause: String,
    /// etcd image tag.
    pub etcd: String,
    /// CoreDNS tag.
    pub coredns: String,
    /// Where they came from.
    pub source: String,
}

/// One manifest or unit file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    /// Path in the ISO.
    pub path: String,
    /// What it is for: `network`, `dashboard`, `headlamp`, `autoscaler`, `provider`, `csi`,
    /// `unit`.
    pub role: String,
    /// The upstream URL, `file:<name>` for a local file, or `builtin:…`.
    pub source: String,
    /// sha256 of the bytes as taken.
    pub sha256_taken: String,
    /// sha256 of the bytes in the ISO, after the edits.
    pub sha256: String,
}

impl ManifestEntry {
    /// Whether it was read from a local file, which `--locked` needs given again.
    pub fn is_local(&self) -> bool {
        self.source.starts_with("file:")
    }
}

/// One architecture's ISO.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchEntry {
    /// The ISO's file name.
    pub iso: String,
    /// Downloaded binaries and tarballs, by path.
    pub files: Vec<FileEntry>,
    /// Images, by reference.
    pub images: Vec<ImageEntry>,
}

/// One downloaded file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// Path in the ISO.
    pub path: String,
    /// Upstream URL (the legacy name when that was used).
    pub url: String,
    /// Bytes; 0 before the body was seen (see the module's notes).
    pub size: u64,
    /// sha256, lowercase hex.
    pub sha256: String,
    /// Its verified signature material (dl.k8s.io binaries), absent in locks written before
    /// binaries were checked and for files without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<FileSignature>,
}

/// The sha256 (hex) of the signature material a file was verified with, each kept in the cache
/// by content, so `--locked --offline` takes the same bytes and writes the same bundle: the
/// Sigstore bundle published beside the file (`bundle`), or the `.sig`, `.cert` and Rekor entry
/// (all three).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSignature {
    /// The `<file>.sigstore.json` bundle, when the publisher shipped one and it verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    /// The `.sig` file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
    /// The `.cert` file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<String>,
    /// The Rekor log entry reply the bundle was built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rekor: Option<String>,
}

/// One image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageEntry {
    /// The normalised reference, as named by kubeadm or a manifest.
    pub reference: String,
    /// What the reference resolved to at the registry (index or manifest), `sha256:…`.
    pub digest: String,
    /// The platform manifest chosen for the arch, `sha256:…`.
    pub manifest: String,
    /// Manifest, config and layers, in bytes.
    pub size: u64,
    /// Why an add-on image is in the ISO: [`EXTRA_ASKED`] or `manifest:<path>`
    /// ([`extra_from_manifest`]); absent for core images (and in locks written before add-ons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<String>,
    /// The signature manifest that verified, absent in locks written before images' signatures
    /// were locked and for images without a verified signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<ImageSignature>,
}

/// [`ImageEntry::extra`] of an image asked for by reference.
pub const EXTRA_ASKED: &str = "image";

impl ImageEntry {
    /// A core image: `reference` resolved to `digest`, its platform manifest `manifest`, `size`
    /// bytes in all; no add-on reason and no signature yet.
    pub fn new(reference: String, digest: String, manifest: String, size: u64) -> Self {
        Self {
            reference,
            digest,
            manifest,
            size,
            extra: None,
            signature: None,
        }
    }

    /// Why an add-on image is in the ISO, in words ([`extra_words`]); `None` for a core image.
    pub fn extra_words(&self) -> Option<String> {
        self.extra.as_deref().map(extra_words)
    }
}

impl FileEntry {
    /// A downloaded file at `path` from `url`, `size` bytes with sha256 `sha256`; no signature
    /// material yet.
    pub fn new(path: String, url: String, size: u64, sha256: String) -> Self {
        Self {
            path,
            url,
            size,
            sha256,
            signature: None,
        }
    }
}

/// [`ImageEntry::extra`] of an image named by the extra manifest at `path`.
pub fn extra_from_manifest(path: &str) -> String {
    format!("manifest:{path}")
}

/// The role an extra manifest has in [`ManifestEntry::role`].
pub const EXTRA_ROLE: &str = "extra";

/// An image's `extra` in words: `asked for` ([`EXTRA_ASKED`]), `named by <path>` (an add-on
/// manifest's), as `versions.txt`'s comments and `diff` say it.
pub fn extra_words(extra: &str) -> String {
    match extra.strip_prefix("manifest:") {
        Some(path) => format!("named by {path}"),
        None => "asked for".to_owned(),
    }
}

/// The cosign signature manifest an image was verified with: fetched by digest under `--locked`,
/// so a tag that gained signatures since still gives the same evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageSignature {
    /// The `.sig` tag that held it, `sha256-<hex>.sig` (whose digest it signs); for a cosign 3
    /// referrer, `sha256-<hex>` of the digest it refers to.
    pub tag: String,
    /// The signature manifest's digest, `sha256:…`.
    pub manifest: String,
}

/// A lock that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Not JSON, or not this schema.
    #[error("{origin} is not a cks-iso lock: {reason}")]
    Invalid {
        /// File (or `ISO:cks-iso.lock`).
        origin: String,
        /// The parser's words.
        reason: String,
    },
    /// Another schema version.
    #[error("{origin} has lock version {found}; this cks-iso reads version {VERSION}")]
    Version {
        /// File.
        origin: String,
        /// What it says.
        found: u64,
    },
    /// A field that would write outside the output directory.
    #[error(transparent)]
    Name(name::NameError),
    /// An architecture the lock does not hold.
    #[error("{origin} locks {locked}, not {wanted}")]
    Arch {
        /// File.
        origin: String,
        /// Asked for.
        wanted: String,
        /// What it holds.
        locked: String,
    },
}

impl LockError {
    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Invalid { .. } => {
                "pass a cks-iso.lock written by `cks-iso build --lock-file`, or an ISO cks-iso built"
                    .into()
            }
            Self::Version { .. } => "use the cks-iso release that wrote this lock".into(),
            Self::Name(_) => "cks-iso never writes such a name: the lock was changed by hand or \
                              by someone else; pass a lock written by `cks-iso build --lock-file`"
                .into(),
            Self::Arch { .. } => "drop --arch to build every architecture the lock holds".into(),
        })
    }
}

impl Lock {
    /// Sorts every list, so equal content renders to equal bytes.
    pub fn normalise(&mut self) {
        self.request.arches.sort();
        self.request.arches.dedup();

        self.manifests.sort_by(|a, b| a.path.cmp(&b.path));
        for arch in self.arches.values_mut() {
            arch.files.sort_by(|a, b| a.path.cmp(&b.path));
            arch.images.sort_by(|a, b| a.reference.cmp(&b.reference));
        }
    }

    /// One line naming the locked versions, as a build's summary prints it.
    pub fn versions_line(&self) -> String {
        let r = &self.request;
        format!(
            "kubernetes v{}, cni-plugins v{}, crictl v{}, autoscaler {}, ccm {}, csi-driver {}{}",
            r.kubernetes,
            r.cni,
            r.crictl,
            r.autoscaler,
            r.ccm,
            r.csi.as_deref().unwrap_or("none"),
            r.etcd
                .as_ref()
                .map_or(String::new(), |e| format!(", etcd v{e}")),
        )
    }

    /// Pretty JSON with a final newline, sorted.
    pub fn render(&self) -> String {
        let mut lock = self.clone();
        lock.normalise();
        let mut text = serde_json::to_string_pretty(&lock).expect("plain data serialises");
        text.push('\n');
        text
    }

    /// The same lock holding only `arches` (each must be locked).
    pub fn only(&self, arches: &[&str], origin: &str) -> Result<Self, LockError> {
        let mut out = self.clone();
        for wanted in arches {
            if !self.arches.contains_key(*wanted) {
                return Err(LockError::Arch {
                    origin: origin.to_owned(),
                    wanted: (*wanted).to_owned(),
                    locked: self.arch_list(),
                });
            }
        }
        out.arches.retain(|k, _| arches.contains(&k.as_str()));
        out.request.arches = out.arches.keys().cloned().collect();
        Ok(out)
    }

    /// `amd64 and arm64`.
    pub fn arch_list(&self) -> String {
        self.arches
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(" and ")
    }

    /// The entry of linux/`arch`.
    pub fn arch(&self, arch: Arch) -> Result<&ArchEntry, LockError> {
        self.arches.get(arch.k8s()).ok_or_else(|| LockError::Arch {
            origin: "the lock".to_owned(),
            wanted: arch.k8s().to_owned(),
            locked: self.arch_list(),
        })
    }

    /// The manifest at `path`.
    pub fn manifest(&self, path: &str) -> Option<&ManifestEntry> {
        self.manifests.iter().find(|m| m.path == path)
    }

    /// Whether an arm64 etcd is kept under its own name rather than the one etcd nodes read
    /// (`upstream::Pins::etcd_own_name`): locks written before arm64 etcd went under
    /// that name rebuild as they were.
    pub fn etcd_own_name(&self) -> bool {
        let own = crate::contract::etcd_tarball("arm64", true);
        self.arches
            .values()
            .flat_map(|a| &a.files)
            .any(|f| f.path == own)
    }
}

pub mod epoch;
pub mod name;
mod parse;
pub mod source;

pub use epoch::EpochFrom;

#[cfg(any(test, feature = "test-support"))]
pub mod sample;
#[cfg(test)]
mod tests;
