//! `cks-iso cache`'s subcommands and their arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `cks-iso cache`.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Write exactly what the locks need (images, files, manifests, index) into DIR, as a cache.
    Export(CacheExportArgs),
    /// Add every blob and index entry of DIR (a cache, e.g. from `cache export`), verifying each.
    Import(CacheImportArgs),
    /// Show what the cache holds and, with --locked, what each lock needs and lacks.
    Ls(CacheLsArgs),
    /// Rehash every blob; name each corrupt one and exit 1. --fix removes them.
    Verify(CacheVerifyArgs),
    /// Remove every blob and index entry that none of the given locks needs.
    Prune(CachePruneArgs),
}

/// The cache a `cache` subcommand works on.
#[derive(Debug, Args)]
pub struct CacheDir {
    /// Blob cache [default: $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

/// `cks-iso cache export`.
#[derive(Debug, Args)]
pub struct CacheExportArgs {
    /// cks-iso.lock files, or ISOs cks-iso built (their embedded lock). Repeatable.
    #[arg(long, value_name = "FILE", required = true, num_args = 1..)]
    pub locked: Vec<PathBuf>,
    /// Directory to write, laid out as a cache (created if missing).
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// Write a delta: leave out what the far side already holds, this lock's carry (read from
    /// the cache) or this ISO's content, and list it in DIR/delta.json. Repeatable.
    #[arg(long, value_name = "LOCK|ISO", num_args = 1..)]
    pub minus: Vec<PathBuf>,
    /// The cache to export from.
    #[command(flatten)]
    pub cache: CacheDir,
}

/// `cks-iso cache import`.
#[derive(Debug, Args)]
pub struct CacheImportArgs {
    /// A directory laid out as a cache (`blobs/sha256/…`, `index/…`).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The locks (or ISOs) DIR was exported for: an index entry they name comes in when it names
    /// what they name, and is refused when it names anything else. A carry vouches for nothing by
    /// itself, so without them DIR's downloads come in only when signed, its manifests and
    /// unsigned image tags not at all. Repeatable.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub locked: Vec<PathBuf>,
    /// Sigstore trusted_root.json that DIR's download signatures are verified against [default:
    /// Sigstore's public-good root embedded in cks-iso].
    #[arg(long, value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,
    /// A policy file whose rules (before the built-in ones) say who must have signed a download.
    #[arg(long, value_name = "FILE")]
    pub signature_policy: Option<PathBuf>,
    /// For a delta: the ISOs it was exported --minus, checked to hold what it leaves out.
    #[arg(long, value_name = "ISO", num_args = 1..)]
    pub from_iso: Vec<PathBuf>,
    /// The cache to import into.
    #[command(flatten)]
    pub cache: CacheDir,
}

/// `cks-iso cache ls`.
#[derive(Debug, Args)]
pub struct CacheLsArgs {
    /// Also show what each of these locks (or ISOs) needs, and what is missing.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub locked: Vec<PathBuf>,
    /// Print JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The cache to list.
    #[command(flatten)]
    pub cache: CacheDir,
}

/// `cks-iso cache verify`.
#[derive(Debug, Args)]
pub struct CacheVerifyArgs {
    /// Remove corrupt blobs, index entries naming missing blobs and stale temporary files.
    #[arg(long)]
    pub fix: bool,
    /// The cache to check.
    #[command(flatten)]
    pub cache: CacheDir,
}

/// `cks-iso cache prune`.
#[derive(Debug, Args)]
pub struct CachePruneArgs {
    /// Keep what this lock (or ISO) needs; at least one. Repeatable.
    #[arg(long, value_name = "FILE", required = true, num_args = 1..)]
    pub keep_locked: Vec<PathBuf>,
    /// The cache to prune.
    #[command(flatten)]
    pub cache: CacheDir,
}
