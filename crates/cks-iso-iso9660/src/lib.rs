//! The ISO 9660 writer: a host directory in, a CKS-readable ISO out, with no external tools.
//!
//! Upstream ran `mkisofs` on a `mktemp -d` staging dir and shipped 0700 roots and, with xorriso's
//! defaults, the volume ID `ISOIMAGE` that nodes never find. This module writes the image with
//! [`hadris_iso`] so the contract (`docs/reference/iso-contract.md` §1–2) holds by construction:
//!
//! - ISO 9660 level 3 (files of 4 GiB and more take several extents), Rock Ridge (names byte-exact,
//!   modes, owners, symlinks) and Joliet (names may be shortened there: a warning, never an error);
//! - directories 0755, files 0644 or 0755 when executable in the source, owner 0:0 (see [`tree`]);
//! - every date is the build's epoch, so the same tree and epoch give the same bytes;
//! - file data is streamed in 64 KiB chunks, so memory does not grow with file size; files made
//!   while the image is written (`build`'s image archives) are spliced in (`splice`);
//! - the image's sha256 is computed on a helper thread (`hasher`) and its write-back is started
//!   while it is written (`writeback`), so neither waits at the end;
//! - the image is written under a temporary name in the output directory and renamed when
//!   complete ([`cks_iso_io::atomic`]), so a failure or Ctrl-C leaves neither an ISO nor a temp file.
//!
//! No network, no clock: the caller passes the epoch.

pub mod bounds;
// Test-only: crafting hostile ISOs, shared with the integration suite (tests/it/support).
#[cfg(test)]
#[allow(dead_code)]
mod craft;
mod device;
mod error;
mod hasher;
pub mod read;
#[cfg(test)]
mod read_tests;
mod splice;
pub mod tree;
mod volume_id;
mod writeback;

use std::path::{Path, PathBuf};

use hadris_fs::DateTime;
use hadris_iso::{IsoId, IsoLevel, IsoOptions, NameCase, Preserve};

use cks_iso_io::atomic::AtomicFile;
use cks_iso_io::progress::Progress;
pub use error::IsoError;
pub use splice::{Filler, Spliced};
pub use tree::Counts;
pub use volume_id::{DEFAULT as DEFAULT_VOLUME_ID, VolumeId};

/// What the image looks like, apart from its files.
#[derive(Debug, Clone)]
pub struct IsoSpec {
    /// The label nodes search for.
    pub volume_id: VolumeId,
    /// Seconds since the Unix epoch that date the volume and every entry.
    pub epoch: i64,
}

/// A finished image.
#[derive(Debug, Clone)]
pub struct Written {
    /// Where the ISO now is.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// What went into it.
    pub counts: Counts,
    /// Its sha256, computed while it was written (`None` if the writer went back).
    pub sha256: Option<cks_iso_io::Sha256Sum>,
    /// Names that Joliet could not keep as they are, with what it stored instead. Rock Ridge,
    /// which Linux reads, keeps every name exact.
    pub joliet_renamed: Vec<(String, String)>,
}

fn options(spec: &IsoSpec) -> Result<IsoOptions, IsoError> {
    let time = DateTime::new(spec.epoch, 0).map_err(|_| IsoError::Epoch { epoch: spec.epoch })?;
    Ok(IsoOptions::default()
        .with_id(IsoId::Volume, spec.volume_id.as_str())
        .with_id(
            IsoId::Application,
            concat!("CKS-ISO ", env!("CARGO_PKG_VERSION")),
        )
        .with_level(IsoLevel::L3)
        .with_name_case(NameCase::Upper)
        .with_rock_ridge()
        .with_joliet()
        .with_preserve(Preserve::all())
        .with_time(time))
}

/// Writes the directory `source` as an ISO at `output`.
pub fn author(
    source: &Path,
    output: &Path,
    spec: &IsoSpec,
    progress: &dyn Progress,
) -> Result<Written, IsoError> {
    author_spliced(source, Vec::new(), output, spec, progress)
}

/// Writes the directory `source` plus the `spliced` files, whose bytes are produced while the
/// image is written (see [`Spliced`]), as an ISO at `output`. The image is the one [`author`] writes
/// from a directory holding real files with the same bytes at the same paths.
pub fn author_spliced(
    source: &Path,
    spliced: Vec<Spliced<'_>>,
    output: &Path,
    spec: &IsoSpec,
    progress: &dyn Progress,
) -> Result<Written, IsoError> {
    let options = options(spec)?;
    let time = options.time();
    let dir = output_dir(output)?;
    let (mut tree, mut counts) = tree::read(source, time)?;
    let (_placeholders, paths) = splice::Placeholders::create(&dir, &spliced)?;
    for (file, placeholder) in spliced.iter().zip(&paths) {
        let content = hadris_fs::host::file(placeholder).map_err(|e| IsoError::Unreadable {
            path: placeholder.clone(),
            source: std::io::Error::other(e),
        })?;
        tree::add_file(&mut tree, &mut counts, &file.path, content, time)?;
    }
    let report = hadris_iso::plan(&tree, &options).map_err(|e| IsoError::Plan(Box::new(e)))?;
    let size = report.size();
    let joliet_renamed = joliet_renames(report.warnings());
    let splicer = match spliced.is_empty() {
        true => None,
        false => {
            let regions = splice::regions(&report, &spliced)?;
            Some(splice::Splicer::new(spliced, regions))
        }
    };

    device::check_space(&dir, output, size)?;
    let mut out = AtomicFile::create(output).map_err(|source| IsoError::OutputDir {
        dir: dir.clone(),
        source,
    })?;
    out.set_mode(0o644)
        .map_err(|source| IsoError::write(output, source))?;
    progress.start(size);
    let file = out
        .file()
        .try_clone()
        .map_err(|source| IsoError::write(output, source))?;
    let mut device =
        device::Counting::new(file, progress, splicer).map_err(|e| IsoError::write(output, e))?;
    let result = hadris_iso::sync::write(&mut device, &tree, &options);
    if let Some((path, source)) = device.splice_failure() {
        return Err(IsoError::Spliced { path, source });
    }
    result.map_err(|source| IsoError::from_write(output, source))?;
    if let Some(splicer) = device.splicer() {
        splicer.finish()?;
    }
    let sha256 = device.sha256(size);
    progress.finish();
    let path = out
        .commit()
        .map_err(|source| IsoError::write(output, source))?;
    Ok(Written {
        path,
        size,
        counts,
        sha256,
        joliet_renamed,
    })
}

/// The directory the ISO goes to, which must exist and be a directory.
fn output_dir(output: &Path) -> Result<PathBuf, IsoError> {
    let dir = match output.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => Ok(dir),
        Ok(_) => Err(IsoError::OutputDir {
            dir,
            source: std::io::Error::from(std::io::ErrorKind::NotADirectory),
        }),
        Err(source) => Err(IsoError::OutputDir { dir, source }),
    }
}

/// Paths whose Joliet name was cut or changed. Primary-tree (8.3-style) names are always mapped
/// and are not reported.
fn joliet_renames(warnings: &[hadris_fs::Warning]) -> Vec<(String, String)> {
    let text = |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
    let mut names: Vec<(String, String)> = warnings
        .iter()
        .filter(|w| w.message().contains("Joliet"))
        .map(|w| (text(w.path()), text(w.stored_as())))
        .collect();
    names.sort();
    names.dedup();
    names
}
