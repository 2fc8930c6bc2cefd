//! The arch-independent part of a build: every manifest taken (downloaded through the mirrors, or
//! read from a file), checked against its lock entry when the lock holds one, edited for its role
//! and staged; and the built-in systemd units beside them.

use std::path::Path;

use super::RealizeError;
use crate::lock::ManifestEntry;
use crate::plan::{self, Edited, IsoFile, Role, Source};
use crate::units;
use crate::upstream::MANIFEST_LIMIT;
use crate::upstream::{Artifact, Content, Expected, Fetcher};

pub(super) fn sha256(bytes: &[u8]) -> String {
    cks_iso_io::Sha256Sum::of(bytes).to_string()
}

/// Writes `text` as the ISO file `dest` under `dir`.
pub(super) fn put_text(
    dir: &Path,
    dest: &str,
    source: String,
    text: &str,
) -> Result<IsoFile, RealizeError> {
    let path = dir.join(dest);
    std::fs::create_dir_all(path.parent().expect("dest has a parent")).map_err(
        RealizeError::io(format!("cannot create {}", path.display())),
    )?;
    std::fs::write(&path, text)
        .map_err(RealizeError::io(format!("cannot write {}", path.display())))?;
    Ok(IsoFile {
        dest: dest.to_owned(),
        source,
        sha256: sha256(text.as_bytes()),
        path,
        size: text.len() as u64,
    })
}

/// A lock naming another URL than the one its entry is taken from.
pub(super) fn forged(what: &str, locked: &str, expected: &str) -> RealizeError {
    RealizeError::Forged {
        what: what.to_owned(),
        locked: crate::fetch::redact(locked),
        expected: expected.to_owned(),
    }
}

/// A local manifest's text and the origin recorded for it (its file name alone); with the lock's
/// `entry`, it must be the bytes that entry records.
fn local(
    dest: &str,
    path: &Path,
    entry: Option<&ManifestEntry>,
) -> Result<(String, String), RealizeError> {
    let text = crate::input::read_text(path, MANIFEST_LIMIT).map_err(|source| {
        RealizeError::ManifestUnreadable {
            dest: dest.to_owned(),
            path: path.to_path_buf(),
            source,
        }
    })?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    if let Some(locked) = entry.filter(|e| e.sha256_taken != sha256(text.as_bytes())) {
        return Err(RealizeError::Drift {
            what: dest.to_owned(),
            origin: path.display().to_string(),
            expected: locked.sha256_taken.clone(),
            actual: sha256(text.as_bytes()),
        });
    }
    // No host path: the same file elsewhere makes the same ISO.
    Ok((text, format!("file:{name}")))
}

/// Downloads a manifest (or reads a local one), edits it for `role`, and stores the result; with
/// the lock's `entry` for it, it must be the bytes that entry records (and comes from the cache
/// when it holds them).
pub(in crate::pipeline) async fn manifest(
    fetcher: &Fetcher<'_>,
    dir: &Path,
    dest: &str,
    source: &Source,
    role: &Role,
    entry: Option<&ManifestEntry>,
) -> Result<(IsoFile, Edited, ManifestEntry), RealizeError> {
    let (text, origin) = match source {
        Source::Url(url) => {
            let artifact = Artifact {
                name: dest.to_owned(),
                dest: dest.to_owned(),
                url: url.clone(),
                legacy: None,
                checksum: None,
                checksum_required: false,
                content: Content::Yaml,
                mode: 0o644,
            };
            let raw = dir.join("raw").join(dest);
            std::fs::create_dir_all(raw.parent().expect("parent"))
                .map_err(RealizeError::io("work dir"))?;
            let shown = crate::fetch::strip_userinfo(url);
            if let Some(locked) = entry.filter(|e| e.source != shown) {
                return Err(forged(dest, &locked.source, &shown));
            }
            let expected = entry.map(|entry| Expected {
                sha256: entry.sha256_taken.clone(),
                size: None,
                url: entry.source.clone(),
            });
            let got = fetcher
                .get_expecting(&artifact, &raw, expected.as_ref())
                .await?;
            let text = std::fs::read_to_string(&got.path).map_err(RealizeError::io(format!(
                "{dest} from {} is not UTF-8 text",
                crate::fetch::redact(url)
            )))?;
            (text, got.url)
        }
        Source::File(path) => local(dest, path, entry)?,
    };
    let taken = sha256(text.as_bytes());
    let edited = plan::edit(dest, &text, role).map_err(|source| RealizeError::Edit {
        dest: dest.to_owned(),
        origin: origin.clone(),
        source: Box::new(source),
    })?;
    let file = put_text(dir, dest, origin.clone(), &edited.text)?;
    if let Some(locked) = entry.filter(|e| e.sha256 != file.sha256) {
        tracing::warn!(
            "{dest}: this cks-iso edits it into other bytes than the one that wrote the lock \
             (expected sha256:{}, got sha256:{}); the ISO will differ",
            locked.sha256,
            file.sha256
        );
    }
    let entry = ManifestEntry {
        path: dest.to_owned(),
        role: role.name().to_owned(),
        source: origin,
        sha256_taken: taken,
        sha256: file.sha256.clone(),
    };
    Ok((file, edited, entry))
}

/// The built-in systemd units, staged under `common` with the lock's entries for them.
pub(super) fn units(common: &Path) -> Result<Vec<(IsoFile, ManifestEntry)>, RealizeError> {
    let mut staged = Vec::new();
    for (dest, text) in [
        (crate::contract::KUBELET_SERVICE, units::KUBELET_SERVICE),
        (crate::contract::KUBEADM_DROPIN, units::KUBEADM_DROPIN),
    ] {
        let source = units::BUILTIN_SOURCE.to_owned();
        let file = put_text(common, dest, source.clone(), &units::to_opt_bin(text))?;
        let entry = ManifestEntry {
            path: dest.to_owned(),
            role: Role::Unit.name().into(),
            source,
            sha256_taken: sha256(text.as_bytes()),
            sha256: file.sha256.clone(),
        };
        staged.push((file, entry));
    }
    Ok(staged)
}
