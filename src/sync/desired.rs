//! The desired state `cks-iso sync --desired FILE` keeps a zone at: which Kubernetes minors (each
//! tracked through its `stable-x.y` label, or pinned to a patch), for which arches, with what in
//! every ISO, registered where, how many patches stay enabled, and where the ISOs are published.
//! Its own YAML file, read as strictly as the configuration file (`deny_unknown_fields`, an
//! error naming the key and line), so that a typo never silently drops a minor or a zone.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::cloudstack::run::Retire;
use crate::image::Arch;

/// The largest desired-state file read.
pub const MAX_DESIRED_SIZE: u64 = 1 << 20;

/// The desired state, as the file says it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Desired {
    /// `1.33` (tracked through `stable-1.33`) or `1.32.4` (pinned), each once.
    pub kubernetes: Vec<String>,
    /// `amd64`, `arm64` (or `x86_64`, `aarch64`) [default: amd64].
    #[serde(default)]
    pub arches: Vec<String>,
    /// Where the ISOs go and are served from.
    pub publish: Publish,
    /// The CloudStack side.
    pub cloudstack: CloudStackSide,
    /// The CNI manifest of every ISO (URL or path).
    pub network: String,
    /// The dashboard manifest of every ISO (URL or path); or `headlamp-version`.
    #[serde(default)]
    pub dashboard: Option<String>,
    /// The Headlamp release of every ISO (CloudStack 4.23), instead of `dashboard`.
    #[serde(default)]
    pub headlamp_version: Option<String>,
    /// Add-on images of every ISO.
    #[serde(default)]
    pub images: Vec<String>,
    /// Add-on manifests of every ISO (`URL` or `NAME=URL`, as `--manifest`).
    #[serde(default)]
    pub manifests: Vec<String>,
    /// `--signatures`: off, verify, warn or enforce [default: the configuration's, else verify].
    #[serde(default)]
    pub signatures: Option<String>,
    /// `--trusted-root`.
    #[serde(default)]
    pub trusted_root: Option<PathBuf>,
    /// `--signature-policy`.
    #[serde(default)]
    pub signature_policy: Option<PathBuf>,
    /// `build --sign-key`: the key every ISO is signed with (`ISO.sig`, `ISO.sigstore.json`
    /// published beside it).
    #[serde(default)]
    pub sign_key: Option<PathBuf>,
    /// `build --tlog`: each `sign-key` signature entered in Rekor (the Rekor of `--rekor-url`,
    /// else of `signing-config`, else the public-good one), its entry in the bundle. Not
    /// without `sign-key`.
    #[serde(default)]
    pub tlog: bool,
    /// `build --sign`: `keyless` signs every ISO keyless (a short-lived Fulcio certificate for
    /// the OIDC identity of the token, the signature entered in Rekor; `ISO.sigstore.json`
    /// published beside it). Not with `sign-key`.
    #[serde(default)]
    pub sign: Option<SignHow>,
    /// The file holding the OIDC identity token `sign: keyless` signs with, read when each build
    /// starts and again before each signature, so that a token helper (or the CI) can keep it
    /// fresh [default: sync's --identity-token, else SIGSTORE_ID_TOKEN].
    #[serde(default)]
    pub identity_token_file: Option<PathBuf>,
    /// `--signing-config`: the Sigstore signing config naming the Fulcio and Rekor `sign:
    /// keyless` uses.
    #[serde(default)]
    pub signing_config: Option<PathBuf>,
    /// `--fulcio-url`: the Fulcio `sign: keyless` asks, over `signing-config`'s.
    #[serde(default)]
    pub fulcio_url: Option<String>,
    /// Who must have signed an ISO before it is registered (`register --signer-policy`'s file:
    /// `keys:` and keyless `rules:`) [default: the configuration's `iso-signer-policy:`, else no
    /// check].
    #[serde(default)]
    pub iso_signer_policy: Option<PathBuf>,
    /// Patch releases per minor and arch left enabled [default: 2].
    #[serde(default = "default_keep")]
    pub keep: usize,
}

/// Where ISOs are published.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Publish {
    /// The directory a web server serves.
    pub dir: PathBuf,
    /// The URL it is served at (`https://isos.example.org/cks`).
    pub url: String,
}

/// The CloudStack side of the desired state; the credentials are found as `register` finds them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CloudStackSide {
    /// The release profile the ISOs are for (`"4.22"`).
    pub release: String,
    /// The API endpoint the credentials must be for; a mismatch is an error, not a guess.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The CloudMonkey profile the credentials come from (as `--profile`).
    #[serde(default)]
    pub profile: Option<String>,
    /// Zones by name or id [default: every zone].
    #[serde(default)]
    pub zones: Vec<String>,
    /// `mincpunumber` [default: 2].
    #[serde(default = "default_cpu")]
    pub min_cpu: u32,
    /// `minmemory` in MB [default: 2048].
    #[serde(default = "default_memory")]
    pub min_memory: u32,
    /// How versions beyond `keep` are retired: `disable` or `delete` [default: disable].
    #[serde(default)]
    pub retire: RetireHow,
}

/// `sign:` in the file.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SignHow {
    /// `build --sign`: keyless, with the OIDC identity token of the run.
    Keyless,
}

/// `retire:` in the file.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RetireHow {
    /// `updateKubernetesSupportedVersion state=Disabled`.
    #[default]
    Disable,
    /// `deleteKubernetesSupportedVersion`.
    Delete,
}

impl RetireHow {
    /// As registration takes it.
    pub fn retire(self) -> Retire {
        match self {
            Self::Disable => Retire::Disable,
            Self::Delete => Retire::Delete,
        }
    }
}

fn default_keep() -> usize {
    2
}
fn default_cpu() -> u32 {
    crate::cloudstack::MIN_CPU
}
fn default_memory() -> u32 {
    crate::cloudstack::MIN_MEMORY
}

/// One Kubernetes minor to carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minor {
    /// `1.33`.
    pub minor: String,
    /// `Some("1.33.4")` when pinned; `None`: tracked through `stable-1.33`.
    pub pin: Option<String>,
}

impl Minor {
    /// What `build --kubernetes` is given for it: the pin, or the label.
    pub fn kubernetes(&self) -> String {
        match &self.pin {
            Some(pin) => pin.clone(),
            None => format!("stable-{}", self.minor),
        }
    }
}

/// Why the desired state cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DesiredError {
    /// Not readable.
    #[error("cannot read the desired state {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// Not YAML of the model (an unknown key is named, with its line).
    #[error("desired state {}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's first line.
        message: String,
    },
    /// A value is wrong.
    #[error("desired state {}: {key}: expected {expected}, found {found:?}", path.display())]
    Value {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
        /// What it may be.
        expected: String,
        /// What it is.
        found: String,
    },
}

impl DesiredError {
    /// What the user can do.
    pub fn hint(&self) -> String {
        match self {
            Self::Read { .. } => "check the path given to --desired".into(),
            Self::Parse { .. } | Self::Value { .. } => {
                "see docs/guide/sync.md for every key of the desired state, with a full example"
                    .into()
            }
        }
    }
}

impl Desired {
    /// Reads and checks `path`; relative paths inside it are relative to its directory.
    pub fn load(path: &Path) -> Result<Self, DesiredError> {
        let text = crate::input::read_text(path, MAX_DESIRED_SIZE).map_err(|source| {
            DesiredError::Read {
                path: path.to_owned(),
                source,
            }
        })?;
        let mut desired = Self::parse(&text).map_err(|e| DesiredError::Parse {
            path: path.to_owned(),
            message: crate::config::parse_message(&e),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let anchor = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        anchor(&mut desired.publish.dir);
        desired.trusted_root.as_mut().map(anchor);
        desired.signature_policy.as_mut().map(anchor);
        desired.sign_key.as_mut().map(anchor);
        desired.iso_signer_policy.as_mut().map(anchor);
        desired.identity_token_file.as_mut().map(anchor);
        desired.signing_config.as_mut().map(anchor);
        desired.check(path)?;
        Ok(desired)
    }

    /// Parses the YAML text.
    pub fn parse(text: &str) -> Result<Self, serde_saphyr::Error> {
        serde_saphyr::from_str(text)
    }

    /// Every value that serde cannot judge, each error naming its key.
    fn check(&self, path: &Path) -> Result<(), DesiredError> {
        let bad = |key: &str, expected: &str, found: &str| DesiredError::Value {
            path: path.to_owned(),
            key: key.into(),
            expected: expected.into(),
            found: found.into(),
        };
        if self.kubernetes.is_empty() {
            return Err(bad("kubernetes", "at least one minor (\"1.33\")", ""));
        }
        let mut seen = Vec::new();
        for (i, text) in self.kubernetes.iter().enumerate() {
            let key = format!("kubernetes[{i}]");
            let minor = minor_of(text).ok_or_else(|| {
                bad(
                    &key,
                    "a minor (\"1.33\") or a patch release (\"1.33.4\")",
                    text,
                )
            })?;
            if seen.contains(&minor.minor) {
                return Err(bad(&key, "each minor once", text));
            }
            seen.push(minor.minor);
        }
        for (i, a) in self.arches.iter().enumerate() {
            Arch::parse(a).map_err(|_| bad(&format!("arches[{i}]"), "amd64 or arm64", a))?;
        }
        let url = &self.publish.url;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(bad("publish.url", "an http:// or https:// URL", url));
        }
        if self.keep == 0 {
            return Err(bad("keep", "1 or more", "0"));
        }
        crate::cloudstack::CloudStack::parse(&self.cloudstack.release).map_err(|_| {
            bad(
                "cloudstack.release",
                "a CloudStack release cks-iso knows (\"4.22\")",
                &self.cloudstack.release,
            )
        })?;
        self.check_signing(path)?;
        if self.dashboard.is_some() == self.headlamp_version.is_some() {
            let found = if self.dashboard.is_some() {
                "both"
            } else {
                "neither"
            };
            return Err(bad(
                "dashboard",
                "dashboard or headlamp-version, one of them",
                found,
            ));
        }
        Ok(())
    }

    /// `sign: keyless` and `sign-key` are one or the other; the keyless keys come with
    /// `sign: keyless` only (a typo never leaves ISOs unsigned without a word).
    fn check_signing(&self, path: &Path) -> Result<(), DesiredError> {
        let bad = |key: &str, expected: &str, found: &str| DesiredError::Value {
            path: path.to_owned(),
            key: key.into(),
            expected: expected.into(),
            found: found.into(),
        };
        if self.sign.is_some() && self.sign_key.is_some() {
            return Err(bad(
                "sign",
                "sign: keyless or sign-key, one of them",
                "both",
            ));
        }
        if self.tlog && self.sign_key.is_none() {
            return Err(bad("tlog", "sign-key beside it", "no sign-key"));
        }
        // `signing-config` names the Rekor too, which `tlog` uses.
        let keyless_keys = [
            ("identity-token-file", self.identity_token_file.is_some()),
            (
                "signing-config",
                self.signing_config.is_some() && !self.tlog,
            ),
            ("fulcio-url", self.fulcio_url.is_some()),
        ];
        if self.sign.is_none()
            && let Some((key, _)) = keyless_keys.iter().find(|(_, given)| *given)
        {
            return Err(bad(key, "sign: keyless beside it", "no sign: keyless"));
        }
        Ok(())
    }

    /// The minors, as given.
    pub fn minors(&self) -> Vec<Minor> {
        self.kubernetes.iter().filter_map(|t| minor_of(t)).collect()
    }

    /// The arches, each once [default: amd64].
    pub fn arches(&self) -> Vec<Arch> {
        let mut out: Vec<Arch> = Vec::new();
        for a in &self.arches {
            if let Ok(a) = Arch::parse(a)
                && !out.contains(&a)
            {
                out.push(a);
            }
        }
        if out.is_empty() {
            out.push(Arch::Amd64);
        }
        out
    }

    /// The lock file beside the publish directory: `<dir>.sync-lock`.
    pub fn lock_path(&self) -> PathBuf {
        let mut name = self.publish.dir.as_os_str().to_owned();
        name.push(".sync-lock");
        PathBuf::from(name)
    }
}

/// `1.33` → tracked, `1.33.4` / `v1.33.4` → pinned; anything else `None`.
pub fn minor_of(text: &str) -> Option<Minor> {
    let t = text.trim().trim_start_matches('v');
    let parts: Vec<&str> = t.split('.').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    match parts[..] {
        [major, minor] => Some(Minor {
            minor: format!("{major}.{minor}"),
            pin: None,
        }),
        [major, minor, _] => Some(Minor {
            minor: format!("{major}.{minor}"),
            pin: Some(t.to_owned()),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"
kubernetes: ["1.33", "1.32.4"]
arches: [amd64, arm64]
publish: {dir: /srv/cks, url: "https://isos.example.org/cks"}
cloudstack: {release: "4.22", zones: [zone-a]}
network: https://example.org/calico.yaml
dashboard: https://example.org/dashboard.yaml
keep: 1
"#;

    #[test]
    fn a_full_file_reads_and_minors_are_tracked_or_pinned() {
        let d = Desired::parse(FULL).unwrap();
        d.check(Path::new("d.yaml")).unwrap();
        let minors = d.minors();
        assert_eq!(minors[0].kubernetes(), "stable-1.33");
        assert_eq!(minors[1].kubernetes(), "1.32.4");
        assert_eq!(minors[1].minor, "1.32");
        assert_eq!(d.arches(), [Arch::Amd64, Arch::Arm64]);
        assert_eq!(d.cloudstack.retire, RetireHow::Disable);
        assert_eq!(d.lock_path(), PathBuf::from("/srv/cks.sync-lock"));
    }

    #[test]
    fn an_unknown_key_and_a_bad_value_are_named() {
        let err = Desired::parse(&FULL.replace("keep:", "kept:")).unwrap_err();
        assert!(crate::config::parse_message(&err).contains("kept"), "{err}");
        let d = Desired::parse(&FULL.replace("\"1.32.4\"", "\"1.x\"")).unwrap();
        let err = d.check(Path::new("d.yaml")).unwrap_err().to_string();
        assert!(
            err.contains("kubernetes[1]") && err.contains("\"1.x\""),
            "{err}"
        );
        let d = Desired::parse(&format!("{FULL}sign: keyless\nsign-key: k.pem\n")).unwrap();
        let err = d.check(Path::new("d.yaml")).unwrap_err().to_string();
        assert!(err.contains("sign: keyless or sign-key"), "{err}");
        let d = Desired::parse(&format!("{FULL}identity-token-file: t\n")).unwrap();
        let err = d.check(Path::new("d.yaml")).unwrap_err().to_string();
        assert!(
            err.contains("identity-token-file: expected sign: keyless"),
            "{err}"
        );
        let d = Desired::parse(&format!("{FULL}sign: keyless\nidentity-token-file: t\n")).unwrap();
        d.check(Path::new("d.yaml")).unwrap();
        assert_eq!(d.sign, Some(SignHow::Keyless));
        assert!(Desired::parse(&format!("{FULL}sign: key\n")).is_err());
        let d = Desired::parse(&format!("{FULL}tlog: true\n")).unwrap();
        let err = d.check(Path::new("d.yaml")).unwrap_err().to_string();
        assert!(err.contains("tlog: expected sign-key beside it"), "{err}");
        let text = format!("{FULL}sign-key: k.pem\ntlog: true\nsigning-config: s.json\n");
        Desired::parse(&text)
            .unwrap()
            .check(Path::new("d.yaml"))
            .unwrap();
        let d = Desired::parse(&FULL.replace("\"1.32.4\"", "\"1.33.2\"")).unwrap();
        let err = d.check(Path::new("d.yaml")).unwrap_err().to_string();
        assert!(err.contains("each minor once"), "{err}");
        assert_eq!(minor_of("1.33.0.1"), None);
    }
}
