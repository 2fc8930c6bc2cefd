//! An ISO as a source of verified content beside the cache: `build --locked NEW --from-iso
//! OLD.iso` takes what NEW needs and OLD's ISO holds (its archives' blobs, its binaries and
//! tarballs), and `cache export --minus OLD.iso` leaves exactly that out of a delta.
//!
//! The ISO is read with the crate's own ISO reader, never mounted, within its bounds
//! ([`cks_iso_iso9660::bounds`]). A file outside `docker/` is offered under the sha256 of its
//! bytes (for seeding, a large one is found by the size the lock gives it and hashed as it is
//! stored). An archive member `blobs/sha256/<hex>` is offered, as [`Members`] says, either under
//! the digest its name claims — for seeding, where it enters the cache only through
//! [`Cache::put`], which hashes it and refuses bytes that are not the digest's — or only once
//! its bytes were hashed to that digest, for a delta, which leaves out of what it carries every
//! blob the ISO offers: a name alone must never make a delta assume the far side holds a blob.
//! So an altered ISO can make a blob missing, never wrong, and never absent from a delta. Each
//! blob is read once: hashed as its archive streams by, or (seeding) seeked past until it is
//! copied. Small blobs (indexes, manifests, configs, signatures; up to 64 MiB in all) are held in
//! memory from the first pass, so that an image's index, platform manifest and config are found
//! in one go and its layers copied in a second pass. No network.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use cks_iso_iso9660::read::FileKind;
use sha2::{Digest as _, Sha256};

use super::{Cache, CacheError};
use crate::contract;
use crate::image::Digest;
use crate::lock::Lock;
use cks_iso_iso9660::read::{IsoReader, ReadError};

/// Members and files at most this big are kept in memory after the first pass (indexes,
/// manifests, configs, signatures)…
const SMALL: u64 = 1 << 20;

/// …up to this many bytes in all; the rest are read again when seeded.
const KEPT: u64 = 64 << 20;

/// Where a blob lies in the ISO.
#[derive(Debug, Clone)]
enum Place {
    /// A member of an image archive: the archive's ISO path.
    Member(String),
    /// A file outside `docker/`: its ISO path.
    File(String),
}

/// How an archive member's name is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Members {
    /// Offered under the digest its name claims, unread: for [`IsoSource::seed`], which hashes
    /// what it stores. Members not kept in memory are skipped (the archive is seeked past them).
    Named,
    /// Hashed as the archive streams by and offered only when the bytes are the digest the name
    /// claims: for [`IsoSource::digests`], which a delta takes as what the far side holds.
    Hashed,
}

/// What an ISO offers, by digest.
pub struct IsoSource {
    iso: PathBuf,
    reader: IsoReader,
    members: Members,
    places: BTreeMap<Digest, Place>,
    small: BTreeMap<Digest, Vec<u8>>,
    /// The bytes in `small`.
    kept: u64,
    /// Files outside `docker/` by size, not hashed yet (see [`IsoSource::hash_files`]).
    files: Vec<(String, u64)>,
}

/// What seeding took from the ISO.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seeded {
    /// Blobs added to the cache.
    pub blobs: usize,
    /// Their bytes.
    pub bytes: u64,
}

fn read_err(iso: &Path, e: impl std::fmt::Display) -> ReadError {
    ReadError::new(iso, e)
}

impl IsoSource {
    /// The files [`IsoSource::hash_files`] keeps in memory: those at most this big.
    pub const SMALL: u64 = SMALL;

    /// Reads `iso`'s directory and every archive once (members' names and sizes, hashed as
    /// `members` says; small ones kept).
    pub fn open(iso: &Path, members: Members) -> Result<Self, ReadError> {
        let reader = IsoReader::open(iso)?;
        let mut source = Self {
            iso: iso.to_owned(),
            reader,
            members,
            places: BTreeMap::new(),
            small: BTreeMap::new(),
            kept: 0,
            files: Vec::new(),
        };
        let entries = source.reader.entries()?;
        for e in entries.into_iter().filter(|e| e.kind == FileKind::File) {
            match e.path.starts_with(contract::IMAGES_PREFIX) {
                true => source.index_archive(&e.path)?,
                false => source.files.push((e.path, e.len)),
            }
        }
        Ok(source)
    }

    /// The ISO, as given.
    pub fn path(&self) -> &Path {
        &self.iso
    }

    fn index_archive(&mut self, path: &str) -> Result<(), ReadError> {
        let file = self.reader.open_file(path)?;
        let mut archive = tar::Archive::new(BufReader::with_capacity(1 << 16, file));
        let entries = match self.members {
            // Seeking past a member reads none of it.
            Members::Named => archive.entries_with_seek(),
            Members::Hashed => archive.entries(),
        };
        let entries = entries.map_err(|e| read_err(&self.iso, e))?;
        for entry in entries {
            let Ok(mut entry) = entry else {
                // A damaged archive offers what came before the damage.
                break;
            };
            let Some(digest) = member_digest(&entry) else {
                continue;
            };
            let size = entry.size();
            let offered = match self.members {
                Members::Named => {
                    if size <= SMALL && self.kept + size <= KEPT {
                        let mut bytes = Vec::with_capacity(size as usize);
                        if entry.read_to_end(&mut bytes).is_ok() {
                            self.keep(&digest, bytes);
                        }
                    }
                    true
                }
                // One copy with the right bytes is enough: later ones are not hashed again.
                Members::Hashed if self.places.contains_key(&digest) => false,
                Members::Hashed => match self.hash_member(path, &digest, &mut entry) {
                    Ok(offered) => offered,
                    // A damaged archive offers what came before the damage.
                    Err(_) => break,
                },
            };
            if offered {
                self.places
                    .entry(digest)
                    .or_insert(Place::Member(path.to_owned()));
            }
        }
        Ok(())
    }

    /// Hashes a member as it streams by (kept in memory when small): whether its bytes are the
    /// digest its name claims. A member that is not is said once, on stderr, and not offered.
    fn hash_member(
        &mut self,
        archive: &str,
        digest: &Digest,
        entry: &mut impl Read,
    ) -> std::io::Result<bool> {
        let (actual, small) = hash_stream(entry)?;
        if actual != *digest {
            tracing::warn!(
                "{}: {archive} holds {actual} under the name of {digest}: not counted as held",
                self.iso.display()
            );
            return Ok(false);
        }
        if let Some(small) = small {
            self.keep(&actual, small);
        }
        Ok(true)
    }

    /// Keeps `bytes` (of `digest`) in memory within [`KEPT`].
    fn keep(&mut self, digest: &Digest, bytes: Vec<u8>) {
        let len = bytes.len() as u64;
        if self.kept + len <= KEPT && !self.small.contains_key(digest) {
            self.kept += len;
            self.small.insert(digest.clone(), bytes);
        }
    }

    /// Hashes every file outside `docker/` (binaries, tarballs, manifests) of at most `up_to`
    /// bytes, so that [`IsoSource::digests`] lists them too; the small ones are kept in memory,
    /// so that seeding does not read them again.
    pub fn hash_files(&mut self, up_to: u64) -> Result<(), ReadError> {
        for (path, size) in std::mem::take(&mut self.files) {
            if size <= up_to {
                let file = self.reader.open_file(&path)?;
                let (digest, small) = hash_stream(file).map_err(|e| read_err(&self.iso, e))?;
                if let Some(small) = small {
                    self.keep(&digest, small);
                }
                self.places
                    .entry(digest)
                    .or_insert(Place::File(path.clone()));
            }
            self.files.push((path, size));
        }
        Ok(())
    }

    /// Every digest the ISO offers (files only after [`IsoSource::hash_files`]).
    pub fn digests(&self) -> BTreeSet<Digest> {
        self.places.keys().cloned().collect()
    }

    /// Adds to `cache` what `lock` needs, the cache lacks and the ISO holds, each blob hashed as it
    /// is stored, and the index entries the lock names for them. Repeats while that uncovers more
    /// (an image's manifest names its layers).
    pub fn seed(&self, cache: &Cache, lock: &Lock) -> Result<Seeded, CacheError> {
        let mut seeded = Seeded::default();
        let mut tried: BTreeSet<Digest> = BTreeSet::new();
        for _round in 0..8 {
            let missing: Vec<(Digest, Option<u64>)> = cache
                .needs(lock)
                .missing()
                .filter(|n| !tried.contains(&n.digest))
                .map(|n| (n.digest.clone(), n.size))
                .collect();
            if missing.is_empty() {
                break;
            }
            let mut members: BTreeMap<&str, BTreeMap<Digest, Option<u64>>> = BTreeMap::new();
            for (digest, size) in &missing {
                tried.insert(digest.clone());
                if let Some(bytes) = self.small.get(digest)
                    && self.put(cache, digest, *size, bytes.as_slice(), &mut seeded)?
                {
                    continue;
                }
                match self.places.get(digest) {
                    Some(Place::Member(archive)) => {
                        members
                            .entry(archive.as_str())
                            .or_default()
                            .insert(digest.clone(), *size);
                    }
                    Some(Place::File(path)) => {
                        self.put_file(cache, path, digest, *size, &mut seeded)?;
                    }
                    // A file not hashed yet: any of the same size may be it.
                    None => {
                        for (path, _) in self.files.iter().filter(|(_, s)| Some(*s) == *size) {
                            if self.put_file(cache, path, digest, *size, &mut seeded)? {
                                break;
                            }
                        }
                    }
                }
            }
            for (archive, wanted) in members {
                self.copy_members(cache, archive, &wanted, &mut seeded)?;
            }
        }
        // The index entries the lock names, for the blobs now here: the lock vouches for them,
        // as it does for `cache import --locked`.
        for key in cache.needs(lock).keys {
            if let Some(size) = cache.size_of(&key.digest)
                && cache
                    .recall(&key.key)
                    .is_none_or(|r| r.digest != key.digest)
            {
                cache.remember(&key.key, &key.digest, size, &key.note)?;
            }
        }
        Ok(seeded)
    }

    /// Stores `reader` as `digest` when it hashes to it; `false` (nothing stored) when not.
    fn put(
        &self,
        cache: &Cache,
        digest: &Digest,
        size: Option<u64>,
        reader: impl Read,
        seeded: &mut Seeded,
    ) -> Result<bool, CacheError> {
        match cache.put(digest, size, reader) {
            Ok(n) => {
                cache.mark_verified(digest);
                seeded.blobs += 1;
                seeded.bytes += n;
                Ok(true)
            }
            Err(CacheError::Mismatch { actual, .. }) => {
                tracing::warn!(
                    "{}: what it holds under {digest} is {actual}: not taken",
                    self.iso.display()
                );
                Ok(false)
            }
            Err(CacheError::Source { source, .. }) => {
                tracing::warn!("{}: cannot read {digest}: {source}", self.iso.display());
                Ok(false)
            }
            Err(other) => Err(other),
        }
    }

    fn put_file(
        &self,
        cache: &Cache,
        path: &str,
        digest: &Digest,
        size: Option<u64>,
        seeded: &mut Seeded,
    ) -> Result<bool, CacheError> {
        let Ok(file) = self.reader.open_file(path) else {
            return Ok(false);
        };
        // Quietly: a file of the right size that is another blob is no warning.
        match cache.put(digest, size, file) {
            Ok(n) => {
                cache.mark_verified(digest);
                seeded.blobs += 1;
                seeded.bytes += n;
                Ok(true)
            }
            Err(CacheError::Mismatch { .. } | CacheError::Source { .. }) => Ok(false),
            Err(other) => Err(other),
        }
    }

    fn copy_members(
        &self,
        cache: &Cache,
        archive: &str,
        wanted: &BTreeMap<Digest, Option<u64>>,
        seeded: &mut Seeded,
    ) -> Result<(), CacheError> {
        let Ok(file) = self.reader.open_file(archive) else {
            return Ok(());
        };
        let mut tar = tar::Archive::new(BufReader::with_capacity(1 << 16, file));
        let Ok(entries) = tar.entries() else {
            return Ok(());
        };
        for entry in entries {
            let Ok(entry) = entry else { break };
            let Some(digest) = member_digest(&entry) else {
                continue;
            };
            if let Some(size) = wanted.get(&digest) {
                self.put(cache, &digest, *size, entry, seeded)?;
            }
        }
        Ok(())
    }
}

/// The sha256 of what `reader` gives, read to its end in one pass, and the bytes when they are
/// [`SMALL`].
fn hash_stream(mut reader: impl Read) -> std::io::Result<(Digest, Option<Vec<u8>>)> {
    let mut hasher = Sha256::new();
    let (mut small, mut total) = (Vec::new(), 0u64);
    let mut buf = vec![0; 1 << 16];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        total += n as u64;
        if total <= SMALL {
            small.extend_from_slice(&buf[..n]);
        }
    }
    let small = (total <= SMALL).then_some(small);
    Ok((Digest::from_hasher(hasher), small))
}

/// The digest a member's name `blobs/sha256/<hex>` claims, for regular files.
fn member_digest<R: Read>(entry: &tar::Entry<'_, R>) -> Option<Digest> {
    if !entry.header().entry_type().is_file() {
        return None;
    }
    let path = entry.path().ok()?;
    let hex = path
        .to_str()?
        .trim_start_matches("./")
        .strip_prefix("blobs/sha256/")?;
    Digest::from_hex(hex).ok()
}
