//! The request from the command line: upstream's positional form (`build.sh`'s nine arguments)
//! merged with the flags, each setting given once, checked before anything is fetched. Its own
//! file because the positional form's rules (argument 6 read as a dashboard or a Headlamp
//! version, the 4.22 documentation's mistakes) are a world of their own.

use std::path::PathBuf;

use super::{Addons, PlanError, Request, Source, headlamp_image, headlamp_url, headlamp_version};
use cks_iso_oci::image::Arch;

/// The flags of `build` that the positional form can also set.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--kubernetes`.
    pub kubernetes: Option<String>,
    /// `--cni`.
    pub cni: Option<String>,
    /// `--crictl`.
    pub crictl: Option<String>,
    /// `--arch`, repeatable.
    pub arches: Vec<String>,
    /// `--etcd`.
    pub etcd: Option<String>,
    /// `--network`.
    pub network: Option<String>,
    /// `--dashboard`.
    pub dashboard: Option<String>,
    /// `--headlamp`.
    pub headlamp: Option<String>,
    /// `--headlamp-version`.
    pub headlamp_version: Option<String>,
    /// `--output`.
    pub output: Option<PathBuf>,
    /// `--name`.
    pub name: Option<String>,
}

fn merge<T>(
    what: &'static str,
    positional: Option<T>,
    flag: Option<T>,
) -> Result<Option<T>, PlanError> {
    match (positional, flag) {
        (Some(_), Some(_)) => Err(PlanError::Twice { what }),
        (p, f) => Ok(p.or(f)),
    }
}

/// Combines upstream's positional form with the flags.
///
/// Argument 6 is CloudStack 4.23's Headlamp version when it reads as one (`0.40.1`, `v0.40.1`:
/// digits and dots) and is no existing file; a URL or any other text is 4.22's dashboard
/// manifest. A version that also names an existing file is ambiguous: a usage error.
pub fn request(positional: &[String], flags: Flags) -> Result<Request, PlanError> {
    request_in(positional, flags, &|p| std::path::Path::new(p).exists())
}

/// [`request`], with `exists` telling whether a local file is there.
pub fn request_in(
    positional: &[String],
    flags: Flags,
    exists: &dyn Fn(&str) -> bool,
) -> Result<Request, PlanError> {
    if !positional.is_empty() && !(7..=9).contains(&positional.len()) {
        return Err(PlanError::Positional {
            count: positional.len(),
        });
    }
    let at = |i: usize| positional.get(i).filter(|s| !s.is_empty()).cloned();
    let (slot_dashboard, slot_headlamp) = dashboard_slot(at(5), exists)?;
    let flag_version = match flags.headlamp_version {
        Some(given) => Some(headlamp_version(&given).ok_or(PlanError::HeadlampVersion { given })?),
        None => None,
    };
    let headlamp_version = merge(
        "HEADLAMP_VERSION / --headlamp-version",
        slot_headlamp,
        flag_version,
    )?;
    if headlamp_version.is_some() && flags.headlamp.is_some() {
        return Err(PlanError::Twice {
            what: "headlamp.yaml (--headlamp and a Headlamp version)",
        });
    }
    let output = merge(
        "OUTPUT_PATH / --output",
        at(0).map(PathBuf::from),
        flags.output,
    )?;
    let kubernetes = merge("KUBERNETES_VERSION / --kubernetes", at(1), flags.kubernetes)?;
    let cni = merge("CNI_VERSION / --cni", at(2), flags.cni)?;
    let crictl = merge("CRICTL_VERSION / --crictl", at(3), flags.crictl)?;
    let network = merge("NETWORK_YAML / --network", at(4), flags.network)?;
    let dashboard = merge(
        "DASHBOARD_YAML / --dashboard",
        slot_dashboard,
        flags.dashboard,
    )?;
    let (kubernetes, network) = required(kubernetes, network, &dashboard, &headlamp_version)?;
    let name = name_of(at(6), at(7).as_deref(), flags.name)?;
    let positional_arch = at(7).map(|a| vec![a]);
    let arch_flags = (!flags.arches.is_empty()).then_some(flags.arches);
    let arch_texts = merge("ARCH / --arch", positional_arch, arch_flags)?
        .unwrap_or_else(|| vec!["amd64".into()]);
    let etcd = merge("ETCD_VERSION / --etcd", at(8), flags.etcd)?;
    let arches = arches_of(arch_texts)?;
    let bare = kubernetes.trim().trim_start_matches('v').to_owned();
    let headlamp = match &headlamp_version {
        Some(version) => Some(Source::Url(headlamp_url(version))),
        None => flags.headlamp.as_deref().map(Source::parse),
    };
    Ok(Request {
        name: name.unwrap_or_else(|| format!("setup-v{bare}")),
        kubernetes,
        kubernetes_label: None,
        arches,
        cni,
        crictl,
        etcd,
        network: Source::parse(&network),
        dashboard: dashboard.as_deref().map(Source::parse),
        headlamp,
        headlamp_image: headlamp_version.as_deref().map(headlamp_image),
        headlamp_version,
        output: output.unwrap_or_else(|| PathBuf::from(".")),
        cloudstack: None,
        addons: Addons::default(),
    })
}

/// Argument 6: a dashboard manifest (a URL or other text) or a Headlamp version, as
/// `(dashboard, headlamp version)`.
fn dashboard_slot(
    given: Option<String>,
    exists: &dyn Fn(&str) -> bool,
) -> Result<(Option<String>, Option<String>), PlanError> {
    Ok(match given {
        Some(given) if given.contains("://") => (Some(given), None),
        Some(given) => match headlamp_version(&given) {
            Some(version) if exists(&given) => {
                return Err(PlanError::Ambiguous { given, version });
            }
            Some(version) => (None, Some(version)),
            None => (Some(given), None),
        },
        None => (None, None),
    })
}

/// The Kubernetes release and network manifest, which every request needs, and a dashboard or
/// Headlamp version: every missing one named in one error, not one per run.
fn required(
    kubernetes: Option<String>,
    network: Option<String>,
    dashboard: &Option<String>,
    headlamp_version: &Option<String>,
) -> Result<(String, String), PlanError> {
    let missing: Vec<&'static str> = [
        ("--kubernetes", kubernetes.is_none()),
        ("--network", network.is_none()),
        (
            "--dashboard (or --headlamp-version)",
            dashboard.is_none() && headlamp_version.is_none(),
        ),
    ]
    .into_iter()
    .filter_map(|(what, missing)| missing.then_some(what))
    .collect();
    let (Some(kubernetes), Some(network)) = (kubernetes, network) else {
        return Err(PlanError::missing(missing));
    };
    if !missing.is_empty() {
        return Err(PlanError::missing(missing));
    }
    Ok((kubernetes, network))
}

/// The ISO's name, from argument 7 (`slot`) or `--name`, refusing the mistakes of the 4.22
/// documentation's arm64 and etcd examples (an architecture as the name, a version as the
/// architecture, `arch_slot`).
fn name_of(
    slot: Option<String>,
    arch_slot: Option<&str>,
    flag: Option<String>,
) -> Result<Option<String>, PlanError> {
    let name_field = if slot.is_some() {
        "BUILD_NAME"
    } else {
        "--name"
    };
    if let Some(given) = slot.as_ref().filter(|n| Arch::parse(n).is_ok()) {
        return Err(PlanError::ArchAsName {
            given: given.clone(),
        });
    }
    if let Some(given) =
        arch_slot.filter(|a| Arch::parse(a).is_err() && headlamp_version(a).is_some())
    {
        return Err(PlanError::VersionAsArch {
            given: given.to_owned(),
        });
    }
    let name = merge("BUILD_NAME / --name", slot, flag)?;
    if let Some(name) = &name {
        super::name::check(name, name_field)?;
    }
    Ok(name)
}

/// The architectures named, each once, in the order given.
fn arches_of(texts: Vec<String>) -> Result<Vec<Arch>, PlanError> {
    let mut arches = Vec::new();
    for text in texts {
        let arch = Arch::parse(&text).map_err(|_| PlanError::Arch { given: text })?;
        if !arches.contains(&arch) {
            arches.push(arch);
        }
    }
    Ok(arches)
}
