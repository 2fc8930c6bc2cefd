//! Platforms and the choice of one manifest from an index.
//!
//! An ISO is built for one target (`linux/amd64` or `linux/arm64`), never for the build host, so
//! an arm64 ISO can be built on an amd64 machine. arm64 entries may carry `variant: v8` or no
//! variant; both match. buildx attestation entries (`unknown/unknown`, annotated
//! `vnd.docker.reference.type: attestation-manifest`) are not images and are skipped.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Descriptor, ImageError};

/// The annotation buildx puts on attestation manifests in an index.
pub const REFERENCE_TYPE: &str = "vnd.docker.reference.type";

/// The CPU architectures CKS nodes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arch {
    /// x86-64.
    Amd64,
    /// AArch64.
    Arm64,
}

impl Arch {
    /// Accepts `amd64|x86_64|arm64|aarch64`, as the contract does.
    pub fn parse(text: &str) -> Result<Self, ImageError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "amd64" | "x86_64" | "x86-64" => Ok(Self::Amd64),
            "arm64" | "aarch64" => Ok(Self::Arm64),
            _ => Err(ImageError::InvalidArch {
                arch: text.to_owned(),
            }),
        }
    }

    /// The OCI / Go name (`amd64`, `arm64`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Amd64 => "amd64",
            Self::Arm64 => "arm64",
        }
    }

    /// The name in upstream download URLs: the same as [`Arch::as_str`].
    pub fn k8s(self) -> &'static str {
        self.as_str()
    }

    /// `x86_64` or `aarch64`, as `uname -m` says and the ISO's file name ends.
    pub fn uname(self) -> &'static str {
        match self {
            Self::Amd64 => "x86_64",
            Self::Arm64 => "aarch64",
        }
    }

    /// The ELF `e_machine` of its executables.
    pub fn e_machine(self) -> u16 {
        match self {
            Self::Amd64 => 62,
            Self::Arm64 => 183,
        }
    }
}

impl Serialize for Arch {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A platform as an index entry or an image config states it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Platform {
    /// CPU architecture (`amd64`, `arm64`, `unknown`).
    pub architecture: String,
    /// Operating system (`linux`, `unknown`).
    pub os: String,
    /// CPU variant (`v8`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl Platform {
    /// Whether this is the `linux/<arch>` an ISO for `arch` needs.
    pub fn matches(&self, arch: Arch) -> bool {
        let variant_ok = match arch {
            Arch::Amd64 => self.variant.is_none(),
            Arch::Arm64 => matches!(self.variant.as_deref(), None | Some("v8")),
        };
        self.os == "linux" && self.architecture == arch.as_str() && variant_ok
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        match &self.variant {
            Some(variant) => write!(f, "/{variant}"),
            None => Ok(()),
        }
    }
}

/// Whether an index entry is a buildx attestation rather than an image.
pub fn is_attestation(entry: &Descriptor) -> bool {
    let unknown = entry
        .platform
        .as_ref()
        .is_some_and(|p| p.os == "unknown" && p.architecture == "unknown");
    let annotated = entry
        .annotations
        .get(REFERENCE_TYPE)
        .is_some_and(|t| t == "attestation-manifest");
    unknown || annotated
}

/// The entry of an index for `arch`, or the platforms it does have. The first match wins, so the
/// choice depends only on the index bytes.
pub fn select(entries: &[Descriptor], arch: Arch) -> Result<&Descriptor, Vec<String>> {
    let images = entries.iter().filter(|e| !is_attestation(e));
    if let Some(found) = images
        .clone()
        .find(|e| e.platform.as_ref().is_some_and(|p| p.matches(arch)))
    {
        return Ok(found);
    }
    Err(images
        .map(|e| {
            e.platform
                .as_ref()
                .map_or("unspecified".into(), Platform::to_string)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::{Digest, MediaType};

    fn entry(os: &str, arch: &str, variant: Option<&str>, n: u8) -> Descriptor {
        let mut d = Descriptor::new(MediaType::OciManifest, Digest::of(&[n]), 1);
        d.platform = Some(Platform {
            architecture: arch.into(),
            os: os.into(),
            variant: variant.map(Into::into),
        });
        d
    }

    #[test]
    fn arm64_accepts_variant_v8_or_none_and_skips_attestations() {
        let index = [
            entry("unknown", "unknown", None, 0),
            entry("linux", "amd64", None, 1),
            entry("linux", "arm", Some("v7"), 2),
            entry("linux", "arm64", Some("v8"), 3),
        ];
        assert_eq!(select(&index, Arch::Arm64).unwrap().digest, index[3].digest);
        assert_eq!(select(&index, Arch::Amd64).unwrap().digest, index[1].digest);
        let plain = [entry("linux", "arm64", None, 4)];
        assert_eq!(select(&plain, Arch::Arm64).unwrap().digest, plain[0].digest);
    }

    #[test]
    fn missing_platform_lists_what_the_index_has() {
        let index = [
            entry("linux", "amd64", None, 1),
            entry("unknown", "unknown", None, 0),
        ];
        assert_eq!(select(&index, Arch::Arm64).unwrap_err(), ["linux/amd64"]);
    }

    #[test]
    fn arch_names_follow_the_contract() {
        assert_eq!(Arch::parse("x86_64").unwrap(), Arch::Amd64);
        assert_eq!(Arch::parse("aarch64").unwrap(), Arch::Arm64);
        assert!(Arch::parse("riscv64").is_err());
    }
}
