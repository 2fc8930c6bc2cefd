//! Reading a lock given on the command line: a `cks-iso.lock` file, or an ISO whose embedded
//! lock is read. Shared by the subcommands that take one.

use std::io::Read;
use std::path::Path;

use super::AppError;
use crate::iso::read::IsoReader;
use crate::lock::{self, Lock};

/// Locks are small; more than this is not one.
const LIMIT: u64 = 64 << 20;

/// The lock in `path` (a lock file or an ISO), with how to name it in messages. Bad input is a
/// usage error.
pub(crate) fn read(path: &Path) -> Result<(Lock, String), AppError> {
    let shown = path.display().to_string();
    let unreadable = |e: std::io::Error| {
        AppError::usage(
            anyhow::Error::new(e).context(format!("cannot read {shown}")),
            Some("pass a cks-iso.lock or an ISO built by cks-iso".into()),
        )
    };
    // Only the start decides: an ISO (gigabytes) opens with 32 KiB of system area, never `{`.
    let mut head = Vec::new();
    crate::input::open_regular(path)
        .and_then(|file| file.take(4096).read_to_end(&mut head))
        .map_err(unreadable)?;
    let looks_json = head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let (text, origin) = match looks_json {
        true => {
            let mut bytes = Vec::new();
            crate::input::open_regular(path)
                .and_then(|file| file.take(LIMIT).read_to_end(&mut bytes))
                .map_err(unreadable)?;
            (String::from_utf8_lossy(&bytes).into_owned(), shown)
        }
        false => {
            let reader = IsoReader::open(path).map_err(|e| {
                AppError::usage(
                    anyhow::Error::new(e).context(format!(
                        "{shown} is neither a cks-iso lock nor a readable ISO"
                    )),
                    Some("pass a cks-iso.lock or an ISO built by cks-iso".into()),
                )
            })?;
            let origin = format!("{shown}:{}", lock::FILE_NAME);
            let raw = reader.read_small(lock::FILE_NAME, LIMIT).map_err(|e| {
                AppError::usage(
                    anyhow::Error::new(e).context(format!("cannot read {origin}")),
                    Some(
                        "ISOs built before cks-iso carried its lock have none; pass the lock file"
                            .into(),
                    ),
                )
            })?;
            (String::from_utf8_lossy(&raw).into_owned(), origin)
        }
    };
    let lock = Lock::parse(&text, &origin).map_err(|e| {
        let hint = e.hint();
        AppError::usage(e, hint)
    })?;
    if lock.cks_iso != env!("CARGO_PKG_VERSION") {
        tracing::warn!(
            "{origin} was written by cks-iso {}, this is {}: the ISO's bytes may differ",
            lock.cks_iso,
            env!("CARGO_PKG_VERSION")
        );
    }
    Ok((lock, origin))
}
