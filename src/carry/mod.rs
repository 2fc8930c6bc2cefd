//! What the `cache` subcommands do to a cache as a whole: carry exactly what some locks need
//! across an air gap (`export`, `import`, their deltas, and the ISOs `build --from-iso` takes
//! content from), list it, verify it and prune it. The command reads its arguments, calls one of
//! these and prints what it returns.
//!
//! A module above [`crate::cache`], not inside it: it reads locks (and ISOs holding them) and
//! judges index entries with [`crate::upstream`]'s ties and admission rules, which the cache
//! itself must not know. What a lock needs is decided once, in [`crate::cache::Needs`].
//!
//! Named for what the air-gap guide calls the exported directory, a carry (docs/guide/air-gap.md,
//! "What a carry can and cannot prove"): carrying a cache's content across is most of the work;
//! listing, verifying and pruning share its reading of locks and index entries.

mod delta;
mod error;
mod export;
mod import;
mod inspect;

use std::path::PathBuf;

pub use delta::{from_iso, held};
pub use error::CarryError;
pub use export::export;
pub use import::{Carry, import};
pub use inspect::{Finding, inventory, prune, verify};

use crate::lock::Lock;
use crate::lock::source::SourceError;

/// A lock and the file it was read from, as given on the command line.
pub struct Locked {
    /// The file: a `cks-iso.lock`, or an ISO holding one.
    pub file: PathBuf,
    /// The lock.
    pub lock: Lock,
}

/// Reads each file as a lock, or as an ISO holding one at its root.
pub fn read_locks(files: &[PathBuf]) -> Result<Vec<Locked>, SourceError> {
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

/// `1.50 KiB`, as indicatif's `HumanBytes` writes sizes everywhere else (STYLE.md).
pub fn human(bytes: u64) -> String {
    indicatif::HumanBytes(bytes).to_string()
}

/// Creates `dir` if needed and proves a file can be made in it.
fn writable(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    tempfile::tempfile_in(dir).map(drop)
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
