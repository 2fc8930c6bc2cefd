//! `cks-iso cache export|import|ls|verify|prune`: the blob cache as something an operator can
//! carry across an air gap, inspect, check and trim.
//!
//! What a lock needs is decided once, in [`crate::cache::Needs`]; these functions only read the
//! locks (a `cks-iso.lock`, or an ISO's embedded one), call the cache, and print: data on stdout,
//! logs on stderr, errors naming the blob and what to do.

mod carry;
mod check;

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{AppError, net};
use crate::cache::{Cache, CacheError};
use crate::cli::CacheCommand;
use crate::iso::read::IsoReader;
use crate::lock::{self, Lock};
use crate::ui::Ui;

/// A lock larger than this is not one.
const LOCK_LIMIT: u64 = 64 << 20;

/// Runs one `cache` subcommand.
pub fn run(command: CacheCommand, ui: &Ui) -> Result<(), AppError> {
    match command {
        CacheCommand::Export(args) => carry::export(args, ui),
        CacheCommand::Import(args) => carry::import(args, ui),
        CacheCommand::Ls(args) => check::ls(args),
        CacheCommand::Verify(args) => check::verify(args, ui),
        CacheCommand::Prune(args) => check::prune(args),
    }
}

/// A lock and the file it was read from, as given on the command line.
struct Locked {
    file: PathBuf,
    lock: Lock,
}

/// Reads each file as a lock, or as an ISO holding one at its root.
fn read_locks(files: &[PathBuf]) -> Result<Vec<Locked>, AppError> {
    files
        .iter()
        .map(|file| {
            Ok(Locked {
                file: file.clone(),
                lock: read_lock(file)?,
            })
        })
        .collect()
}

fn read_lock(file: &Path) -> Result<Lock, AppError> {
    let shown = file.display().to_string();
    let unreadable = |e: std::io::Error| {
        AppError::usage(
            anyhow::anyhow!(e).context(format!("cannot read the lock {shown}")),
            Some("pass a cks-iso.lock or an ISO cks-iso built".into()),
        )
    };
    let mut head = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(unreadable)?;
    // A lock is JSON; an ISO starts with 32 KiB of system area, never with `{`.
    let (text, origin) = match head.trim_ascii_start().first() {
        Some(b'{') => {
            let mut bytes = Vec::new();
            std::fs::File::open(file)
                .and_then(|f| f.take(LOCK_LIMIT).read_to_end(&mut bytes))
                .map_err(unreadable)?;
            (bytes, shown.clone())
        }
        _ => {
            let iso = IsoReader::open(file).map_err(|e| {
                AppError::usage(
                    e,
                    Some("pass a cks-iso.lock (JSON) or an ISO cks-iso built".into()),
                )
            })?;
            let bytes = iso.read_small(lock::FILE_NAME, LOCK_LIMIT).map_err(|e| {
                AppError::usage(
                    anyhow::anyhow!(e)
                        .context(format!("{shown} holds no readable {}", lock::FILE_NAME)),
                    Some("ISOs from cks-iso before locks carry none: pass its lock file".into()),
                )
            })?;
            (bytes, format!("{shown}:{}", lock::FILE_NAME))
        }
    };
    let text = String::from_utf8_lossy(&text);
    Lock::parse(&text, &origin).map_err(|e| {
        let hint = e.hint();
        AppError::usage(e, hint)
    })
}

/// A cache error as a failure, with its hint.
fn failed(err: CacheError) -> AppError {
    let hint = err.hint();
    AppError::failure(err, hint)
}

/// The cache a subcommand works on.
fn open(dir: Option<PathBuf>) -> Result<Cache, AppError> {
    net::cache(dir)
}

/// `1.5 MiB`.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{bytes} bytes"),
        _ => format!("{value:.1} {}", UNITS[unit]),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(super::human(0), "0 bytes");
        assert_eq!(super::human(1023), "1023 bytes");
        assert_eq!(super::human(1536), "1.5 KiB");
        assert_eq!(super::human(5 << 30), "5.0 GiB");
    }
}
