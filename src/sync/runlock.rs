//! One sync at a time per publish directory: an exclusive `flock` on `<publish dir>.sync-lock`,
//! held for the whole run and released by the kernel when the process ends however it ends (a
//! `kill -9` leaves no stale lock). The holder writes who it is into the file, so a second sync
//! started by an overlapping cron job can say who holds it, or wait for it with `--wait`.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

/// The lock, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

/// The lock cannot be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another sync holds it.
    #[error("another sync holds {} ({holder})", path.display())]
    Held {
        /// The lock file.
        path: PathBuf,
        /// What the holder wrote.
        holder: String,
    },
    /// The file cannot be opened or locked.
    #[error("cannot lock {}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

impl RunLock {
    /// Takes the lock at `path`; `wait`: block until the holder ends, else fail at once.
    pub fn take(path: &Path, wait: bool) -> Result<Self, LockError> {
        let io = |source: std::io::Error| LockError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let op = match wait {
            true => FlockOperation::LockExclusive,
            false => FlockOperation::NonBlockingLockExclusive,
        };
        if let Err(e) = flock(&file, op) {
            if e == rustix::io::Errno::WOULDBLOCK {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(LockError::Held {
                    path: path.to_owned(),
                    holder: if holder.is_empty() {
                        "it has not said who it is yet".into()
                    } else {
                        holder.to_owned()
                    },
                });
            }
            return Err(io(e.into()));
        }
        let since = httpdate::fmt_http_date(std::time::SystemTime::now());
        let me = format!("cks-iso sync, pid {}, since {since}", std::process::id());
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        file.write_all(me.as_bytes()).map_err(io)?;
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_is_told_who_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.sync-lock");
        let first = RunLock::take(&path, false).unwrap();
        let err = RunLock::take(&path, false).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        RunLock::take(&path, false).unwrap();
    }
}
