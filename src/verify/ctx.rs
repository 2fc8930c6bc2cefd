//! What every check of an ISO shares: the ISO open with its entries listed ([`Ctx`]), where the
//! violations go, and the hashing and listing helpers several checks use. A file of its own so
//! that the checks (`checks.rs` and the per-subject files beside it) all use it and it uses none
//! of them: no two files of `verify` use each other (`tests/it/project/file_rules.rs`).

use std::collections::BTreeMap;

use super::{Cause, Report, Violation};
use crate::archive;
use crate::contract;
use crate::image::Arch;
use crate::upstream::WrongContent;
use cks_iso_iso9660::read::FileKind;
use cks_iso_iso9660::read::{Entry, IsoReader};

pub(super) const TEXT_LIMIT: u64 = 16 * 1024 * 1024;

pub(super) struct Ctx<'a> {
    /// What the violations reported now most likely mean (set around the signature checks).
    pub(super) cause: Cause,
    pub(super) reader: &'a IsoReader,
    pub(super) entries: BTreeMap<String, Entry>,
    pub(super) report: &'a mut Report,
    /// The sha256 of each file `versions.txt` lists, as read from the ISO.
    pub(super) hashes: BTreeMap<String, String>,
    /// Each image archive that reads well, by path.
    pub(super) archives: BTreeMap<String, archive::Inspected>,
}

impl Ctx<'_> {
    pub(super) fn violation(&mut self, path: &str, problem: impl Into<String>) {
        self.violation_as(self.cause, path, problem);
    }

    /// A violation whose likely meaning is `cause`; a problem that starts with the path (as the
    /// reader's errors do) does not repeat it.
    pub(super) fn violation_as(&mut self, cause: Cause, path: &str, problem: impl Into<String>) {
        let problem = problem.into();
        let problem = match problem
            .strip_prefix(path)
            .and_then(|p| p.strip_prefix(": "))
        {
            Some(rest) if !path.is_empty() => rest.to_owned(),
            _ => problem,
        };
        self.report.violations.push(Violation {
            path: path.to_owned(),
            problem,
            cause,
        });
    }

    pub(super) fn text(&mut self, path: &str) -> Option<String> {
        match self.reader.read_small(path, TEXT_LIMIT) {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) => {
                self.violation_as(Cause::Damaged, path, e.reason);
                None
            }
        }
    }
}

pub(super) fn matching(cx: &Ctx, dir: &str, prefix: &str, suffix: &str) -> Vec<String> {
    cx.entries
        .values()
        .filter(|e| e.kind == FileKind::File)
        .filter_map(|e| e.path.strip_prefix(dir).map(|name| (e, name)))
        .filter(|(_, name)| {
            !name.contains('/') && name.starts_with(prefix) && name.ends_with(suffix)
        })
        .map(|(e, _)| e.path.clone())
        .collect()
}

/// Why a file of the ISO could not be hashed; reads as a violation of that file.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unhashable {
    /// It cannot be opened in the image (the reader's reason).
    #[error("{0}")]
    Open(String),
    /// Its bytes cannot be read.
    #[error("{0}")]
    Read(#[from] std::io::Error),
}

/// The hex sha256 of the ISO's file at `path`, streamed out of the image.
pub(super) fn sha256_of(reader: &IsoReader, path: &str) -> Result<String, Unhashable> {
    let file = reader
        .open_file(path)
        .map_err(|e| Unhashable::Open(e.reason))?;
    Ok(cks_iso_io::Sha256Sum::of_reader(file)?.to_string())
}

/// The sha256 of the tarball at `path`, read once: the same pass lists it as a node extracts
/// it, and a member that would land outside the tree is a violation. The etcd tarball's
/// executables must be for `arch`, the ISO's: its name says amd64 whatever they are.
pub(super) fn tarball(cx: &mut Ctx, path: &str, arch: Option<Arch>) -> Result<String, Unhashable> {
    let file = cx
        .reader
        .open_file(path)
        .map_err(|e| Unhashable::Open(e.reason))?;
    let arch = arch.filter(|_| path == contract::ETCD_TARBALL);
    let (sha256, listed) = crate::upstream::hash_and_check_tar(file, arch)?;
    match listed {
        Err(problem @ (WrongContent::MemberMachine { .. } | WrongContent::NoExecutable)) => {
            let arch = arch.map_or("", |a| a.as_str());
            cx.violation(
                path,
                format!("this linux/{arch} ISO's etcd nodes cannot run it: {problem}"),
            );
        }
        Err(problem) => cx.violation(path, format!("nodes cannot extract it safely: {problem}")),
        Ok(_) => {}
    }
    Ok(sha256)
}
