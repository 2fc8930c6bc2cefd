//! Turns a host directory into the tree the ISO is written from, with the modes the contract asks.
//!
//! Nothing of the host's metadata leaks through except "is this file executable": directories get
//! 0755, files 0644 or 0755, everything is owned by 0:0 and dated with the build's epoch. That is
//! what lets the virtual router's non-root web server read every file, and what makes two builds
//! of the same tree byte-identical. File contents are not read here: each file is opened once to
//! prove it is readable and measured, and its bytes are streamed later by the writer.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use hadris_fs::{DateTime, Node, Owner, Permissions, SetAttr, Tree};

use super::IsoError;

/// Mode of every directory, the root included.
pub const DIR_MODE: u32 = 0o755;
/// Mode of a regular file that no one may execute in the source.
pub const FILE_MODE: u32 = 0o644;
/// Mode of a regular file that someone may execute in the source.
pub const EXEC_MODE: u32 = 0o755;
/// Mode Rock Ridge records for a symlink.
pub const LINK_MODE: u32 = 0o777;

/// What [`read`] found, for the caller's summary.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Directories below the root.
    pub dirs: u64,
    /// Regular files.
    pub files: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// Bytes of file content.
    pub bytes: u64,
}

/// Reads the directory `root` into a tree whose every node carries `time` and normalised modes.
pub fn read(root: &Path, time: DateTime) -> Result<(Tree, Counts), IsoError> {
    let meta = fs::metadata(root).map_err(|source| IsoError::Source {
        path: root.to_owned(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(IsoError::SourceNotDir {
            path: root.to_owned(),
        });
    }
    let mut walk = Walk {
        tree: Tree::new(),
        counts: Counts::default(),
        time,
    };
    let root_attrs = walk.attrs(DIR_MODE);
    walk.tree
        .replace("/", Node::dir().with_attrs(root_attrs))
        .map_err(|source| walk.tree_error(root, source))?;
    walk.dir(root, &mut Vec::new())?;
    Ok((walk.tree, walk.counts))
}

/// Adds a regular file (mode [`FILE_MODE`]) at `path`, relative to the root and `/`-separated, with
/// `content`; missing parent directories are created as [`read`] creates directories, so the image
/// is the one a real file at that path in the source would give.
pub fn add_file(
    tree: &mut Tree,
    counts: &mut Counts,
    path: &str,
    content: hadris_fs::Content,
    time: DateTime,
) -> Result<(), IsoError> {
    let walk = Walk {
        tree: Tree::new(),
        counts: Counts::default(),
        time,
    };
    let error = |source| IsoError::Tree {
        path: PathBuf::from(path),
        source: Box::new(source),
    };
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let mut at = String::new();
    for dir in &parts[..parts.len().saturating_sub(1)] {
        at.push('/');
        at.push_str(dir);
        if tree.get(&at).is_none() {
            tree.insert(&at, Node::dir().with_attrs(walk.attrs(DIR_MODE)))
                .map_err(error)?;
            counts.dirs += 1;
        }
    }
    counts.files += 1;
    counts.bytes += content.len();
    tree.insert(
        format!("/{}", parts.join("/")),
        Node::file(content).with_attrs(walk.attrs(FILE_MODE)),
    )
    .map_err(error)
}

struct Walk {
    tree: Tree,
    counts: Counts,
    time: DateTime,
}

impl Walk {
    fn attrs(&self, mode: u32) -> SetAttr {
        SetAttr::new()
            .with_permissions(Permissions::new(mode))
            .with_owner(Owner::new(0, 0))
            .with_modified(self.time)
            .with_accessed(self.time)
            .with_created(self.time)
    }

    fn tree_error(&self, host: &Path, source: hadris_fs::PathError) -> IsoError {
        IsoError::Tree {
            path: host.to_owned(),
            source: Box::new(source),
        }
    }

    /// Adds the entries of `dir`, whose tree path is `at`, sorted by name bytes.
    fn dir(&mut self, dir: &Path, at: &mut Vec<u8>) -> Result<(), IsoError> {
        let unreadable = |source| IsoError::Unreadable {
            path: dir.to_owned(),
            source,
        };
        let mut entries = fs::read_dir(dir)
            .map_err(unreadable)?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<Vec<PathBuf>, _>>()
            .map_err(unreadable)?;
        entries.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
        for path in entries {
            let name = path.file_name().expect("read_dir yields named entries");
            let len = at.len();
            at.push(b'/');
            at.extend_from_slice(name.as_bytes());
            self.entry(&path, at)?;
            at.truncate(len);
        }
        Ok(())
    }

    fn entry(&mut self, path: &Path, at: &mut Vec<u8>) -> Result<(), IsoError> {
        let meta = fs::symlink_metadata(path).map_err(|source| IsoError::Unreadable {
            path: path.to_owned(),
            source,
        })?;
        let kind = meta.file_type();
        let node = if kind.is_dir() {
            self.counts.dirs += 1;
            Node::dir().with_attrs(self.attrs(DIR_MODE))
        } else if kind.is_file() {
            let content = hadris_fs::host::file(path).map_err(|err| IsoError::Unreadable {
                path: path.to_owned(),
                source: match err.raw_os_error() {
                    Some(code) => std::io::Error::from_raw_os_error(code),
                    None => std::io::Error::other(err),
                },
            })?;
            self.counts.files += 1;
            self.counts.bytes += content.len();
            let executable = meta.permissions().mode() & 0o111 != 0;
            let mode = if executable { EXEC_MODE } else { FILE_MODE };
            Node::file(content).with_attrs(self.attrs(mode))
        } else if kind.is_symlink() {
            let target = fs::read_link(path).map_err(|source| IsoError::Unreadable {
                path: path.to_owned(),
                source,
            })?;
            self.counts.symlinks += 1;
            Node::symlink(target.as_os_str().as_bytes()).with_attrs(self.attrs(LINK_MODE))
        } else {
            return Err(IsoError::Unsupported {
                path: path.to_owned(),
            });
        };
        self.tree
            .insert(&at[..], node)
            .map_err(|source| self.tree_error(path, source))?;
        if kind.is_dir() {
            self.dir(path, at)?;
        }
        Ok(())
    }
}
