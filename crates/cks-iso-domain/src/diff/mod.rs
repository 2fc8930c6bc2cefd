//! `cks-iso diff`: what changed between two ISOs or locks, as data a person or a script reads.
//!
//! Operators carry last month's ISO and this month's across an air gap and must say what differs
//! before they roll it out: which Kubernetes, CNI or autoscaler, which binaries, which images at
//! which digest, which lines of which manifest. Comparing two multi-GB ISOs by hand (mount,
//! `sha256sum`, `skopeo inspect`) is slow and misses things; the lock and the directory already
//! say it all. This module compares two [`Side`]s — each built by `app` from a lock, an ISO's
//! embedded lock, an older ISO's `versions.txt`, plus the ISO's directory and manifest texts — and
//! returns a [`Report`] that renders as text ([`render`]) or serialises as the documented JSON.
//!
//! Pure: no file system, no network. What a side does not know (a lock has no directory, an ISO
//! without a lock has no platform digests) is left out of the comparison, never reported as a
//! change.

mod compare;
mod gaps;
mod render;
mod side;
mod signature;

use std::collections::BTreeMap;

use serde::Serialize;

pub use compare::compare;
pub use render::render;
pub use signature::{Signature, SignatureStatus, SignerKind};

/// Where a side's versions, files and images come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// A `cks-iso.lock` (a lock file, or the one at an ISO's root).
    Lock,
    /// An ISO's `versions.txt` (an ISO from before the lock): no platform digests, no kubeadm.
    VersionsTxt,
    /// Neither (an ISO from the upstream script): only its entries and manifests.
    None,
}

/// What kind of file a side was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// An ISO 9660 image.
    Iso,
    /// A `cks-iso.lock` file.
    Lock,
}

/// One side of the comparison, as `app` read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    /// The file as the user named it.
    pub label: String,
    /// ISO or lock.
    pub kind: Kind,
    /// Where its versions, files and images come from.
    pub source: Source,
    /// Facts of the build (`epoch`, `cks-iso`, `volume-id`, `name`), those known.
    pub build: BTreeMap<String, String>,
    /// Component versions by name; `None` when not bundled. A name is absent when unknown.
    pub versions: BTreeMap<String, Option<String>>,
    /// Root manifests and unit files by path: sha256 (lowercase hex); an ISO's from its bytes.
    pub manifests: BTreeMap<String, String>,
    /// Per architecture; empty when unknown.
    pub arches: BTreeMap<String, ArchSide>,
    /// Every ISO entry by path (no leading `/`, the root is `/`); `None` for a lock.
    pub entries: Option<BTreeMap<String, EntryInfo>>,
    /// Texts of the root manifests an ISO holds, by path; empty for a lock.
    pub texts: BTreeMap<String, String>,
    /// What an ISO's own lock names but the ISO does not hold as named (see [`Gap`]).
    pub gaps: Vec<Gap>,
    /// The signature beside an ISO, as `app` checked it; `None` for a lock, or when not looked
    /// for.
    pub signature: Option<Signature>,
}

/// An entry an ISO's embedded lock names that the ISO lacks, or holds as another kind of entry
/// or with another size: the lock alone would call such an ISO identical to the one it came from.
/// Judged from the directory only, so `diff` reads no archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// The ISO (as the user named it).
    pub iso: String,
    /// The entry's path.
    pub path: String,
    /// What is wrong.
    pub problem: String,
}

/// One architecture's downloads and images.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchSide {
    /// Files by ISO path.
    pub files: BTreeMap<String, FileInfo>,
    /// Images by reference.
    pub images: BTreeMap<String, ImageInfo>,
}

/// A downloaded file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileInfo {
    /// Bytes, when known.
    pub size: Option<u64>,
    /// sha256, lowercase hex.
    pub sha256: String,
}

/// An image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageInfo {
    /// What the reference resolved to at the registry, `sha256:…`.
    pub digest: String,
    /// The platform manifest, `sha256:…`, when known.
    pub manifest: Option<String>,
    /// Manifest, config and layers in bytes, when known.
    pub size: Option<u64>,
    /// For an add-on image, why it is in the ISO, as the lock says it (`image`, or
    /// `manifest:<path>`); `None` for a core image or when unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<String>,
}

/// A root manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ManifestInfo {
    /// sha256 of the bytes in the ISO, lowercase hex.
    pub sha256: String,
}

/// What an ISO entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A device, FIFO or socket.
    Other,
}

/// One ISO entry as its directory records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryInfo {
    /// File, directory, ….
    pub kind: EntryKind,
    /// Bytes.
    pub size: u64,
    /// Permission bits, as octal text (`"0644"`).
    #[serde(serialize_with = "octal")]
    pub mode: u32,
}

fn octal<S: serde::Serializer>(mode: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{mode:04o}"))
}

/// How an item differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// Only in B.
    Added,
    /// Only in A.
    Removed,
    /// In both, different.
    Changed,
}

/// One item that differs: its name (path or reference) and both sides (`None` where absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change<T> {
    /// Path, reference or version name.
    pub name: String,
    /// Added, removed or changed.
    pub change: ChangeKind,
    /// A's side.
    pub a: Option<T>,
    /// B's side.
    pub b: Option<T>,
}

impl<T> Change<T> {
    /// The change between `a` and `b`; `None` when both are absent.
    pub fn new(name: &str, a: Option<T>, b: Option<T>) -> Option<Self> {
        let change = match (&a, &b) {
            (None, None) => return None,
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            (Some(_), Some(_)) => ChangeKind::Changed,
        };
        Some(Self {
            name: name.to_owned(),
            change,
            a,
            b,
        })
    }
}

/// A manifest that differs, with the unified diff of its text when both sides had it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ManifestChange {
    /// The path, the change and both sha256.
    #[serde(flatten)]
    pub change: Change<ManifestInfo>,
    /// `--- a/PATH`, `+++ b/PATH` and hunks with 3 lines of context; `None` without both texts.
    pub diff: Option<String>,
}

/// One pair of architectures compared (or one only a side has).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchChange {
    /// A's architecture, `None` when only B has it.
    pub a: Option<String>,
    /// B's architecture, `None` when only A has it.
    pub b: Option<String>,
    /// Files that differ.
    pub files: Vec<Change<FileInfo>>,
    /// Images that differ.
    pub images: Vec<Change<ImageInfo>>,
}

/// A side as the report names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideSummary {
    /// The file as the user named it.
    pub path: String,
    /// ISO or lock.
    pub kind: Kind,
    /// Where its versions, files and images came from.
    pub source: Source,
    /// Its architectures.
    pub arches: Vec<String>,
    /// An ISO's own signature (who signed it, and when); `null` for a lock.
    pub signature: Option<Signature>,
}

/// Everything that differs between A and B; empty lists when identical.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The JSON format's version, [`FORMAT`].
    pub format: u32,
    /// Whether nothing differs.
    pub identical: bool,
    /// The old side.
    pub a: SideSummary,
    /// The new side.
    pub b: SideSummary,
    /// Facts of the build that differ (`epoch`, `cks-iso`, `volume-id`, `name`).
    pub build: Vec<Change<String>>,
    /// Component versions that differ; a side is `null` when the component is not bundled.
    pub versions: Vec<Change<String>>,
    /// Per pair of architectures, the files and images that differ.
    pub arches: Vec<ArchChange>,
    /// Root manifests and unit files that differ.
    pub manifests: Vec<ManifestChange>,
    /// Other ISO entries (path, kind, size, mode) that differ.
    pub entries: Vec<Change<EntryInfo>>,
    /// Entries either ISO's own lock names that the ISO lacks or holds otherwise.
    pub unlike_lock: Vec<Gap>,
}

/// The version of the JSON form; a change that breaks readers bumps it.
pub const FORMAT: u32 = 1;

#[cfg(test)]
mod tests;
