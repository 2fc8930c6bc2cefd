//! `cks-iso iso DIR -o FILE.iso`: author an ISO from a directory.

use indicatif::HumanBytes;

use super::AppError;
use crate::cli::IsoArgs;
use crate::env;
use crate::ui::Ui;
use cks_iso_iso9660::{IsoSpec, VolumeId};

/// Writes the ISO and prints its path on stdout.
pub fn run(args: IsoArgs, ui: &Ui) -> Result<(), AppError> {
    let volume_id = VolumeId::parse(&args.volume_id)?;
    let epoch = env::epoch_or_now(args.source_date_epoch)?;
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
