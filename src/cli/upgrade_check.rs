//! `cks-iso upgrade-check`'s arguments.

use std::path::PathBuf;

use clap::Args;

/// `cks-iso upgrade-check`.
#[derive(Debug, Args)]
pub struct UpgradeCheckArgs {
    /// What the cluster runs: the ISO it was built or last upgraded from, or its lock.
    #[arg(value_name = "FROM")]
    pub from: PathBuf,
    /// What it is to be upgraded to: an ISO (every check), or a lock (no archives to import).
    #[arg(value_name = "TO")]
    pub to: PathBuf,
    /// The CloudStack release the cluster runs (4.20, 4.21, 4.22, 4.23 or 24) [default: what TO
    /// records, else what every release from 4.20 reads].
    #[arg(long, value_name = "RELEASE")]
    pub cloudstack: Option<String>,
    /// Print the verdict as one JSON object on stdout (see docs/guide/upgrades.md).
    #[arg(long)]
    pub json: bool,
    /// What each ISO's own signature is checked with.
    #[command(flatten)]
    pub signer: super::diff::ShowSignerArgs,
}
