//! The four manifest media types and the JSON models we read from them.
//!
//! Registries serve an image as either an index (OCI image index, Docker manifest list v2) that
//! names one manifest per platform, or directly as a manifest (OCI, Docker v2) that names a config
//! and compressed layers. The models here are for reading only: manifest bytes are never
//! re-serialised, because their digest is their identity and must survive byte for byte.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use super::{Digest, ImageError, Platform};

/// Largest manifest, index or config we read into memory (real ones are a few KiB).
pub const MAX_MANIFEST_SIZE: u64 = 4 * 1024 * 1024;

/// The media types a manifest or index can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaType {
    /// `application/vnd.oci.image.index.v1+json`
    OciIndex,
    /// `application/vnd.docker.distribution.manifest.list.v2+json`
    DockerList,
    /// `application/vnd.oci.image.manifest.v1+json`
    OciManifest,
    /// `application/vnd.docker.distribution.manifest.v2+json`
    DockerManifest,
}

impl MediaType {
    /// All four, in the order a registry client offers them in `Accept`.
    pub const ALL: [Self; 4] = [
        Self::OciIndex,
        Self::DockerList,
        Self::OciManifest,
        Self::DockerManifest,
    ];

    /// The registered name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OciIndex => "application/vnd.oci.image.index.v1+json",
            Self::DockerList => "application/vnd.docker.distribution.manifest.list.v2+json",
            Self::OciManifest => "application/vnd.oci.image.manifest.v1+json",
            Self::DockerManifest => "application/vnd.docker.distribution.manifest.v2+json",
        }
    }

    /// The type named `text`, if it is one of the four.
    pub fn from_name(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
    }

    /// Whether it lists per-platform manifests.
    pub fn is_index(self) -> bool {
        matches!(self, Self::OciIndex | Self::DockerList)
    }

    /// The type of a manifest or index from its own bytes: its `mediaType` field, else its shape
    /// (OCI allows leaving the field out).
    pub fn sniff(bytes: &[u8]) -> Result<Self, NotAManifest> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Probe {
            schema_version: Option<u32>,
            media_type: Option<String>,
            manifests: Option<IgnoredAny>,
            config: Option<IgnoredAny>,
        }
        let probe: Probe =
            serde_json::from_slice(bytes).map_err(|e| NotAManifest(e.to_string()))?;
        if probe.schema_version != Some(2) {
            return Err(NotAManifest(format!(
                "schemaVersion {:?} is not 2 (Docker schema 1 is not supported)",
                probe.schema_version
            )));
        }
        match (probe.media_type, probe.manifests, probe.config) {
            (Some(name), _, _) => Self::from_name(&name)
                .ok_or_else(|| NotAManifest(format!("unsupported mediaType {name:?}"))),
            (None, Some(_), None) => Ok(Self::OciIndex),
            (None, None, Some(_)) => Ok(Self::OciManifest),
            _ => Err(NotAManifest("neither an index nor a manifest".into())),
        }
    }
}

impl fmt::Display for MediaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for MediaType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A typed, sized, content-addressed pointer to a blob (OCI descriptor).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// The blob's media type.
    pub media_type: String,
    /// The blob's digest.
    pub digest: Digest,
    /// The blob's size in bytes.
    pub size: u64,
    /// For index entries: the platform of the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Descriptor {
    /// A descriptor without platform or annotations.
    pub fn new(media_type: impl fmt::Display, digest: Digest, size: u64) -> Self {
        Self {
            media_type: media_type.to_string(),
            digest,
            size,
            platform: None,
            annotations: BTreeMap::new(),
        }
    }
}

/// An OCI image index or Docker manifest list.
#[derive(Debug, Clone, Deserialize)]
pub struct Index {
    /// One entry per platform (and attestation).
    pub manifests: Vec<Descriptor>,
}

/// An OCI or Docker v2 image manifest.
#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    /// The image config.
    pub config: Descriptor,
    /// The compressed layers, base first.
    pub layers: Vec<Descriptor>,
}

/// Parses JSON `bytes` of a blob that should be a `what`, naming it on failure.
pub fn parse<T: for<'de> Deserialize<'de>>(
    bytes: &[u8],
    digest: &Digest,
    what: &'static str,
) -> Result<T, ImageError> {
    serde_json::from_slice(bytes).map_err(|e| ImageError::Malformed {
        digest: digest.clone(),
        what,
        reason: e.to_string(),
    })
}

/// Bytes that are not a manifest or index cks-iso can use, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotAManifest(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_type_comes_from_the_field_or_the_shape() {
        let list = br#"{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json","manifests":[]}"#;
        assert_eq!(MediaType::sniff(list).unwrap(), MediaType::DockerList);
        let bare_index = br#"{"schemaVersion":2,"manifests":[]}"#;
        assert_eq!(MediaType::sniff(bare_index).unwrap(), MediaType::OciIndex);
        let bare_manifest = br#"{"schemaVersion":2,"config":{},"layers":[]}"#;
        assert_eq!(
            MediaType::sniff(bare_manifest).unwrap(),
            MediaType::OciManifest
        );
    }

    #[test]
    fn schema_1_and_unknown_types_are_refused() {
        assert!(MediaType::sniff(br#"{"schemaVersion":1,"fsLayers":[]}"#).is_err());
        let other = br#"{"schemaVersion":2,"mediaType":"text/html"}"#;
        assert!(MediaType::sniff(other).unwrap_err().0.contains("text/html"));
    }
}
