//! `cks-iso cache export|import|ls|verify|prune`: the blob cache as something an operator can
//! carry across an air gap, inspect, check and trim.
//!
//! What a lock needs is decided once, in [`crate::cache::Needs`]; these functions only read the
//! locks (a `cks-iso.lock`, or an ISO's embedded one), call the cache, and print: data on stdout,
//! logs on stderr, errors naming the blob and what to do.

mod carry;
mod check;

use std::path::PathBuf;

use super::{AppError, net};
use crate::cache::{Cache, CacheError};
use crate::cli::CacheCommand;
use crate::lock::Lock;
use crate::ui::Ui;

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
                lock: crate::lock::source::read(file)?.0,
            })
        })
        .collect()
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

/// `1.50 KiB`, as indicatif's `HumanBytes` writes sizes everywhere else (STYLE.md).
fn human(bytes: u64) -> String {
    indicatif::HumanBytes(bytes).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(super::human(0), "0 B");
        assert_eq!(super::human(1023), "1023 B");
        assert_eq!(super::human(1536), "1.50 KiB");
        assert_eq!(super::human(5 << 30), "5.00 GiB");
    }
}
