//! The SBOMs of one ISO on disk: into its staging root before authoring, and beside the finished
//! ISO (`<iso>.cdx.json`, `<iso>.spdx.json`, with the ISO's size and sha256) after. The documents
//! themselves come from [`crate::sbom`].

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::AuthorError;
use crate::atomic::AtomicFile;
use crate::sbom::{self, CYCLONEDX_FILE, Inventory, IsoFacts, SPDX_FILE};

fn failure(path: &Path, e: std::io::Error) -> AuthorError {
    AuthorError::io(format!("cannot write {}", path.display()))(e)
}

/// Writes `sbom.cdx.json` and `sbom.spdx.json` into the ISO's staging root.
pub(super) fn write_into(staging: &Path, inventory: &Inventory) -> Result<(), AuthorError> {
    for (name, text) in [
        (CYCLONEDX_FILE, sbom::cyclonedx(inventory, None)),
        (SPDX_FILE, sbom::spdx(inventory, None)),
    ] {
        let path = staging.join(name);
        std::fs::write(&path, text).map_err(|e| failure(&path, e))?;
    }
    Ok(())
}

/// The two SBOM paths beside `iso`.
pub(super) fn beside_paths(iso: &Path) -> [PathBuf; 2] {
    [".cdx.json", ".spdx.json"].map(|suffix| {
        let mut name = iso.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    })
}

/// Writes `<iso>.cdx.json` and `<iso>.spdx.json`, each atomically; after a failure neither is
/// left.
pub(super) fn write_beside(
    iso: &Path,
    inventory: &Inventory,
    facts: &IsoFacts,
) -> Result<(), AuthorError> {
    let paths = beside_paths(iso);
    let texts = [
        sbom::cyclonedx(inventory, Some(facts)),
        sbom::spdx(inventory, Some(facts)),
    ];
    for (path, text) in paths.iter().zip(texts) {
        let written = AtomicFile::create(path).and_then(|mut out| {
            out.file().write_all(text.as_bytes())?;
            out.set_mode(0o644)?;
            out.commit()
        });
        if let Err(e) = written {
            for p in &paths {
                let _ = std::fs::remove_file(p);
            }
            return Err(failure(path, e));
        }
    }
    Ok(())
}
