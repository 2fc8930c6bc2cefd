//! `cks-iso pull`'s arguments.

use std::path::PathBuf;

use clap::Args;

use super::{Net, SignatureArgs};

/// `cks-iso pull`.
#[derive(Debug, Args)]
pub struct PullArgs {
    /// Images as Docker writes them: `[HOST[:PORT]/]PATH[:TAG][@sha256:HEX]`.
    #[arg(required = true, value_name = "IMAGE")]
    pub images: Vec<String>,
    /// Target architecture: amd64 (x86_64) or arm64 (aarch64); need not be the host's.
    #[arg(long, value_name = "ARCH")]
    pub arch: String,
    /// Directory for the archives (created if missing).
    #[arg(short, long, value_name = "DIR")]
    pub out: PathBuf,
    /// Blob cache [default: $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The signature flags, as for build.
    #[command(flatten)]
    pub signing: SignatureArgs,
    /// Print one JSON object on stdout instead of a line per image (format:
    /// docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
    /// Network settings (mirrors, registries, CA files, credentials, jobs, retries, timeouts).
    #[command(flatten)]
    pub net: Net,
}
