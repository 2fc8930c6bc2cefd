//! Building a [`Side`] from what `app` read: a lock, an older ISO's `versions.txt`, nothing, and
//! then an ISO's directory and manifest texts on top.

use std::collections::BTreeMap;

use super::{ArchSide, EntryInfo, FileInfo, ImageInfo, Kind, Side, Source};
use crate::lock::Lock;
use crate::versions::Versions;

/// The component versions a side may know, in the order the report lists them.
pub(super) const VERSION_NAMES: [&str; 14] = [
    "kubernetes",
    "cni",
    "crictl",
    "etcd",
    "autoscaler",
    "autoscaler-commit",
    "ccm",
    "csi",
    "kubeadm-pause",
    "kubeadm-etcd",
    "kubeadm-coredns",
    "kubeadm-source",
    "headlamp",
    "cloudstack",
];

/// The build facts a side may know, in report order.
pub(super) const BUILD_NAMES: [&str; 4] = ["epoch", "cks-iso", "volume-id", "name"];

/// `v1.33.1` and `1.33.1` name the same release: the lock writes the one, `versions.txt` the other.
fn bare_version(v: &str) -> String {
    v.strip_prefix('v').unwrap_or(v).to_owned()
}

impl Side {
    fn empty(label: &str, kind: Kind, source: Source) -> Self {
        Self {
            label: label.to_owned(),
            kind,
            source,
            build: BTreeMap::new(),
            versions: BTreeMap::new(),
            manifests: BTreeMap::new(),
            arches: BTreeMap::new(),
            entries: None,
            texts: BTreeMap::new(),
            gaps: Vec::new(),
            signature: None,
        }
    }

    /// Everything `lock` records; `kind` says whether it came from a lock file or an ISO.
    pub fn from_lock(label: &str, kind: Kind, lock: &Lock) -> Self {
        let mut side = Self::empty(label, kind, Source::Lock);
        let r = &lock.request;
        side.build = BTreeMap::from([
            ("epoch".to_owned(), lock.epoch.to_string()),
            ("cks-iso".to_owned(), lock.cks_iso.clone()),
            ("volume-id".to_owned(), r.volume_id.clone()),
            ("name".to_owned(), r.name.clone()),
        ]);
        let v = &mut side.versions;
        let mut put = |name: &str, value: Option<String>| {
            v.insert(name.to_owned(), value);
        };
        put("kubernetes", Some(bare_version(&r.kubernetes)));
        put("cni", Some(bare_version(&r.cni)));
        put("crictl", Some(bare_version(&r.crictl)));
        put("etcd", r.etcd.as_deref().map(bare_version));
        put("autoscaler", Some(lock.autoscaler.version.clone()));
        put("ccm", Some(r.ccm.clone()));
        put("csi", r.csi.clone());
        put("kubeadm-pause", Some(lock.kubeadm.pause.clone()));
        put("kubeadm-etcd", Some(lock.kubeadm.etcd.clone()));
        put("kubeadm-coredns", Some(lock.kubeadm.coredns.clone()));
        put("kubeadm-source", Some(lock.kubeadm.source.clone()));
        put("headlamp", r.headlamp.clone());
        put("cloudstack", r.cloudstack.clone());
        // A lock made without listing the tags has no commit: unknown, not absent.
        if let Some(commit) = &lock.autoscaler.commit {
            put("autoscaler-commit", Some(commit.clone()));
        }
        side.manifests = lock
            .manifests
            .iter()
            .map(|m| (m.path.clone(), m.sha256.clone()))
            .collect();
        for (arch, entry) in &lock.arches {
            let files = entry.files.iter().map(|f| {
                let info = FileInfo {
                    size: Some(f.size),
                    sha256: f.sha256.clone(),
                };
                (f.path.clone(), info)
            });
            let images = entry.images.iter().map(|i| {
                let info = ImageInfo {
                    digest: i.digest.clone(),
                    manifest: Some(i.manifest.clone()),
                    size: Some(i.size),
                    extra: i.extra.clone(),
                };
                (i.reference.clone(), info)
            });
            side.arches.insert(
                arch.clone(),
                ArchSide {
                    files: files.collect(),
                    images: images.collect(),
                },
            );
        }
        side
    }

    /// What an ISO from before the lock says in `versions.txt`: versions, file hashes and image
    /// digests. Root-level files (manifests, units) count as manifests, as a lock lists them.
    pub fn from_versions(label: &str, versions: &Versions) -> Self {
        let mut side = Self::empty(label, Kind::Iso, Source::VersionsTxt);
        let v = &mut side.versions;
        let mut put = |name: &str, value: Option<String>| {
            v.insert(name.to_owned(), value);
        };
        put("kubernetes", Some(bare_version(&versions.kubernetes)));
        put("cni", Some(bare_version(&versions.cni_plugins)));
        put("crictl", Some(bare_version(&versions.crictl)));
        put("etcd", versions.etcd.as_deref().map(bare_version));
        put("autoscaler", Some(versions.autoscaler.clone()));
        put("ccm", Some(versions.ccm.clone()));
        put("csi", versions.csi_driver.clone());
        put("cloudstack", versions.cloudstack.clone());
        let mut arch = ArchSide::default();
        for f in &versions.files {
            if f.path.contains('/') {
                let info = FileInfo {
                    size: None,
                    sha256: f.sha256.clone(),
                };
                arch.files.insert(f.path.clone(), info);
            } else {
                side.manifests.insert(f.path.clone(), f.sha256.clone());
            }
        }
        for i in &versions.images {
            let info = ImageInfo {
                digest: i.digest.clone(),
                manifest: None,
                size: None,
                extra: None,
            };
            arch.images.insert(i.name.clone(), info);
        }
        side.arches.insert(versions.arch.clone(), arch);
        side
    }

    /// An ISO that says nothing about its contents (the upstream script's): only what
    /// [`Side::with_iso`] adds.
    pub fn bare(label: &str) -> Self {
        Self::empty(label, Kind::Iso, Source::None)
    }

    /// Adds an ISO's volume ID, directory and manifest bytes: file sizes the side did not know
    /// come from the directory, and each manifest's sha256 from its bytes (what the ISO holds
    /// wins over what its lock says).
    pub fn with_iso(
        mut self,
        volume_id: &str,
        entries: BTreeMap<String, EntryInfo>,
        texts: BTreeMap<String, Vec<u8>>,
    ) -> Self {
        self.build
            .insert("volume-id".to_owned(), volume_id.to_owned());
        if self.source == Source::Lock {
            self.gaps = super::gaps::of(&self, &entries);
        }
        for arch in self.arches.values_mut() {
            for (path, file) in &mut arch.files {
                if file.size.is_none() {
                    file.size = entries.get(path).map(|e| e.size);
                }
            }
        }
        for (path, bytes) in texts {
            let sha256 = cks_iso_io::Sha256Sum::of(&bytes).to_string();
            self.manifests.insert(path.clone(), sha256);
            let text = String::from_utf8_lossy(&bytes).into_owned();
            self.texts.insert(path, text);
        }
        self.entries = Some(entries);
        self
    }
}
