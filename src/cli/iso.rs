//! `cks-iso iso`'s arguments.

use std::path::PathBuf;

use clap::Args;

/// `cks-iso iso`.
#[derive(Debug, Args)]
pub struct IsoArgs {
    /// The directory that becomes the ISO root.
    pub dir: PathBuf,
    /// The ISO file to write; its directory must exist.
    #[arg(short, long, value_name = "FILE.iso")]
    pub output: PathBuf,
    /// Volume ID: up to 32 of A-Z, 0-9 and _. CloudStack nodes look for CDROM.
    #[arg(long, value_name = "ID", default_value = cks_iso_iso9660::DEFAULT_VOLUME_ID)]
    pub volume_id: String,
    /// Seconds since 1970 that date every entry [default: $SOURCE_DATE_EPOCH, else now].
    #[arg(long, value_name = "N")]
    pub source_date_epoch: Option<i64>,
}
