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
    /// Pull images from registries into image archives for one platform, no daemon needed.
    Pull(PullArgs),
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
    /// Transfers at once.
    #[arg(short, long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
    /// Fetch a registry's images from a mirror: REGISTRY=URL, e.g.
    /// `registry.k8s.io=http://127.0.0.1:5000/k8s`; a URL path prefixes the repository. Repeatable.
    #[arg(long = "registry-mirror", value_name = "REGISTRY=URL")]
    pub registry_mirrors: Vec<String>,
    /// Speak plain HTTP to this registry (HOST[:PORT]). Repeatable.
    #[arg(long = "insecure-registry", value_name = "HOST[:PORT]")]
    pub insecure_registries: Vec<String>,
    /// Also trust the CA certificates in this PEM file. Repeatable.
    #[arg(long = "ca-file", value_name = "FILE")]
    pub ca_files: Vec<PathBuf>,
    /// Credentials file (Docker `config.json` or Podman `auth.json`), read first.
    #[arg(long, value_name = "FILE")]
    pub authfile: Option<PathBuf>,
    /// Seconds of silence after which a transfer counts as stalled and is retried.
    #[arg(long, value_name = "SECS", default_value_t = 30, hide = true)]
    pub idle_timeout: u64,
    /// Attempts per request, the first included.
    #[arg(long, value_name = "N", default_value_t = 5, hide = true)]
    pub attempts: u32,
}
