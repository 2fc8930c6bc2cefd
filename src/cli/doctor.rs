//! `cks-iso doctor`'s arguments.

use std::path::PathBuf;

use clap::Args;

use super::{ApiArgs, Net};

/// `cks-iso doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Also resolve this Kubernetes release and check there is room for what its build needs.
    #[arg(long, value_name = "VERSION")]
    pub kubernetes: Option<String>,
    /// Target architecture for the room check, repeatable: amd64 or arm64 [default: amd64].
    #[arg(long = "arch", value_name = "ARCH")]
    pub arches: Vec<String>,
    /// Blob cache to check [default: $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Print one JSON object on stdout instead of a line per check (format:
    /// docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
    /// The CloudStack API `register` would use: named and asked `listCapabilities`.
    #[command(flatten)]
    pub cloudstack_api: ApiArgs,
    /// Network settings.
    #[command(flatten)]
    pub net: Net,
}
