//! Files the user names as inputs — manifests, locks, ISOs, possibly handed over by someone else —
//! are opened only when they are regular files, and read only up to a cap. A FIFO would block the
//! run forever, `/dev/zero` would fill memory, and a multi-GiB "manifest" is not one.
//!
//! Files that decide what a build trusts or who it is to a registry — the configuration file,
//! the trusted root, the signature policy, the registry auth files — are read with
//! [`read_private_text`], which also holds them to the cache directory's rule: owned by the user
//! running cks-iso (or root, who owns `/etc`) and writable by no one else. Whoever else can write
//! such a file could point mirrors elsewhere, trust another key or turn signatures off.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Opens `path` for reading if it is a regular file (after symlinks). Opening never blocks: a
/// FIFO is opened non-blocking and refused; for a regular file the flag changes nothing.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    let what = if kind.is_file() {
        return Ok(file);
    } else if kind.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is not a regular file but a directory",
        ));
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a plain file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is not a regular file but {what}"),
    ))
}

/// The text of the regular file `path`, refused when it is larger than `limit` bytes; memory
/// never holds more than `limit` + 1 bytes of it.
pub fn read_text(path: &Path, limit: u64) -> io::Result<String> {
    read_capped(open_regular(path)?, limit)
}

/// Why a file others could have written is not read: the error inside the [`io::Error`]s of
/// [`open_private`] and [`read_private_text`] that [`is_unsafe`] recognises.
#[derive(Debug)]
pub struct Unsafe(String);

impl std::fmt::Display for Unsafe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unsafe {}

/// Whether `err` is a refusal of [`open_private`] for who owns or may write the file.
pub fn is_unsafe(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|inner| inner.is::<Unsafe>())
}

/// Opens `path` like [`open_regular`], refused unless the user running this (or root) owns it
/// and neither its group nor others may write it. The file itself is judged, after symbolic
/// links, so a link to a root-owned `/etc` file is fine.
pub fn open_private(path: &Path) -> io::Result<File> {
    let file = open_regular(path)?;
    let meta = file.metadata()?;
    let me = rustix::process::geteuid().as_raw();
    let mode = meta.mode() & 0o7777;
    let refuse = |reason: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            Unsafe(reason),
        ))
    };
    if meta.uid() != me && meta.uid() != 0 {
        return refuse(format!(
            "it is owned by uid {} (mode {mode:04o}), not by the user running cks-iso (uid {me}) \
             or root",
            meta.uid()
        ));
    }
    if mode & 0o022 != 0 {
        let who = match mode & 0o002 {
            0 => "group-writable",
            _ => "world-writable",
        };
        return refuse(format!("others can write to it (mode {mode:04o}, {who})"));
    }
    Ok(file)
}

/// The text of `path`, opened with [`open_private`] and read up to `limit` bytes like
/// [`read_text`].
pub fn read_private_text(path: &Path, limit: u64) -> io::Result<String> {
    read_capped(open_private(path)?, limit)
}

/// What to do about an error of [`open_regular`], [`open_private`] or the readers, for the file
/// `path`, which holds `what` (`a Sigstore trusted_root.json`); `None` for an error of the
/// system (a missing file, no permission), which speaks for itself.
pub fn hint(err: &io::Error, path: &Path, what: &str) -> Option<String> {
    let shown = path.display();
    if is_unsafe(err) {
        return Some(format!(
            "cks-iso reads it only when no one else could have written it, as it does the cache \
             directory: `chown` {shown} to yourself and `chmod go-w` it, or pass a copy of your own"
        ));
    }
    match err.kind() {
        io::ErrorKind::InvalidInput | io::ErrorKind::IsADirectory => {
            Some(format!("pass a regular file holding {what}"))
        }
        io::ErrorKind::FileTooLarge => Some(format!("{shown} is not {what}; pass the right file")),
        _ => None,
    }
}

fn read_capped(file: File, limit: u64) -> io::Result<String> {
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "it is larger than {}, the most cks-iso reads",
                indicatif::HumanBytes(limit)
            ),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read_and_only_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let err = open_regular(&fifo).unwrap_err();
        assert!(err.to_string().contains("a FIFO"), "{err}");
        let err = open_regular(Path::new("/dev/zero")).unwrap_err();
        assert!(err.to_string().contains("a character device"), "{err}");
        assert!(open_regular(dir.path()).is_err());
        let file = dir.path().join("f.yaml");
        std::fs::write(&file, "a: 1\n").unwrap();
        assert_eq!(read_text(&file, 5).unwrap(), "a: 1\n");
        let err = read_text(&file, 4).unwrap_err();
        assert!(err.to_string().contains("larger than 4 B"), "{err}");
    }

    #[test]
    fn private_files_are_ones_only_their_owner_or_root_could_have_written() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.yaml");
        std::fs::write(&file, "jobs: 4\n").unwrap();
        for (mode, ok) in [(0o600, true), (0o644, true), (0o664, false), (0o646, false)] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            let read = read_private_text(&file, 64);
            assert_eq!(read.is_ok(), ok, "{mode:o}: {read:?}");
            if let Err(err) = read {
                assert!(is_unsafe(&err), "{err}");
                assert!(err.to_string().contains(&format!("{mode:04o}")), "{err}");
                assert!(hint(&err, &file, "x").unwrap().contains("chmod go-w"));
            }
        }
        let err = read_private_text(Path::new("/dev/zero"), 64).unwrap_err();
        assert!(!is_unsafe(&err) && err.to_string().contains("character device"));
        assert!(
            hint(&err, Path::new("/dev/zero"), "x")
                .unwrap()
                .contains("regular file")
        );
        if rustix::process::geteuid().is_root() {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
            let err = read_private_text(&file, 64).unwrap_err();
            assert!(
                is_unsafe(&err) && err.to_string().contains("uid 65534"),
                "{err}"
            );
        }
        // Root owns /etc/passwd, writable by root alone: taken, whoever runs this.
        assert!(read_private_text(Path::new("/etc/passwd"), 1 << 20).is_ok());
    }
}
