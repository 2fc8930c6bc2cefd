//! The manifest a delta export writes beside its blobs (`delta.json`): which lock it is for,
//! what it was exported `--minus` (a lock whose carry, or an ISO, the far side already has), and
//! every blob it leaves out because that side holds it. `cache import` of a delta checks those
//! assumptions; `build --from-iso` meets the ones an ISO holds. Pure data and its file.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::CacheError;
use crate::image::Digest;
use crate::lock::Lock;
use cks_iso_io::Sha256Sum;

/// The file name, at the root of the exported directory.
pub const DELTA_FILE: &str = "delta.json";

/// The version of the format; a change that breaks readers bumps it.
pub const FORMAT: u32 = 1;

/// What a delta is for and what it takes for granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    /// [`FORMAT`].
    pub format: u32,
    /// The locks it carries content for: sha256 of each lock as cks-iso writes it ([`lock_id`]).
    pub locks: Vec<String>,
    /// What the far side is assumed to hold.
    pub minus: Vec<Minus>,
    /// The blobs left out, with where the far side has them.
    pub assumes: Vec<Assumed>,
    /// The blobs it carries (`from` empty).
    pub carries: Vec<Assumed>,
    /// What the delta carries.
    pub carried: Totals,
    /// What a full export of the same locks would carry.
    pub full: Totals,
}

/// One `--minus` input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Minus {
    /// Its file name, as given (without directories).
    pub file: String,
    /// `iso` (its content, given to `build --from-iso`) or `lock` (its export, in the far side's
    /// cache).
    pub kind: String,
}

/// A blob the delta leaves out (or, in [`Delta::carries`], carries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assumed {
    /// The blob.
    pub digest: Digest,
    /// Its size, when known.
    pub size: Option<u64>,
    /// What it is (`image registry.k8s.io/pause:3.10 (amd64) layer 1 of 1`).
    pub what: String,
    /// The `--minus` file that holds it; empty for a blob the delta carries.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from: String,
}

/// A count of blobs and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Blobs.
    pub blobs: usize,
    /// Bytes.
    pub bytes: u64,
}

/// A lock's identity in a delta: the sha256 of the lock as cks-iso writes it.
pub fn lock_id(lock: &Lock) -> String {
    Sha256Sum::of(lock.render().as_bytes()).to_string()
}

impl Delta {
    /// Writes `dir/delta.json`.
    pub fn write(&self, dir: &Path) -> Result<(), CacheError> {
        let path = dir.join(DELTA_FILE);
        let text = serde_json::to_string_pretty(self).expect("plain data") + "\n";
        let io = |source| CacheError::io(&path, source);
        let mut out = crate::atomic::AtomicFile::create(&path).map_err(io)?;
        std::io::Write::write_all(out.file(), text.as_bytes()).map_err(io)?;
        out.set_mode(0o644).map_err(io)?;
        out.commit_unsynced().map_err(io)?;
        Ok(())
    }

    /// Reads `dir/delta.json`: `None` when there is none (a full export).
    pub fn read(dir: &Path) -> Result<Option<Self>, DeltaError> {
        let path = dir.join(DELTA_FILE);
        let unreadable = |source| DeltaError::Unreadable {
            path: path.clone(),
            source,
        };
        let text = match crate::input::open_regular(&path) {
            Ok(file) => {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut std::io::Read::take(file, 64 << 20), &mut text)
                    .map_err(unreadable)?;
                text
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(unreadable(e)),
        };
        let delta: Self = serde_json::from_str(&text).map_err(|source| DeltaError::NotDelta {
            path: path.clone(),
            source,
        })?;
        if delta.format != FORMAT {
            return Err(DeltaError::Format {
                path,
                found: delta.format,
            });
        }
        Ok(Some(delta))
    }
}

/// A `delta.json` that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DeltaError {
    /// It is there but cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        /// `dir/delta.json`.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a delta manifest.
    #[error("{} is not a delta manifest: {source}", path.display())]
    NotDelta {
        /// `dir/delta.json`.
        path: std::path::PathBuf,
        /// The parser's words.
        source: serde_json::Error,
    },
    /// Another format.
    #[error("{} has format {found}, this cks-iso reads format {FORMAT}", path.display())]
    Format {
        /// `dir/delta.json`.
        path: std::path::PathBuf,
        /// What it says.
        found: u32,
    },
}
