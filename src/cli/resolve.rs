//! `cks-iso resolve`'s arguments.

use clap::Args;

use super::{AddonImageArgs, FromEnv, Net, VersionArgs};

/// `cks-iso resolve`.
#[derive(Debug, Args)]
pub struct ResolveArgs {
    /// Kubernetes release, e.g. 1.33.1 or v1.33.1, or a label: stable-1.33, stable, 1.33 (for
    /// stable-1.33), latest-1.33 (a final release only).
    #[arg(long, value_name = "VERSION")]
    pub kubernetes: String,
    /// Target architecture: amd64 (x86_64) or arm64 (aarch64); one per run, as the URLs and
    /// images differ per architecture.
    #[arg(long, value_name = "ARCH", default_value = "amd64")]
    pub arch: Vec<String>,
    /// The component versions.
    #[command(flatten)]
    pub versions: FromEnv<VersionArgs>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Add-on images, listed with their compressed sizes and the ISO's estimated size (manifests
    /// only: no layer is downloaded).
    #[command(flatten)]
    pub addons: AddonImageArgs,
    /// Network settings.
    #[command(flatten)]
    pub net: Net,
}
