//! Reading an ISO back with hadris-iso, the same library that writes it, for `cks-iso verify`.
//!
//! Linux nodes read the Rock Ridge tree, so that is the tree read here: names, modes and owners as
//! a node sees them. File contents are streamed (`std::io::Read`), never loaded whole.

use std::io::Read;
use std::path::{Path, PathBuf};

use hadris_fs::sync::Volume;
use hadris_fs::{FileType, MountOptions, OpenOptions};
use hadris_iso::IsoId;
use hadris_iso::sync::IsoFs;
use hadris_storage::host::FileDevice;

/// Why an ISO cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the ISO {}: {reason}", path.display())]
pub struct ReadError {
    /// The image.
    pub path: PathBuf,
    /// What failed.
    pub reason: String,
}

/// One node of the Rock Ridge tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Path without the leading `/`, e.g. `k8s/kubeadm`.
    pub path: String,
    /// File, directory or symlink.
    pub kind: FileType,
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
        let fail = |reason: String| ReadError {
            path: path.to_owned(),
            reason,
        };
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
        ReadError {
            path: self.path.clone(),
            reason: format!("{what}: {err}"),
        }
    }

    /// The root (as `/`) and every node below it, in tree order.
    pub fn entries(&self) -> Result<Vec<Entry>, ReadError> {
        let walk = self
            .volume
            .walk("/")
            .map_err(|e| self.fail("listing /", e))?;
        let root = self.volume.metadata("/").map_err(|e| self.fail("/", e))?;
        let mut entries = vec![Entry {
            path: "/".into(),
            kind: root.file_type(),
            mode: root.permissions().bits() & 0o7777,
            owner: root.owner().map(|o| (o.uid(), o.gid())),
            len: root.len(),
        }];
        for item in walk {
            let item = item.map_err(|e| self.fail("listing", e))?;
            let path = String::from_utf8_lossy(item.path())
                .trim_start_matches('/')
                .to_owned();
            let meta = self
                .volume
                .symlink_metadata(item.path())
                .map_err(|e| self.fail(&path, e))?;
            entries.push(Entry {
                kind: meta.file_type(),
                mode: meta.permissions().bits() & 0o7777,
                owner: meta.owner().map(|o| (o.uid(), o.gid())),
                len: meta.len(),
                path,
            });
        }
        Ok(entries)
    }

    /// A streaming reader of the file at `path` (no leading `/` needed).
    pub fn open_file(&self, path: &str) -> Result<impl Read + use<>, ReadError> {
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
