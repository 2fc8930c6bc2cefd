//! `cks-iso resolve`'s arguments.

use clap::Args;

use super::{AddonArgs, FromEnv, Net, RequestArgs, VersionArgs};

/// `cks-iso resolve`.
#[derive(Debug, Args)]
pub struct ResolveArgs {
    /// Kubernetes release, e.g. 1.33.1 or v1.33.1, or a label: stable-1.33, stable, 1.33 (for
    /// stable-1.33), latest-1.33 (a final release only). Repeatable (not with --lock): each
    /// release resolved at once, listed in the order given.
    #[arg(long, value_name = "VERSION", required = true)]
    pub kubernetes: Vec<String>,
    /// Target architecture: amd64 (x86_64) or arm64 (aarch64); one per run, as the URLs and
    /// images differ per architecture; with --lock repeatable, as build takes it (one lock).
    #[arg(long, value_name = "ARCH", default_value = "amd64")]
    pub arch: Vec<String>,
    /// The component versions.
    #[command(flatten)]
    pub versions: FromEnv<VersionArgs>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print instead the lock build resolves for the same flags, for build --locked (needs what
    /// build needs: --network, and --dashboard or a Headlamp version): versions, manifests, each
    /// file's published sha256, each image's digests; files' sizes and signatures are the
    /// build's to record.
    #[arg(long, conflicts_with = "json")]
    pub lock: bool,
    /// Add-on images and manifests, listed with their compressed sizes and the ISO's estimated
    /// size (an add-on manifest is taken to read its images; no layer is downloaded).
    #[command(flatten)]
    pub addons: AddonArgs,
    /// The rest of build's request, for --lock.
    #[command(flatten)]
    pub request: FromEnv<RequestArgs>,
    /// Network settings.
    #[command(flatten)]
    pub net: Net,
}
