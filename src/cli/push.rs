//! `cks-iso push`'s arguments.

use std::path::PathBuf;

use clap::Args;

use super::Net;

/// `cks-iso push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// An ISO built by cks-iso (its `docker/*` archives, read without mounting it) or a
    /// cks-iso.lock (its images from the cache, pulled where missing).
    #[arg(
        value_name = "ISO|LOCK",
        required_unless_present = "locked",
        conflicts_with = "locked"
    )]
    pub source: Option<PathBuf>,
    /// The lock whose images to push (the same as giving it as SOURCE).
    #[arg(long, value_name = "LOCK")]
    pub locked: Option<PathBuf>,
    /// Where to: `HOST[:PORT][/PREFIX]`; each image goes to `PREFIX/<its registry>/<its path>`
    /// with its tag. Plain HTTP only with `--insecure-registry HOST[:PORT]`.
    #[arg(long, value_name = "REGISTRY[/PREFIX]")]
    pub to: String,
    /// Credentials for the target (a Docker config.json or auth.json) [default: as for pulls].
    #[arg(long, value_name = "FILE")]
    pub to_authfile: Option<PathBuf>,
    /// Write `<source name> <pushed name>@<digest>` per image to FILE.
    #[arg(long, value_name = "FILE")]
    pub mapping_file: Option<PathBuf>,
    /// List the blobs the target lacks and their sizes; upload nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Leave the cosign signatures out (by default the `.sig` manifests accepted for each image
    /// go along).
    #[arg(long)]
    pub without_signatures: bool,
    /// Take nothing from the network for the source: what the cache (or the ISO) holds only.
    #[arg(long)]
    pub offline: bool,
    /// Blobs larger than this go up in PATCH chunks of this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = crate::registry::DEFAULT_CHUNK)]
    pub chunk_size: u64,
    /// Blob cache [default: $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Network settings (mirrors, registries, CA files, credentials, jobs, retries, timeouts).
    #[command(flatten)]
    pub net: Net,
}
