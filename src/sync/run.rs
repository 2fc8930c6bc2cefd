//! One sync: look (resolve each minor — its label, or with `--locks` its lock — read the publish
//! directory and CloudStack), decide ([`super::decide`]), then act on what differs — build
//! through the pipeline's [`crate::pipeline::matrix::Matrix`] on the one [`Shared`] the caller made
//! (cache, registry client and checker serve every version and arch, the versions at once),
//! verify, gate on the clusters that run, publish atomically, register, retire — and report
//! ([`super::report`]). Looking changes nothing; `plan` stops there. One minor or arch that fails
//! is reported and the others go on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::decide::{self, Decision, Fingerprint, OnDisk, Published, Wanted};
use super::desired::{Desired, Minor};
use super::failure::{GateError, ItemError};
use super::report::Item;
use crate::cloudstack::IsoToRegister;
use crate::cloudstack::api::{Api, ApiError, Cluster, SupportedVersion};
use crate::cloudstack::plan::{Existing, listed_arch};
use crate::image::Arch;
use crate::pipeline::{Build, RequestOptions, Shared};
use crate::reporter::Reporter;
use crate::trust::sign::Signers;
use cks_iso_sigstore::TrustedRoot;

/// The prefix of the staging directories builds write into, inside the publish directory.
pub const STAGING_PREFIX: &str = ".sync-staging-";

/// An upgrade-check verdict of FROM → TO (both ISOs): the caller's `upgrade-check`, or why it
/// could not judge.
pub type Gate<'a> = dyn Fn(&Path, &Path) -> Result<crate::upgrade::Report, GateError> + 'a;

/// What a sync borrows.
pub struct Context<'a> {
    /// What every build shares.
    pub shared: Shared<'a>,
    /// Where builds report progress (from several threads: the versions build at once).
    pub reporter: &'a (dyn Reporter + Sync),
    /// The CloudStack API.
    pub api: &'a Api,
    /// A plain client for the URL checks.
    pub http: &'a reqwest::Client,
    /// The upgrade-check verdict.
    pub gate: &'a Gate<'a>,
    /// Who must have signed an ISO before it is registered, and the root keyless signatures are
    /// judged against; `None`: no signer policy, no check.
    pub signers: Option<(&'a Signers, &'a TrustedRoot)>,
    /// How the builds sign beyond `sign-key`: keyless, or `sign-key` entered in Rekor.
    pub signing: Signing<'a>,
    /// Between polls of Ready and of async jobs.
    pub poll: Duration,
    /// The longest wait for Ready, and for a delete's job.
    pub timeout: Duration,
}

/// How a sync's builds sign, beyond the desired state's `sign-key`: keyless (`sign: keyless`,
/// the token or its file and the services), and where `tlog: true` enters each `sign-key`
/// signature (the Rekor and the root it is proven against). `None`: not so.
#[derive(Debug, Clone, Copy, Default)]
pub struct Signing<'a> {
    /// `sign: keyless`.
    pub keyless: Option<&'a crate::trust::keyless::KeylessOptions>,
    /// `tlog: true` beside `sign-key`.
    pub tlog: Option<&'a crate::trust::keyless::KeylessOptions>,
}

/// A sync that could not look: nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// CloudStack did not answer a list.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// A zone of the desired state that CloudStack does not have.
    #[error("desired state: zone {given:?} is not one CloudStack lists (it has: {have})")]
    UnknownZone {
        /// As given.
        given: String,
        /// What there is.
        have: String,
    },
    /// The publish directory cannot be made or read.
    #[error("publish directory {}", path.display())]
    PublishDir {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

impl SyncError {
    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Api(e) => e.hint(),
            Self::UnknownZone { .. } => Some("name zones as listZones does (name or id)".into()),
            Self::PublishDir { .. } => Some(
                "create it, writable by the user running sync, and served at publish.url".into(),
            ),
        }
    }
}

/// One minor × arch through the run.
pub(super) struct Slot {
    pub(super) wanted: Wanted,
    pub(super) decision: Decision,
    pub(super) item: Item,
    /// The published ISO, once there is one of this request.
    pub(super) iso: Option<IsoToRegister>,
}

/// What CloudStack lists, read once.
pub(super) struct Listed {
    pub(super) versions: Vec<SupportedVersion>,
    pub(super) clusters: Vec<Cluster>,
    /// The desired zones as `(id, name)`; empty: every zone.
    pub(super) zones: Vec<(String, String)>,
}

/// How a run goes.
#[derive(Debug, Clone, Default)]
pub struct Mode {
    /// `--plan`: only look and say what a run would do.
    pub plan: bool,
    /// `--locks DIR`: each minor's version and content from its lock there (written by `sync
    /// --plan --write-locks`), built exactly, instead of from its label ([`super::locks`]).
    pub locks: Option<PathBuf>,
}

/// The staging directories killed syncs left in `dir`, removed (the run lock is held).
pub(super) fn sweep(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        if name.to_string_lossy().starts_with(STAGING_PREFIX)
            && std::fs::remove_dir_all(e.path()).is_ok()
        {
            removed.push(e.path());
        }
    }
    removed
}

/// `listZones` (for the desired zones), `listKubernetesSupportedVersions`,
/// `listKubernetesClusters`.
pub(super) async fn list(api: &Api, zones: &[String]) -> Result<Listed, SyncError> {
    let zones = match zones.is_empty() {
        true => Vec::new(),
        false => {
            let all = api.zones().await?;
            let mut out = Vec::new();
            for given in zones {
                let z = all.iter().find(|z| z.id == *given || z.name == *given);
                let z = z.ok_or_else(|| SyncError::UnknownZone {
                    given: given.clone(),
                    have: all
                        .iter()
                        .map(|z| z.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
                out.push((z.id.clone(), z.name.clone()));
            }
            out
        }
    };
    Ok(Listed {
        versions: api.versions().await?,
        clusters: api.clusters().await?,
        zones,
    })
}

/// The build options for `minor`: the desired state's content; `kubernetes` the label or pin.
pub(super) fn options(
    desired: &Desired,
    kubernetes: String,
    label: Option<String>,
) -> RequestOptions {
    RequestOptions {
        kubernetes: Some(kubernetes),
        kubernetes_label: label,
        arches: desired
            .arches()
            .iter()
            .map(|a| a.k8s().to_owned())
            .collect(),
        network: Some(desired.network.clone()),
        dashboard: desired.dashboard.clone(),
        headlamp_version: desired.headlamp_version.clone(),
        cloudstack: Some(desired.cloudstack.release.clone()),
        images: desired.images.clone(),
        manifests: desired.manifests.clone(),
        ..RequestOptions::default()
    }
}

/// `stable-1.33` or `pinned`.
pub(super) fn from_of(minor: &Minor) -> String {
    match minor.pin {
        Some(_) => "pinned".into(),
        None => format!("stable-{}", minor.minor),
    }
}

/// `minor` resolved (its label read) into what each arch wants.
pub(super) fn resolve(
    build: &Build<'_>,
    desired: &Desired,
    minor: &Minor,
) -> Result<Vec<Wanted>, ItemError> {
    let prepared = build.request(&options(desired, minor.kubernetes(), None))?;
    let request = &prepared.request;
    let version = request.kubernetes.trim_start_matches('v').to_owned();
    if !version.starts_with(&format!("{}.", minor.minor)) {
        return Err(ItemError::OtherMinor {
            label: minor.kubernetes(),
            version,
            minor: minor.minor.clone(),
        });
    }
    let fingerprint = Fingerprint::of_request(request);
    Ok((desired.arches().into_iter())
        .map(|arch| Wanted {
            minor: minor.minor.clone(),
            arch,
            version: version.clone(),
            file: crate::plan::iso_name(request, arch),
            fingerprint: fingerprint.clone(),
            locked: None,
        })
        .collect())
}

type Looked = (Wanted, Option<Published>, Vec<Existing>);

/// What the publish directory and CloudStack hold for `wanted` (CloudStack's ISOs listed: the
/// checksums, and only the versions Ready in every zone count as registered).
pub(super) fn slot(
    wanted: Wanted,
    desired: &Desired,
    listed: &Listed,
    ctx: &Context<'_>,
) -> Result<Looked, SyncError> {
    let published = published(&desired.publish.dir.join(&wanted.file), wanted.arch);
    let mut existing = Vec::new();
    for v in listed.versions.iter().filter(|v| v.name == wanted.name()) {
        let zones = ctx.shared.runtime.block_on(ctx.api.iso_zones(&v.isoid))?;
        if zones.is_empty() || zones.iter().any(|z| !z.isready) {
            continue;
        }
        let checksum = zones
            .iter()
            .map(|z| z.checksum.clone())
            .find(|c| !c.is_empty());
        existing.push(Existing {
            version: v.clone(),
            checksum: checksum.unwrap_or_default(),
        });
    }
    Ok((wanted, published, existing))
}

/// The ISO at `path`, its request read from its embedded lock and its SHA-256 from the `.sha256`
/// beside it (written after it, so present only for a whole ISO), else from its bytes.
fn published(path: &Path, arch: Arch) -> Option<Published> {
    if !path.is_file() {
        return None;
    }
    let fingerprint = crate::lock::source::read(path)
        .ok()
        .map(|(lock, _)| Fingerprint::of_lock(&lock, arch));
    let sha256 = sidecar_sha(path).or_else(|| IsoToRegister::read(path).ok().map(|i| i.sha256))?;
    Some(Published {
        fingerprint,
        sha256,
    })
}

/// The hex of `<iso>.sha256`, when it is one.
fn sidecar_sha(iso: &Path) -> Option<String> {
    let mut name = iso.as_os_str().to_owned();
    name.push(".sha256");
    let text = std::fs::read_to_string(PathBuf::from(name)).ok()?;
    let hex = text.split_whitespace().next()?.to_ascii_lowercase();
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hex)
}

/// The slot's report item as found.
pub(super) fn start(
    wanted: Wanted,
    decision: Decision,
    published: Option<Published>,
    desired: &Desired,
    listed: &Listed,
) -> Slot {
    let zone_name = |id: &str| match id.is_empty() {
        true => "all".to_owned(),
        false => (listed.zones.iter().find(|z| z.0 == id)).map_or(id.to_owned(), |z| z.1.clone()),
    };
    let item = Item {
        minor: wanted.minor.clone(),
        arch: wanted.arch.uname().to_owned(),
        kubernetes: Some(wanted.version.clone()),
        from: match is_pinned(desired, &wanted) {
            true => "pinned".into(),
            false => format!("stable-{}", wanted.minor),
        },
        name: wanted.name().to_owned(),
        sha256: published
            .as_ref()
            .filter(|_| decision.on_disk == OnDisk::Same)
            .map(|p| p.sha256.clone()),
        before: super::report::Before {
            published: Some(decision.on_disk),
            registered: decision
                .registered_in
                .iter()
                .map(|z| zone_name(z))
                .collect(),
        },
        ..Item::default()
    };
    let iso = (decision.on_disk == OnDisk::Same).then(|| {
        let path = desired.publish.dir.join(&wanted.file);
        let size = std::fs::metadata(&path)
            .map(|m| m.len())
            .unwrap_or_default();
        IsoToRegister {
            semver: wanted.version.clone(),
            name: wanted.name().to_owned(),
            arch: wanted.arch,
            sha256: item.sha256.clone().unwrap_or_default(),
            size,
            path,
        }
    });
    Slot {
        wanted,
        decision,
        item,
        iso,
    }
}

pub(super) fn is_pinned(desired: &Desired, wanted: &Wanted) -> bool {
    desired
        .minors()
        .iter()
        .any(|m| m.minor == wanted.minor && m.pin.is_some())
}

/// `sync --plan`: what each slot would do, and the retirements a run would leave.
pub(super) fn plan_all(slots: &mut [Slot], desired: &Desired, listed: &Listed) {
    let mut planned = Vec::new();
    for s in slots.iter_mut() {
        if s.decision.build {
            s.item.done.push("build".into());
        }
        if s.decision.register {
            s.item.done.push("register".into());
            planned.push(SupportedVersion {
                id: format!("planned:{}", s.wanted.name()),
                name: s.wanted.name().to_owned(),
                semanticversion: s.wanted.version.clone(),
                arch: s.wanted.arch.uname().to_owned(),
                state: "Enabled".into(),
                ..SupportedVersion::default()
            });
        }
    }
    let carried = carried(slots);
    let old = decide::retirements(&listed.versions, &planned, desired.keep, &carried);
    for v in in_use(slots, old, &listed.clusters) {
        if let Some(s) = slot_of(slots, &v) {
            s.item.done.push(format!("retire {} ({})", v.name, v.id));
        }
    }
}

/// Of `old`, the versions no cluster uses; each one a cluster uses is named in its slot's
/// reasons (kept, as every run keeps it: not something done).
pub(super) fn in_use(
    slots: &mut [Slot],
    old: Vec<SupportedVersion>,
    clusters: &[Cluster],
) -> Vec<SupportedVersion> {
    let mut free = Vec::new();
    for v in old {
        let users = users(clusters, &v);
        if users.is_empty() {
            free.push(v);
        } else if let Some(s) = slot_of(slots, &v) {
            let zone = if v.zonename.is_empty() {
                String::new()
            } else {
                format!(" in {}", v.zonename)
            };
            s.item.why.push(format!(
                "kept {} ({}{zone}) beyond keep: in use by cluster {}",
                v.name,
                v.id,
                users.join(", ")
            ));
        }
    }
    free
}

pub(super) fn carried(slots: &[Slot]) -> Vec<(String, Arch)> {
    slots
        .iter()
        .map(|s| (s.wanted.minor.clone(), s.wanted.arch))
        .collect()
}

pub(super) fn users<'a>(clusters: &'a [Cluster], v: &SupportedVersion) -> Vec<&'a str> {
    (clusters.iter())
        .filter(|c| c.kubernetesversionid == v.id)
        .map(|c| c.name.as_str())
        .collect()
}

/// The slot of `v`'s minor and arch.
pub(super) fn slot_of<'a>(slots: &'a mut [Slot], v: &SupportedVersion) -> Option<&'a mut Slot> {
    let (major, minor, _) = crate::cloudstack::retire::semver(&v.semanticversion)?;
    let minor = format!("{major}.{minor}");
    (slots.iter_mut()).find(|s| s.wanted.minor == minor && s.wanted.arch.uname() == listed_arch(v))
}

/// The item's state from what was done.
pub(super) fn settle(item: &mut Item, plan: bool) {
    let has = |word: &str| item.done.iter().any(|d| d.starts_with(word));
    item.state = if has("failed") {
        "failed"
    } else if has("gated") {
        "gated"
    } else if item.done.is_empty() {
        "current"
    } else if plan {
        "would act"
    } else {
        "acted"
    }
    .into();
}
