//! The command line, declared with clap and nothing else: parsing only, no behaviour.
// The doc comments below are `--help` text, not Markdown: `<KUBERNETES>` and bare URLs are meant.
#![allow(rustdoc::bare_urls, rustdoc::invalid_html_tags)]

use clap::{Args, Parser, Subcommand};

pub use self::build::BuildArgs;
pub use self::cache::{
    CacheCommand, CacheDir, CacheExportArgs, CacheImportArgs, CacheLsArgs, CachePruneArgs,
    CacheVerifyArgs,
};
pub use self::content::{AddonArgs, RequestArgs, VersionArgs};
pub use self::diff::{DiffArgs, ShowSignerArgs};
pub use self::docs::{CompletionsArgs, ManArgs, Shell};
pub use self::doctor::DoctorArgs;
pub use self::env_args::FromEnv;
pub use self::iso::IsoArgs;
pub use self::pull::PullArgs;
pub use self::push::PushArgs;
pub use self::register::{
    ApiArgs, BuildRegisterArgs, RegisterArgs, RegisterOptions, VersionsCommand, VersionsListArgs,
    VersionsRetireArgs,
};
pub use self::resolve::ResolveArgs;
pub use self::sign::{SignArgs, SignerArgs};
pub use self::signatures::{SignatureArgs, TrustArgs};
pub use self::sync::SyncArgs;
pub use self::upgrade_check::UpgradeCheckArgs;
pub use self::verify::VerifyArgs;
pub use self::verify_bundle::VerifyBundleArgs;
pub use self::verify_image::VerifyImageArgs;
use crate::ui::{Color, LogFormat};

mod build;
mod cache;
mod content;
mod diff;
mod docs;
mod doctor;
mod env_args;
mod iso;
mod pull;
mod push;
mod register;
mod resolve;
mod sign;
mod signatures;
mod sync;
mod upgrade_check;
mod verify;
mod verify_bundle;
mod verify_image;

/// The network flags, declared once with the configuration file's keys in
/// `config::Network`.
pub type Net = FromEnv<crate::config::Network>;

/// The version and, when built from a git checkout, the commit: `0.1.0 (1a2b3c4d5e6f)` (set by
/// `build.rs`).
pub const VERSION: &str = env!("CKS_ISO_VERSION");

/// Builds the CloudStack Kubernetes Service binaries ISO without root, daemon or mkisofs.
#[derive(Debug, Parser)]
#[command(name = "cks-iso", version = VERSION, about, propagate_version = true)]
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
    #[arg(
        short,
        long,
        global = true,
        help_heading = "Global options",
        conflicts_with = "verbose"
    )]
    pub quiet: bool,
    /// Print more: -v for debug, -vv for trace.
    #[arg(short, long, global = true, help_heading = "Global options", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// When to colour the output on stderr (NO_COLOR is honoured by `auto`).
    #[arg(long, global = true, help_heading = "Global options", value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    /// Never draw progress bars or progress lines.
    #[arg(long, global = true, help_heading = "Global options")]
    pub no_progress: bool,
    /// Format of stderr: text for people, or json (one object a line: logs and progress events).
    #[arg(long, global = true, help_heading = "Global options", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Author an ISO 9660 image (Rock Ridge + Joliet) from a directory, CKS-ready.
    Iso(IsoArgs),
    /// Check finished ISOs against the CKS contract; lists every violation, exits 1 if any.
    Verify(VerifyArgs),
    /// Verify one file's Sigstore signature (a bundle, or dl.k8s.io's .sig and .cert) for a
    /// signer; exit 0 verified, 1 not (naming the failed check).
    VerifyBundle(Box<VerifyBundleArgs>),
    /// Verify images' Sigstore (cosign) signatures as build does, without pulling them; a line
    /// per image, exit 1 if any fails (with --enforce, also if any is unsigned).
    VerifyImage(Box<VerifyImageArgs>),
    /// Print the versions, download URLs and images a build would use, without downloading them.
    Resolve(Box<ResolveArgs>),
    /// Pull images from registries into image archives for one platform, no daemon needed.
    Pull(Box<PullArgs>),
    /// Push what a lock or an ISO holds into a registry you run, digests and signatures intact.
    Push(Box<PushArgs>),
    /// Build the CKS binaries ISO (one per --arch); also takes upstream's positional arguments.
    Build(Box<BuildArgs>),
    /// Sign ISOs with a key: writes ISO.sig (cosign's) and ISO.sigstore.json (a Sigstore bundle)
    /// beside each.
    Sign(Box<SignArgs>),
    /// Register ISOs in CloudStack as Kubernetes supported versions and wait until they are Ready.
    Register(Box<RegisterArgs>),
    /// Keep a CloudStack zone at a desired state: build, verify, gate on the running clusters,
    /// publish, register and retire what differs; exit 0 when the zone matches, 1 when anything
    /// failed or was gated.
    Sync(Box<SyncArgs>),
    /// List or retire CloudStack's Kubernetes supported versions.
    #[command(subcommand)]
    Versions(Box<VersionsCommand>),
    /// Inspect, check, trim and carry the blob cache (export and import across an air gap).
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Show what changed between two ISOs or locks; exit 0 when identical, 1 when different.
    Diff(DiffArgs),
    /// Judge whether a cluster built from FROM upgrades to TO (ISOs or locks): CloudStack's
    /// version rule, archives as containerd imports them, kubeadm's images; exit 1 if it will not.
    UpgradeCheck(UpgradeCheckArgs),
    /// Check, without building, that the configuration, mirrors, registries, credentials, git
    /// endpoint and local directories work; one line per check, exit 1 if any fails.
    Doctor(Box<DoctorArgs>),
    /// Print the shell completion script for bash, zsh or fish on stdout.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) of cks-iso, or of one subcommand, on stdout.
    Man(ManArgs),
    /// Print the licences of the code built into cks-iso, its own and the third-party crates', on
    /// stdout.
    Licenses,
}
