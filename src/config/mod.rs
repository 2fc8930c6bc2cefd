//! The configuration file, and how it combines with the command-line flags.
//!
//! Users behind a corporate mirror repeat the same network settings on every run; a YAML file
//! (`--config FILE` or `CKS_ISO_CONFIG`, else `~/.config/cks-iso/config.yaml` or
//! `/etc/cks-iso/config.yaml`, see [`default_locations`]) holds everything the network flags set,
//! and the flags override it. Unknown keys are errors naming the key, so a typo never silently drops a mirror.
//!
//! ```yaml
//! mirrors:                      # download and git URL prefixes, FROM: TO
//!   https://github.com: http://mirror.example:8080/github.com
//! registry-mirrors:             # registry host: mirror host[:port][/prefix]
//!   docker.io: mirror.example:5000
//! insecure-registries: [mirror.example:5000]
//! ca-files: [/etc/ssl/corp-ca.pem]   # relative paths are relative to this file
//! authfile: ~/.docker/config.json
//! jobs: 4
//! retries: 5                    # attempts in all, the first included
//! connect-timeout: 15           # seconds
//! idle-timeout: 30              # seconds
//! signatures: verify            # off | verify | warn | enforce (see README, Signatures)
//! trusted-root: trusted_root.json  # Sigstore trust root instead of the embedded public-good one
//! signature-policy: policy.yaml  # more signers (see `cks_iso_sigstore::Policy`)
//! iso-signer-policy: isos.yaml  # who must have signed the ISOs `register` registers
//! rekor-url: https://rekor.sigstore.dev  # where binaries' signatures are looked up
//! cloudstack: "4.23"            # the CloudStack release `build` makes ISOs for
//! kubernetes: [1.33.1, 1.32.4]  # the releases `build` makes ISOs of when no flag names one
//! cloudstack-api:               # what `register` and `versions` talk to
//! (docs/guide/registration.md)
//!   url: https://cloud.example.org/client/api
//!   api-key: KEY
//!   secret-key-file: cloudstack.secret   # the secret itself never goes in this file
//! ```
//!
//! Combining: a scalar flag replaces the file's value; a `--mirror` or `--registry-mirror` for a
//! prefix the file also maps replaces that entry and keeps the others; `--ca-file` and
//! `--insecure-registry` add to the file's lists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::cloudstack::credentials::ApiConfig;
use crate::env;
use crate::fetch::{HttpConfig, Mirror, Mirrors, RetryPolicy};
use cks_iso_sigstore::Mode;

mod error;
mod locate;
#[cfg(test)]
mod tests;

pub use error::ConfigError;
pub(crate) use error::parse_message;
pub use locate::{default_locations, load};

/// The largest configuration file read: a few dozen lines of YAML, so 1 MiB is generous, and
/// a FIFO or `/dev/zero` named as the file cannot fill memory.
pub const MAX_CONFIG_SIZE: u64 = 1 << 20;

/// Parallel transfers when neither flag nor file says.
pub const DEFAULT_JOBS: usize = 4;

/// The network settings, declared once: clap fills them from the flags (`--mirror`, `--jobs`…),
/// serde from the file (`mirrors:`, `jobs:`…), and [`merge`] combines the two. `None`/empty means
/// "not given". Each field's doc names its flag and its key.
#[derive(Debug, Default, Clone, clap::Args, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Network {
    /// `--config FILE` or `CKS_ISO_CONFIG`; no key.
    #[arg(
        long,
        value_name = "FILE",
        env = env::CKS_ISO_CONFIG.name,
        hide_env_values = true,
        help = "YAML configuration file holding these settings"
    )]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// `--mirror FROM=TO` (repeatable), `mirrors: {FROM: TO}`; [`merge`] checks the file's.
    #[arg(
        long = "mirror",
        value_name = "FROM=TO",
        help = "Fetch URLs starting with FROM from TO instead (downloads and git), e.g. \
                https://github.com=http://mirror:8080/github.com. Repeatable"
    )]
    #[serde(default, deserialize_with = "unchecked_rules")]
    pub mirrors: Vec<Mirror>,
    /// `--registry-mirror REGISTRY=URL` (repeatable), `registry-mirrors: {REGISTRY: URL}`.
    #[arg(
        long = "registry-mirror",
        value_name = "REGISTRY=URL",
        value_parser = parse_pair,
        help = "Pull images of REGISTRY from the mirror URL instead, e.g. \
                registry.k8s.io=http://127.0.0.1:5000/k8s (a URL path prefixes the repository). \
                Repeatable"
    )]
    #[serde(default, deserialize_with = "pairs")]
    pub registry_mirrors: Vec<(String, String)>,
    /// `--insecure-registry HOST[:PORT]` (repeatable), `insecure-registries: [...]`.
    #[arg(
        long = "insecure-registry",
        value_name = "HOST[:PORT]",
        help = "Reach this registry over plain HTTP instead of HTTPS (for TLS with a private CA, \
                use --ca-file). Repeatable"
    )]
    #[serde(default)]
    pub insecure_registries: Vec<String>,
    /// `--ca-file FILE` (repeatable), `ca-files: [...]` (relative to the file).
    #[arg(
        long = "ca-file",
        value_name = "FILE",
        help = "Trust the PEM CA certificates in FILE besides the system's. Repeatable"
    )]
    #[serde(default)]
    pub ca_files: Vec<PathBuf>,
    /// `--authfile FILE`, `authfile:` (relative to the file).
    #[arg(
        long,
        value_name = "FILE",
        help = "Registry credentials in Docker's config.json format"
    )]
    pub authfile: Option<PathBuf>,
    /// `--jobs N`, `jobs:`.
    #[arg(
        long,
        value_name = "N",
        help = format!(
            "Transfers to run in parallel, fixed [default: start at {DEFAULT_JOBS}, grow to {} \
             while throughput grows]",
            crate::registry::MAX_JOBS
        )
    )]
    pub jobs: Option<usize>,
    /// `--retries N` (alias `--attempts`), `retries:`.
    #[arg(
        long,
        visible_alias = "attempts",
        value_name = "N",
        help = format!(
            "Attempts per request for transient failures, the first included [default: {}]",
            RetryPolicy::default().attempts
        )
    )]
    pub retries: Option<u32>,
    /// `--connect-timeout SECONDS`, `connect-timeout:`.
    #[arg(
        long,
        value_name = "SECONDS",
        help = format!(
            "Seconds to establish a connection [default: {}]",
            HttpConfig::default().connect_timeout.as_secs()
        )
    )]
    pub connect_timeout: Option<u64>,
    /// `--idle-timeout SECONDS`, `idle-timeout:`.
    #[arg(
        long,
        value_name = "SECONDS",
        help = format!(
            "Seconds of silence before a transfer counts as stalled and is resumed [default: {}]",
            HttpConfig::default().idle_timeout.as_secs()
        )
    )]
    pub idle_timeout: Option<u64>,
    /// `signatures:` (`off`, `verify`, `warn` or `enforce`); the subcommands' own
    /// `--signatures` and `CKS_ISO_SIGNATURES` come first.
    #[arg(skip)]
    pub signatures: Option<String>,
    /// `trusted-root:`, a Sigstore `trusted_root.json`; `--trusted-root` comes first.
    #[arg(skip)]
    pub trusted_root: Option<PathBuf>,
    /// `signature-policy:`, a signature policy file; `--signature-policy` comes first.
    #[arg(skip)]
    pub signature_policy: Option<PathBuf>,
    /// `iso-signer-policy:`, who must have signed the ISOs `register` registers;
    /// `--signer-policy` comes first.
    #[arg(skip)]
    pub iso_signer_policy: Option<PathBuf>,
    /// `rekor-url:`, the Rekor server for binaries' signatures; `--rekor-url` and
    /// `CKS_ISO_REKOR_URL` come first.
    #[arg(skip)]
    pub rekor_url: Option<String>,
    /// `cloudstack:`, the CloudStack release `build` makes ISOs for (`4.20` … `4.23`, `24`);
    /// `--cloudstack` and `CKS_ISO_CLOUDSTACK` come first.
    #[arg(skip)]
    #[serde(default, deserialize_with = "release_text")]
    pub cloudstack: Option<String>,
    /// `cloudstack-api:`, the API `register` and `versions` use (`url`, `api-key`,
    /// `secret-key-file`); flags and `CKS_ISO_CLOUDSTACK_*` come first
    /// (docs/guide/registration.md).
    #[arg(skip)]
    pub cloudstack_api: Option<ApiConfig>,
    /// `kubernetes:`, the releases `build` makes ISOs of (each as `--kubernetes` takes it) when
    /// neither `--kubernetes`, the positional form nor `--locked` names one.
    #[arg(skip)]
    #[serde(default, deserialize_with = "release_texts")]
    pub kubernetes: Vec<String>,
    /// `extras:`, the add-on content `build` carries (`images:`, `manifests:`); `--image`,
    /// `--images-file` and `--manifest` add to it (docs/guide/add-ons.md).
    #[arg(skip)]
    pub extras: Option<Extras>,
}

/// The configuration file's `extras:`: add-on images and manifests every build carries.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Extras {
    /// `images:`, references as `--image` takes them.
    #[serde(default)]
    pub images: Vec<String>,
    /// `manifests:`, `[NAME=]URL|FILE` as `--manifest` takes them; a relative FILE is relative
    /// to the configuration file.
    #[serde(default)]
    pub manifests: Vec<String>,
}

/// `cloudstack: 4.23` reads as a YAML number; take it as the text it was written as.
fn release_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    })
}

/// `kubernetes: [1.33.1, stable-1.32]` (or one release alone) as texts. A bare number is
/// refused: YAML reads `1.30` as the number 1.3, which would silently name another release.
fn release_texts<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    use serde::de::Error as _;
    let text = |value: serde_json::Value| match value {
        serde_json::Value::String(s) => Ok(s),
        other => Err(D::Error::custom(format!(
            "kubernetes: {other} is not a release as text; YAML reads a bare 1.30 as the number \
             1.3, so quote it: \"1.30\""
        ))),
    };
    match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(serde_json::Value::Array(items)) => items.into_iter().map(text).collect(),
        Some(one) => Ok(vec![text(one)?]),
    }
}

/// `--registry-mirror`'s `REGISTRY=URL`.
fn parse_pair(s: &str) -> Result<(String, String), NotAPair> {
    match s.split_once('=') {
        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => {
            Ok((a.trim().to_owned(), b.trim().to_owned()))
        }
        _ => Err(NotAPair(s.to_owned())),
    }
}

/// A `--registry-mirror` value without its `=`.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not REGISTRY=URL (e.g. docker.io=http://mirror:5000)")]
pub struct NotAPair(String);

/// The file's `mirrors:` map as rules, not yet checked: [`merge`] checks them, naming the file
/// and the key, as it checks every other value of the file.
fn unchecked_rules<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Mirror>, D::Error> {
    let map = BTreeMap::<String, String>::deserialize(d)?;
    Ok(map
        .into_iter()
        .map(|(from, to)| Mirror { from, to })
        .collect())
}

/// The file's `registry-mirrors:` map as the pairs the flags give.
fn pairs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    Ok(BTreeMap::<String, String>::deserialize(d)?
        .into_iter()
        .collect())
}

/// The effective settings after combining file and flags.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The HTTP client's settings (CA files, timeouts, retries).
    pub http: HttpConfig,
    /// Download and git mirrors.
    pub mirrors: Mirrors,
    /// Registry mirrors, registry → mirror.
    pub registry_mirrors: BTreeMap<String, String>,
    /// Insecure registries.
    pub insecure_registries: Vec<String>,
    /// Registry credentials file.
    pub authfile: Option<PathBuf>,
    /// Parallel transfers.
    pub jobs: usize,
    /// Whether `jobs` was left to its default, so blob transfers may grow from it.
    pub jobs_adaptive: bool,
    /// The file's signature mode (flags and `CKS_ISO_SIGNATURES` come first).
    pub signatures: Option<Mode>,
    /// The file's trusted root (`--trusted-root` comes first).
    pub trusted_root: Option<PathBuf>,
    /// The file's signature policy (`--signature-policy` comes first).
    pub signature_policy: Option<PathBuf>,
    /// The file's ISO signer policy (`--signer-policy` comes first).
    pub iso_signer_policy: Option<PathBuf>,
    /// The file's Rekor URL (`--rekor-url` and `CKS_ISO_REKOR_URL` come first).
    pub rekor_url: Option<String>,
    /// The file's CloudStack release (`--cloudstack` and `CKS_ISO_CLOUDSTACK` come first).
    pub cloudstack: Option<crate::cloudstack::CloudStack>,
    /// The file's `cloudstack-api:` (flags and variables come first).
    pub cloudstack_api: Option<ApiConfig>,
    /// The file's `extras:` (the flags add to it).
    pub extras: Extras,
    /// The file's `kubernetes:`, the releases `build` makes ISOs of when no flag names one.
    pub kubernetes: Vec<String>,
    /// The file the settings came from, if any.
    pub source: Option<PathBuf>,
}

impl<'a> From<&'a Settings> for crate::trust::checker::Defaults<'a> {
    /// The file's signature settings, as the signature checker takes them below its flags.
    fn from(settings: &'a Settings) -> Self {
        Self {
            mode: settings.signatures,
            trusted_root: settings.trusted_root.as_deref(),
            policy: settings.signature_policy.as_deref(),
            rekor_url: settings.rekor_url.as_deref(),
        }
    }
}

impl Network {
    /// Reads and parses `path` (a regular file of at most [`MAX_CONFIG_SIZE`], which only its
    /// owner, the user running this or root, may write; see `crate::input`); relative paths inside
    /// it are made relative to its directory.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = crate::input::read_private_text(path, MAX_CONFIG_SIZE).map_err(|source| {
            ConfigError::Read {
                path: path.to_owned(),
                source,
                implicit: false,
            }
        })?;
        let mut config = Self::parse(&text).map_err(|parser| ConfigError::Parse {
            path: path.to_owned(),
            parser: Box::new(parser),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let anchor = |p: PathBuf| match p.is_relative() {
            true => base.join(p),
            false => p,
        };
        config.ca_files = config.ca_files.into_iter().map(anchor).collect();
        config.authfile = config.authfile.map(anchor);
        config.trusted_root = config.trusted_root.map(anchor);
        config.signature_policy = config.signature_policy.map(anchor);
        config.iso_signer_policy = config.iso_signer_policy.map(anchor);
        if let Some(api) = &mut config.cloudstack_api {
            api.secret_key_file = api.secret_key_file.take().map(anchor);
        }
        if let Some(extras) = &mut config.extras {
            for manifest in &mut extras.manifests {
                *manifest = anchored_manifest(manifest, base);
            }
        }
        Ok(config)
    }

    /// Parses the YAML text; an empty file is an empty configuration.
    pub(crate) fn parse(text: &str) -> Result<Self, serde_saphyr::Error> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        serde_saphyr::from_str::<Option<Self>>(text).map(Option::unwrap_or_default)
    }
}

/// Combines the file (if any) and the flags into the effective settings: a scalar flag replaces
/// the file's value, a mirror rule replaces the file's rule for the same prefix, lists add up.
pub fn merge(file: Option<(PathBuf, Network)>, flags: Network) -> Result<Settings, ConfigError> {
    let (source, file) = match file {
        Some((path, config)) => (Some(path), config),
        None => (None, Network::default()),
    };
    let origin = source
        .as_ref()
        .map_or("configuration".to_owned(), |p| p.display().to_string());
    let mut mirrors: BTreeMap<String, Mirror> = BTreeMap::new();
    for Mirror { from, to } in &file.mirrors {
        let rule: Mirror = format!("{from}={to}")
            .parse()
            .map_err(|reason| value(&origin, &format!("mirrors.{from}"), reason))?;
        mirrors.insert(rule.from.clone(), rule);
    }
    for rule in flags.mirrors {
        mirrors.insert(rule.from.clone(), rule);
    }
    let mut registry_mirrors: BTreeMap<String, String> =
        file.registry_mirrors.into_iter().collect();
    registry_mirrors.extend(flags.registry_mirrors);
    let mut insecure = file.insecure_registries;
    for host in flags.insecure_registries {
        if !insecure.contains(&host) {
            insecure.push(host);
        }
    }
    let signatures = file
        .signatures
        .as_deref()
        .map(str::parse::<Mode>)
        .transpose()
        .map_err(|reason| value(&origin, "signatures", reason.into()))?;
    let cloudstack = file
        .cloudstack
        .as_deref()
        .map(crate::cloudstack::CloudStack::parse)
        .transpose()
        .map_err(|e| value(&origin, "cloudstack", e.to_string()))?;
    let mut ca_files = file.ca_files;
    ca_files.extend(flags.ca_files);
    let jobs_adaptive = flags.jobs.or(file.jobs).is_none();
    let jobs = flags.jobs.or(file.jobs).unwrap_or(DEFAULT_JOBS);
    if jobs == 0 {
        return Err(value(&origin, "jobs", "must be at least 1".into()));
    }
    let http = http_config(
        &origin,
        (flags.retries, file.retries),
        [
            (flags.connect_timeout, file.connect_timeout),
            (flags.idle_timeout, file.idle_timeout),
        ],
        ca_files,
        insecure.clone(),
    )?;
    Ok(Settings {
        http,
        mirrors: Mirrors::new(mirrors.into_values().collect()),
        registry_mirrors,
        insecure_registries: insecure,
        authfile: flags.authfile.or(file.authfile),
        jobs,
        jobs_adaptive,
        signatures,
        trusted_root: file.trusted_root,
        signature_policy: file.signature_policy,
        iso_signer_policy: file.iso_signer_policy,
        rekor_url: file.rekor_url,
        cloudstack,
        cloudstack_api: file.cloudstack_api,
        extras: file.extras.unwrap_or_default(),
        kubernetes: file.kubernetes,
        source,
    })
}

/// The HTTP settings: CA files, retries and timeouts (the flag's and the file's `retries`, and
/// connect and idle `timeouts`; a flag replaces the file's value, each at least 1) and the hosts
/// spoken to in plain HTTP.
fn http_config(
    origin: &str,
    retries: (Option<u32>, Option<u32>),
    timeouts: [(Option<u64>, Option<u64>); 2],
    ca_files: Vec<PathBuf>,
    insecure: Vec<String>,
) -> Result<HttpConfig, ConfigError> {
    let [connect, idle] = timeouts;
    let defaults = HttpConfig::default();
    let retries = retries.0.or(retries.1).unwrap_or(defaults.retry.attempts);
    if retries == 0 {
        return Err(value(
            origin,
            "retries",
            "must be at least 1 (the first attempt counts)".into(),
        ));
    }
    let seconds =
        |key: &str, flag: Option<u64>, file: Option<u64>, default: Duration| match flag.or(file) {
            Some(0) => Err(value(origin, key, "must be at least 1 second".into())),
            Some(s) => Ok(Duration::from_secs(s)),
            None => Ok(default),
        };
    Ok(HttpConfig {
        ca_files,
        connect_timeout: seconds(
            "connect-timeout",
            connect.0,
            connect.1,
            defaults.connect_timeout,
        )?,
        idle_timeout: seconds("idle-timeout", idle.0, idle.1, defaults.idle_timeout)?,
        retry: RetryPolicy {
            attempts: retries,
            ..defaults.retry
        },
        max_redirects: defaults.max_redirects,
        offline: false,
        plain_http_hosts: insecure,
    })
}

/// A configuration value that cannot be used, in `origin`, at `key`.
fn value(origin: &str, key: &str, reason: String) -> ConfigError {
    ConfigError::Value {
        origin: origin.to_owned(),
        key: key.to_owned(),
        reason,
    }
}

/// An `extras.manifests` entry (`[NAME=]URL|FILE`) with a relative FILE made relative to `base`.
fn anchored_manifest(entry: &str, base: &Path) -> String {
    let (name, source) = match entry.split_once('=') {
        Some((name, source)) if !name.contains(['/', ':']) => (Some(name), source),
        _ => (None, entry),
    };
    let url = source.starts_with("http://") || source.starts_with("https://");
    let source = match url || Path::new(source).is_absolute() {
        true => source.to_owned(),
        false => base.join(source).display().to_string(),
    };
    match name {
        Some(name) => format!("{name}={source}"),
        None => source,
    }
}
