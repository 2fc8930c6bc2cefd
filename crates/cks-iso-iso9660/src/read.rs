//! Reading an ISO back with hadris-iso, the same library that writes it, for `cks-iso verify`.
//!
//! Linux nodes read the Rock Ridge tree, so that is the tree read here: names, modes and owners as
//! a node sees them. File contents are streamed (`std::io::Read`), never loaded whole. Listing is
//! held to [`crate::bounds`]: a directory reached twice, too many or too deep entries and files
//! naming far more bytes than the ISO holds are refused before any file is read.

use std::collections::HashMap;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use hadris_fs::sync::Volume;
use hadris_fs::{Extent, FileType, MountOptions, NodeId, OpenOptions};
use hadris_iso::IsoId;
use hadris_iso::sync::IsoFs;
use hadris_storage::host::FileDevice;

use crate::bounds::{self, Refusal};

/// Why an ISO cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the ISO {}: {reason}", path.display())]
pub struct ReadError {
    /// The image.
    pub path: PathBuf,
    /// What failed.
    pub reason: String,
    /// The bound the ISO breaks, when the reader refused it rather than failed to read it.
    pub refused: Option<Box<Refusal>>,
}

impl ReadError {
    /// A failure to read `path`.
    pub fn new(path: &Path, reason: impl std::fmt::Display) -> Self {
        Self {
            path: path.to_owned(),
            reason: reason.to_string(),
            refused: None,
        }
    }

    fn refused(path: &Path, refusal: Refusal) -> Self {
        Self {
            path: path.to_owned(),
            reason: refusal.to_string(),
            refused: Some(Box::new(refusal)),
        }
    }

    /// What the user can do: for a refusal, its own hint; else, that an ISO is expected.
    pub fn hint(&self) -> String {
        match &self.refused {
            Some(refusal) => refusal.hint(),
            None => "pass an ISO built by cks-iso or the upstream script; `isoinfo -d -i FILE` \
                     shows whether a file is an ISO 9660 image"
                .into(),
        }
    }
}

/// What a node of the tree is. Our own type, not hadris-fs's `FileType`: callers name no hadris
/// type, so the reader's library can change (or be patched) behind this module alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A named pipe.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A kind a later hadris-fs knows (its `FileType` is `#[non_exhaustive]`).
    Other,
}

impl From<FileType> for FileKind {
    fn from(kind: FileType) -> Self {
        match kind {
            FileType::File => Self::File,
            FileType::Dir => Self::Dir,
            FileType::Symlink => Self::Symlink,
            FileType::CharDevice => Self::CharDevice,
            FileType::BlockDevice => Self::BlockDevice,
            FileType::Fifo => Self::Fifo,
            FileType::Socket => Self::Socket,
            _ => Self::Other,
        }
    }
}

/// One node of the Rock Ridge tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Path without the leading `/`, e.g. `k8s/kubeadm`.
    pub path: String,
    /// File, directory or symlink.
    pub kind: FileKind,
    /// Permission bits (e.g. 0o644).
    pub mode: u32,
    /// Owner and group, when Rock Ridge records them.
    pub owner: Option<(u32, u32)>,
    /// Size in bytes.
    pub len: u64,
}

/// An open ISO.
pub struct IsoReader {
    path: PathBuf,
    volume: Volume<IsoFs<FileDevice>>,
    volume_id: String,
    declared: u64,
    actual: u64,
}

impl IsoReader {
    /// Opens and mounts `path` (Rock Ridge when present).
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        let fail = |reason: String| ReadError::new(path, reason);
        // A FIFO or a device would block or never end.
        cks_iso_io::input::open_regular(path).map_err(|e| fail(e.to_string()))?;
        let device = FileDevice::open(path).map_err(|e| fail(e.to_string()))?;
        let actual = std::fs::metadata(path)
            .map_err(|e| fail(e.to_string()))?
            .len();
        let fs = IsoFs::mount(device, MountOptions::new()).map_err(|e| fail(e.to_string()))?;
        let info = fs.info();
        let volume_id = String::from_utf8_lossy(info.id(IsoId::Volume)).into_owned();
        let declared = u64::from(info.volume_space_size()) * u64::from(info.block_size());
        Ok(Self {
            path: path.to_owned(),
            volume: Volume::new(fs),
            volume_id,
            declared,
            actual,
        })
    }

    /// The volume identifier, without padding.
    pub fn volume_id(&self) -> &str {
        &self.volume_id
    }

    /// The bytes the volume descriptor declares and the bytes the file has. A file shorter than
    /// its volume is a truncated copy (an interrupted download or transfer): its directory may
    /// still read, the files at its end do not.
    pub fn sizes(&self) -> (u64, u64) {
        (self.declared, self.actual)
    }

    fn fail(&self, what: &str, err: impl std::fmt::Display) -> ReadError {
        ReadError::new(&self.path, format!("{what}: {err}"))
    }

    /// The root (as `/`) and every node below it, in tree order, within [`crate::bounds`]: a
    /// directory reached twice, more than [`bounds::MAX_ENTRIES`] entries, one deeper than
    /// [`bounds::MAX_DEPTH`] or files naming more than [`bounds::claim_limit`] are refused.
    pub fn entries(&self) -> Result<Vec<Entry>, ReadError> {
        self.entries_within(bounds::MAX_ENTRIES, bounds::MAX_DEPTH)
    }

    /// [`IsoReader::entries`] with other caps (for tests).
    pub(crate) fn entries_within(
        &self,
        max_entries: usize,
        max_depth: u32,
    ) -> Result<Vec<Entry>, ReadError> {
        let walk = self
            .volume
            .walk("/")
            .map_err(|e| self.fail("listing /", e))?;
        let root = self.volume.metadata("/").map_err(|e| self.fail("/", e))?;
        let mut entries = vec![Entry {
            path: "/".into(),
            kind: root.file_type().into(),
            mode: root.permissions().bits() & 0o7777,
            owner: root.owner().map(|o| (o.uid(), o.gid())),
            len: root.len(),
        }];
        // Each directory listed, by its node (its records' offset), with its path.
        let mut dirs: HashMap<NodeId, String> = HashMap::new();
        let mut files: Vec<(NodeId, usize)> = Vec::new();
        let mut claimed = 0u64;
        for item in walk {
            let item = item.map_err(|e| self.fail("listing", e))?;
            let path = String::from_utf8_lossy(item.path())
                .trim_start_matches('/')
                .to_owned();
            let refused = |refusal| ReadError::refused(&self.path, refusal);
            if entries.len() > max_entries {
                let limit = max_entries;
                return Err(refused(Refusal::TooManyEntries { path, limit }));
            }
            if item.depth() > max_depth {
                let (depth, limit) = (item.depth(), max_depth);
                return Err(refused(Refusal::TooDeep { path, depth, limit }));
            }
            let node = item.entry().node();
            if item.entry().file_type() == FileType::Dir {
                if let Some(first) = dirs.get(&node) {
                    let (first, offset) = (first.clone(), node.get());
                    return Err(refused(Refusal::SharedDirectory {
                        path,
                        first,
                        offset,
                    }));
                }
                dirs.insert(node, path.clone());
            }
            // What the listing read (as `symlink_metadata` would): looking each path up again
            // costs a scan of its directory per entry, minutes for 10,000 entries in one.
            let meta = *item.entry().metadata();
            if meta.file_type() == FileType::File {
                claimed = claimed.saturating_add(meta.len());
                files.push((node, entries.len()));
            }
            entries.push(Entry {
                kind: meta.file_type().into(),
                mode: meta.permissions().bits() & 0o7777,
                owner: meta.owner().map(|o| (o.uid(), o.gid())),
                len: meta.len(),
                path,
            });
        }
        if claimed > bounds::claim_limit(self.actual) {
            return Err(self.shared_extents(claimed, &files, &entries));
        }
        Ok(entries)
    }

    /// The refusal of files naming `claimed` bytes: the extent the most of them share.
    fn shared_extents(
        &self,
        claimed: u64,
        files: &[(NodeId, usize)],
        entries: &[Entry],
    ) -> ReadError {
        let mut by_extent: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
        if let Ok(mut fs) = self.volume.lock() {
            for &(node, index) in files {
                let mut first = [Extent::new(0, 0)];
                if let Ok(1) = fs.extents(node, 0, &mut first) {
                    let key = (first[0].offset(), first[0].len());
                    by_extent.entry(key).or_default().push(index);
                }
            }
        }
        let ((offset, len), sharing) = by_extent
            .into_iter()
            .max_by_key(|(extent, sharing)| (sharing.len(), std::cmp::Reverse(*extent)))
            .unwrap_or_default();
        let name = |i: Option<&usize>| i.map_or_else(String::new, |&i| entries[i].path.clone());
        ReadError::refused(
            &self.path,
            Refusal::SharedExtents {
                claimed,
                size: self.actual,
                count: sharing.len(),
                offset,
                len,
                examples: (name(sharing.first()), name(sharing.get(1))),
            },
        )
    }

    /// A streaming reader of the file at `path` (no leading `/` needed).
    pub fn open_file(&self, path: &str) -> Result<impl Read + Seek + use<>, ReadError> {
        self.volume
            .open(format!("/{path}"), OpenOptions::new().read())
            .map_err(|e| self.fail(path, e))
    }

    /// The whole file at `path`, refused past `limit` bytes (for text files).
    pub fn read_small(&self, path: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
        let mut buf = Vec::new();
        self.open_file(path)?
            .take(limit + 1)
            .read_to_end(&mut buf)
            .map_err(|e| self.fail(path, e))?;
        if buf.len() as u64 > limit {
            return Err(self.fail(
                path,
                format!("larger than {}", indicatif::HumanBytes(limit)),
            ));
        }
        Ok(buf)
    }
}
