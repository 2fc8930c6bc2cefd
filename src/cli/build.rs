//! `cks-iso build`'s arguments.

use std::path::PathBuf;

use clap::Args;

use super::{AddonArgs, BuildRegisterArgs, FromEnv, Net, RequestArgs, SignatureArgs, VersionArgs};
use crate::env;

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
    /// 1.33 (for stable-1.33), latest-1.33 (a final release only). Repeatable: each release
    /// gets its own ISOs, lock and summary, built at once in this run [default: the
    /// configuration's `kubernetes:` list].
    #[arg(long, value_name = "VERSION")]
    pub kubernetes: Vec<String>,
    /// The component versions.
    #[command(flatten)]
    pub versions: FromEnv<VersionArgs>,
    /// Target architecture, repeatable: amd64 (x86_64) or arm64 (aarch64) [default: amd64].
    #[arg(long = "arch", value_name = "ARCH")]
    pub arches: Vec<String>,
    /// The request's manifests, name, volume ID, date and CloudStack release ([`RequestArgs`]).
    #[command(flatten)]
    pub request: RequestArgs,
    /// Directory the ISOs are written to (created if missing) [default: .].
    #[arg(long, short, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Add-on images and manifests ([`AddonArgs`]).
    #[command(flatten)]
    pub addons: AddonArgs,
    /// Blob cache [default: $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Where the ISOs will be served from (http or https): the registration line printed for
    /// each ISO gets url=BASE/<iso> [default: a placeholder].
    #[arg(long, value_name = "BASE")]
    pub publish_url: Option<String>,
    /// Build exactly what this lock (or the lock inside this ISO) records: versions, file and
    /// manifest hashes, images by digest; --arch picks among its architectures. Repeatable:
    /// each lock is built as its own run, all at once.
    #[arg(long, value_name = "LOCK|ISO")]
    pub locked: Vec<PathBuf>,
    /// Also write the run's lock (every architecture) to FILE; `{kubernetes}` in it stands for
    /// the release (needed with several releases: --lock-file 'locks/{kubernetes}.lock').
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
    /// Sign each ISO with this PEM ECDSA P-256 private key (PKCS #8, SEC 1 or cosign's, its
    /// password in COSIGN_PASSWORD): writes ISO.sig
    /// and ISO.sigstore.json beside it, as `cks-iso sign` does.
    #[arg(long, value_name = "FILE", conflicts_with = "sign")]
    pub sign_key: Option<PathBuf>,
    /// Enter each --sign-key signature in Rekor (--rekor-url, else --signing-config's, else the
    /// config file's rekor-url) and put the entry in ISO.sigstore.json [default: off: a key
    /// signature stays offline].
    #[arg(long, requires = "sign_key")]
    pub tlog: bool,
    /// Sign each ISO keyless: a short-lived Fulcio certificate for the OIDC identity of
    /// --identity-token (or SIGSTORE_ID_TOKEN), the signature entered in Rekor (--rekor-url);
    /// writes ISO.sigstore.json beside it.
    #[arg(long)]
    pub sign: bool,
    /// Keyless signing's token and services.
    #[command(flatten)]
    pub keyless: super::sign::KeylessArgs,
    /// `--register` and its flags.
    #[command(flatten)]
    pub registering: BuildRegisterArgs,
    /// Network settings.
    #[command(flatten)]
    pub net: Net,
}
