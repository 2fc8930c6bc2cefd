//! What goes into a CKS ISO, decided from the command line and resolved versions, without touching
//! the network: the normalised request (flags or upstream's positional form), the edits each
//! manifest gets (and which manifests, [`manifests`]), the image set and the ISO's file name.
//! `realize` and `author` carry the plan out.

mod addons;
mod file;
mod locked;
mod manifests;
// The ISO name's rules live with the lock, which checks the names it reads: the lock needs
// nothing of the plan.
pub use crate::lock::name;
mod partial;
mod pause;
mod profile;
mod request;
pub mod sandbox;

use std::path::PathBuf;

pub use addons::{Addons, addons, image_lines};
pub use file::IsoFile;
pub use locked::{Extra, Locked, locked};
pub use manifests::{Role, Taken, autoscaler_image, manifests, not_taken, provider_image};
pub use partial::{Given, Partial, csi_tag};
pub use pause::{PauseConflict, PauseSource, is_pause, listed_name, locked_pause, one_pause};
pub use profile::{Profile, etcd_own_name, iso_name, profile, settle};
pub use request::{Flags, request, request_in};

use crate::manifest::{self, ManifestError};
use cks_iso_oci::image::Arch;
use cks_iso_oci::image::Reference;

/// Where a user-given manifest comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Downloaded (through the mirrors).
    Url(String),
    /// Read from the local file system.
    File(PathBuf),
}

impl Source {
    /// `http://` and `https://` are URLs; anything else is a path.
    pub fn parse(text: &str) -> Self {
        match text.starts_with("http://") || text.starts_with("https://") {
            true => Self::Url(text.to_owned()),
            false => Self::File(PathBuf::from(text)),
        }
    }
}

/// A wrong command line.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Something required is missing.
    #[error("{what} is required")]
    Missing {
        /// The flag or argument.
        what: &'static str,
    },
    /// Several required flags are missing: all of them, in one error.
    #[error("{} are required", list_and(what))]
    MissingSeveral {
        /// The flags.
        what: Vec<&'static str>,
    },
    /// The positional form has the wrong number of arguments.
    #[error("the positional form takes 7 to 9 arguments, not {count}")]
    Positional {
        /// How many were given.
        count: usize,
    },
    /// A value is given twice: as a positional argument and as a flag.
    #[error("{what} is given both as a positional argument and as a flag")]
    Twice {
        /// The setting.
        what: &'static str,
    },
    /// `--locked` with upstream's positional form.
    #[error("--locked takes its versions from the lock, not from positional arguments")]
    LockedPositional,
    /// A flag says something else than the lock.
    #[error("{} contradicts the lock, which says {locked:?}", setting(flag, given))]
    Contradicts {
        /// The flag (or environment variable).
        flag: &'static str,
        /// Its value.
        given: String,
        /// What the lock says.
        locked: String,
    },
    /// The lock's manifest came from a local file, which must be given again.
    #[error("the lock's {path} came from the local file {name}; pass it again with {flag} FILE")]
    LocalManifest {
        /// The flag that takes it.
        flag: &'static str,
        /// Its path in the ISO.
        path: String,
        /// The file name the lock recorded.
        name: String,
    },
    /// The lock does not hold what was asked.
    #[error(transparent)]
    Lock(crate::lock::LockError),
    /// An ISO name that is not one path component.
    #[error(transparent)]
    Name(#[from] name::NameError),
    /// An architecture cks-iso cannot build for.
    #[error("--arch {given:?} is not an architecture cks-iso builds for")]
    Arch {
        /// What was given.
        given: String,
    },
    /// Positional argument 6 reads both as a Headlamp version and as an existing file.
    #[error(
        "positional argument 6 is {given:?}, which reads both as a Headlamp version (CloudStack \
         4.23's form, building headlamp.yaml from Headlamp's v{version} release) and as the \
         dashboard manifest file {given:?} (the form of CloudStack 4.22 and before), which exists"
    )]
    Ambiguous {
        /// What was given.
        given: String,
        /// The version it would be, without `v`.
        version: String,
    },
    /// A release that applies `dashboard.yaml` at every cluster create, without one.
    #[error(
        "CloudStack {cloudstack} applies dashboard.yaml at every cluster create and upgrade and \
         waits for its pod, but this build has no dashboard manifest"
    )]
    DashboardRequired {
        /// The release.
        cloudstack: crate::cloudstack::CloudStack,
    },
    /// CloudStack 4.20 names the ISO without its arch: two arches would write one file.
    #[error(
        "CloudStack {cloudstack}'s script names the ISO {name}.iso, without its architecture, so \
         two --arch would write the same file"
    )]
    OneIsoName {
        /// The release.
        cloudstack: crate::cloudstack::CloudStack,
        /// The ISO name.
        name: String,
    },
    /// The positional form's BUILD_NAME (argument 7) is an architecture.
    #[error(
        "positional argument 7 is BUILD_NAME, but {given:?} is an architecture (ARCH is argument 8)"
    )]
    ArchAsName {
        /// What was given.
        given: String,
    },
    /// The positional form's ARCH (argument 8) is a version.
    #[error(
        "positional argument 8 is ARCH, but {given:?} is a version (ETCD_VERSION is argument 9, \
         after ARCH)"
    )]
    VersionAsArch {
        /// What was given.
        given: String,
    },
    /// A Headlamp version that is not `X.Y[.Z…]`.
    #[error("--headlamp-version {given:?} is not a Headlamp release such as 0.40.1")]
    HeadlampVersion {
        /// What was given.
        given: String,
    },
    /// An extra image that is no image reference.
    #[error("--image {given:?} is not an image reference: {reason}")]
    AddonImage {
        /// What was given.
        given: String,
        /// The parser's words.
        reason: String,
    },
    /// An extra manifest whose root name cannot be used.
    #[error("--manifest {given:?} would be {name:?} at the ISO's root, which cannot be: {reason}")]
    AddonName {
        /// What was given (`[NAME=]URL|FILE`).
        given: String,
        /// The root name it would have.
        name: String,
        /// Why not.
        reason: &'static str,
    },
}

/// A flag with its value (`--cni "1.7.0"`), or a variable with its (`AUTOSCALER_VERSION="1.2"`).
fn setting(flag: &str, given: &str) -> String {
    match flag.starts_with('-') {
        true => format!("{flag} {given:?}"),
        false => format!("{flag}={given:?}"),
    }
}

/// `0.40.1` or `v0.40.1` without its one leading `v`: what CloudStack 4.23's script takes as its
/// sixth argument; `None` when `text` is no such version.
pub fn headlamp_version(text: &str) -> Option<String> {
    let digits = text.trim().strip_prefix('v').unwrap_or(text.trim());
    let parts: Vec<&str> = digits.split('.').collect();
    (parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    .then(|| digits.to_owned())
}

/// The manifest a Headlamp release publishes, as CloudStack 4.23's script builds its URL.
pub fn headlamp_url(version: &str) -> String {
    format!(
        "https://raw.githubusercontent.com/kubernetes-sigs/headlamp/v{version}/kubernetes-headlamp.yaml"
    )
}

/// The Headlamp releases whose image registry.k8s.io serves, promoted from Kubernetes'
/// staging registry (kubernetes/k8s.io PR #9452: v0.41.0 and v0.42.0, the first promotion; PR
/// #9616: v0.43.0; `registry.k8s.io/images/k8s-staging-headlamp/images.yaml`, promoted to
/// `…/k8s-artifacts-prod/images/headlamp` by `registry.k8s.io/manifests/k8s-staging-headlamp/
/// promoter-manifest.yaml`, i.e. `registry.k8s.io/headlamp/headlamp`). There they carry
/// registry.k8s.io's signatures, which the built-in rule checks; `ghcr.io`'s copies are unsigned.
pub const HEADLAMP_PROMOTED: [&str; 3] = ["0.41.0", "0.42.0", "0.43.0"];

/// The image a Headlamp release's manifest is pinned to (it names `:latest`): registry.k8s.io's
/// for a release in [`HEADLAMP_PROMOTED`], else [`headlamp_ghcr_image`].
pub fn headlamp_image(version: &str) -> String {
    match HEADLAMP_PROMOTED.contains(&version) {
        true => format!("registry.k8s.io/headlamp/headlamp:v{version}"),
        false => headlamp_ghcr_image(version),
    }
}

/// Headlamp's own copy of a release's image, where every release is published.
pub fn headlamp_ghcr_image(version: &str) -> String {
    format!("ghcr.io/headlamp-k8s/headlamp:v{version}")
}

impl PlanError {
    /// [`PlanError::Missing`] for one flag, [`PlanError::MissingSeveral`] for more.
    fn missing(what: Vec<&'static str>) -> Self {
        match what[..] {
            [one] => Self::Missing { what: one },
            _ => Self::MissingSeveral { what },
        }
    }

    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Arch { .. } => "use amd64 (x86_64) or arm64 (aarch64)".into(),
            Self::Lock(e) => return e.hint(),
            Self::Name(_) => name::NameError::hint(),
            Self::Contradicts { .. } | Self::LockedPositional => {
                "drop the flag (the lock decides), or build without --locked to change the inputs"
                    .into()
            }
            Self::LocalManifest { .. } => {
                "the file must hash to what the lock records; a changed file is reported".into()
            }
            Self::Ambiguous { given, version } => format!(
                "for the Headlamp version write --headlamp-version {version} (and no argument 6 \
                 …) or rename the file; for the file write ./{given}"
            ),
            Self::DashboardRequired { .. } => "give --dashboard URL|FILE (a Headlamp version \
                alone builds an ISO for CloudStack 4.23 only), or build for --cloudstack 4.23"
                .into(),
            Self::OneIsoName { .. } => {
                "build one --arch per run (with its own --output or --name), or for --cloudstack \
                 4.21 or later, whose ISO names end in -x86_64/-aarch64"
                    .into()
            }
            Self::ArchAsName { given } => format!(
                "the order is OUTPUT_PATH KUBERNETES_VERSION CNI_VERSION CRICTL_VERSION \
                 NETWORK_YAML DASHBOARD_YAML BUILD_NAME ARCH [ETCD_VERSION]: put a name before \
                 {given:?}, e.g. … setup-v1.33.1 {given}"
            ),
            Self::VersionAsArch { given } => format!(
                "the order is … BUILD_NAME ARCH ETCD_VERSION: give the architecture before the \
                 etcd version, e.g. … setup-v1.33.1 amd64 {given}"
            ),
            Self::HeadlampVersion { .. } => {
                "give the release without anything else, e.g. --headlamp-version 0.40.1".into()
            }
            Self::AddonImage { .. } => "write it as docker pull takes it: nginx, \
                quay.io/org/name:tag, name@sha256:<64 hex> or name:tag@sha256:<64 hex>"
                .into(),
            Self::AddonName { .. } => "give the add-on its own root name ending in .yaml with \
                NAME=, e.g. --manifest velero.yaml=URL; cks-iso and CloudStack own network.yaml, \
                dashboard.yaml, headlamp.yaml, autoscaler.yaml, provider.yaml, manifest.yaml, \
                snapshot-crds.yaml and the other files at the root"
                .into(),
            _ => "cks-iso build --kubernetes 1.33.1 --network URL --dashboard URL [--arch arm64]…, or \
                  upstream's form: OUTPUT_PATH KUBERNETES_VERSION CNI_VERSION CRICTL_VERSION \
                  NETWORK_YAML DASHBOARD_YAML|HEADLAMP_VERSION BUILD_NAME [ARCH] [ETCD_VERSION]"
                .into(),
        })
    }
}

/// The command line, normalised. Versions keep what the user wrote; `resolve` parses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Kubernetes release as given.
    pub kubernetes: String,
    /// The version label (`stable-1.33`) the release was read from, when one was given.
    pub kubernetes_label: Option<String>,
    /// Architectures, each once, in the order given.
    pub arches: Vec<Arch>,
    /// CNI plugins release, if given.
    pub cni: Option<String>,
    /// crictl release, if given.
    pub crictl: Option<String>,
    /// etcd release, if given.
    pub etcd: Option<String>,
    /// `network.yaml`.
    pub network: Source,
    /// `dashboard.yaml`; absent only when a Headlamp version is given.
    pub dashboard: Option<Source>,
    /// `headlamp.yaml`, optional: a manifest given, or the release manifest of
    /// [`Request::headlamp_version`].
    pub headlamp: Option<Source>,
    /// The Headlamp release (`0.40.1`, no `v`) whose manifest is `headlamp.yaml`, its image pinned.
    pub headlamp_version: Option<String>,
    /// The image that release's manifest is pinned to ([`headlamp_image`]; a locked build's, as
    /// the lock records it).
    pub headlamp_image: Option<String>,
    /// Output directory.
    pub output: PathBuf,
    /// ISO name before `-<uname>.iso`.
    pub name: String,
    /// The CloudStack release the ISO is for, given or implied ([`profile`]).
    pub cloudstack: Option<crate::cloudstack::CloudStack>,
    /// Add-on images and manifests ([`addons()`]); none unless asked for.
    pub addons: Addons,
}

/// `a`, `a and b`, `a, b and c`.
fn list_and(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// `<name>-<x86_64|aarch64>.iso`, as upstream names it.
pub fn iso_file_name(name: &str, arch: Arch) -> String {
    format!("{name}-{}.iso", arch.uname())
}

/// A manifest after its edits, with the images it references.
#[derive(Debug, Clone)]
pub struct Edited {
    /// The text that goes into the ISO.
    pub text: String,
    /// Every image it references, normalised.
    pub images: Vec<String>,
    /// What was changed, for the log (information: the user need not act).
    pub notes: Vec<String>,
    /// Edits `versions.txt` records (as comments): the pull policies inserted and upstream's
    /// defects repaired (a joined `---`, split). Each is also one of the notes.
    pub edits: Vec<String>,
}

/// `3, 17`.
fn join_lines(lines: &[usize]) -> String {
    lines
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Applies the contract's edits to the manifest `name` and lists its images.
pub fn edit(name: &str, text: &str, role: &Role) -> Result<Edited, ManifestError> {
    let mut notes = Vec::new();
    let mut edits = Vec::new();
    let mut text = text.to_owned();
    let joined = manifest::find_joined_separators(&text);
    if !joined.is_empty() {
        // Upstream's defect, repaired here: information, said once, not a warning the user
        // cannot act on.
        let note = format!(
            "split the `---` joined to the end of line(s) {} (upstream's file runs two documents \
             together there)",
            join_lines(&joined.iter().map(|j| j.line).collect::<Vec<_>>())
        );
        notes.push(note.clone());
        edits.push(note);
        text = manifest::split_joined_separators(&text);
    }
    match role {
        Role::Autoscaler { image } => {
            text = manifest::pin_single_image(name, &text, image)?;
            text = manifest::append_autoscaler_extra(&text);
            notes.push(format!(
                "image set to {image}; cluster-autoscaler-extra RBAC appended"
            ));
        }
        Role::Provider { image } => {
            text = manifest::pin_single_image(name, &text, image)?;
            notes.push(format!("image set to {image}"));
        }
        Role::Network
        | Role::Dashboard
        | Role::Extra
        | Role::Headlamp
        | Role::HeadlampRelease { .. }
        | Role::Csi
        | Role::Unit => {}
    }
    let (pulled, changed) = manifest::pull_if_not_present(&text);
    if changed > 0 {
        notes.push(format!(
            "{changed} imagePullPolicy line(s) set to IfNotPresent"
        ));
    }
    let (pulled, inserted) = manifest::insert_if_not_present(&pulled);
    if !inserted.is_empty() {
        let note = format!(
            "imagePullPolicy: IfNotPresent inserted for {} container(s) with an untagged or \
             :latest image (line(s) {})",
            inserted.len(),
            join_lines(&inserted)
        );
        notes.push(note.clone());
        edits.push(note);
    }
    // The release manifest names `:latest`: its policy is inserted first, then the tag pinned.
    let pulled = match role {
        Role::HeadlampRelease { image } => {
            let pinned = manifest::pin_single_image(name, &pulled, image)?;
            notes.push(format!("image set to {image}"));
            pinned
        }
        _ => pulled,
    };
    let docs = manifest::check_yaml(name, &pulled)?;
    if *role == Role::Extra {
        manifest::check_kubernetes(name, &docs)?;
    }
    let always = manifest::parsed_always(&docs);
    if !always.is_empty() {
        return Err(ManifestError::PullAlways {
            name: name.to_owned(),
            images: always,
        });
    }
    Ok(Edited {
        images: manifest::images(&docs),
        text: pulled,
        notes,
        edits,
    })
}

/// The images an ISO bundles: kubeadm's list and every manifest image, normalised like Docker,
/// each once, sorted by full name.
pub fn image_set<'a>(
    names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Reference>, cks_iso_oci::image::ImageError> {
    let mut refs: Vec<Reference> = Vec::new();
    for name in names {
        let r = Reference::parse(name)?;
        if !refs.iter().any(|x| x.to_string() == r.to_string()) {
            refs.push(r);
        }
    }
    refs.sort_by_key(|r| r.to_string());
    Ok(refs)
}

#[cfg(test)]
mod tests;
