//! Reading a lock back: the schema version first, then the checks serde cannot make (an
//! architecture at least, one entry per path and image, `extra` words cks-iso writes, whole
//! signatures), since a lock from elsewhere decides what a build fetches and writes. Apart from
//! the schema in `mod.rs` so that the schema reads as data.

use super::{EXTRA_ASKED, EXTRA_ROLE, ImageEntry, Lock, LockError, VERSION, name};

impl Lock {
    /// Parses `text`, naming `origin` in errors; checks the version before the rest.
    pub fn parse(text: &str, origin: &str) -> Result<Self, LockError> {
        let invalid = |reason: String| LockError::Invalid {
            origin: origin.to_owned(),
            reason,
        };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        match value.get("version").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(VERSION) => {}
            Some(found) => {
                return Err(LockError::Version {
                    origin: origin.to_owned(),
                    found,
                });
            }
            None => return Err(invalid("no numeric \"version\"".into())),
        }
        let mut lock: Lock = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        if lock.arches.is_empty() {
            return Err(invalid("it locks no architecture".into()));
        }
        name::check(&lock.request.name, &format!("{origin}: request.name"))
            .map_err(LockError::Name)?;
        // One entry per path (and image): of two, the build would take the one it finds first
        // while the reader of the lock may read the other.
        if let Some((path, _)) = twice(lock.manifests.iter().map(|m| (&m.path, &m.source))) {
            return Err(invalid(format!(
                "manifests: {path} is listed more than once; a lock lists each manifest once"
            )));
        }
        for (arch, entry) in &lock.arches {
            if let Some((path, urls)) = twice(entry.files.iter().map(|f| (&f.path, &f.url))) {
                return Err(invalid(format!(
                    "arches.{arch}.files: {path} is listed more than once ({}); a lock lists each \
                     file once",
                    urls.join(", ")
                )));
            }
            if let Some((reference, _)) =
                twice(entry.images.iter().map(|i| (&i.reference, &i.digest)))
            {
                return Err(invalid(format!(
                    "arches.{arch}.images: {reference} is listed more than once; a lock lists \
                     each image once"
                )));
            }
            // Written into versions.txt and the SBOMs: only the words cks-iso writes.
            if let Some(image) = entry.images.iter().find(|i| !lock.extra_is_known(i)) {
                return Err(invalid(format!(
                    "arches.{arch}.images: {} has \"extra\" {:?}, which is neither {EXTRA_ASKED:?} \
                     nor \"manifest:\" and an add-on manifest the lock lists",
                    image.reference,
                    image.extra.as_deref().unwrap_or_default()
                )));
            }
            for file in &entry.files {
                let Some(s) = &file.signature else { continue };
                let pair = [&s.sig, &s.cert, &s.rekor];
                let whole = match &s.bundle {
                    Some(_) => pair.iter().all(|p| p.is_none()),
                    None => pair.iter().all(|p| p.is_some()),
                };
                if !whole {
                    return Err(invalid(format!(
                        "arches.{arch}: the signature of {} holds neither a bundle alone nor \
                         sig, cert and rekor",
                        file.path
                    )));
                }
            }
        }
        lock.normalise();
        Ok(lock)
    }

    /// Whether `image`'s `extra` is absent, [`EXTRA_ASKED`], or names an add-on manifest of the
    /// lock.
    fn extra_is_known(&self, image: &ImageEntry) -> bool {
        match image.extra.as_deref() {
            None | Some(EXTRA_ASKED) => true,
            Some(other) => other
                .strip_prefix("manifest:")
                .is_some_and(|path| self.manifest(path).is_some_and(|m| m.role == EXTRA_ROLE)),
        }
    }
}

/// The first name `entries` (name, detail) give more than once, with the details of each.
fn twice<'a>(
    entries: impl Iterator<Item = (&'a String, &'a String)> + Clone,
) -> Option<(&'a str, Vec<&'a str>)> {
    let mut seen = std::collections::BTreeSet::new();
    let name = entries.clone().map(|(n, _)| n).find(|n| !seen.insert(*n))?;
    let details = entries
        .filter(|(n, _)| *n == name)
        .map(|(_, d)| d.as_str())
        .collect();
    Some((name, details))
}
