//! The SBOMs inside the ISO agree with it: each lists every file of `versions.txt` and every image
//! archive, with the hash the ISO has (a file's sha256; an image's platform manifest digest, and
//! in CycloneDX its registry digest too), and nothing that is not there.

use std::collections::BTreeMap;

use cks_iso_iso9660::read::FileKind;

use super::ctx::{Ctx, sha256_of};
use crate::sbom::{self, CYCLONEDX_FILE, SPDX_FILE};
use crate::versions::Versions;

/// One item an SBOM lists: its path in the ISO, sha256, and (CycloneDX images) registry digest.
struct Listed {
    path: String,
    sha256: Option<String>,
    index: Option<String>,
}

/// What the ISO has at a path an SBOM must list.
struct Held {
    sha256: Option<String>,
    index: Option<String>,
}

pub(super) fn check(cx: &mut Ctx, versions: Option<&Versions>) {
    let Some(versions) = versions else { return };
    let mut held: BTreeMap<String, Held> = BTreeMap::new();
    for file in &versions.files {
        let sha256 = cx.hashes.get(&file.path).cloned();
        held.insert(
            file.path.clone(),
            Held {
                sha256,
                index: None,
            },
        );
    }
    for image in &versions.images {
        let inspected = cx.archives.get(&image.archive);
        held.insert(
            image.archive.clone(),
            Held {
                sha256: inspected.map(|i| i.manifest.hex().to_owned()),
                index: Some(image.digest.clone()),
            },
        );
    }
    for name in [CYCLONEDX_FILE, SPDX_FILE] {
        if !cx.entries.contains_key(name) {
            cx.violation(
                name,
                "missing; every ISO cks-iso builds carries its SBOMs (rebuild it with cks-iso build)",
            );
            continue;
        }
        let Some(text) = cx.text(name) else { continue };
        let listed = match name == CYCLONEDX_FILE {
            true => cyclonedx(cx, &text, versions),
            false => spdx(&text),
        };
        match listed {
            Ok(listed) => compare(cx, name, &listed, &held),
            Err(e) => cx.violation(name, format!("not a valid SBOM: {e}")),
        }
    }
}

fn cyclonedx(
    cx: &mut Ctx,
    text: &str,
    versions: &Versions,
) -> Result<Vec<Listed>, sbom::ReadError> {
    let bom = sbom::parse_cyclonedx(text)?;
    let arch = bom.metadata.component.property("cks-iso:arch");
    if arch != Some(versions.arch.as_str()) {
        cx.violation(
            CYCLONEDX_FILE,
            format!(
                "describes an ISO for {arch:?}, versions.txt says {}",
                versions.arch
            ),
        );
    }
    bom.components
        .iter()
        .map(|c| {
            let path = c
                .property("cks-iso:path")
                .ok_or_else(|| sbom::ReadError::NoPath {
                    component: c.name.clone(),
                })?;
            Ok(Listed {
                path: path.to_owned(),
                sha256: c.sha256().map(str::to_owned),
                index: c.property("cks-iso:index-digest").map(str::to_owned),
            })
        })
        .collect()
}

fn spdx(text: &str) -> Result<Vec<Listed>, sbom::ReadError> {
    let document = sbom::parse_spdx(text)?;
    Ok(document
        .packages
        .iter()
        // The ISO itself is the one package without a path in it.
        .filter_map(|p| {
            p.package_file_name.as_ref().map(|path| Listed {
                path: path.clone(),
                sha256: p.sha256().map(str::to_owned),
                index: None,
            })
        })
        .collect())
}

fn compare(cx: &mut Ctx, name: &str, listed: &[Listed], held: &BTreeMap<String, Held>) {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for item in listed {
        let path = item.path.as_str();
        *seen.entry(path).or_default() += 1;
        if seen[path] == 2 {
            cx.violation(name, format!("{path} is listed more than once"));
        }
        if cx
            .entries
            .get(path)
            .is_none_or(|e| e.kind != FileKind::File)
        {
            cx.violation(name, format!("lists {path}, which is not in the ISO"));
            continue;
        }
        let actual = match held.get(path) {
            Some(h) => h.sha256.clone(),
            // In the ISO but neither in versions.txt nor in docker/: judge it by its bytes.
            None => sha256_of(cx.reader, path).ok(),
        };
        match (&item.sha256, actual) {
            (None, _) => cx.violation(name, format!("{path} is listed without a SHA-256")),
            (Some(listed), Some(actual)) if *listed != actual => cx.violation(
                name,
                format!("{path}: sha256 is {listed} here, the ISO has {actual}"),
            ),
            _ => {}
        }
        let index = held.get(path).and_then(|h| h.index.as_ref());
        if let (Some(listed), Some(index)) = (&item.index, index)
            && listed != index
        {
            cx.violation(
                name,
                format!("{path}: registry digest is {listed} here, the ISO has {index}"),
            );
        }
    }
    for path in held.keys() {
        if !seen.contains_key(path.as_str()) {
            cx.violation(name, format!("{path} is in the ISO but not listed"));
        }
    }
}
