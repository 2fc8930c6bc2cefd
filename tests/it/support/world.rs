//! testworld's image corpus ([`cks_iso_testworld::images::corpus`]), stored in a blob cache the
//! way a pull would leave it, for tests of the archive writer and the readers that need no
//! registry. One generator serves both these tests and the registry's.

use std::collections::BTreeMap;

use cks_iso::cache::Cache;
use cks_iso::image::{Arch, Digest, Reference};
use tempfile::TempDir;

/// An image of the world: how it is referenced, what that resolves to, and what it is built for.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The full reference.
    pub text: String,
    /// Parsed.
    pub reference: Reference,
    /// The digest of the index or manifest the reference resolves to.
    pub top: Digest,
    /// Per architecture it is published for: the manifest's digest and the layers' uncompressed
    /// digests.
    pub per_arch: BTreeMap<Arch, (Digest, Vec<Digest>)>,
}

/// A cache holding every fixture's blobs, manifests and indexes.
pub struct World {
    pub dir: TempDir,
    pub cache: Cache,
    pub images: Vec<Fixture>,
}

impl World {
    /// The fixture `text` names, written as a user would (`busybox:1.36` is Docker Hub's).
    pub fn image(&self, text: &str) -> &Fixture {
        let wanted = Reference::parse(text).unwrap();
        self.images
            .iter()
            .find(|f| f.reference == wanted)
            .unwrap_or_else(|| panic!("no fixture {text}"))
    }
}

fn digest(text: &str) -> Digest {
    Digest::parse(text).unwrap()
}

/// Builds the world in a fresh temporary directory.
pub fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path().join("cache"));
    let corpus = cks_iso_testworld::images::corpus();
    for plan in corpus.repos.values() {
        let manifests = plan.manifests.iter().map(|(_, _, bytes)| bytes);
        for bytes in plan.blobs.values().chain(manifests) {
            cache.put_bytes(bytes).unwrap();
        }
    }
    let images = corpus
        .fixtures
        .iter()
        .map(|f| {
            let text = f.reference();
            let per_arch = f
                .per_arch
                .iter()
                .map(|(arch, image)| {
                    let diff_ids = image.diff_ids.iter().map(|d| digest(d)).collect();
                    (
                        Arch::parse(arch).unwrap(),
                        (digest(&image.manifest), diff_ids),
                    )
                })
                .collect();
            Fixture {
                reference: Reference::parse(&text).unwrap(),
                text,
                top: digest(&f.top),
                per_arch,
            }
        })
        .collect();
    World { dir, cache, images }
}
