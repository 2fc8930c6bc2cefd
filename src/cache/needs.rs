//! What a lock needs from a cache: the one walk that `cache export`, `cache ls --locked` and
//! `cache prune` share, so that what is carried across an air gap, what is reported missing and
//! what is kept can never disagree.
//!
//! A lock names each image by its registry digest and platform manifest, each download by its
//! sha256 and each URL manifest by the sha256 of the bytes taken. Those are blobs; the image's
//! config and layers are found by reading its manifests from the cache ([`Image::load`]), so a
//! missing manifest hides what lies below it. Besides blobs, an offline build without the lock
//! looks things up by URL and by tag, so the index entries for them belong to the lock too
//! (`url:<file URL>`, `url:<manifest URL>`, `tag:<reference>`), as does the entry under the
//! primary URL of a file that was taken from its legacy name, and a signed file's `.sig`, `.cert`
//! (`url:<file URL>.sig`) and Rekor entry (`rekor:<rekor URL>:sha256:<hex>`). Manifests from a local file or built
//! into cks-iso are not downloads: `build --locked` takes them from the flags or the binary. No
//! network; reads only the cache.

use std::collections::BTreeSet;
use std::io::Read as _;

use super::maint::IndexEntry;
use super::{Cache, Key};
use crate::image::{Arch, Digest, Image, Reference};
use crate::lock::Lock;

/// A blob a lock needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needed {
    /// What it is, for people: `image registry.k8s.io/pause:3.10 (amd64) layer 1 of 2`.
    pub what: String,
    /// The blob.
    pub digest: Digest,
    /// Its size, when the lock or a manifest states it.
    pub size: Option<u64>,
    /// Why it is not usable, when it is not: absent, another size, or a manifest that cannot be
    /// read. `None` when the cache has it.
    pub problem: Option<String>,
}

/// An index entry a lock needs: `key` names `digest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeededKey {
    /// The entry's key.
    pub key: Key,
    /// The blob it names.
    pub digest: Digest,
    /// Where the content really came from (the index entry's note).
    pub note: String,
}

/// Everything a lock needs, in the lock's order, each blob once.
#[derive(Debug, Clone, Default)]
pub struct Needs {
    /// The blobs, present or not.
    pub blobs: Vec<Needed>,
    /// The index entries.
    pub keys: Vec<NeededKey>,
    /// Whether an image's manifest is missing, so that its config and layers are unknown.
    pub incomplete: bool,
}

impl Needs {
    /// The blobs the cache lacks (or holds damaged), in order.
    pub fn missing(&self) -> impl Iterator<Item = &Needed> {
        self.blobs.iter().filter(|n| n.problem.is_some())
    }

    /// The digests, for set operations.
    pub fn digests(&self) -> BTreeSet<Digest> {
        self.blobs.iter().map(|n| n.digest.clone()).collect()
    }

    /// Adds `other`'s blobs and keys that are not here yet.
    pub fn extend(&mut self, other: Needs) {
        let mut seen = self.digests();
        for blob in other.blobs {
            if seen.insert(blob.digest.clone()) {
                self.blobs.push(blob);
            }
        }
        for key in other.keys {
            if !self.keys.iter().any(|k| k.key == key.key) {
                self.keys.push(key);
            }
        }
        self.incomplete |= other.incomplete;
    }

    fn blob(&mut self, cache: &Cache, what: String, digest: Digest, size: Option<u64>) {
        if self.blobs.iter().any(|n| n.digest == digest) {
            return;
        }
        let problem = match (cache.size_of(&digest), size) {
            (None, _) => Some("not in the cache".to_owned()),
            (Some(found), Some(size)) if found != size => {
                Some(format!("the cache holds {found} bytes instead of {size}"))
            }
            _ => None,
        };
        let size = size.or_else(|| problem.is_none().then(|| cache.size_of(&digest)).flatten());
        self.blobs.push(Needed {
            what,
            digest,
            size,
            problem,
        });
    }

    fn key(&mut self, key: Key, digest: Digest, note: String) {
        if !self.keys.iter().any(|k| k.key == key) {
            self.keys.push(NeededKey { key, digest, note });
        }
    }

    fn broken(&mut self, what: String, text: &str, problem: String) {
        // A lock entry that is not even a digest: nothing to look up, but it must be reported.
        self.incomplete = true;
        self.blobs.push(Needed {
            what,
            digest: Digest::of(text.as_bytes()),
            size: None,
            problem: Some(problem),
        });
    }
}

impl Cache {
    /// What `lock` needs from this cache, and which of it is missing.
    pub fn needs(&self, lock: &Lock) -> Needs {
        let mut needs = Needs::default();
        let entries = self.index().unwrap_or_default();
        for (arch_name, arch) in &lock.arches {
            for file in &arch.files {
                let what = format!("file {} ({arch_name}) from {}", file.path, file.url);
                let Ok(digest) = Digest::from_hex(&file.sha256) else {
                    needs.broken(what, &file.sha256, "the lock's sha256 is not 64 hex".into());
                    continue;
                };
                needs.blob(self, what.clone(), digest.clone(), Some(file.size));
                needs.key(Key::Url(file.url.clone()), digest.clone(), file.url.clone());
                // Taken under its legacy name: the index knows it by the primary URL.
                for entry in entries_naming(&entries, &digest) {
                    if let Some(key @ Key::Url(_)) = Key::parse(&entry.key)
                        && entry.note == file.url
                    {
                        needs.key(key, digest.clone(), entry.note.clone());
                    }
                }
                // Its signature material: the published bundle, or `.sig`, `.cert` and the
                // Rekor entry reply.
                if let Some(sig) = &file.signature {
                    let material = [
                        ("sigstore.json", &sig.bundle),
                        ("sig", &sig.sig),
                        ("cert", &sig.cert),
                        ("rekor", &sig.rekor),
                    ];
                    for (kind, hex) in material
                        .into_iter()
                        .filter_map(|(kind, hex)| Some((kind, hex.as_ref()?)))
                    {
                        let what = format!("{what} {kind}");
                        let Ok(d) = Digest::from_hex(hex) else {
                            needs.broken(what, hex, "the lock's sha256 is not 64 hex".into());
                            continue;
                        };
                        needs.blob(self, what, d.clone(), None);
                        match kind {
                            "rekor" => {
                                for entry in entries_naming(&entries, &d) {
                                    if let Some(key @ Key::Rekor { .. }) = Key::parse(&entry.key) {
                                        needs.key(key, d.clone(), entry.note.clone());
                                    }
                                }
                            }
                            _ => {
                                let url = format!("{}.{kind}", file.url);
                                needs.key(Key::Url(url.clone()), d, url);
                            }
                        }
                    }
                }
            }
            for image in &arch.images {
                self.image_needs(&mut needs, arch_name, image);
            }
        }
        for manifest in &lock.manifests {
            if !(manifest.source.starts_with("https://") || manifest.source.starts_with("http://"))
            {
                continue;
            }
            let what = format!("manifest {} from {}", manifest.path, manifest.source);
            let Ok(digest) = Digest::from_hex(&manifest.sha256_taken) else {
                let problem = "the lock's sha256_taken is not 64 hex".into();
                needs.broken(what, &manifest.sha256_taken, problem);
                continue;
            };
            needs.blob(self, what, digest.clone(), None);
            let key = Key::Url(manifest.source.clone());
            needs.key(key, digest, manifest.source.clone());
        }
        needs
    }

    fn image_needs(&self, needs: &mut Needs, arch_name: &str, entry: &crate::lock::ImageEntry) {
        let what = format!("image {} ({arch_name})", entry.reference);
        let parsed = (
            Reference::parse(&entry.reference),
            Digest::parse(&entry.digest),
            Digest::parse(&entry.manifest),
            Arch::parse(arch_name),
        );
        let (Ok(reference), Ok(top), Ok(platform), Ok(arch)) = parsed else {
            let problem = "the lock's reference, digest, manifest or arch does not parse".into();
            needs.broken(what, &entry.reference, problem);
            return;
        };
        // What a build records when it resolves a tag (not for a reference pinned by digest).
        if reference.digest().is_none() {
            needs.key(Key::tag(&reference), top.clone(), reference.to_string());
        }
        // The signature manifest the lock names: a locked offline build verifies it again.
        if let Some(sig) = &entry.signature {
            let sig_what = format!("{what} signature {}", sig.tag);
            match Digest::parse(&sig.manifest) {
                Ok(digest) => self.signature_manifest_needs(needs, sig_what, &digest, None),
                Err(_) => {
                    let problem = "the lock's signature manifest is not a digest".into();
                    needs.broken(sig_what, &sig.manifest, problem);
                }
            }
        }
        // The signatures the cache holds for its tags: an offline build without the lock (or
        // with a lock that names none) verifies them again.
        for signed in [&platform, &top] {
            self.signature_needs(needs, &what, &reference, signed);
            self.referrer_needs(needs, &what, &reference, signed);
        }
        let top_what = format!("{what} index or manifest");
        match Image::load(reference, &top, arch, self) {
            Ok(image) => {
                let top_size = Some(image.top.bytes.len() as u64);
                needs.blob(self, top_what, top, top_size);
                if image.manifest.digest != image.top.digest {
                    let size = Some(image.manifest.bytes.len() as u64);
                    let what = format!("{what} platform manifest");
                    needs.blob(self, what, image.manifest.digest.clone(), size);
                }
                if image.manifest.digest != platform {
                    // The lock names another platform manifest than the index picks today:
                    // keep the lock's too, it is what `--locked` checks against.
                    needs.blob(self, format!("{what} locked manifest"), platform, None);
                }
                let config = &image.config;
                let config_what = format!("{what} config");
                needs.blob(self, config_what, config.digest.clone(), Some(config.size));
                let count = image.layers.len();
                for (i, layer) in image.layers.iter().enumerate() {
                    let what = format!("{what} layer {} of {count}", i + 1);
                    needs.blob(self, what, layer.digest.clone(), Some(layer.size));
                }
            }
            Err(err) => {
                // What lies below an unreadable manifest is unknown: name the gap.
                needs.incomplete = true;
                needs.blob(self, top_what, top.clone(), None);
                if platform != top {
                    let what = format!("{what} platform manifest");
                    needs.blob(self, what, platform.clone(), None);
                }
                let gaps = [&top, &platform];
                let named = needs
                    .blobs
                    .iter()
                    .any(|n| gaps.contains(&&n.digest) && n.problem.is_some());
                if !named && let Some(n) = needs.blobs.iter_mut().find(|n| n.digest == platform) {
                    n.problem = Some(format!("cannot be read: {err}"));
                }
            }
        }
    }
}

impl Cache {
    /// The cosign signature of `signed` that the cache recorded for `reference`'s repository,
    /// if any: its index entry, its manifest and its payloads.
    fn signature_needs(
        &self,
        needs: &mut Needs,
        what: &str,
        reference: &Reference,
        signed: &Digest,
    ) {
        let tag = cks_iso_sigstore::tag_for(signed);
        let key = Key::signature(reference, &tag);
        let Some(found) = self.recall(&key) else {
            return;
        };
        needs.key(key, found.digest.clone(), found.note.clone());
        let sig_what = format!("{what} signature {tag}");
        self.signature_manifest_needs(needs, sig_what, &found.digest, Some(found.size));
    }

    /// The cosign 3 referrers of `signed` that the cache recorded for `reference`'s repository,
    /// if any: the list's index entry and blob, each signature referrer it lists and its bundle.
    fn referrer_needs(
        &self,
        needs: &mut Needs,
        what: &str,
        reference: &Reference,
        signed: &Digest,
    ) {
        let key = Key::referrers(reference, signed);
        let Some(found) = self.recall(&key) else {
            return;
        };
        needs.key(key, found.digest.clone(), found.note.clone());
        let list_what = format!("{what} referrers of {signed}");
        needs.blob(
            self,
            list_what.clone(),
            found.digest.clone(),
            Some(found.size),
        );
        let mut bytes = Vec::new();
        let read = self.open(&found.digest).map(|file| {
            std::io::Read::take(file, crate::image::MAX_MANIFEST_SIZE).read_to_end(&mut bytes)
        });
        if !matches!(read, Ok(Ok(_))) {
            return;
        }
        for (digest, size) in cks_iso_sigstore::referrer::candidates(&bytes).unwrap_or_default() {
            // A listed referrer a build passed over (gone, not of its listed size, its bundle
            // oversized or altered) never entered the cache, and an offline build passes it
            // over again: nothing to carry.
            if !self.holds_referrer(&digest, size) {
                continue;
            }
            let sig_what = format!("{list_what}: referrer {digest}");
            self.signature_manifest_needs(needs, sig_what, &digest, Some(size));
        }
    }

    /// Whether the cache holds the referrer manifest `digest` of `size` bytes and each layer it
    /// names at its size.
    fn holds_referrer(&self, digest: &Digest, size: u64) -> bool {
        if self.size_of(digest) != Some(size) {
            return false;
        }
        let mut bytes = Vec::new();
        let read = self.open(digest).map(|file| {
            std::io::Read::take(file, crate::image::MAX_MANIFEST_SIZE).read_to_end(&mut bytes)
        });
        if !matches!(read, Ok(Ok(_))) {
            return false;
        }
        serde_json::from_slice::<crate::image::Manifest>(&bytes).is_ok_and(|m| {
            m.layers
                .iter()
                .all(|l| self.size_of(&l.digest) == Some(l.size))
        })
    }

    /// A signature manifest and the payloads it lists (when the cache can read it).
    fn signature_manifest_needs(
        &self,
        needs: &mut Needs,
        sig_what: String,
        digest: &Digest,
        size: Option<u64>,
    ) {
        needs.blob(self, sig_what.clone(), digest.clone(), size);
        let mut bytes = Vec::new();
        let read = self.open(digest).map(|file| {
            std::io::Read::take(file, crate::image::MAX_MANIFEST_SIZE).read_to_end(&mut bytes)
        });
        if !matches!(read, Ok(Ok(_))) {
            return;
        }
        if let Ok(manifest) = serde_json::from_slice::<crate::image::Manifest>(&bytes) {
            for (i, layer) in manifest.layers.iter().enumerate() {
                let what = format!("{sig_what} payload {}", i + 1);
                needs.blob(self, what, layer.digest.clone(), Some(layer.size));
            }
        }
    }
}

/// The index entries naming `digest`.
fn entries_naming<'a>(
    entries: &'a [IndexEntry],
    digest: &'a Digest,
) -> impl Iterator<Item = &'a IndexEntry> {
    entries.iter().filter(move |e| e.digest == *digest)
}
