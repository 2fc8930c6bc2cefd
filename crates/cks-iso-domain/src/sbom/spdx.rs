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
    /// Where the file came from when that URL cannot be the `downloadLocation`.
    #[serde(
        rename = "sourceInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub source_info: Option<String>,
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
        source_info: None,
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
        match item.url {
            Some(url) if is_spdx_url(&url) => p.download_location = url,
            // The validators would reject the document: the URL goes where any text may.
            Some(url) => p.source_info = Some(format!("downloaded from {url}")),
            // An add-on image: where it came from (a core image has no source).
            None if item.index_digest.is_some() => p.source_info = item.source.clone(),
            None => {}
        }
        p.comment = match (&item.index_digest, &item.source) {
            (Some(index), _) => Some(format!(
                "registry digest {index}; the checksum is the platform manifest's{}",
                item.signature
                    .as_ref()
                    .map_or(String::new(), |s| format!("; signature {s}"))
            )),
            (None, Some(source))
                if p.download_location == NOASSERTION && p.source_info.is_none() =>
            {
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

/// Whether `url` can be a `downloadLocation` that the SPDX validators accept: `http(s)://`, a
/// host name (not an IP address or `localhost`) of letters and digits joined by single `.` or
/// `-`, ending in a label of at least two letters, an optional port, then a path or nothing. A
/// few URLs the validators would take are refused (they keep their URL in `sourceInfo`), none
/// they reject is kept.
pub(crate) fn is_spdx_url(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return false;
    };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if !tail.is_empty() && tail.chars().any(|c| c.is_control()) {
        return false;
    }
    let (host, port) = authority.split_once(':').unwrap_or((authority, ""));
    if authority.contains(':') && (port.is_empty() || port.len() > 5) {
        return false;
    }
    if !port.chars().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let Some((_, last)) = host.rsplit_once('.') else {
        return false;
    };
    let separators_single = !host.starts_with(['.', '-'])
        && !host.ends_with(['.', '-'])
        && !host.contains("..")
        && !host.contains("--")
        && !host.contains(".-")
        && !host.contains("-.");
    separators_single
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        && last.len() >= 2
        && last.chars().all(|c| c.is_ascii_alphabetic())
}

/// Reads an SPDX document back; the error says what does not fit.
pub fn parse(text: &str) -> Result<Document, super::ReadError> {
    let document: Document = serde_json::from_str(text)?;
    if document.spdx_version != "SPDX-2.3" {
        return Err(super::ReadError::Version {
            found: document.spdx_version,
            wanted: "SPDX-2.3",
        });
    }
    Ok(document)
}

#[cfg(test)]
mod tests {
    /// What `pyspdxtools` 0.8.5 answered for these as a package's `downloadLocation`: the kept
    /// ones it accepts, the others it rejects ("must be a valid URL or download location").
    #[test]
    fn download_locations_are_kept_only_where_the_validators_accept_them() {
        for url in [
            "https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm",
            "https://mirror.corp.internal/x.yaml",
            "https://Mirror.Example.COM:8443/x",
            "https://example.com",
        ] {
            assert!(super::is_spdx_url(url), "{url} is accepted");
        }
        for url in [
            "http://10.1.2.3:8080/calico.yaml",
            "https://10.1.2.3/calico.yaml",
            "http://localhost:5000/x.yaml",
            "http://127.0.0.1:41234/raw.githubusercontent.com/a/b.yaml",
            "https://ex_ample.com/x",
            "http://[::1]:80/x",
            "ftp-less",
        ] {
            assert!(!super::is_spdx_url(url), "{url} is rejected");
        }
    }
}
