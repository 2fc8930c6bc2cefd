//! The command line, declared with clap and nothing else: parsing only, no behaviour.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::ui::Color;

/// Builds the CloudStack Kubernetes Service binaries ISO without root, daemon or mkisofs.
#[derive(Debug, Parser)]
#[command(name = "cks-iso", version, about, propagate_version = true)]
pub struct Cli {
    /// Options every subcommand takes.
    #[command(flatten)]
    pub global: Global,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
pub struct Global {
    /// Print only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more: -v for debug, -vv for trace.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// When to colour the output on stderr (NO_COLOR is honoured by `auto`).
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    /// Never draw progress bars or progress lines.
    #[arg(long, global = true)]
    pub no_progress: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Author an ISO 9660 image (Rock Ridge + Joliet) from a directory, CKS-ready.
    Iso(IsoArgs),
    /// Check finished ISOs against the CKS contract; lists every violation, exits 1 if any.
    Verify(VerifyArgs),
}

/// `cks-iso iso`.
#[derive(Debug, Args)]
pub struct IsoArgs {
    /// The directory that becomes the ISO root.
    pub dir: PathBuf,
    /// The ISO file to write; its directory must exist.
    #[arg(short, long, value_name = "FILE.iso")]
    pub output: PathBuf,
    /// Volume ID: up to 32 of A-Z, 0-9 and _. CloudStack nodes look for CDROM.
    #[arg(long, value_name = "ID", default_value = crate::iso::DEFAULT_VOLUME_ID)]
    pub volume_id: String,
    /// Seconds since 1970 that date every entry [default: $SOURCE_DATE_EPOCH, else now].
    #[arg(long, value_name = "N")]
    pub source_date_epoch: Option<i64>,
}

/// `cks-iso verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The ISOs to check.
    #[arg(required = true, value_name = "ISO")]
    pub isos: Vec<PathBuf>,
    /// The volume ID nodes search for.
    #[arg(long, value_name = "ID", default_value = crate::iso::DEFAULT_VOLUME_ID)]
    pub volume_id: String,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
