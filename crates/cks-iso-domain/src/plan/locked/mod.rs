//! The request of `build --locked`: the lock decides every input, and a flag may only repeat what
//! it says. A flag that contradicts the lock is a usage error rather than silently winning or
//! losing, since either would build something else than the user believes. Pure.

use std::path::PathBuf;

use super::{Addons, Flags, PlanError, Request, Source};
use crate::catalog::bare_version;
use crate::lock::{Lock, LockedRequest, ManifestEntry};
use cks_iso_oci::image::Arch;

/// Content options that `build` takes outside [`Flags`], each with where it came from.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    /// `--autoscaler-version` or `AUTOSCALER_VERSION`, with its origin.
    pub autoscaler: Option<(String, &'static str)>,
    /// `--ccm-version` or `CCM_VERSION`, with its origin.
    pub ccm: Option<(String, &'static str)>,
    /// `--csi-version`.
    pub csi: Option<String>,
    /// `--volume-id`.
    pub volume_id: Option<String>,
    /// `--image`, `--images-file`, `--manifest` (and the configuration's `extras`): may only
    /// repeat the lock's add-ons, and must give its local manifests again.
    pub addons: Addons,
}

/// What a locked build builds.
#[derive(Debug, Clone)]
pub struct Locked {
    /// The request, from the lock (output and name may come from the flags).
    pub request: Request,
    /// The lock, holding only the architectures to build.
    pub lock: Lock,
    /// The volume ID.
    pub volume_id: String,
}

impl Locked {
    /// The versions the lock pins, for Kubernetes `kube`, as a request would give them (what
    /// [`super::settle`] reads).
    pub fn partial(&self, kube: crate::release::KubeVersion) -> super::Partial {
        let lock = &self.lock;
        let r = &lock.request;
        super::Partial {
            arch: self.request.arches[0],
            ccm: r.ccm.clone(),
            pin: Some(lock.autoscaler.version.clone()),
            pin_origin: "the lock's autoscaler",
            cni: r.cni.clone(),
            crictl: r.crictl.clone(),
            etcd: r.etcd.clone(),
            etcd_own_name: lock.etcd_own_name(),
            csi: r.csi.clone(),
            kube,
        }
    }
}

/// Builds the request of a locked build from `lock` (read from `origin`) and what was given.
pub fn locked(
    lock: &Lock,
    origin: &str,
    positional: &[String],
    flags: Flags,
    extra: Extra,
) -> Result<Locked, PlanError> {
    if !positional.is_empty() {
        return Err(PlanError::LockedPositional);
    }
    if let Some(name) = &flags.name {
        super::name::check(name, "--name")?;
    }
    let r = &lock.request;
    same_versions(r, &flags, &extra)?;
    let volume_id = match extra.volume_id {
        Some(given) => {
            same("--volume-id", Some(given.clone()), &r.volume_id)?;
            given
        }
        None => r.volume_id.clone(),
    };
    let (arches, lock) = locked_arches(lock, origin, &flags.arches)?;
    let (network, dashboard, headlamp) = locked_manifests(&lock, &flags)?;
    let addons = locked_addons(&lock, origin, extra.addons)?;
    Ok(Locked {
        request: Request {
            kubernetes: r.kubernetes.clone(),
            kubernetes_label: r.kubernetes_label.clone(),
            arches,
            cni: Some(r.cni.clone()),
            crictl: Some(r.crictl.clone()),
            etcd: r.etcd.clone(),
            network,
            dashboard,
            headlamp,
            // A lock that names no image was written before registry.k8s.io served any, or for
            // a release it does not serve: ghcr.io's, as then.
            headlamp_image: r.headlamp.as_deref().map(|v| {
                r.headlamp_image
                    .clone()
                    .unwrap_or_else(|| super::headlamp_ghcr_image(v))
            }),
            headlamp_version: r.headlamp.clone(),
            output: flags.output.unwrap_or_else(|| PathBuf::from(".")),
            name: flags.name.unwrap_or_else(|| r.name.clone()),
            cloudstack: r
                .cloudstack
                .as_deref()
                .and_then(|c| crate::cloudstack::CloudStack::parse(c).ok()),
            addons,
        },
        lock,
        volume_id,
    })
}

/// The versions given may only repeat the lock's: Kubernetes, CNI, crictl, etcd, the autoscaler,
/// the CCM and the CSI driver.
fn same_versions(r: &LockedRequest, flags: &Flags, extra: &Extra) -> Result<(), PlanError> {
    // The label the lock was resolved from repeats it; it is never read again.
    let kubernetes = flags.kubernetes.as_deref().filter(|k| {
        crate::catalog::label::label(k)
            .is_none_or(|l| Some(l.as_str()) != r.kubernetes_label.as_deref())
    });
    same("--kubernetes", kubernetes.map(bare_version), &r.kubernetes)?;
    same("--cni", flags.cni.as_deref().map(bare_version), &r.cni)?;
    same(
        "--crictl",
        flags.crictl.as_deref().map(bare_version),
        &r.crictl,
    )?;
    same_opt(
        "--etcd",
        flags.etcd.as_deref().map(bare_version),
        r.etcd.as_deref(),
    )?;
    if let Some((value, from)) = &extra.autoscaler {
        same(from, Some(bare_version(value)), &r.autoscaler)?;
    }
    if let Some((value, from)) = &extra.ccm {
        same(from, Some(format!("v{}", bare_version(value))), &r.ccm)?;
    }
    if let Some(csi) = &extra.csi {
        let csi = match csi.trim() {
            "none" => "none".to_owned(),
            other => format!("v{}", bare_version(other)),
        };
        same(
            "--csi-version",
            Some(csi),
            r.csi.as_deref().unwrap_or("none"),
        )?;
    }
    Ok(())
}

/// The architectures to build (`--arch`, else every one the lock holds) and the lock narrowed
/// to them.
fn locked_arches(
    lock: &Lock,
    origin: &str,
    given: &[String],
) -> Result<(Vec<Arch>, Lock), PlanError> {
    let mut arches = Vec::new();
    for text in given {
        let arch = Arch::parse(text).map_err(|_| PlanError::Arch {
            given: text.clone(),
        })?;
        if !arches.contains(&arch) {
            arches.push(arch);
        }
    }
    let names: Vec<&str> = arches.iter().map(|a| a.k8s()).collect();
    let lock = match names.is_empty() {
        true => lock.clone(),
        false => lock.only(&names, origin).map_err(PlanError::Lock)?,
    };
    let arches = match arches.is_empty() {
        true => lock
            .arches
            .keys()
            .map(|k| {
                // Not --arch: the lock itself names it.
                Arch::parse(k).map_err(|_| {
                    PlanError::Lock(crate::lock::LockError::Invalid {
                        origin: origin.to_owned(),
                        reason: format!("it locks {k:?}, not an architecture cks-iso builds for"),
                    })
                })
            })
            .collect::<Result<_, _>>()?,
        false => arches,
    };
    Ok((arches, lock))
}

/// The lock's network, dashboard and Headlamp manifests, each from its URL again or the local
/// file given again; `--headlamp-version` may only repeat the lock's.
fn locked_manifests(
    lock: &Lock,
    flags: &Flags,
) -> Result<(Source, Option<Source>, Option<Source>), PlanError> {
    let r = &lock.request;
    let network = manifest(lock, "network.yaml", "--network", flags.network.clone())?.ok_or(
        PlanError::Missing {
            what: "network.yaml in the lock",
        },
    )?;
    let dashboard = manifest(
        lock,
        "dashboard.yaml",
        "--dashboard",
        flags.dashboard.clone(),
    )?;
    if dashboard.is_none() && r.headlamp.is_none() {
        return Err(PlanError::Missing {
            what: "dashboard.yaml in the lock",
        });
    }
    same_opt(
        "--headlamp-version",
        flags
            .headlamp_version
            .clone()
            .map(|v| super::headlamp_version(&v).unwrap_or(v)),
        r.headlamp.as_deref(),
    )?;
    let headlamp = manifest(lock, "headlamp.yaml", "--headlamp", flags.headlamp.clone())?;
    Ok((network, dashboard, headlamp))
}

/// The lock's add-ons: its extra manifests (each from its URL again, or the local file `given`
/// names again) and the images it records as asked for; `given` may only repeat them.
fn locked_addons(lock: &Lock, origin: &str, given: Addons) -> Result<Addons, PlanError> {
    let mut images: Vec<String> = lock
        .arches
        .values()
        .flat_map(|a| &a.images)
        .filter(|i| i.extra.as_deref() == Some(crate::lock::EXTRA_ASKED))
        .map(|i| i.reference.clone())
        .collect();
    images.sort();
    images.dedup();
    if let Some(other) = given.images.iter().find(|i| !images.contains(i)) {
        return Err(PlanError::Contradicts {
            flag: "--image",
            given: other.clone(),
            locked: match images.is_empty() {
                true => "no add-on image".to_owned(),
                false => images.join(" "),
            },
        });
    }
    let extras: Vec<&ManifestEntry> = lock
        .manifests
        .iter()
        .filter(|m| m.role == crate::lock::EXTRA_ROLE)
        .collect();
    if let Some((name, _)) = (given.manifests.iter()).find(|(n, _)| lock.manifest(n).is_none()) {
        return Err(PlanError::Contradicts {
            flag: "--manifest",
            given: name.clone(),
            locked: format!("no {name}"),
        });
    }
    let mut manifests = Vec::new();
    for entry in extras {
        // A lock from elsewhere names the file it writes: the same rules as a name given.
        super::addons::check_name(&entry.path, &format!("{origin}: {}", entry.path))?;
        let again = (given.manifests.iter())
            .find(|(n, _)| *n == entry.path)
            .map(|(_, source)| match source {
                Source::Url(url) => url.clone(),
                Source::File(path) => path.display().to_string(),
            });
        if let Some(source) = manifest(lock, &entry.path, "--manifest", again)? {
            manifests.push((entry.path.clone(), source));
        }
    }
    Ok(Addons { images, manifests })
}

fn same(flag: &'static str, given: Option<String>, locked: &str) -> Result<(), PlanError> {
    match given {
        Some(given) if given != locked => Err(PlanError::Contradicts {
            flag,
            given,
            locked: locked.to_owned(),
        }),
        _ => Ok(()),
    }
}

fn same_opt(
    flag: &'static str,
    given: Option<String>,
    in_lock: Option<&str>,
) -> Result<(), PlanError> {
    same(flag, given, in_lock.unwrap_or("none"))
}

/// Where a locked manifest comes from: its URL again, or the local file given with `flag`.
fn manifest(
    lock: &Lock,
    path: &str,
    flag: &'static str,
    given: Option<String>,
) -> Result<Option<Source>, PlanError> {
    let entry: Option<&ManifestEntry> = lock.manifest(path);
    let given = given.map(|g| Source::parse(&g));
    match (entry, given) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(PlanError::Contradicts {
            flag,
            given: "a manifest".into(),
            locked: format!("no {path}"),
        }),
        (Some(entry), None) if entry.is_local() => Err(PlanError::LocalManifest {
            flag,
            path: path.to_owned(),
            name: entry.source.trim_start_matches("file:").to_owned(),
        }),
        (Some(entry), None) => Ok(Some(Source::Url(entry.source.clone()))),
        (Some(entry), Some(Source::File(file))) if entry.is_local() => Ok(Some(Source::File(file))),
        // The lock keeps no password: the URL given again with one is the same URL.
        (Some(entry), Some(Source::Url(url)))
            if crate::recorded::strip_userinfo(&url) == entry.source =>
        {
            Ok(Some(Source::Url(url)))
        }
        (Some(entry), Some(other)) => Err(PlanError::Contradicts {
            flag,
            given: match other {
                Source::Url(url) => url,
                Source::File(file) => file.display().to_string(),
            },
            locked: entry.source.clone(),
        }),
    }
}

#[cfg(test)]
mod tests;
