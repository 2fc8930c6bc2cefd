//! What `upgrade-check` reads from an ISO beyond what `diff` reads: every `docker/` file imported
//! as a node's containerd imports it ([`crate::archive::containerd::import`], the check `verify`
//! makes of ISOs from other builders), in the order `upgrade-kubernetes.sh` imports them
//! (`ls docker/`), and the ISO's architecture from `k8s/kubeadm` when nothing records it.

use std::path::Path;

use cks_iso_iso9660::read::FileKind;

use crate::archive::containerd;
use crate::contract;
use crate::image::Arch;
use cks_iso_iso9660::read::{IsoReader, ReadError};

/// One `docker/` file and what `ctr image import` makes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveImport {
    /// Its ISO path (`docker/pause:3.10.tar`).
    pub path: String,
    /// The image names the import records, or why it fails (`fails with "…": cause`).
    pub outcome: Result<Vec<String>, NotImported>,
}

/// Why an archive does not import.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotImported {
    /// The ISO's reader cannot read it: why.
    #[error("cannot be read: {0}")]
    Unreadable(String),
    /// containerd's import refuses it.
    #[error("ctr image import {0}")]
    Refused(containerd::Refused),
}

/// An ISO's archives and architecture.
#[derive(Debug, Clone, Default)]
pub struct IsoScan {
    /// The architecture `k8s/kubeadm` (else the file name) says.
    pub arch: Option<Arch>,
    /// Every `docker/` file, in `ls` order.
    pub archives: Vec<ArchiveImport>,
}

/// Reads `iso`'s archives as a node of `arch` imports them (`None`: the ISO's own, from its
/// `k8s/kubeadm`).
pub fn scan(iso: &Path, arch: Option<Arch>) -> Result<IsoScan, ReadError> {
    let reader = IsoReader::open(iso)?;
    let own = crate::verify::iso_arch(&reader, iso);
    let arch = arch.or(own);
    let mut paths: Vec<String> = reader
        .entries()?
        .into_iter()
        .filter(|e| e.kind == FileKind::File && e.path.starts_with(contract::IMAGES_PREFIX))
        .map(|e| e.path)
        .collect();
    // `ls` order: bytewise in the C locale nodes run with.
    paths.sort();
    let mut archives = Vec::new();
    for path in paths {
        let outcome = match reader.open_file(&path) {
            Err(e) => Err(NotImported::Unreadable(e.reason)),
            Ok(file) => containerd::import(file, arch)
                .map(|imported| imported.names)
                .map_err(NotImported::Refused),
        };
        archives.push(ArchiveImport { path, outcome });
    }
    Ok(IsoScan {
        arch: own,
        archives,
    })
}
