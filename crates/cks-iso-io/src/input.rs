//! Files the user names as inputs — manifests, locks, ISOs, possibly handed over by someone else —
//! are opened only when they are regular files, and read only up to a cap. A FIFO would block the
//! run forever, `/dev/zero` would fill memory, and a multi-GiB "manifest" is not one.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
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
        "a directory"
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
    let mut bytes = Vec::new();
    open_regular(path)?
        .take(limit + 1)
        .read_to_end(&mut bytes)?;
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
}
