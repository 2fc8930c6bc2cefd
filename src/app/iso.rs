//! `cks-iso iso DIR -o FILE.iso`: author an ISO from a directory.

use std::time::{SystemTime, UNIX_EPOCH};

use indicatif::HumanBytes;

use super::AppError;
use crate::cli::IsoArgs;
use crate::env;
use crate::ui::Ui;
use cks_iso_iso9660::{IsoSpec, VolumeId};

/// Writes the ISO and prints its path on stdout.
pub fn run(args: IsoArgs, ui: &Ui) -> Result<(), AppError> {
    let volume_id = VolumeId::parse(&args.volume_id)?;
    let epoch = epoch(args.source_date_epoch)?;
    let progress = ui.bytes("writing ISO");
    let written = cks_iso_iso9660::author(
        &args.dir,
        &args.output,
        &IsoSpec { volume_id, epoch },
        progress.as_ref(),
    )?;
    if let Some((first, stored)) = written.joliet_renamed.first() {
        for (name, stored) in &written.joliet_renamed {
            tracing::debug!("Joliet name of {name} is {stored}");
        }
        tracing::warn!(
            "Joliet, read by Windows tools, cannot keep {} name(s) exact (e.g. {first} → {stored}); \
             Rock Ridge, which Linux nodes read, keeps every name",
            written.joliet_renamed.len()
        );
    }
    tracing::info!(
        "wrote {} ({}, {}, {}, volume ID {})",
        written.path.display(),
        HumanBytes(written.size),
        crate::ui::count(written.counts.files, "file", "files"),
        crate::ui::count(written.counts.dirs, "directory", "directories"),
        args.volume_id,
    );
    crate::outln!("{}", written.path.display());
    Ok(())
}

/// The epoch given: the flag, else `SOURCE_DATE_EPOCH`, else none.
pub(crate) fn given_epoch(flag: Option<i64>) -> Result<Option<i64>, AppError> {
    Ok(match flag {
        Some(epoch) => Some(epoch),
        None => env::source_date_epoch()?,
    })
}

/// The date of `cks-iso iso`'s entries: the epoch given, else now (`build` dates by its content
/// instead: `lock::epoch`).
pub(crate) fn epoch(flag: Option<i64>) -> Result<i64, AppError> {
    if let Some(epoch) = given_epoch(flag)? {
        return Ok(epoch);
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(i64::try_from(now).unwrap_or(i64::MAX))
}
