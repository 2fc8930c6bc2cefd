//! The flags of `register`, `build --register` and `versions`: where the CloudStack API is, and
//! how to register (docs/guide/registration.md).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Net;
use crate::cloudstack::Retire;

/// Where the CloudStack API is and the key pair to sign with (else the environment, CloudMonkey's
/// and the `cs` client's files, in the order docs/guide/registration.md gives).
#[derive(Debug, Clone, Default, Args)]
pub struct ApiArgs {
    /// CloudStack API endpoint, e.g. https://cloud.example.org/client/api.
    #[arg(long, value_name = "URL", help_heading = "CloudStack API")]
    pub api_url: Option<String>,
    /// API key of a root admin account.
    #[arg(long, value_name = "KEY", help_heading = "CloudStack API")]
    pub api_key: Option<String>,
    /// File whose first line is the secret key (never given on the command line).
    #[arg(long, value_name = "FILE", help_heading = "CloudStack API")]
    pub secret_key_file: Option<PathBuf>,
    /// CloudMonkey profile of ~/.cmk/config to use [default: the file's current profile].
    #[arg(long, value_name = "NAME", help_heading = "CloudStack API")]
    pub profile: Option<String>,
}

/// How to register: minimums, zones, replacing, waiting.
#[derive(Debug, Clone, Args)]
pub struct RegisterOptions {
    /// Minimum CPUs of a node (mincpunumber; CloudStack needs at least 2).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..), help_heading = "Registration")]
    pub min_cpu: u32,
    /// Minimum memory of a node in MB (minmemory; CloudStack needs at least 2048).
    #[arg(long, value_name = "MB", default_value_t = 2048, value_parser = clap::value_parser!(u32).range(2048..), help_heading = "Registration")]
    pub min_memory: u32,
    /// Register in this zone (name or id), repeatable [default: every zone].
    #[arg(long = "zone", value_name = "ZONE", help_heading = "Registration")]
    pub zones: Vec<String>,
    /// When a version of the same name has another ISO, register this one and retire that one.
    #[arg(long, help_heading = "Registration")]
    pub replace: bool,
    /// How --replace retires the old version.
    #[arg(
        long,
        value_enum,
        value_name = "HOW",
        default_value = "disable",
        help_heading = "Registration"
    )]
    pub retire: Retire,
    /// Return once CloudStack accepted the version, without waiting for the ISO to be Ready.
    #[arg(long, help_heading = "Registration")]
    pub no_wait: bool,
    /// Seconds to wait, all ISOs together, for every zone's copy to be Ready (and for each delete
    /// job of --replace --retire delete).
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 1800,
        help_heading = "Registration"
    )]
    pub timeout: u64,
    /// Seconds between polls (the management server checks every 10).
    #[arg(long, value_name = "SECS", default_value_t = 10.0, hide = true)]
    pub poll_interval: f64,
}

/// `build --register` and its flags.
#[derive(Debug, Clone, Args)]
pub struct BuildRegisterArgs {
    /// After the build, register the ISOs in CloudStack (needs --publish-url; see `register`).
    #[arg(
        long,
        requires = "publish_url",
        conflicts_with = "offline",
        help_heading = "Registration"
    )]
    pub register: bool,
    /// The API.
    #[command(flatten)]
    pub api: ApiArgs,
    /// How.
    #[command(flatten)]
    pub options: RegisterOptions,
}

/// `cks-iso register`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    cks-iso register out/*.iso --publish-url https://files.example.org/cks\n  \
    cks-iso register setup-v1.33.1-aarch64.iso --url https://f.example/a.iso --zone zone1 --profile prod")]
pub struct RegisterArgs {
    /// ISOs built by cks-iso (their version and arch are read from them).
    #[arg(required = true, value_name = "ISO")]
    pub isos: Vec<PathBuf>,
    /// Where the ISOs are served: each is registered with url=BASE/<file name>.
    #[arg(
        long,
        value_name = "BASE",
        required_unless_present = "url",
        conflicts_with = "url"
    )]
    pub publish_url: Option<String>,
    /// The URL of the one ISO given.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Print the outcome as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The API.
    #[command(flatten)]
    pub api: ApiArgs,
    /// How.
    #[command(flatten)]
    pub options: RegisterOptions,
    /// Who must have signed each ISO (else the configuration's iso-signer-policy; none: no check).
    #[command(flatten)]
    pub signer: super::SignerArgs,
    /// Network settings (CA files, timeouts).
    #[command(flatten)]
    pub net: Net,
}

/// `cks-iso versions`.
#[derive(Debug, Subcommand)]
pub enum VersionsCommand {
    /// List CloudStack's Kubernetes supported versions with arch, state and each zone's ISO state.
    List(VersionsListArgs),
    /// Disable or delete versions older than the newest N patch releases of each minor, per arch.
    Retire(VersionsRetireArgs),
}

/// `cks-iso versions list`.
#[derive(Debug, Args)]
pub struct VersionsListArgs {
    /// Print JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The API.
    #[command(flatten)]
    pub api: ApiArgs,
    /// Network settings.
    #[command(flatten)]
    pub net: Net,
}

/// `cks-iso versions retire`.
#[derive(Debug, Args)]
pub struct VersionsRetireArgs {
    /// Patch releases to keep per Kubernetes minor and arch (the newest).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub keep: u32,
    /// Disable (hide from new clusters) or delete (with the ISO) the older ones.
    #[arg(long, value_enum, value_name = "HOW", default_value = "disable")]
    pub retire: Retire,
    /// Show what would be retired; send nothing that changes state.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for each delete job (`--retire delete`) before giving up on it.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub timeout: u64,
    /// Seconds between polls of a delete job.
    #[arg(long, value_name = "SECS", default_value_t = 2.0, hide = true)]
    pub poll_interval: f64,
    /// The API.
    #[command(flatten)]
    pub api: ApiArgs,
    /// Network settings.
    #[command(flatten)]
    pub net: Net,
}
