//! `cks-iso sync`'s arguments.

use std::path::PathBuf;

use clap::Args;

use super::{ApiArgs, Net};
use crate::env;

/// `cks-iso sync --desired FILE`.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The desired state (YAML; see docs/guide/sync.md): minors, arches, content, CloudStack
    /// release and zones, keep, publish directory and URL.
    #[arg(long, value_name = "FILE")]
    pub desired: PathBuf,
    /// Print what a run would do and change nothing (only list calls and upstream resolution).
    #[arg(long)]
    pub plan: bool,
    /// With --plan, on the connected side of an air gap: write the lock each minor's build
    /// would realize to DIR/<version>.lock, everything it names fetched into the cache (for
    /// `cache export --locked`). CloudStack and the publish directory are not read: they are the
    /// far side's.
    #[arg(long, value_name = "DIR", requires = "plan")]
    pub write_locks: Option<PathBuf>,
    /// Take each minor's version and content from its lock in DIR (written by `--write-locks`)
    /// instead of its label, and build exactly that lock, its content first taken from the ISOs
    /// in the publish directory.
    #[arg(long, value_name = "DIR", conflicts_with = "write_locks")]
    pub locks: Option<PathBuf>,
    /// Make no connection but to CloudStack: the locks' content comes from the cache (a `cache
    /// import`ed export) and the published ISOs. Needs --locks.
    #[arg(long, requires = "locks")]
    pub offline: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// When another sync holds the lock beside the publish directory, wait for it instead of
    /// exiting 1.
    #[arg(long)]
    pub wait: bool,
    /// Blob cache [default: $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Rekor server where binaries' signatures are looked up [default: config file, else
    /// https://rekor.sigstore.dev].
    #[arg(long, value_name = "URL", env = env::CKS_ISO_REKOR_URL.name, hide_env_values = true)]
    pub rekor_url: Option<String>,
    /// The longest wait for a version to be Ready, and for a delete's job, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    pub timeout: u64,
    /// Seconds between polls of CloudStack.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, hide = true)]
    pub poll_interval: f64,
    /// The identity token and services of the desired state's `sign: keyless` (over its
    /// identity-token-file, signing-config and fulcio-url).
    #[command(flatten)]
    pub keyless: super::sign::KeylessArgs,
    /// Where the CloudStack API is and the key pair (found as `register` finds them).
    #[command(flatten)]
    pub api: ApiArgs,
    /// Network settings.
    #[command(flatten)]
    pub net: Net,
}
