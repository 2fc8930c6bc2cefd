//! Who else can write the cache: a build ships what the cache holds, so a cache directory that
//! another user owns, or that others can write (group- or world-writable without the sticky bit),
//! is refused before anything is read from it; so is a symbolic link in place of one of its own
//! directories (`blobs`, `blobs/sha256`, `index`), which would send reads and writes elsewhere.
//! Files below it are opened without following symbolic links ([`open_nofollow`]).

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::{CacheError, INDEX};

/// The directories of a cache, below its root.
const OWN_DIRS: [&str; 3] = ["blobs", super::BLOBS, INDEX];

/// Opens `path` for reading, refusing a symbolic link in its place (`ELOOP`).
pub(crate) fn open_nofollow(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Checks that the cache at `root` (when it exists) and its own directories are owned by the
/// user running this and writable by nobody else.
pub fn check(root: &Path) -> Result<(), CacheError> {
    let me = rustix::process::geteuid().as_raw();
    match std::fs::metadata(root) {
        Ok(meta) => judge(root, &meta, me)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(CacheError::io(root, source)),
    }
    for dir in OWN_DIRS {
        let path = root.join(dir);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(CacheError::io(&path, source)),
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).unwrap_or_default();
            return Err(unsafe_dir(
                &path,
                format!(
                    "it is a symbolic link (to {}), which would send the cache's reads and \
                     writes elsewhere",
                    target.display()
                ),
            ));
        }
        if !meta.is_dir() {
            return Err(unsafe_dir(&path, "it is not a directory".into()));
        }
        judge(&path, &meta, me)?;
    }
    Ok(())
}

/// Refuses a directory another user owns, or others can write without the sticky bit.
fn judge(path: &Path, meta: &Metadata, me: u32) -> Result<(), CacheError> {
    let mode = meta.mode() & 0o7777;
    if meta.uid() != me {
        return Err(unsafe_dir(
            path,
            format!(
                "it is owned by uid {} (mode {mode:04o}), not by the user running cks-iso (uid \
                 {me})",
                meta.uid()
            ),
        ));
    }
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(unsafe_dir(
            path,
            format!(
                "others can write to it (mode {mode:04o}, {} without the sticky bit)",
                match mode & 0o002 {
                    0 => "group-writable",
                    _ => "world-writable",
                }
            ),
        ));
    }
    Ok(())
}

fn unsafe_dir(path: &Path, reason: String) -> CacheError {
    CacheError::Unsafe {
        path: path.to_owned(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_a_cache_its_user_alone_can_write_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cache");
        assert!(super::check(&root).is_ok(), "a cache not made yet");
        std::fs::create_dir_all(root.join("index")).unwrap();
        let mode = |path: &std::path::Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        for (m, ok) in [
            (0o755, true),
            (0o700, true),
            (0o775, false),
            (0o777, false),
            (0o1777, true),
        ] {
            mode(&root, m);
            assert_eq!(super::check(&root).is_ok(), ok, "{m:o}");
        }
        mode(&root, 0o755);
        mode(&root.join("index"), 0o757);
        let err = super::check(&root).unwrap_err().to_string();
        assert!(err.contains("index") && err.contains("0757"), "{err}");
        mode(&root.join("index"), 0o755);
        std::fs::remove_dir(root.join("index")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("index")).unwrap();
        let err = super::check(&root).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
    }
}
