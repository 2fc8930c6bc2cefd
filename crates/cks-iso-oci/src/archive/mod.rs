//! Image archives: one image for one platform as a tar that `ctr import`, `docker load`,
//! `podman load` and skopeo all read (contract §5). No network.
//!
//! Layout, the combination `ctr images export` and `docker save` (Docker ≥ 25) write, with the
//! entries in this fixed (byte-sorted) order:
//!
//! ```text
//! blobs/                     directory, 0755
//! blobs/sha256/              directory, 0755
//! blobs/sha256/<hex>         0644: the index (if any), the platform's manifest, its config and
//!                            its compressed layers exactly as stored; nothing of other platforms
//! index.json                 0644: one descriptor of the digest the reference resolved to,
//!                            annotated io.containerd.image.name=<full name> and
//!                            org.opencontainers.image.ref.name=<tag | tag@digest | @digest>
//! manifest.json              0644: [{"Config":…,"RepoTags":["<host/path:tag>"],"Layers":[…]}]
//! oci-layout                 0644: {"imageLayoutVersion":"1.0.0"}
//! ```
//!
//! Because `index.json` points at the registry's own index, `ctr import` keeps the registry's
//! digest, so manifests that pin images by digest resolve on an air-gapped node.
//!
//! Every tar header is fixed: ustar, uid/gid 0, no user or group names, the given mtime. The same
//! image and mtime give the same bytes. Blobs are streamed from a [`BlobSource`] through a hasher
//! in one pass (each is read once and memory does not grow with its size); a blob whose digest or
//! size differs from its descriptor aborts the archive. A blob the source verified in this
//! process ([`Opened::Verified`]: the cache's fresh downloads) is not hashed again but copied by
//! the kernel (`copy_file_range`), so its bytes never pass through user space. The file is
//! written through [`AtomicFile`], so a failed or interrupted write leaves nothing behind.

pub mod containerd;
mod error;
mod inspect;
mod layout;
mod model;
mod naming;
mod stream;
mod verify;

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use tar::{EntryType, Header};

use crate::image::{BlobSource, Descriptor, Digest, Image, Opened};
use cks_iso_io::atomic::AtomicFile;
pub use error::ArchiveError;
pub use inspect::{InspectError, Inspected, inspect};
pub use layout::{IMAGE_NAME, REF_NAME};
use model::Piece;
pub use model::{Archive, Reader};
pub use naming::{Naming, Renamed, assign as assign_names, plain_name};
use stream::TarStream;

/// A finished archive.
#[derive(Debug, Clone)]
pub struct Written {
    /// Where it is.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
}

/// Writes `image` as an archive at `path`, reading blobs from `source`, every entry dated `mtime`.
pub fn write(
    image: &Image,
    source: &dyn BlobSource,
    path: &Path,
    mtime: u64,
) -> Result<Written, ArchiveError> {
    write_platforms(std::slice::from_ref(image), source, path, mtime)
}

/// Writes one archive of several platforms of the same index: `images` are [`Image::load`]ed
/// from one top index, one per platform (cks-iso's own container image, `make image`). The
/// archive holds the index, every platform's manifest, config and layers; `index.json` names the
/// index, so `ctr import --all-platforms` and `skopeo` see all of them. `manifest.json` has an
/// entry per platform, the first one tagged (`docker load` gives a tag to one image only).
pub fn write_platforms(
    images: &[Image],
    source: &dyn BlobSource,
    path: &Path,
    mtime: u64,
) -> Result<Written, ArchiveError> {
    let output = |source| ArchiveError::Output {
        path: path.to_owned(),
        source,
    };
    let archive = Archive::describe_platforms(images, mtime).map_err(|e| e.at(path))?;
    let mut out = AtomicFile::create(path).map_err(output)?;
    out.set_mode(0o644).map_err(output)?;
    // Unbuffered on purpose: a handful of 512-byte headers, and blob data that the kernel copies
    // from file to file only when it sees both files.
    write_archive(&archive, source, out.file()).map_err(|e| e.at(path))?;
    let size = out.file().metadata().map_err(output)?.len();
    let path = out.commit_unsynced().map_err(output)?;
    Ok(Written { path, size })
}

/// A blob to put in the archive: in memory (already read and verified) or to stream; with what
/// to call it in errors.
enum Blob<'a> {
    Bytes(&'static str, &'a [u8]),
    Stream(String),
}

/// The blobs of the archive of `images` (one, or several platforms of one index), each once, in
/// archive (digest) order. The first of duplicates is kept, so a single-platform image's
/// manifest, which is also its top, is called `manifest`.
fn blobs(images: &[Image]) -> Vec<(Descriptor, Blob<'_>)> {
    let mut blobs = Vec::new();
    for image in images {
        let top = match image.top.media_type.is_index() {
            true => "index",
            false => "manifest",
        };
        blobs.push((image.top.descriptor(), Blob::Bytes(top, &image.top.bytes)));
        blobs.push((
            image.manifest.descriptor(),
            Blob::Bytes("manifest", &image.manifest.bytes),
        ));
        blobs.push((image.config.clone(), Blob::Stream("config".into())));
        let count = image.layers.len();
        for (i, layer) in image.layers.iter().enumerate() {
            let what = format!("layer {} of {count}", i + 1);
            blobs.push((layer.clone(), Blob::Stream(what)));
        }
    }
    blobs.sort_by(|a, b| a.0.digest.cmp(&b.0.digest));
    blobs.dedup_by(|a, b| a.0.digest == b.0.digest);
    blobs
}

/// Writes the archive of `image` to `out`, laying down the pieces [`Archive::describe`] gives. An
/// [`ArchiveError::Output`] from here has an empty path; [`write()`] fills it in.
pub fn write_to<W: Write>(
    image: &Image,
    source: &dyn BlobSource,
    out: W,
    mtime: u64,
) -> Result<(), ArchiveError> {
    write_archive(&Archive::describe(image, mtime)?, source, out)
}

/// Lays `archive`'s pieces into `out`, taking its blobs from `source`.
fn write_archive<W: Write>(
    archive: &Archive,
    source: &dyn BlobSource,
    out: W,
) -> Result<(), ArchiveError> {
    let name = &archive.image;
    let mut tar = TarStream::new(out);
    for piece in &archive.pieces {
        let (desc, what) = match piece {
            Piece::Bytes(bytes) => {
                tar.raw(bytes).map_err(output)?;
                continue;
            }
            Piece::Blob { desc, what } => (desc, what),
        };
        let opened = source
            .open_for_copy(&desc.digest)
            .map_err(|source| ArchiveError::Source {
                image: name.clone(),
                blob: what.clone(),
                digest: desc.digest.clone(),
                source,
            })?;
        match opened {
            Opened::Verified(file) if has_size(&file, desc.size) => tar
                .copy_file(&file, desc.size)
                .map_err(|e| match e.kind() {
                    // The blob shrank under us: the source's fault, not the archive's.
                    io::ErrorKind::UnexpectedEof => ArchiveError::Source {
                        image: name.clone(),
                        blob: what.clone(),
                        digest: desc.digest.clone(),
                        source: e,
                    },
                    _ => output(e),
                })?,
            Opened::Verified(file) => copy_checked(&mut tar, file, desc, name, what)?,
            Opened::Unverified(reader) => {
                copy_checked(&mut tar, reader, desc, name, what)?;
                source.confirm(&desc.digest);
            }
        }
    }
    tar.flush().map_err(output)
}

/// An output error whose path [`write`] fills in.
fn output(source: io::Error) -> ArchiveError {
    ArchiveError::Output {
        path: PathBuf::new(),
        source,
    }
}

fn has_size(file: &File, size: u64) -> bool {
    file.metadata().is_ok_and(|meta| meta.len() == size)
}

/// Copies a blob through a hasher, failing unless it is exactly what `desc` says.
fn copy_checked<W: Write>(
    tar: &mut TarStream<W>,
    reader: impl Read,
    desc: &Descriptor,
    image: &str,
    what: &str,
) -> Result<(), ArchiveError> {
    let mut reader = verify::Verifying::new(reader, desc);
    let result = tar.copy(&mut reader);
    reader.check(result, image, what)
}

/// A ustar header with every field fixed but name, type, mode and size.
fn header(path: &str, kind: EntryType, mode: u32, size: u64, mtime: u64) -> io::Result<Header> {
    let mut header = Header::new_ustar();
    header.set_path(path)?;
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_mtime(mtime);
    header.set_uid(0);
    header.set_gid(0);
    header.set_cksum();
    Ok(header)
}

impl ArchiveError {
    fn at(self, path: &Path) -> Self {
        match self {
            Self::Output { source, .. } => Self::Output {
                path: path.to_owned(),
                source,
            },
            other => other,
        }
    }
}

/// The digests an archive of `image` contains, in archive order (for tests and reports).
pub fn blob_digests(image: &Image) -> Vec<Digest> {
    blobs(std::slice::from_ref(image))
        .into_iter()
        .map(|(desc, _)| desc.digest)
        .collect()
}
