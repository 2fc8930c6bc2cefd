//! A file of the ISO once it is taken: where it goes, where it came from, its sha256 and where
//! its bytes wait. Plain data, shared by the realizing pipeline (which stages files), the trust
//! code (which judges a downloaded file's signature) and the writer (which records them).

use std::path::PathBuf;

/// A file of the ISO, already in the work directory.
#[derive(Debug, Clone)]
pub struct IsoFile {
    /// Path in the ISO.
    pub dest: String,
    /// Where it came from: the upstream URL, `file://…` or `builtin:…`.
    pub source: String,
    /// sha256 of the bytes that go into the ISO.
    pub sha256: String,
    /// The bytes, in the work directory.
    pub path: PathBuf,
    /// Its size.
    pub size: u64,
}
