//! SPDX 2.3 JSON: the fields cks-iso writes, and reads back in `verify`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{Inventory, IsoFacts, Kind, content_uuid, purl, rfc3339, to_json};

const NOASSERTION: &str = "NOASSERTION";
const ISO_ID: &str = "SPDXRef-ISO";

/// An SPDX document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Document {
    /// `SPDX-2.3`.
    #[serde(rename = "spdxVersion")]
    pub spdx_version: String,
    #[serde(rename = "dataLicense")]
    data_license: String,
    #[serde(rename = "SPDXID")]
    spdx_id: String,
    name: String,
    /// A URI ending in the content's UUIDv5.
    #[serde(rename = "documentNamespace")]
    pub document_namespace: String,
    #[serde(rename = "creationInfo")]
    creation_info: CreationInfo,
    /// The ISO first, then one per image, binary or tarball, manifest.
    #[serde(default)]
    pub packages: Vec<Package>,
    #[serde(default)]
    relationships: Vec<Relationship>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct CreationInfo {
    created: String,
    creators: Vec<String>,
}

/// One package.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Package {
    /// `SPDXRef-…`.
    #[serde(rename = "SPDXID")]
    pub spdx_id: String,
    /// The name.
    pub name: String,
    /// Version or tag.
    #[serde(
        rename = "versionInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub version_info: Option<String>,
    /// The path in the ISO.
    #[serde(
        rename = "packageFileName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub package_file_name: Option<String>,
    /// The upstream URL, or `NOASSERTION`.
    #[serde(rename = "downloadLocation")]
    pub download_location: String,
    #[serde(rename = "filesAnalyzed")]
    files_analyzed: bool,
    /// SHA256.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checksums: Vec<Checksum>,
    #[serde(rename = "licenseConcluded")]
    license_concluded: String,
    #[serde(rename = "licenseDeclared")]
    license_declared: String,
    #[serde(rename = "copyrightText")]
    copyright_text: String,
    #[serde(
        rename = "primaryPackagePurpose",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    primary_package_purpose: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comment: Option<String>,
    /// The purl.
    #[serde(
        rename = "externalRefs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub external_refs: Vec<ExternalRef>,
}

impl Package {
    /// The SHA256 checksum, if listed.
    pub fn sha256(&self) -> Option<&str> {
        self.checksums
            .iter()
            .find(|c| c.algorithm == "SHA256")
            .map(|c| c.checksum_value.as_str())
    }
}

/// A checksum.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checksum {
    /// `SHA256`.
    pub algorithm: String,
    /// Lowercase hex.
    #[serde(rename = "checksumValue")]
    pub checksum_value: String,
}

/// A purl reference.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExternalRef {
    #[serde(rename = "referenceCategory")]
    category: String,
    #[serde(rename = "referenceType")]
    kind: String,
    /// The purl.
    #[serde(rename = "referenceLocator")]
    pub locator: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Relationship {
    #[serde(rename = "spdxElementId")]
    element: String,
    #[serde(rename = "relationshipType")]
    kind: String,
    #[serde(rename = "relatedSpdxElement")]
    related: String,
}

fn sha256(hex: &str) -> Vec<Checksum> {
    vec![Checksum {
        algorithm: "SHA256".into(),
        checksum_value: hex.to_owned(),
    }]
}

/// `SPDXRef-<path>` with what SPDX IDs cannot hold as `-`, made unique with a counter.
fn spdx_id(path: &str, taken: &mut BTreeSet<String>) -> String {
    let clean: String = path
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() || c == '.' {
            true => c,
            false => '-',
        })
        .collect();
    let mut id = format!("SPDXRef-{clean}");
    let mut n = 2;
    while !taken.insert(id.clone()) {
        id = format!("SPDXRef-{clean}-{n}");
        n += 1;
    }
    id
}

fn package(spdx_id: String, name: String, purpose: &str) -> Package {
    Package {
        spdx_id,
        name,
        version_info: None,
        package_file_name: None,
        download_location: NOASSERTION.into(),
        files_analyzed: false,
        checksums: Vec::new(),
        license_concluded: NOASSERTION.into(),
        license_declared: NOASSERTION.into(),
        copyright_text: NOASSERTION.into(),
        primary_package_purpose: Some(purpose.into()),
        comment: None,
        external_refs: Vec::new(),
    }
}

pub(super) fn render(inventory: &Inventory, iso: Option<&IsoFacts>) -> String {
    let mut taken = BTreeSet::from([ISO_ID.to_owned()]);
    let mut main = package(ISO_ID.into(), inventory.iso.clone(), "FILE");
    main.version_info = Some(inventory.versions.kubernetes.clone());
    main.comment = Some(inventory.description());
    if let Some(iso) = iso {
        main.checksums = sha256(&iso.sha256);
        main.comment = Some(format!("{}; {} bytes", inventory.description(), iso.size));
    }
    let mut packages = vec![main];
    let mut relationships = vec![Relationship {
        element: "SPDXRef-DOCUMENT".into(),
        kind: "DESCRIBES".into(),
        related: ISO_ID.into(),
    }];
    for item in inventory.items() {
        let purpose = match item.kind {
            Kind::Image => "CONTAINER",
            Kind::Binary => "APPLICATION",
            Kind::Manifest => "FILE",
        };
        let mut p = package(spdx_id(&item.path, &mut taken), item.name, purpose);
        p.version_info = item.version;
        p.package_file_name = Some(item.path);
        p.checksums = sha256(&item.sha256);
        if let Some(url) = item.url {
            p.download_location = url;
        }
        p.comment = match (&item.index_digest, &item.source) {
            (Some(index), _) => Some(format!(
                "registry digest {index}; the checksum is the platform manifest's{}",
                item.signature
                    .as_ref()
                    .map_or(String::new(), |s| format!("; signature {s}"))
            )),
            (None, Some(source)) if p.download_location == NOASSERTION => {
                Some(format!("source: {source}"))
            }
            // A signed download (a dl.k8s.io binary): its signer.
            _ => item.signature.as_ref().map(|s| format!("signature {s}")),
        };
        p.external_refs = item
            .purl
            .into_iter()
            .map(|locator| ExternalRef {
                category: "PACKAGE-MANAGER".into(),
                kind: "purl".into(),
                locator,
            })
            .collect();
        relationships.push(Relationship {
            element: ISO_ID.into(),
            kind: "CONTAINS".into(),
            related: p.spdx_id.clone(),
        });
        packages.push(p);
    }
    let mut document = Document {
        spdx_version: "SPDX-2.3".into(),
        data_license: "CC0-1.0".into(),
        spdx_id: "SPDXRef-DOCUMENT".into(),
        name: inventory.iso.clone(),
        document_namespace: String::new(),
        creation_info: CreationInfo {
            created: rfc3339(inventory.epoch),
            creators: vec![format!("Tool: cks-iso-{}", env!("CARGO_PKG_VERSION"))],
        },
        packages,
        relationships,
    };
    let uuid = content_uuid(to_json(&document).as_bytes());
    document.document_namespace = format!(
        "https://spdx.org/spdxdocs/cks-iso/{}-{uuid}",
        purl::encode(&inventory.iso, b"")
    );
    to_json(&document)
}

/// Reads an SPDX document back; the error says what does not fit.
pub(crate) fn parse(text: &str) -> Result<Document, String> {
    let document: Document = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if document.spdx_version != "SPDX-2.3" {
        return Err(format!("{}, not SPDX-2.3", document.spdx_version));
    }
    Ok(document)
}
