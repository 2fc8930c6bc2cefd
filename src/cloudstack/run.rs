//! Carrying out a registration: URL checks, `listCapabilities`, the look-first decision, `add`,
//! the wait until every zone's copy is `Ready` (polled like the management server, every 10 s by
//! default), and retiring what `--replace` or `versions retire` names.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::IsoToRegister;
use super::api::{Api, ApiError, Deleted, SupportedVersion};
use super::plan::{self, Action, Conflict, Existing};
use super::url::{self, UrlError};

/// What to do with a version that is replaced or retired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Retire {
    /// `updateKubernetesSupportedVersion state=Disabled`: hidden from new clusters, kept.
    Disable,
    /// `deleteKubernetesSupportedVersion` (and its ISO); refused while a cluster uses it.
    Delete,
}

/// How to register.
#[derive(Debug, Clone)]
pub struct Options {
    /// `mincpunumber`.
    pub min_cpu: u32,
    /// `minmemory` (MB).
    pub min_memory: u32,
    /// Zones by name or id; empty: every zone (one registration without `zoneid`).
    pub zones: Vec<String>,
    /// Register an ISO whose name is taken by another ISO, then retire the old one.
    pub replace: bool,
    /// How `--replace` retires.
    pub retire: Retire,
    /// Wait until Ready.
    pub wait: bool,
    /// The longest wait, for all ISOs together.
    pub timeout: Duration,
    /// Between polls.
    pub poll: Duration,
}

/// One ISO and the URL CloudStack downloads it from.
#[derive(Debug, Clone)]
pub struct Target {
    /// The ISO.
    pub iso: IsoToRegister,
    /// Its URL.
    pub url: String,
}

/// What happened to one ISO in one zone.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// The version's name.
    pub name: String,
    /// `x86_64` or `aarch64`.
    pub arch: String,
    /// `1.33.1`.
    pub semanticversion: String,
    /// The version's id.
    pub id: String,
    /// The zone's name, or empty for every zone.
    pub zone: String,
    /// `registered` or `already registered`.
    pub status: String,
    /// `Ready`, or the ISO's state when not waited for.
    pub isostate: String,
    /// What was retired: `<id> disabled`, `<id> deleted`, `<id> kept: <why>`.
    pub retired: Vec<String>,
    /// The ISO's SHA-256 (lowercase hex), which the Ready ISO's listed checksum must be.
    #[serde(skip)]
    pub sha256: String,
}

/// A registration that did not end with every ISO Ready.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    /// cks-iso's own check of the URL.
    #[error("{iso}: {source}")]
    Url {
        /// The ISO.
        iso: String,
        /// What is wrong.
        source: UrlError,
    },
    /// The API said no.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// CKS is off.
    #[error("the Kubernetes service is not enabled on this CloudStack ({version})")]
    CksDisabled {
        /// `cloudstackversion`.
        version: String,
    },
    /// An arm64 ISO for a server that would register it as x86_64.
    #[error(
        "{iso} is an aarch64 ISO, but CloudStack {version} has no arch parameter \
         (4.20.1 added it): it would register the ISO as x86_64 and its nodes would not boot it"
    )]
    NoArch {
        /// The ISO.
        iso: String,
        /// `cloudstackversion`.
        version: String,
    },
    /// The name is taken.
    #[error(transparent)]
    Conflict(#[from] Conflict),
    /// `--zone` names no zone.
    #[error("no zone is named {given:?} (zones: {have})")]
    UnknownZone {
        /// What was given.
        given: String,
        /// The zones.
        have: String,
    },
    /// A zone's download failed.
    #[error("{name}: the ISO did not become Ready in zone {zone}: {status}")]
    NotReady {
        /// The version.
        name: String,
        /// The zone.
        zone: String,
        /// CloudStack's status text.
        status: String,
    },
    /// Ready, but CloudStack lists another checksum than the one sent: what it holds is not
    /// known to be this ISO.
    #[error(
        "{name}: CloudStack reports the ISO Ready in zone {zone} with checksum {reported}, \
         but cks-iso registered it with {sent}"
    )]
    ChecksumChanged {
        /// The version.
        name: String,
        /// The zone.
        zone: String,
        /// What `listIsos` says (`none` when empty).
        reported: String,
        /// What `addKubernetesSupportedVersion` was given.
        sent: String,
    },
    /// Not Ready in time.
    #[error("{name} not Ready after {waited:?}: {last}")]
    Timeout {
        /// The version.
        name: String,
        /// How long.
        waited: Duration,
        /// The last states seen.
        last: String,
    },
}

impl RegistrationError {
    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Url { source, .. } => Some(source.hint()),
            Self::Api(e) => e.hint(),
            Self::CksDisabled { .. } => Some("set the global setting cloud.kubernetes.service.enabled=true and restart the management server".into()),
            Self::NoArch { .. } => Some("upgrade CloudStack to 4.20.1 or later, or register only x86_64 ISOs".into()),
            Self::Conflict(_) => Some("give --replace (with --retire disable or delete) to register this ISO and retire the other, or build under another --name".into()),
            Self::UnknownZone { .. } => Some("name a zone as listZones shows it, or leave --zone out for every zone".into()),
            Self::NotReady { status, .. } => Some(cause_hint(status)),
            Self::ChecksumChanged { .. } => Some("do not use this version: someone changed the ISO's record in CloudStack after it was registered; delete it (cks-iso versions retire, or the UI) and register the ISO again".into()),
            Self::Timeout { .. } => Some("raise --timeout, or check the secondary storage VM's download in the UI (Images > ISOs > Zones)".into()),
        }
    }
}

/// A hint for the known causes of a failed download, from CloudStack's status text.
pub fn cause_hint(status: &str) -> String {
    let s = status.to_ascii_lowercase();
    if s.contains("redirect") {
        "the URL redirects and the secondary storage does not follow redirects: give the final URL, or set store.download.follow.redirects=true".into()
    } else if s.contains("404") || s.contains("returned 4") {
        "the secondary storage VM cannot find the file at the URL: upload the ISO there (the URL must be reachable from the SSVM, not only from here)".into()
    } else if s.contains("checksum") {
        "the file at the URL is not this ISO (its checksum differs): upload this ISO again, or register the ISO that is there".into()
    } else if s.contains("unsupported") || s.contains("format") {
        "the file at the URL is not an ISO 9660 image: publish the .iso file cks-iso wrote".into()
    } else if s.is_empty() || s.contains("secondary storage") || s.contains("no storage") {
        "the zone may have no secondary storage, or its secondary storage VM is not running: check Infrastructure > Secondary Storage and System VMs".into()
    } else {
        "see the secondary storage VM's and the management server's logs for this ISO".into()
    }
}

/// Registers every target (in every zone asked for) and waits, as `opts` says.
pub async fn register(
    api: &Api,
    http: &reqwest::Client,
    targets: &[Target],
    opts: &Options,
) -> Result<Vec<Outcome>, RegistrationError> {
    // 1. The URLs, before CloudStack is told anything.
    check_urls(http, targets).await?;
    // 2. What the server can do.
    let has_arch = capabilities(api, targets).await?;
    let zones = zones(api, opts).await?;
    // 3. Look first: every decision before anything is sent.
    let existing = existing(api, targets).await?;
    let mut decided = Vec::new();
    for t in targets {
        for (zoneid, zonename) in &zones {
            let zone = (!zoneid.is_empty()).then_some(zoneid.as_str());
            let action = plan::decide(&t.iso, zone, &existing, opts.replace)?;
            decided.push((t, zoneid.clone(), zonename.clone(), action));
        }
    }
    // 4. Add.
    let mut outcomes = Vec::new();
    let mut to_retire: Vec<Vec<SupportedVersion>> = Vec::new();
    for (t, zoneid, zonename, action) in decided {
        let (version, status, retire) = match action {
            Action::Already { version, retire } => (*version, "already registered", retire),
            Action::Add { retire } => (
                add(api, t, &zoneid, has_arch, opts).await?,
                "registered",
                retire,
            ),
        };
        outcomes.push(Outcome {
            name: t.iso.name.clone(),
            arch: t.iso.cloudstack_arch().to_owned(),
            semanticversion: t.iso.semver.clone(),
            id: version.id.clone(),
            zone: zonename,
            status: status.to_owned(),
            isostate: version.isostate.clone(),
            retired: Vec::new(),
            sha256: t.iso.sha256.clone(),
        });
        to_retire.push(retire);
    }
    // 5. Wait.
    if opts.wait {
        wait_ready(api, &mut outcomes, opts).await?;
    }
    // 6. Retire what was replaced, once the new one is there.
    for (outcome, old) in outcomes.iter_mut().zip(to_retire) {
        for v in old {
            let what = retire_replaced(api, &v, opts).await?;
            tracing::info!("{}: the previous version {what}", outcome.name);
            outcome.retired.push(what);
        }
    }
    Ok(outcomes)
}

/// Checks every target's URL: its form, and that it serves the ISO, before CloudStack is told
/// anything.
async fn check_urls(http: &reqwest::Client, targets: &[Target]) -> Result<(), RegistrationError> {
    for t in targets {
        let iso = t.iso.path.display().to_string();
        let wrap = |source| RegistrationError::Url {
            iso: iso.clone(),
            source,
        };
        url::check_form(&t.url).map_err(wrap)?;
        url::check_served(http, &t.url, &iso, t.iso.size)
            .await
            .map_err(wrap)?;
        tracing::debug!("{} is served at {}", iso, crate::fetch::redact(&t.url));
    }
    Ok(())
}

/// Whether the server takes an architecture for a version (`arch`), refusing a server without
/// the Kubernetes service, or an arm64 ISO where it takes no architecture.
async fn capabilities(api: &Api, targets: &[Target]) -> Result<bool, RegistrationError> {
    let caps = api.capabilities().await?;
    if !caps.kubernetesserviceenabled {
        return Err(RegistrationError::CksDisabled {
            version: caps.cloudstackversion,
        });
    }
    let has_arch = caps.has_arch();
    if let Some(t) = targets
        .iter()
        .find(|t| t.iso.arch == crate::image::Arch::Arm64 && !has_arch)
    {
        return Err(RegistrationError::NoArch {
            iso: t.iso.path.display().to_string(),
            version: caps.cloudstackversion,
        });
    }
    Ok(has_arch)
}

/// The zones asked for as `(id, name)`, each found by ID or name; one unnamed zone when none is.
async fn zones(api: &Api, opts: &Options) -> Result<Vec<(String, String)>, RegistrationError> {
    Ok(if opts.zones.is_empty() {
        vec![(String::new(), String::new())]
    } else {
        let all = api.zones().await?;
        opts.zones
            .iter()
            .map(|given| {
                all.iter()
                    .find(|z| z.id == *given || z.name == *given)
                    .map(|z| (z.id.clone(), z.name.clone()))
                    .ok_or_else(|| RegistrationError::UnknownZone {
                        given: given.clone(),
                        have: all
                            .iter()
                            .map(|z| z.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
            })
            .collect::<Result<_, _>>()?
    })
}

/// The versions the server has under the targets' names, with the checksum of their ISO.
async fn existing(api: &Api, targets: &[Target]) -> Result<Vec<Existing>, RegistrationError> {
    let names: Vec<&str> = targets.iter().map(|t| t.iso.name.as_str()).collect();
    let mut existing = Vec::new();
    for v in api.versions().await? {
        if !names.contains(&v.name.as_str()) {
            continue;
        }
        let checksum = api
            .iso_zones(&v.isoid)
            .await?
            .into_iter()
            .map(|z| z.checksum)
            .find(|c| !c.is_empty())
            .unwrap_or_default();
        existing.push(Existing {
            version: v,
            checksum,
        });
    }
    Ok(existing)
}

/// Adds the target's version (in zone `zoneid`, or every zone when empty).
async fn add(
    api: &Api,
    t: &Target,
    zoneid: &str,
    has_arch: bool,
    opts: &Options,
) -> Result<SupportedVersion, RegistrationError> {
    let mut params = vec![
        ("semanticversion", t.iso.semver.clone()),
        ("name", t.iso.name.clone()),
        ("url", t.url.clone()),
        ("checksum", t.iso.checksum()),
        ("mincpunumber", opts.min_cpu.to_string()),
        ("minmemory", opts.min_memory.to_string()),
    ];
    if has_arch {
        params.push(("arch", t.iso.cloudstack_arch().to_owned()));
    }
    if !zoneid.is_empty() {
        params.push(("zoneid", zoneid.to_owned()));
    }
    let v = api.add(&params).await?;
    tracing::info!(
        "{}: registered as {} ({}), CloudStack downloads it from {}",
        t.iso.name,
        v.id,
        t.iso.cloudstack_arch(),
        crate::fetch::redact(&t.url)
    );
    Ok(v)
}

/// Polls every outcome's version until its ISO is Ready in every zone.
async fn wait_ready(
    api: &Api,
    outcomes: &mut [Outcome],
    opts: &Options,
) -> Result<(), RegistrationError> {
    let started = Instant::now();
    let mut shown: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let mut waiting = Vec::new();
        for o in outcomes.iter_mut().filter(|o| o.isostate != "Ready") {
            let Some(v) = api.version(&o.id).await? else {
                return Err(RegistrationError::NotReady {
                    name: o.name.clone(),
                    zone: o.zone.clone(),
                    status: format!("version {} is gone", o.id),
                });
            };
            let zones = api.iso_zones(&v.isoid).await?;
            let line = match zones.is_empty() {
                true => format!("ISO {}", v.isostate),
                false => super::api::zones_line(&v.isostate, &zones),
            };
            if shown.get(&o.id) != Some(&line) {
                tracing::info!("{} ({}): {line}", o.name, o.arch);
                shown.insert(o.id.clone(), line.clone());
            }
            let failed = zones.iter().find(|z| !z.isready && looks_failed(&z.status));
            if v.isostate.eq_ignore_ascii_case("Allocated") || failed.is_some() {
                let zone = failed.or_else(|| zones.iter().find(|z| !z.isready));
                return Err(RegistrationError::NotReady {
                    name: o.name.clone(),
                    zone: zone
                        .map(|z| z.zonename.clone())
                        .unwrap_or_else(|| o.zone.clone()),
                    status: zone
                        .map(|z| z.status.clone())
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| {
                            format!("the ISO went back to {} without a status", v.isostate)
                        }),
                });
            }
            if v.isostate == "Ready" && !zones.is_empty() && zones.iter().all(|z| z.isready) {
                check_checksum(o, &zones)?;
                o.isostate = "Ready".into();
            } else {
                waiting.push(format!("{}: {line}", o.name));
            }
        }
        if waiting.is_empty() {
            return Ok(());
        }
        if started.elapsed() >= opts.timeout {
            return Err(RegistrationError::Timeout {
                name: outcomes
                    .iter()
                    .filter(|o| o.isostate != "Ready")
                    .map(|o| o.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                waited: opts.timeout,
                last: waiting.join("; "),
            });
        }
        tokio::time::sleep(
            opts.poll
                .min(opts.timeout.saturating_sub(started.elapsed()))
                .max(Duration::from_millis(50)),
        )
        .await;
    }
}

/// After Ready: every zone's listed checksum must be the one sent (L9), in either form
/// CloudStack lists it ([`plan::same_checksum`]).
fn check_checksum(o: &Outcome, zones: &[super::api::IsoZone]) -> Result<(), RegistrationError> {
    match zones
        .iter()
        .find(|z| !plan::same_checksum(&z.checksum, &o.sha256))
    {
        None => Ok(()),
        Some(z) => Err(RegistrationError::ChecksumChanged {
            name: o.name.clone(),
            zone: z.zonename.clone(),
            reported: if z.checksum.is_empty() {
                "none".into()
            } else {
                crate::ui::printable(&z.checksum).into_owned()
            },
            sent: format!("{{SHA-256}}{}", o.sha256),
        }),
    }
}

/// Whether a zone's status text says the download failed (rather than how far it is).
fn looks_failed(status: &str) -> bool {
    let s = status.to_ascii_lowercase();
    ["failed", "error", "didn't match", "unsupported", "returned"]
        .iter()
        .any(|w| s.contains(w))
}

/// Retires a version `--replace` superseded; a delete CloudStack refuses (a cluster uses it)
/// falls back to disabling, so exactly one version of the name stays enabled.
async fn retire_replaced(
    api: &Api,
    v: &SupportedVersion,
    opts: &Options,
) -> Result<String, ApiError> {
    match opts.retire {
        Retire::Disable => {
            api.disable(&v.id).await?;
            Ok(format!("{} disabled", v.id))
        }
        Retire::Delete => match api.delete(&v.id, opts.poll, opts.timeout).await? {
            Deleted::Done => Ok(format!("{} deleted", v.id)),
            Deleted::Refused(why) => {
                tracing::warn!("cannot delete {}: {why}; disabling it instead", v.id);
                api.disable(&v.id).await?;
                Ok(format!("{} disabled (delete refused: {why})", v.id))
            }
        },
    }
}

/// What `versions retire` did with one version.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Retired {
    /// The version.
    pub version: SupportedVersion,
    /// `disabled`, `deleted`, `would disable`, `would delete`, or `kept: <why>`.
    pub result: String,
}

/// Retires `versions` (from [`super::retire::select`]); with `dry_run` only reads. A version a
/// cluster uses is kept and named: before a disable from `listKubernetesClusters`, on a delete
/// from CloudStack's own refusal (the async job's failure), neither fatal.
pub async fn retire(
    api: &Api,
    versions: &[SupportedVersion],
    how: Retire,
    dry_run: bool,
    poll: Duration,
    timeout: Duration,
) -> Result<Vec<Retired>, ApiError> {
    let clusters = if how == Retire::Disable || dry_run {
        api.clusters().await?
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    for v in versions {
        let users: Vec<&str> = clusters
            .iter()
            .filter(|c| c.kubernetesversionid == v.id)
            .map(|c| c.name.as_str())
            .collect();
        let result = if !users.is_empty() {
            format!("kept: in use by cluster {}", users.join(", "))
        } else if dry_run {
            match how {
                Retire::Disable => "would disable".into(),
                Retire::Delete => "would delete".into(),
            }
        } else {
            match how {
                Retire::Disable => {
                    api.disable(&v.id).await?;
                    "disabled".into()
                }
                Retire::Delete => match api.delete(&v.id, poll, timeout).await? {
                    Deleted::Done => "deleted".into(),
                    Deleted::Refused(why) => format!("kept: {why}"),
                },
            }
        };
        out.push(Retired {
            version: v.clone(),
            result,
        });
    }
    Ok(out)
}
