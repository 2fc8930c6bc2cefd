//! CloudStack, the client side: registering built ISOs as CloudStack Kubernetes supported
//! versions, and keeping the list tidy. What each CloudStack release's nodes read from the ISO is
//! the domain crate's pure half ([`cks_iso_domain::cloudstack`]), re-exported here under the
//! names the rest of the crate uses ([`CloudStack`], [`UnknownRelease`]), as [`crate::release`]
//! does for Kubernetes releases; so `crate::registry` means the OCI distribution API only.
//!
//! CloudStack's side has sharp edges a careful client must handle (docs/guide/registration.md):
//! `addKubernetesSupportedVersion` is not idempotent, returns before the ISO exists, ignores
//! parameters it does not know (`arch` before 4.20.1 registers x86_64), and a failed download
//! only shows as the ISO going back to `Allocated` with a status text in `listIsos`. So this
//! module looks before it adds ([`plan`]), checks the URL as the secondary storage will fetch it
//! ([`url`]), asks `listCapabilities` first, waits for `Ready` in every zone ([`run`]), and
//! retires old versions ([`retire`]). The API client ([`api`]) signs as the management server
//! verifies ([`sign`]); credentials come from the operator's existing clients' files
//! ([`credentials`]).
//!
//! Its input is an [`IsoToRegister`], read from the ISO itself (`versions.txt` and its bytes),
//! never guessed from a file name; `build --register` makes it from the build's
//! `BuiltIso` (the conversion lives in `pipeline::author`, so this module does not depend on the
//! pipeline that depends on its releases). [`mod@line`] renders an ISO's parameters as the
//! CloudMonkey line and JSON fields `build` prints.

pub mod answers;
pub mod api;
pub mod credentials;
pub mod line;
pub mod plan;
pub mod retire;
pub mod run;
pub mod sign;
pub mod url;

use std::path::{Path, PathBuf};

use crate::image::Arch;
use crate::versions::Versions;
use cks_iso_iso9660::read::IsoReader;

pub use api::{Api, ApiError};
// The pure half: what each release reads, from the domain crate.
pub use cks_iso_domain::cloudstack::{CloudStack, UnknownRelease};
pub use run::{Options, RegistrationError, Retire};

/// The fewest CPUs CloudStack accepts for a CKS node (`mincpunumber`).
pub const MIN_CPU: u32 = 2;
/// The least memory, in MB, CloudStack accepts for a CKS node (`minmemory`).
pub const MIN_MEMORY: u32 = 2048;

/// One ISO to register: what `addKubernetesSupportedVersion` needs to know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsoToRegister {
    /// The file.
    pub path: PathBuf,
    /// `1.33.1` (MAJOR.MINOR.PATCH, no `v`).
    pub semver: String,
    /// The version's name: the file name without `.iso` (`setup-v1.33.1-x86_64`).
    pub name: String,
    /// The architecture its binaries are for.
    pub arch: Arch,
    /// Lowercase hex SHA-256 of the file.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
}

/// An ISO that cannot be registered as given.
#[derive(Debug, thiserror::Error)]
pub enum IsoError {
    /// Not readable, or not ISO 9660.
    #[error("cannot read {} as an ISO: {reason}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// No `versions.txt`: not built by cks-iso, so its version and arch are unknown.
    #[error("{} has no readable versions.txt ({reason}), so its Kubernetes version and architecture are unknown", path.display())]
    NoVersions {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl IsoToRegister {
    /// Reads version and arch from the ISO's `versions.txt` and hashes the file.
    pub fn read(path: &Path) -> Result<Self, IsoError> {
        let unreadable = |reason: String| IsoError::Unreadable {
            path: path.to_owned(),
            reason,
        };
        let no_versions = |reason: String| IsoError::NoVersions {
            path: path.to_owned(),
            reason,
        };
        let reader = IsoReader::open(path).map_err(|e| unreadable(e.reason))?;
        let text = reader
            .read_small(crate::contract::VERSIONS, 16 << 20)
            .map_err(|e| no_versions(e.to_string()))?;
        let versions = Versions::parse(&String::from_utf8_lossy(&text))
            .map_err(|e| no_versions(e.to_string()))?;
        let arch = Arch::parse(&versions.arch).map_err(|e| no_versions(e.to_string()))?;
        let semver = versions.kubernetes.trim_start_matches('v').to_owned();
        let file = crate::input::open_regular(path).map_err(|e| unreadable(e.to_string()))?;
        let size = file
            .metadata()
            .map_err(|e| unreadable(e.to_string()))?
            .len();
        let sha256 = crate::image::Sha256Sum::of_reader(std::io::BufReader::new(file))
            .map_err(|e| unreadable(e.to_string()))?
            .to_string();
        Ok(Self {
            path: path.to_owned(),
            semver,
            name: Self::name_of(path),
            arch,
            sha256,
            size,
        })
    }

    /// The version name for the file at `path`: its file name without `.iso`.
    pub fn name_of(path: &Path) -> String {
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        file.strip_suffix(".iso").unwrap_or(&file).to_owned()
    }

    /// The file name, as it is published.
    pub fn file_name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// `addKubernetesSupportedVersion`'s `checksum`: `{SHA-256}` and lowercase hex (bare hex is
    /// taken as MD5; the comparison is a string one, so the case matters).
    pub fn checksum(&self) -> String {
        format!("{{SHA-256}}{}", self.sha256.to_ascii_lowercase())
    }

    /// `arch`: `x86_64` or `aarch64`, exactly (`arm64` is refused with 431).
    pub fn cloudstack_arch(&self) -> &'static str {
        self.arch.uname()
    }
}
