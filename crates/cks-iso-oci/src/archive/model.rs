//! One archive, described before a byte of it is written: the exact bytes of every tar header,
//! small entry and padding, and between them the blobs to take from the cache, in order. Its size
//! is known up front, which is what lets the ISO writer reserve its extent and fill it straight
//! from the cache (every image byte written once).
//!
//! The same description feeds both sinks, so they cannot drift apart: [`super::write_to`] lays it
//! into a file (`pull`), [`Reader`] hands it out in order to whoever asks (the ISO writer in
//! `build`). Both apply the cache's rule: a blob not verified in this process is hashed as it is
//! copied, and a mismatch fails naming the blob. The ISO sink hashes on a helper thread
//! ([`HashThread`]) and checks the digests when the archive's last byte is handed out: a warm
//! `build` takes every blob from the cache, and hashing them inline made the thread that writes
//! the ISO hash every image byte (half its time in a profile) while another hashed the ISO.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt as _;

use tar::EntryType;

use super::{ArchiveError, header, layout, verify};
use crate::image::{BlobSource, Descriptor, Digest, Hashing, Image, Opened};
use cks_iso_io::hash_thread::HashThread;

const BLOCK: u64 = 512;

/// A stretch of the archive.
#[derive(Debug)]
pub(super) enum Piece {
    /// Headers, in-memory entries, padding and the end-of-archive blocks, merged when adjacent.
    Bytes(Vec<u8>),
    /// A blob's data, taken from the blob source.
    Blob {
        /// What the manifest says it is.
        desc: Descriptor,
        /// What to call it in errors (`config`, `layer 2 of 5`).
        what: String,
    },
}

/// An archive of one image, as pieces whose lengths add up to [`Archive::size`].
#[derive(Debug)]
pub struct Archive {
    /// The image's full reference, for errors.
    pub(super) image: String,
    pub(super) pieces: Vec<Piece>,
    size: u64,
}

impl Archive {
    /// Describes the archive of `image` with every entry dated `mtime`. Reads nothing; fails only
    /// when a header cannot hold a field or an in-memory manifest does not match its digest.
    pub fn describe(image: &Image, mtime: u64) -> Result<Self, ArchiveError> {
        Self::describe_platforms(std::slice::from_ref(image), mtime)
    }

    /// Describes the archive of several platforms of one index (see
    /// [`super::write_platforms`]); fails when `images` is empty or they come from different
    /// tops or references.
    pub fn describe_platforms(images: &[Image], mtime: u64) -> Result<Self, ArchiveError> {
        let Some(image) = images.first() else {
            return Err(ArchiveError::Platforms {
                image: String::new(),
                reason: "no image was given".into(),
            });
        };
        if let Some(other) = images
            .iter()
            .find(|i| i.top.digest != image.top.digest || i.reference != image.reference)
        {
            return Err(ArchiveError::Platforms {
                image: image.reference.to_string(),
                reason: format!(
                    "expected every platform from {} {}, found {} {}",
                    image.reference, image.top.digest, other.reference, other.top.digest
                ),
            });
        }
        let mut archive = Self {
            image: image.reference.to_string(),
            pieces: Vec::new(),
            size: 0,
        };
        let output = super::output;
        for dir in ["blobs/", "blobs/sha256/"] {
            let header = header(dir, EntryType::Directory, 0o755, 0, mtime).map_err(output)?;
            archive.bytes(header.as_bytes());
        }
        for (desc, blob) in super::blobs(images) {
            let path = layout::blob_path(&desc.digest);
            let header =
                header(&path, EntryType::Regular, 0o644, desc.size, mtime).map_err(output)?;
            archive.bytes(header.as_bytes());
            match blob {
                super::Blob::Bytes(what, bytes) => {
                    verify::bytes(&archive.image, what, &desc, bytes)?;
                    archive.bytes(bytes);
                }
                super::Blob::Stream(what) => {
                    archive.size += desc.size;
                    archive.pieces.push(Piece::Blob { desc, what });
                }
            }
            archive.pad();
        }
        let files = [
            ("index.json", layout::index_json(image)),
            ("manifest.json", layout::manifest_json(images)),
            ("oci-layout", layout::oci_layout()),
        ];
        for (path, bytes) in files {
            let header = header(path, EntryType::Regular, 0o644, bytes.len() as u64, mtime);
            archive.bytes(header.map_err(output)?.as_bytes());
            archive.bytes(&bytes);
            archive.pad();
        }
        archive.bytes(&[0; 2 * BLOCK as usize]);
        Ok(archive)
    }

    /// Its exact size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// A reader of its bytes from `source`, front to back.
    pub fn reader<'a>(&'a self, source: &'a dyn BlobSource) -> Reader<'a> {
        Reader {
            archive: self,
            source,
            piece: 0,
            at: 0,
            open: None,
            pos: 0,
            deferred: None,
            inline: false,
        }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.size += bytes.len() as u64;
        match self.pieces.last_mut() {
            Some(Piece::Bytes(last)) => last.extend_from_slice(bytes),
            _ => self.pieces.push(Piece::Bytes(bytes.to_vec())),
        }
    }

    /// Zeros up to the next 512-byte boundary.
    fn pad(&mut self) {
        let pad = (BLOCK - self.size % BLOCK) % BLOCK;
        self.bytes(&[0; BLOCK as usize][..pad as usize]);
    }
}

/// The blob being read.
enum Open<'a> {
    /// Verified in this process and of the right size: read as it is.
    Verified(File),
    /// Hashed while read; checked when its last byte has been read.
    Checked(verify::Verifying<'a, Box<dyn Read + Send + 'a>>),
    /// Read as it is (at most one byte past its size, to see an over-long blob) while the
    /// [`HashThread`] hashes a copy; checked when the archive ends.
    Deferred(io::Take<Box<dyn Read + Send + 'a>>),
}

/// Reads an [`Archive`] front to back, opening each blob when its first byte is wanted and
/// checking an unverified one when its last byte has been read.
pub struct Reader<'a> {
    archive: &'a Archive,
    source: &'a dyn BlobSource,
    /// The piece being read, and the offset in it.
    piece: usize,
    at: u64,
    open: Option<Open<'a>>,
    /// Bytes handed out so far.
    pos: u64,
    /// The helper thread hashing unverified blobs, started at the first one.
    deferred: Option<HashThread<usize>>,
    /// No helper thread could be started: hash inline.
    inline: bool,
}

impl<'a> Reader<'a> {
    /// Bytes handed out so far: the archive offset of the next byte.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Fills `buf` with the next bytes of the archive; fewer only at its end.
    pub fn fill(&mut self, buf: &mut [u8]) -> Result<usize, ArchiveError> {
        let mut done = 0;
        while done < buf.len() {
            let archive: &'a Archive = self.archive;
            let Some(piece) = archive.pieces.get(self.piece) else {
                break;
            };
            let n = match piece {
                Piece::Bytes(bytes) => {
                    let rest = &bytes[self.at as usize..];
                    let n = rest.len().min(buf.len() - done);
                    buf[done..done + n].copy_from_slice(&rest[..n]);
                    n
                }
                Piece::Blob { desc, what } => {
                    let want = ((desc.size - self.at) as usize).min(buf.len() - done);
                    self.blob(desc, what, &mut buf[done..done + want])?;
                    want
                }
            };
            done += n;
            self.at += n as u64;
            self.pos += n as u64;
            if self.at == self.piece_len(piece) {
                if let Piece::Blob { desc, what } = piece {
                    self.close(desc, what)?;
                }
                self.piece += 1;
                self.at = 0;
                if self.piece == archive.pieces.len() {
                    self.settle()?;
                }
            }
        }
        Ok(done)
    }

    /// After the archive's last byte: every blob the helper hashed must match its descriptor.
    fn settle(&mut self) -> Result<(), ArchiveError> {
        let Some(deferred) = self.deferred.take() else {
            return Ok(());
        };
        let hashed = deferred.finish().ok_or_else(|| ArchiveError::Source {
            image: self.archive.image.clone(),
            blob: "a blob".into(),
            digest: Digest::of(b""),
            source: io::Error::other("the thread hashing the blobs died"),
        })?;
        for h in hashed {
            let Some(Piece::Blob { desc, what }) = self.archive.pieces.get(h.tag) else {
                continue;
            };
            let digest = Digest::from_hasher(h.sha256);
            if digest != desc.digest || h.size != desc.size {
                return Err(ArchiveError::Mismatch {
                    image: self.archive.image.clone(),
                    blob: what.clone(),
                    expected: desc.digest.clone(),
                    actual: digest,
                    expected_size: desc.size,
                    actual_size: h.size,
                });
            }
            self.source.confirm(&desc.digest);
        }
        Ok(())
    }

    /// A blob found too short or too long: hashed whole once more, for the error's real digest.
    fn mismatch(&self, desc: &Descriptor, what: &str) -> ArchiveError {
        let source = self.source_error(desc, what, io::Error::other("the blob changed size"));
        let reader: Box<dyn Read + Send + '_> = match self.source.open_for_copy(&desc.digest) {
            Ok(Opened::Verified(file)) => Box::new(file),
            Ok(Opened::Unverified(reader)) => reader,
            Err(_) => return source,
        };
        let mut hashing = Hashing::new(reader);
        match io::copy(&mut hashing, &mut io::sink()) {
            Ok(_) => ArchiveError::Mismatch {
                image: self.archive.image.clone(),
                blob: what.to_owned(),
                expected: desc.digest.clone(),
                actual: hashing.digest(),
                expected_size: desc.size,
                actual_size: hashing.count(),
            },
            Err(_) => source,
        }
    }

    fn piece_len(&self, piece: &Piece) -> u64 {
        match piece {
            Piece::Bytes(bytes) => bytes.len() as u64,
            Piece::Blob { desc, .. } => desc.size,
        }
    }

    fn source_error(&self, desc: &Descriptor, what: &str, source: io::Error) -> ArchiveError {
        ArchiveError::Source {
            image: self.archive.image.clone(),
            blob: what.to_owned(),
            digest: desc.digest.clone(),
            source,
        }
    }

    /// How to read a blob that must be checked: handed to the helper thread, or hashed inline
    /// when no helper could be started.
    fn check(&mut self, reader: Box<dyn Read + Send + 'a>, desc: &'a Descriptor) -> Open<'a> {
        if self.deferred.is_none() && !self.inline {
            self.deferred = HashThread::start("blob-sha256").ok();
            self.inline = self.deferred.is_none();
        }
        match &self.deferred {
            Some(deferred) => {
                deferred.begin(self.piece);
                Open::Deferred(reader.take(desc.size.saturating_add(1)))
            }
            None => Open::Checked(verify::Verifying::new(reader, desc)),
        }
    }

    /// Reads the blob's bytes `[self.at, self.at + buf.len())` into `buf`.
    fn blob(
        &mut self,
        desc: &'a Descriptor,
        what: &str,
        buf: &mut [u8],
    ) -> Result<(), ArchiveError> {
        if self.open.is_none() {
            let opened = self
                .source
                .open_for_copy(&desc.digest)
                .map_err(|e| self.source_error(desc, what, e))?;
            self.open = Some(match opened {
                Opened::Verified(file) if super::has_size(&file, desc.size) => Open::Verified(file),
                Opened::Verified(file) => self.check(Box::new(file), desc),
                Opened::Unverified(reader) => self.check(reader, desc),
            });
        }
        let at = self.at;
        match self.open.as_mut().expect("opened above") {
            Open::Verified(file) => file.read_exact_at(buf, at).map_err(|e| {
                // The blob shrank under us: the source's fault.
                self.source_error(desc, what, e)
            }),
            Open::Deferred(reader) => match read_full(reader, buf) {
                Ok(()) => {
                    if let Some(deferred) = &self.deferred {
                        deferred.bytes(buf);
                    }
                    Ok(())
                }
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.open = None;
                    Err(self.mismatch(desc, what))
                }
                Err(e) => {
                    self.open = None;
                    Err(self.source_error(desc, what, e))
                }
            },
            Open::Checked(reader) => match read_full(reader, buf) {
                Ok(()) => Ok(()),
                Err(e) => {
                    let Some(Open::Checked(reader)) = self.open.take() else {
                        unreachable!("matched above")
                    };
                    Err(reader
                        .check(Err(e), &self.archive.image, what)
                        .expect_err("an error stays an error"))
                }
            },
        }
    }

    /// After a blob's last byte: an unverified blob must end here and hash to its digest.
    fn close(&mut self, desc: &Descriptor, what: &str) -> Result<(), ArchiveError> {
        match self.open.take() {
            Some(Open::Checked(mut reader)) => {
                let end = reader.read(&mut [0u8; 1]).and_then(|n| match n {
                    0 => Ok(()),
                    _ => Err(io::Error::other(
                        "unreachable: Verifying stops past the size",
                    )),
                });
                reader.check(end, &self.archive.image, what)?;
                self.source.confirm(&desc.digest);
                Ok(())
            }
            Some(Open::Deferred(mut reader)) => match reader.read(&mut [0u8; 1]) {
                Ok(0) => {
                    if let Some(deferred) = &self.deferred {
                        deferred.end();
                    }
                    Ok(())
                }
                Ok(_) => Err(self.mismatch(desc, what)),
                Err(e) => Err(self.source_error(desc, what, e)),
            },
            _ => Ok(()),
        }
    }
}

/// The ISO sink: the archive's bytes go straight into its extent of the image.
impl cks_iso_iso9660::Filler for Reader<'_> {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let n = Reader::fill(self, buf)?;
        match n == buf.len() {
            true => Ok(()),
            false => Err(format!(
                "{}: the archive ended after {} bytes, {} more were asked",
                self.archive.image,
                self.pos,
                buf.len() - n
            )
            .into()),
        }
    }
}

/// Reads exactly `buf.len()` bytes; a short source is `UnexpectedEof`.
fn read_full(reader: &mut impl Read, mut buf: &mut [u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match reader.read(buf) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the blob ended early",
                ));
            }
            Ok(n) => buf = &mut buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
