//! The ISO's software bill of materials, as CycloneDX 1.6 and SPDX 2.3 JSON.
//!
//! An ISO that carries some twenty-five images and a dozen binaries into an air-gapped data centre
//! is what a security team wants an inventory of. This module turns what a build already knows
//! (`versions.txt`'s records plus each image's platform manifest digest, gathered by
//! [`Inventory::of`] from the run's lock and what was staged) into both formats; it reads no
//! blob, no file and no network, so the same inputs and epoch give the same bytes. The build
//! writes the documents into the ISO's root (`sbom.cdx.json`, `sbom.spdx.json`) and beside the ISO
//! (`<iso>.cdx.json`, `<iso>.spdx.json`, which also carry the ISO's own size and sha256), and
//! `verify` reads the ones inside back with `parse_cyclonedx` and `parse_spdx`.
//!
//! The documents are small serde structs of our own, not a typed crate: the official CycloneDX
//! crate stops at 1.5, and the schema-generated ones (serde-cyclonedx, serde-spdx) bring a code
//! generator and a builder crate to the build for the dozen fields used here. Validity is judged
//! by the formats' own validators in the tests.

mod cyclonedx;
mod purl;
mod spdx;

use cks_iso_io::date::rfc3339;
use std::collections::BTreeMap;

pub use cyclonedx::Bom;
pub use cyclonedx::parse as parse_cyclonedx;
pub use spdx::Document;
pub use spdx::parse as parse_spdx;

use crate::lock::{Lock, LockError};
use crate::staged::{Judged, Staged};
use crate::versions::Versions;
use cks_iso_oci::image::{Arch, Reference};

/// Why an SBOM read back from an ISO is not one cks-iso wrote.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not JSON of the document's shape.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// Another format or version than the one written.
    #[error("{found}, not {wanted}")]
    Version {
        /// The format and version the document declares.
        found: String,
        /// The one cks-iso writes, e.g. `SPDX-2.3`.
        wanted: &'static str,
    },
    /// A CycloneDX component without the ISO path cks-iso gives each.
    #[error("component {component} has no cks-iso:path")]
    NoPath {
        /// The component's name.
        component: String,
    },
}

/// The SBOM's name inside the ISO, CycloneDX.
pub const CYCLONEDX_FILE: &str = crate::contract::SBOM_CYCLONEDX;
/// The SBOM's name inside the ISO, SPDX.
pub const SPDX_FILE: &str = crate::contract::SBOM_SPDX;

/// Everything the SBOMs say, from what the build already knows ([`Inventory::of`]).
#[derive(Debug, Clone)]
pub struct Inventory {
    /// The ISO's file name, e.g. `setup-v1.33.1-x86_64.iso`.
    pub iso: String,
    /// What `versions.txt` says: versions, files, images.
    pub versions: Versions,
    /// Per image archive path (`docker/pause:3.10.tar`), its platform manifest's digest. An image
    /// not here is taken as single-platform: its registry digest is its manifest's.
    pub manifests: BTreeMap<String, String>,
    /// Per image archive path (and per signed file's path, `k8s/kubeadm`), what its signature
    /// check found (`verified: <identity> via
    /// <issuer>, Rekor log index N` or `unsigned`); CycloneDX's `cks-iso:signature` property.
    pub signatures: BTreeMap<String, String>,
    /// Per add-on image archive path, where it came from (`add-on image quay.io/x/y:1, asked for`); the
    /// CycloneDX `cks-iso:source` property, in SPDX the package's `sourceInfo`. Core images are
    /// not here.
    pub extras: BTreeMap<String, String>,
    /// The build's epoch (seconds), the documents' timestamp.
    pub epoch: i64,
}

/// The finished ISO file, known only beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsoFacts {
    /// Bytes.
    pub size: u64,
    /// Lowercase hex sha256.
    pub sha256: String,
}

/// What kind of thing one item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Image,
    Binary,
    Manifest,
}

/// One item of the inventory, format-neutral.
#[derive(Debug, Clone)]
struct Item {
    kind: Kind,
    /// Path in the ISO, unique: the item's identity.
    path: String,
    name: String,
    version: Option<String>,
    /// Lowercase hex sha256: of the file, or of an image's platform manifest.
    sha256: String,
    purl: Option<String>,
    /// The upstream URL, if it came from one.
    url: Option<String>,
    /// `versions.txt`'s source, `local file` for a `file://` one; none for images.
    source: Option<String>,
    /// An image's registry (index) digest.
    index_digest: Option<String>,
    /// An image's signature verdict and signer.
    signature: Option<String>,
}

impl Inventory {
    /// The inventory of linux/`arch`'s ISO: its name, records and epoch from the run's `lock`;
    /// per image archive (as `staged` names it) the platform manifest the lock chose and, for an
    /// add-on image, why it is there; per covered artifact what its signature check found.
    pub fn of(lock: &Lock, arch: Arch, staged: &Staged) -> Result<Self, LockError> {
        let entry = lock.arch(arch)?;
        let mut signatures = BTreeMap::new();
        for image in &entry.images {
            let judged = staged.signatures.images.get(&image.reference);
            if let Some(note) = judged.and_then(Judged::note) {
                signatures.insert(staged.archive(&image.reference), note);
            }
        }
        for (path, judged) in &staged.signatures.files {
            if let Some(note) = judged.note() {
                signatures.insert(path.clone(), note);
            }
        }
        Ok(Self {
            iso: entry.iso.clone(),
            versions: Versions::of(lock, arch, staged)?,
            manifests: (entry.images.iter())
                .map(|i| (staged.archive(&i.reference), i.manifest.clone()))
                .collect(),
            signatures,
            extras: (entry.images.iter())
                .filter_map(|i| {
                    let source = format!("add-on image {}, {}", i.reference, i.extra_words()?);
                    Some((staged.archive(&i.reference), source))
                })
                .collect(),
            epoch: lock.epoch,
        })
    }

    /// The items, sorted by path in the ISO.
    fn items(&self) -> Vec<Item> {
        let v = &self.versions;
        let mut items: Vec<Item> = v
            .files
            .iter()
            .map(|f| {
                let mut item = file_item(v, f);
                item.signature = self.signatures.get(&item.path).cloned();
                item
            })
            .collect();
        for image in &v.images {
            let reference = Reference::parse(&image.name).ok();
            let manifest = self
                .manifests
                .get(&image.archive)
                .cloned()
                .unwrap_or_else(|| image.digest.clone());
            let hex = manifest.trim_start_matches("sha256:").to_owned();
            let (name, tag, purl) = match &reference {
                Some(r) => (
                    r.repository(),
                    r.tag().map(str::to_owned),
                    Some(purl::oci(r, &manifest, &v.arch)),
                ),
                None => (image.name.clone(), None, None),
            };
            items.push(Item {
                kind: Kind::Image,
                path: image.archive.clone(),
                name,
                version: tag,
                sha256: hex,
                purl,
                url: None,
                source: self.extras.get(&image.archive).cloned(),
                index_digest: Some(image.digest.clone()),
                signature: self.signatures.get(&image.archive).cloned(),
            });
        }
        items.sort_by(|a, b| a.path.cmp(&b.path));
        items
    }

    /// One line for the ISO's description.
    fn description(&self) -> String {
        let release = self
            .versions
            .cloudstack
            .as_ref()
            .map_or(String::new(), |c| format!(", for CloudStack {c}"));
        format!(
            "CloudStack Kubernetes Service binaries ISO: Kubernetes {}, linux/{}{release}",
            self.versions.kubernetes, self.versions.arch
        )
    }
}

/// A file of `versions.txt` as an item: its name and version from what the path says it is.
fn file_item(v: &Versions, f: &crate::versions::FileRecord) -> Item {
    let (top, base) = f.path.split_once('/').unwrap_or(("", &f.path));
    fn binary<'v>(name: &str, version: &'v str) -> (Kind, String, Option<&'v str>) {
        (Kind::Binary, name.to_owned(), Some(version))
    }
    let (kind, name, version) = match top {
        "k8s" => binary(base, &v.kubernetes),
        "cni" => binary("cni-plugins", &v.cni_plugins),
        "cri-tools" => binary("crictl", &v.crictl),
        "etcd" => binary("etcd", v.etcd.as_deref().unwrap_or("")),
        _ => {
            let version = match f.path.as_str() {
                "autoscaler.yaml" => Some(v.autoscaler.as_str()),
                "provider.yaml" => Some(v.ccm.as_str()),
                "manifest.yaml" | "snapshot-crds.yaml" => v.csi_driver.as_deref(),
                _ => None,
            };
            (Kind::Manifest, f.path.clone(), version)
        }
    };
    let version = version.filter(|s| !s.is_empty()).map(str::to_owned);
    let url = (f.source.starts_with("https://") || f.source.starts_with("http://"))
        .then(|| f.source.clone());
    let purl = match (kind, &version, &url) {
        (Kind::Binary, Some(version), Some(url)) => Some(purl::generic(&name, version, url)),
        _ => None,
    };
    let source = match f.source.starts_with("file://") {
        true => "local file".to_owned(),
        false => f.source.clone(),
    };
    Item {
        kind,
        path: f.path.clone(),
        name,
        version,
        sha256: f.sha256.clone(),
        purl,
        url,
        source: Some(source),
        index_digest: None,
        signature: None,
    }
}

/// The namespace of the documents' UUIDv5s (a v5 of the URL namespace, fixed forever).
fn namespace() -> uuid::Uuid {
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, b"urn:cks-iso:sbom")
}

/// A UUIDv5 over `content`: the same document content, the same ID.
fn content_uuid(content: &[u8]) -> uuid::Uuid {
    uuid::Uuid::new_v5(&namespace(), content)
}

/// Serialises a document: pretty JSON with a final newline.
fn to_json(value: &impl serde::Serialize) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("plain JSON values");
    text.push('\n');
    text
}

/// The CycloneDX 1.6 document; with `iso`, the copy beside the ISO.
pub fn cyclonedx(inventory: &Inventory, iso: Option<&IsoFacts>) -> String {
    cyclonedx::render(inventory, iso)
}

/// The SPDX 2.3 document; with `iso`, the copy beside the ISO.
pub fn spdx(inventory: &Inventory, iso: Option<&IsoFacts>) -> String {
    spdx::render(inventory, iso)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::versions::{FileRecord, ImageRecord};

    fn versions() -> Versions {
        let file = |path: &str, fill: &str, source: &str| FileRecord {
            path: path.into(),
            sha256: fill.repeat(64),
            source: source.into(),
        };
        Versions {
            kubernetes: "v1.33.1".into(),
            arch: "arm64".into(),
            cni_plugins: "v1.6.2".into(),
            crictl: "v1.33.0".into(),
            etcd: None,
            autoscaler: "1.33.6".into(),
            ccm: "v1.2.0".into(),
            csi_driver: None,
            cloudstack: None,
            files: vec![
                file("network.yaml", "e", "file:///home/me/calico.yaml"),
                file(
                    "k8s/kubeadm",
                    "a",
                    "https://dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubeadm",
                ),
                file(
                    "kubelet.service",
                    "b",
                    "builtin:cks-iso/kubeadm-units-1.18+",
                ),
            ],
            images: vec![ImageRecord {
                name: "registry.k8s.io/pause:3.10".into(),
                digest: format!("sha256:{}", "c".repeat(64)),
                archive: "docker/pause:3.10.tar".into(),
            }],
        }
    }

    fn inventory(v: &Versions) -> Inventory {
        Inventory {
            iso: "setup-v1.33.1-aarch64.iso".into(),
            versions: v.clone(),
            manifests: BTreeMap::from([(
                "docker/pause:3.10.tar".to_owned(),
                format!("sha256:{}", "d".repeat(64)),
            )]),
            signatures: BTreeMap::new(),
            extras: BTreeMap::new(),
            epoch: 1_700_000_000,
        }
    }

    #[test]
    fn both_documents_list_every_item_with_its_hash_and_read_back() {
        let v = versions();
        let inv = inventory(&v);
        let bom = parse_cyclonedx(&cyclonedx(&inv, None)).unwrap();
        let paths: Vec<_> = bom
            .components
            .iter()
            .map(|c| c.property("cks-iso:path").unwrap())
            .collect();
        assert_eq!(
            paths,
            [
                "docker/pause:3.10.tar",
                "k8s/kubeadm",
                "kubelet.service",
                "network.yaml"
            ]
        );
        let pause = &bom.components[0];
        assert_eq!(pause.kind, "container");
        assert_eq!(pause.sha256(), Some("d".repeat(64).as_str()));
        assert_eq!(
            pause.property("cks-iso:index-digest"),
            Some(format!("sha256:{}", "c".repeat(64)).as_str())
        );
        assert_eq!(
            bom.components[3].property("cks-iso:source"),
            Some("local file")
        );
        assert_eq!(bom.metadata.timestamp, "2023-11-14T22:13:20Z");
        assert!(
            bom.metadata.component.sha256().is_none(),
            "the copy inside has no ISO hash"
        );

        let doc = parse_spdx(&spdx(&inv, None)).unwrap();
        let kubeadm = doc
            .packages
            .iter()
            .find(|p| p.package_file_name.as_deref() == Some("k8s/kubeadm"))
            .unwrap();
        assert_eq!(kubeadm.version_info.as_deref(), Some("v1.33.1"));
        assert_eq!(kubeadm.sha256(), Some("a".repeat(64).as_str()));
        assert!(kubeadm.download_location.starts_with("https://dl.k8s.io/"));
        assert_eq!(
            kubeadm.external_refs[0].locator,
            "pkg:generic/kubeadm@v1.33.1?download_url=https://dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubeadm"
        );
        let network = doc
            .packages
            .iter()
            .find(|p| p.name == "network.yaml")
            .unwrap();
        assert_eq!(network.download_location, "NOASSERTION", "a local file");
    }

    #[test]
    fn the_same_inputs_give_the_same_bytes_and_the_copy_beside_carries_the_iso() {
        let v = versions();
        let inv = inventory(&v);
        assert_eq!(cyclonedx(&inv, None), cyclonedx(&inv, None));
        assert_eq!(spdx(&inv, None), spdx(&inv, None));
        let facts = IsoFacts {
            size: 1234,
            sha256: "f".repeat(64),
        };
        let beside = parse_cyclonedx(&cyclonedx(&inv, Some(&facts))).unwrap();
        assert_eq!(
            beside.metadata.component.sha256(),
            Some(facts.sha256.as_str())
        );
        assert_eq!(
            beside.metadata.component.property("cks-iso:size"),
            Some("1234")
        );
        let inside = parse_cyclonedx(&cyclonedx(&inv, None)).unwrap();
        assert_ne!(
            inside.serial_number, beside.serial_number,
            "content-derived"
        );
        let doc = parse_spdx(&spdx(&inv, Some(&facts))).unwrap();
        assert_eq!(doc.packages[0].sha256(), Some(facts.sha256.as_str()));
        let mut other = versions();
        other.files[1].sha256 = "9".repeat(64);
        assert_ne!(
            parse_spdx(&spdx(&inventory(&other), None))
                .unwrap()
                .document_namespace,
            parse_spdx(&spdx(&inv, None)).unwrap().document_namespace
        );
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
    }
}
