//! The command line, declared with clap and nothing else: parsing only, no behaviour.
// The doc comments below are `--help` text, not Markdown: `<KUBERNETES>` and bare URLs are meant.
#![allow(rustdoc::bare_urls, rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use self::env_args::FromEnv;
pub use self::register::{
    ApiArgs, BuildRegisterArgs, RegisterArgs, RegisterOptions, VersionsCommand, VersionsListArgs,
    VersionsRetireArgs,
};
pub use self::signatures::{SignatureArgs, TrustArgs};
pub use self::verify_image::VerifyImageArgs;
use crate::env;
use crate::release::version::DEFAULT_CCM_TAG;
use crate::ui::{Color, LogFormat};
use crate::upstream::{DEFAULT_CNI, DEFAULT_CSI};

mod env_args;
mod register;
mod signatures;
mod verify_image;

/// The network flags, declared once with the configuration file's keys in
/// [`crate::config::Network`].
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
    /// Build the CKS binaries ISO (one per --arch); also takes upstream's positional arguments.
    Build(Box<BuildArgs>),
    /// Register ISOs in CloudStack as Kubernetes supported versions and wait until they are Ready.
    Register(Box<RegisterArgs>),
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
    /// Print one JSON object on stdout instead of a line per check (format: docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// The CloudStack API `register` would use: named and asked `listCapabilities`.
    #[command(flatten)]
    pub cloudstack_api: ApiArgs,
    /// Network settings.
    #[command(flatten)]
    pub net: Net,
}

/// `cks-iso completions`.
#[derive(Debug, Args)]
#[command(after_help = "Install, e.g.:\n  \
    cks-iso completions bash > ~/.local/share/bash-completion/completions/cks-iso\n  \
    cks-iso completions zsh > ~/.zfunc/_cks-iso   # a directory on $fpath\n  \
    cks-iso completions fish > ~/.config/fish/completions/cks-iso.fish")]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// A shell cks-iso writes completions for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    /// GNU bash (bash-completion).
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
}

/// `cks-iso man`.
#[derive(Debug, Args)]
#[command(after_help = "Read it with: cks-iso man | man -l -")]
pub struct ManArgs {
    /// The subcommand whose page to print, e.g. `build` for cks-iso-build(1) or `cache export`
    /// for cks-iso-cache-export(1) [default: cks-iso(1)].
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

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

/// The add-on images `build` and `resolve` take (docs/guide/add-ons.md).
#[derive(Debug, Clone, Default, Args)]
pub struct AddonImageArgs {
    /// Extra image for docker/, repeatable: a reference as docker pull takes it (nginx,
    /// quay.io/org/name:tag, name@sha256:…, name:tag@sha256:…), pulled for the ISO's arch.
    #[arg(long = "image", value_name = "REF")]
    pub images: Vec<String>,
    /// A file of extra images, one reference a line (# comments and blank lines allowed).
    /// Repeatable.
    #[arg(long = "images-file", value_name = "FILE")]
    pub images_files: Vec<PathBuf>,
}

/// The component versions `resolve` and `build` both take.
#[derive(Debug, Clone, Args)]
pub struct VersionArgs {
    /// `--cni`.
    #[arg(
        long,
        value_name = "VERSION",
        help = format!("CNI plugins release [default: {DEFAULT_CNI}]")
    )]
    pub cni: Option<String>,
    /// `--crictl`.
    #[arg(
        long,
        value_name = "VERSION",
        help = "cri-tools (crictl) release [default: the Kubernetes minor's .0]"
    )]
    pub crictl: Option<String>,
    /// `--etcd`.
    #[arg(
        long,
        value_name = "VERSION",
        help = "etcd release to bundle for etcd nodes (none by default)"
    )]
    pub etcd: Option<String>,
    /// `--autoscaler-version` or `AUTOSCALER_VERSION`.
    #[arg(
        long,
        value_name = "VERSION",
        env = env::AUTOSCALER_VERSION.name,
        hide_env_values = true,
        help = "Exact cluster-autoscaler release [default: newest of the minor]"
    )]
    pub autoscaler_version: Option<String>,
    /// `--ccm-version` or `CCM_VERSION`.
    #[arg(
        long,
        value_name = "TAG",
        env = env::CCM_VERSION.name,
        hide_env_values = true,
        help = format!("CloudStack CCM tag [default: {DEFAULT_CCM_TAG}]")
    )]
    pub ccm_version: Option<String>,
    /// `--csi-version`.
    #[arg(
        long,
        value_name = "TAG",
        help = format!(
            "CloudStack CSI driver release, or `none` to leave the CSI manifests out \
             [default: {DEFAULT_CSI}]"
        )
    )]
    pub csi_version: Option<String>,
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
    #[arg(long, value_name = "ID", default_value = cks_iso_iso9660::DEFAULT_VOLUME_ID)]
    pub volume_id: String,
    /// Seconds since 1970 that date every entry [default: $SOURCE_DATE_EPOCH, else now].
    #[arg(long, value_name = "N")]
    pub source_date_epoch: Option<i64>,
}

/// `cks-iso verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The ISOs to check.
    #[arg(required = true, value_name = "ISO")]
    pub isos: Vec<PathBuf>,
    /// The volume ID nodes search for.
    #[arg(long, value_name = "ID", default_value = cks_iso_iso9660::DEFAULT_VOLUME_ID)]
    pub volume_id: String,
    /// Also re-verify the image and binary signatures the ISO carries, offline, against
    /// cks-iso's own trusted root (or --trusted-root), and that they sign what it holds.
    #[arg(long)]
    pub signatures: bool,
    /// Sigstore trusted_root.json for --signatures [default: Sigstore's public-good root
    /// embedded in cks-iso; never the ISO's].
    #[arg(long, value_name = "FILE", requires = "signatures")]
    pub trusted_root: Option<PathBuf>,
    /// The policy file the ISO was built with, for --signatures.
    #[arg(long, value_name = "FILE", requires = "signatures")]
    pub signature_policy: Option<PathBuf>,
    /// The CloudStack release the ISO is for (4.20, 4.21, 4.22, 4.23 or 24; a later one with 24's rules): check what its nodes
    /// read [default: what every release from 4.20 on needs].
    #[arg(long, value_name = "RELEASE")]
    pub cloudstack: Option<String>,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `cks-iso verify-bundle`: the command line of the Sigstore conformance suite's clients.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    cks-iso verify-bundle --bundle a.txt.sigstore.json --certificate-identity me@example.com \
    --certificate-oidc-issuer https://accounts.google.com a.txt\n  \
    cks-iso verify-bundle --kubernetes-binary --signature kubeadm.sig --certificate kubeadm.cert \
    kubeadm")]
pub struct VerifyBundleArgs {
    /// The signed file, or its digest as sha256:HEX (when no such file exists).
    #[arg(value_name = "FILE|sha256:HEX")]
    pub artifact: String,
    /// Sigstore bundle (v0.1 to v0.3, JSON) to verify, e.g. FILE.sigstore.json.
    #[arg(long, value_name = "FILE", required_unless_present = "signature")]
    pub bundle: Option<PathBuf>,
    /// Base64 signature file, as dl.k8s.io publishes beside each binary (FILE.sig); its Rekor
    /// entry is looked up at --rekor-url.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "bundle",
        requires = "certificate"
    )]
    pub signature: Option<PathBuf>,
    /// Base64 of the PEM signing certificate (FILE.cert), with --signature.
    #[arg(long, value_name = "FILE", requires = "signature")]
    pub certificate: Option<PathBuf>,
    /// The identity the certificate's SAN must be (an e-mail address or URI), exactly.
    #[arg(long, value_name = "ID", required_unless_present = "kubernetes_binary")]
    pub certificate_identity: Option<String>,
    /// The OIDC issuer the certificate must name, exactly.
    #[arg(
        long,
        value_name = "URL",
        required_unless_present = "kubernetes_binary"
    )]
    pub certificate_oidc_issuer: Option<String>,
    /// Judge by cks-iso's built-in rule for Kubernetes binaries from dl.k8s.io (signed by
    /// krel-staging@k8s-releng-prod.iam.gserviceaccount.com via https://accounts.google.com).
    #[arg(long, conflicts_with_all = ["certificate_identity", "certificate_oidc_issuer"])]
    pub kubernetes_binary: bool,
    /// Sigstore trusted_root.json to verify against [default: config file, else Sigstore's
    /// public-good root embedded in cks-iso].
    #[arg(long, value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,
    /// Rekor server where a --signature's entry is looked up, through the mirrors
    /// [default: config file, else https://rekor.sigstore.dev].
    #[arg(long, value_name = "URL", env = env::CKS_ISO_REKOR_URL.name, hide_env_values = true)]
    pub rekor_url: Option<String>,
    /// Make no network connection: a bundle is verified as always, offline; a --signature's
    /// Rekor entry is the one the cache last saw.
    #[arg(long)]
    pub offline: bool,
    /// Blob cache for Rekor entries [default: $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Network settings (for the Rekor lookup of --signature).
    #[command(flatten)]
    pub net: Net,
}

/// `cks-iso diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The old side: an ISO or a `cks-iso.lock`.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The new side: an ISO or a `cks-iso.lock`.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Print the differences as JSON on stdout (also when identical).
    #[arg(long)]
    pub json: bool,
}

/// `cks-iso upgrade-check`.
#[derive(Debug, Args)]
pub struct UpgradeCheckArgs {
    /// What the cluster runs: the ISO it was built or last upgraded from, or its lock.
    #[arg(value_name = "FROM")]
    pub from: PathBuf,
    /// What it is to be upgraded to: an ISO (every check), or a lock (no archives to import).
    #[arg(value_name = "TO")]
    pub to: PathBuf,
    /// The CloudStack release the cluster runs (4.20, 4.21, 4.22, 4.23 or 24) [default: what TO
    /// records, else what every release from 4.20 reads].
    #[arg(long, value_name = "RELEASE")]
    pub cloudstack: Option<String>,
    /// Print the verdict as one JSON object on stdout (see docs/upgrades.md).
    #[arg(long)]
    pub json: bool,
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
    /// The signature flags, as for build.
    #[command(flatten)]
    pub signing: SignatureArgs,
    /// Print one JSON object on stdout instead of a line per image (format: docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Network settings (mirrors, registries, CA files, credentials, jobs, retries, timeouts).
    #[command(flatten)]
    pub net: Net,
}

/// `cks-iso build`: flags, or upstream's positional form
/// `OUTPUT_PATH KUBERNETES_VERSION CNI_VERSION CRICTL_VERSION NETWORK_YAML DASHBOARD_YAML|HEADLAMP_VERSION BUILD_NAME [ARCH] [ETCD_VERSION]`.
#[derive(Debug, Args)]
#[command(after_help = format!(
    "Positional form (drop-in for create-kubernetes-binaries-iso.sh):\n  \
    cks-iso build OUTPUT_PATH KUBERNETES_VERSION CNI_VERSION CRICTL_VERSION NETWORK_YAML \
    DASHBOARD_YAML|HEADLAMP_VERSION BUILD_NAME [ARCH] [ETCD_VERSION]\n  \
    Argument 6 is CloudStack 4.23's Headlamp version when it is digits and dots (0.40.1, \
    v0.40.1) and no existing file; a URL or any other path is the dashboard manifest.\n  \
    {} and {} are read from the environment.",
    env::AUTOSCALER_VERSION.name, env::CCM_VERSION.name
))]
pub struct BuildArgs {
    /// Upstream's positional arguments (see below); cannot be mixed with the same flags.
    #[arg(value_name = "ARG", num_args = 0..=9)]
    pub positional: Vec<String>,
    /// Kubernetes release, e.g. 1.33.1, or a label read from dl.k8s.io: stable-1.33, stable,
    /// 1.33 (for stable-1.33), latest-1.33 (a final release only).
    #[arg(long, value_name = "VERSION")]
    pub kubernetes: Option<String>,
    /// The component versions.
    #[command(flatten)]
    pub versions: FromEnv<VersionArgs>,
    /// Target architecture, repeatable: amd64 (x86_64) or arm64 (aarch64) [default: amd64].
    #[arg(long = "arch", value_name = "ARCH")]
    pub arches: Vec<String>,
    /// CNI manifest (network.yaml): URL or local file.
    #[arg(long, value_name = "URL|FILE")]
    pub network: Option<String>,
    /// Dashboard manifest (dashboard.yaml): URL or local file.
    #[arg(long, value_name = "URL|FILE")]
    pub dashboard: Option<String>,
    /// Headlamp manifest (headlamp.yaml), optional: URL or local file.
    #[arg(long, value_name = "URL|FILE", conflicts_with = "headlamp_version")]
    pub headlamp: Option<String>,
    /// Headlamp release (0.40.1, with or without v), as CloudStack 4.23 takes it: its
    /// kubernetes-headlamp.yaml becomes headlamp.yaml, its image pinned to the release's tag;
    /// --dashboard becomes optional.
    #[arg(long, value_name = "VERSION")]
    pub headlamp_version: Option<String>,
    /// Directory the ISOs are written to (created if missing) [default: .].
    #[arg(long, short, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// ISO name before `-<x86_64|aarch64>.iso` [default: setup-v<KUBERNETES>].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Volume ID: CloudStack nodes look for CDROM [default: CDROM, or the lock's].
    #[arg(long, value_name = "ID")]
    pub volume_id: Option<String>,
    /// Add-on images ([`AddonImageArgs`]).
    #[command(flatten)]
    pub addons: AddonImageArgs,
    /// Extra manifest at the ISO's root, repeatable: [NAME=]URL|FILE, under NAME or its file
    /// name (ending in .yaml); edited and checked as the bundled ones, its images pulled.
    #[arg(long = "manifest", value_name = "[NAME=]URL|FILE")]
    pub manifests: Vec<String>,
    /// Seconds since 1970 that date the ISO [default: $SOURCE_DATE_EPOCH, else now].
    #[arg(long, value_name = "N")]
    pub source_date_epoch: Option<i64>,
    /// Blob cache [default: $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The CloudStack release the ISOs are for (4.20, 4.21, 4.22, 4.23 or 24; a later one with a warning and 24's rules): its ISO name,
    /// dashboard or Headlamp manifest, etcd and CSI rules, recorded in versions.txt, the lock and
    /// the SBOMs [default: config file, else what 4.22 and 4.23 both read, recording none; a
    /// Headlamp version without --dashboard means 4.23].
    #[arg(long, value_name = "RELEASE", env = env::CKS_ISO_CLOUDSTACK.name, hide_env_values = true)]
    pub cloudstack: Option<String>,
    /// Where the ISOs will be served from (http or https): the registration line printed for
    /// each ISO gets url=BASE/<iso> [default: a placeholder].
    #[arg(long, value_name = "BASE")]
    pub publish_url: Option<String>,
    /// Build exactly what this lock (or the lock inside this ISO) records: versions, file and
    /// manifest hashes, images by digest; --arch picks among its architectures.
    #[arg(long, value_name = "LOCK|ISO")]
    pub locked: Option<PathBuf>,
    /// Also write the run's lock (every architecture) to FILE.
    #[arg(long, value_name = "FILE")]
    pub lock_file: Option<PathBuf>,
    /// Make no network connection: everything comes from the cache.
    #[arg(long)]
    pub offline: bool,
    /// Take what the lock needs from this ISO too (its archives' blobs, binaries and tarballs,
    /// each verified), e.g. the old ISO beside an imported delta. Repeatable; needs --locked.
    #[arg(long, value_name = "ISO", requires = "locked", num_args = 1..)]
    pub from_iso: Vec<PathBuf>,
    /// The signature flags, shared with pull.
    #[command(flatten)]
    pub signing: SignatureArgs,
    /// Rekor server where binaries' signatures are looked up, through the mirrors like any URL
    /// [default: config file, else https://rekor.sigstore.dev].
    #[arg(long, value_name = "URL", env = env::CKS_ISO_REKOR_URL.name, hide_env_values = true)]
    pub rekor_url: Option<String>,
    /// `--register` and its flags.
    #[command(flatten)]
    pub registering: BuildRegisterArgs,
    /// Network settings.
    #[command(flatten)]
    pub net: Net,
}

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
