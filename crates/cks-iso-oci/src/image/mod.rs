//! The one image abstraction every source yields and every writer takes.
//!
//! Modelled on go-containerregistry: whether an image comes from a registry, the local blob cache
//! or anything else, it is described by an [`Image`] (what the reference resolved to, the exact
//! bytes of the index or manifest, the chosen platform's manifest, its config and layers) and its
//! blobs are read through a [`BlobSource`]. Writers such as [`crate::archive`] take any of them.
//!
//! Nothing here trusts a source: [`Image::load`] hashes every manifest it reads and compares it
//! with the digest that named it, caps their size, and picks the target platform (see
//! [`select`]); blob readers are hashed again by whoever copies them, unless the source itself
//! verified that blob in this process ([`Opened::Verified`]). No network.

mod digest;
mod error;
mod manifest;
mod platform;
mod reference;

use std::fs::File;
use std::io::{self, Read};

pub use digest::{Digest, Hashing, sha256_of};
pub use error::ImageError;
pub use manifest::parse;
pub use manifest::{Descriptor, Index, MAX_MANIFEST_SIZE, Manifest, MediaType, NotAManifest};
pub use platform::{Arch, Platform, REFERENCE_TYPE, is_attestation, select};
pub use reference::{DOCKER_HUB, Reference};

/// Anything that can stream blobs by digest: the cache, a registry, an archive.
///
/// Readers are not trusted: whoever reads one hashes the bytes and compares them with `digest`.
/// The one exception is [`BlobSource::open_for_copy`] returning [`Opened::Verified`].
pub trait BlobSource {
    /// Opens the blob (layer, config) named `digest`.
    fn open(&self, digest: &Digest) -> io::Result<Box<dyn Read + Send + '_>>;

    /// Opens the blob `digest` to copy it whole. The default is [`BlobSource::open`]'s reader, to
    /// be hashed while copied.
    fn open_for_copy(&self, digest: &Digest) -> io::Result<Opened<'_>> {
        Ok(Opened::Unverified(self.open(digest)?))
    }

    /// Tells the source that a copy of `digest` opened with [`BlobSource::open_for_copy`] hashed
    /// to `digest`, so later copies need not hash it again. The default forgets it.
    fn confirm(&self, digest: &Digest) {
        let _ = digest;
    }

    /// Opens the manifest or index named `digest`. Registries serve these from a different
    /// endpoint than blobs; stores that keep both together use the default.
    fn open_manifest(&self, digest: &Digest) -> io::Result<Box<dyn Read + Send + '_>> {
        self.open(digest)
    }
}

/// A blob opened for copying.
pub enum Opened<'a> {
    /// A file whose content this process hashed and found equal to its digest, and that nothing
    /// has written since (the cache's own blobs, downloaded or checked in this run). Copy it as
    /// it is: on Linux the kernel does (`copy_file_range`), without a pass through user space.
    Verified(File),
    /// Anything else: hash it while copying.
    Unverified(Box<dyn Read + Send + 'a>),
}

/// A manifest or index with its exact bytes, as served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawManifest {
    /// What kind it is.
    pub media_type: MediaType,
    /// The digest of `bytes`.
    pub digest: Digest,
    /// The bytes, never re-serialised.
    pub bytes: Vec<u8>,
}

impl RawManifest {
    /// A descriptor pointing at it.
    pub fn descriptor(&self) -> Descriptor {
        Descriptor::new(
            self.media_type,
            self.digest.clone(),
            self.bytes.len() as u64,
        )
    }
}

/// One image for one target platform, resolved and verified down to its blob descriptors.
#[derive(Debug, Clone)]
pub struct Image {
    /// The normalised reference it was asked for.
    pub reference: Reference,
    /// What the reference resolved to: the multi-arch index when there is one, else the manifest.
    pub top: RawManifest,
    /// The target platform's manifest (the same as `top` for a single-platform image).
    pub manifest: RawManifest,
    /// The platform chosen, as the index (or, for a single manifest, the config) states it.
    pub platform: Platform,
    /// The config blob.
    pub config: Descriptor,
    /// The compressed layers, base first.
    pub layers: Vec<Descriptor>,
}

impl Image {
    /// Resolves the image whose index or manifest is `top`, for `linux/<arch>`, reading manifests
    /// (and, for a single-platform image, its config) from `source` and verifying each.
    pub fn load(
        reference: Reference,
        top: &Digest,
        arch: Arch,
        source: &dyn BlobSource,
    ) -> Result<Self, ImageError> {
        let image = reference.to_string();
        if let Some(pinned) = reference.digest().filter(|pinned| *pinned != top) {
            return Err(ImageError::DigestMismatch {
                image,
                what: "the reference's pinned digest".into(),
                expected: pinned.clone(),
                actual: top.clone(),
            });
        }
        let top = read_manifest(source, &image, top, None)?;
        let (manifest, platform) = match top.media_type.is_index() {
            true => {
                let index: Index = manifest::parse(&top.bytes, &top.digest, "index")?;
                let entry = platform::select(&index.manifests, arch).map_err(|available| {
                    ImageError::NoPlatform {
                        image: image.clone(),
                        wanted: arch,
                        available,
                    }
                })?;
                let chosen = read_manifest(source, &image, &entry.digest, Some(entry.size))?;
                if chosen.media_type.is_index() {
                    return Err(unsupported(
                        &image,
                        &chosen.digest,
                        "an index inside an index",
                    ));
                }
                (chosen, entry.platform.clone())
            }
            false => (top.clone(), None),
        };
        let parsed: Manifest = manifest::parse(&manifest.bytes, &manifest.digest, "manifest")?;
        let platform = match platform {
            Some(platform) => platform,
            None => {
                let config = &parsed.config;
                let bytes = read_verified(source, &image, "config", &config.digest, false)?;
                let found: Platform = manifest::parse(&bytes, &config.digest, "config")?;
                if !found.matches(arch) {
                    return Err(ImageError::WrongArch {
                        image,
                        wanted: arch,
                        found,
                    });
                }
                found
            }
        };
        Ok(Self {
            reference,
            top,
            manifest,
            platform,
            config: parsed.config,
            layers: parsed.layers,
        })
    }
}

fn unsupported(image: &str, digest: &Digest, reason: impl Into<String>) -> ImageError {
    ImageError::Unsupported {
        image: image.to_owned(),
        digest: digest.clone(),
        reason: reason.into(),
    }
}

fn read_manifest(
    source: &dyn BlobSource,
    image: &str,
    digest: &Digest,
    size: Option<u64>,
) -> Result<RawManifest, ImageError> {
    let bytes = read_verified(source, image, "manifest", digest, true)?;
    if let Some(size) = size.filter(|&size| size != bytes.len() as u64) {
        let reason = format!("the index says {size} bytes, it has {}", bytes.len());
        return Err(unsupported(image, digest, reason));
    }
    let media_type =
        MediaType::sniff(&bytes).map_err(|reason| unsupported(image, digest, reason.0))?;
    Ok(RawManifest {
        media_type,
        digest: digest.clone(),
        bytes,
    })
}

/// Reads a small blob whole (at most [`MAX_MANIFEST_SIZE`]) and checks its digest.
fn read_verified(
    source: &dyn BlobSource,
    image: &str,
    what: &str,
    digest: &Digest,
    is_manifest: bool,
) -> Result<Vec<u8>, ImageError> {
    let source_error = |source| ImageError::Source {
        image: image.to_owned(),
        what: what.to_owned(),
        digest: digest.clone(),
        source,
    };
    let reader = match is_manifest {
        true => source.open_manifest(digest),
        false => source.open(digest),
    }
    .map_err(source_error)?;
    let mut reader = Hashing::new(reader.take(MAX_MANIFEST_SIZE + 1));
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).map_err(source_error)?;
    if reader.count() > MAX_MANIFEST_SIZE {
        return Err(ImageError::TooLarge {
            image: image.to_owned(),
            what: what.to_owned(),
            digest: digest.clone(),
            limit: MAX_MANIFEST_SIZE,
        });
    }
    let actual = reader.digest();
    if actual != *digest {
        return Err(ImageError::DigestMismatch {
            image: image.to_owned(),
            what: what.to_owned(),
            expected: digest.clone(),
            actual,
        });
    }
    Ok(bytes)
}
