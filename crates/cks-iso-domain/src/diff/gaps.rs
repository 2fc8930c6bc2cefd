//! What an ISO's embedded lock names against what the ISO's directory holds. The lock is the
//! side's account of the ISO; an ISO whose `dashboard.yaml` was deleted, or whose archive was
//! swapped for a few bytes, still carries the original's lock, and would compare identical by it.
//! Only the directory is read (kinds and sizes), never an archive: `diff` stays fast, and `verify`
//! remains the check of the bytes themselves.

use std::collections::BTreeMap;

use super::{EntryInfo, EntryKind, Gap, Side};
use cks_iso_oci::image::Reference;

/// The gaps of `side` (from an ISO's own lock) against the ISO's `entries`.
pub(super) fn of(side: &Side, entries: &BTreeMap<String, EntryInfo>) -> Vec<Gap> {
    let mut problems: Vec<(String, String)> = Vec::new();
    for path in side.manifests.keys() {
        problems.extend(file(entries, path, None, "this file"));
    }
    for arch in side.arches.values() {
        for (path, f) in &arch.files {
            problems.extend(file(entries, path, f.size, "this file"));
        }
        let references: Vec<Reference> = arch
            .images
            .keys()
            .filter_map(|r| Reference::parse(r).ok())
            .collect();
        let naming = cks_iso_oci::archive::assign_names(&references);
        for (reference, name) in &naming.files {
            let path = crate::contract::image_archive(name);
            let size = arch.images.get(&reference.to_string()).and_then(|i| i.size);
            match (entries.get(&path), size) {
                // An archive holds at least the image's manifest, config and layers.
                (Some(e), Some(size)) if e.kind == EntryKind::File && e.size < size => {
                    problems.push((
                        path,
                        format!(
                            "the lock's {reference} is {size} bytes; the archive holds only {}",
                            e.size
                        ),
                    ));
                }
                _ => problems.extend(file(
                    entries,
                    &path,
                    None,
                    &format!("the archive of {reference}"),
                )),
            }
        }
    }
    problems
        .into_iter()
        .map(|(path, problem)| Gap {
            iso: side.label.clone(),
            path,
            problem,
        })
        .collect()
}

/// What is wrong with the file `path` the lock names as `what` (of `size` bytes, when it says).
fn file(
    entries: &BTreeMap<String, EntryInfo>,
    path: &str,
    size: Option<u64>,
    what: &str,
) -> Option<(String, String)> {
    let problem = match entries.get(path) {
        None => format!("the lock names {what}; the ISO lacks it"),
        Some(e) if e.kind != EntryKind::File => {
            format!("the lock names {what}; the ISO holds a {}", kind(e.kind))
        }
        Some(e) => match size {
            Some(size) if size != e.size => {
                format!("the lock says {size} bytes; the ISO holds {}", e.size)
            }
            _ => return None,
        },
    };
    Some((path.to_owned(), problem))
}

fn kind(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::File => "file",
        EntryKind::Dir => "directory",
        EntryKind::Symlink => "symbolic link",
        EntryKind::Other => "device, FIFO or socket",
    }
}
