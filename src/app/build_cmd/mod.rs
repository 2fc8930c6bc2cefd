//! `cks-iso build`: the whole CKS binaries ISO, one per `--arch`, in two phases.
//!
//! 1. Network (async): resolve versions, take every download verified through the mirrors — the
//!    arch-independent ones (manifests) once for all ISOs — edit the manifests, and pull every
//!    image for every architecture into the blob cache. A failure here (a 404, an image missing
//!    for arm64) stops the run before any ISO exists.
//!    Then every registry.k8s.io image's Sigstore signature is fetched and verified
//!    ([`signatures`]); a bad one (or, with `enforce`, a missing one) also stops the run here.
//! 2. Local (sync): per architecture, write the image archives, `signatures/`, `versions.txt`,
//!    the SBOMs and the ISO, with `<iso>.sha256` and the SBOMs `<iso>.cdx.json`,
//!    `<iso>.spdx.json` beside it. If one ISO fails, the ISOs this run already wrote are removed.
//!
//! Everything happens in a private work directory that is removed on success, error and Ctrl-C.

mod binary_signatures;
mod fetch;
mod record;
mod register;
mod sboms;
mod signatures;
mod write;

use std::path::PathBuf;

use serde_json::json;

use super::{AppError, locks, net};
use crate::atomic::Pending;
use crate::cli::BuildArgs;
use crate::cloudstack::CloudStack;
use crate::env;
use crate::iso::VolumeId;
use crate::lock::Lock;
use crate::plan::{self, Flags, PlanError};
use crate::resolve::version::check_supported;
use crate::resolve::{Extras, KubeVersion};
use crate::resolve::{Given, LockedInputs, Partial};
use crate::trust;
use crate::ui::Ui;

impl From<PlanError> for AppError {
    fn from(err: PlanError) -> Self {
        let hint = err.hint();
        Self::usage(err, hint)
    }
}

/// One finished ISO, for the summary.
#[derive(Debug, Clone)]
pub(crate) struct Built {
    pub(crate) path: PathBuf,
    pub(crate) size: u64,
    pub(crate) sha256: String,
    pub(crate) arch: &'static str,
    pub(crate) images: usize,
    pub(crate) files: usize,
}

/// What the arguments (and a lock) decided before anything is fetched.
struct Setup {
    request: plan::Request,
    partial: Partial,
    volume_id: VolumeId,
    epoch: i64,
    lock: Option<Lock>,
}

/// Builds the ISOs and prints a summary (or JSON) on stdout.
pub fn run(mut args: BuildArgs, ui: &Ui) -> Result<(), AppError> {
    let labelled = match &args.locked {
        Some(_) => None,
        None => kubernetes_label(&mut args)?,
    };
    let setup = match &args.locked {
        Some(path) => locked_setup(&args, path)?,
        None => setup(&args)?,
    };
    let Setup {
        mut request,
        mut partial,
        volume_id,
        epoch,
        lock,
    } = setup;
    if labelled.is_some() {
        request.kubernetes_label = labelled;
    }
    let publish = register::publish_base(args.publish_url.as_deref())?;
    let mut settings = net::settings(args.net)?;
    settings.http.offline = args.offline;
    net::registry_mirrors(&settings)?;
    let given = match &args.cloudstack {
        Some(text) => Some(CloudStack::parse(text).map_err(|e| {
            AppError::usage(
                e,
                Some("or leave --cloudstack out: the ISO then suits 4.22 and 4.23".into()),
            )
        })?),
        None => settings.cloudstack,
    };
    match &lock {
        // The lock decides; a release given may only repeat it.
        Some(_) => {
            if let Some(given) = given.filter(|g| Some(*g) != request.cloudstack) {
                return Err(PlanError::Contradicts {
                    flag: "--cloudstack",
                    given: given.to_string(),
                    locked: request
                        .cloudstack
                        .map_or("no release".into(), |c| c.to_string()),
                }
                .into());
            }
        }
        None => {
            let csi_given = args
                .versions
                .csi_version
                .as_deref()
                .is_some_and(|c| c.trim() != "none");
            let profile = plan::profile(&request, given, csi_given)?;
            for warning in &profile.warnings {
                tracing::warn!("{warning}");
            }
            if profile.csi_off {
                tracing::info!(
                    "CloudStack {} does not copy the CSI manifests: leaving them out (--csi-version \
                     bundles them anyway)",
                    profile
                        .cloudstack
                        .map(|c| c.to_string())
                        .unwrap_or_default()
                );
                partial.csi = None;
            }
            request.cloudstack = profile.cloudstack;
        }
    }
    if let Some(c) = request.cloudstack.filter(|c| !c.is_known()) {
        tracing::warn!(
            "CloudStack {c} is newer than any release cks-iso knows: the ISO follows {}'s rules",
            CloudStack::newest_known()
        );
    }
    if lock.is_none() {
        partial.etcd_own_name = plan::etcd_own_name(request.cloudstack);
    }
    if let Some(etcd) = partial
        .etcd
        .as_deref()
        .filter(|_| request.arches.contains(&crate::image::Arch::Arm64))
    {
        match partial.etcd_own_name {
            false => tracing::info!(
                "linux/arm64: etcd nodes extract only {}, whatever their architecture: \
                 etcd-v{etcd}-linux-arm64.tar.gz goes under that name",
                crate::contract::ETCD_TARBALL
            ),
            // CloudStack 4.20 (its warning says etcd goes unused), or a lock that recorded it so.
            true if request.cloudstack.is_none_or(|c| c.reads_etcd()) => tracing::warn!(
                "the lock puts the arm64 etcd under etcd/etcd-linux-arm64.tar.gz, which etcd \
                 nodes do not read (they extract only {}); build without --locked to fix it",
                crate::contract::ETCD_TARBALL
            ),
            true => {}
        }
    }
    let flags = trust::checker::Flags {
        mode: args.signing.signatures.as_deref(),
        trusted_root: args.signing.trust.trusted_root.as_deref(),
        policy: args.signing.trust.signature_policy.as_deref(),
        rekor_url: args.rekor_url.as_deref(),
    };
    let checker = trust::checker::select(flags, &settings)?;
    let cache = net::writable_cache(args.cache_dir)?;
    net::writable(&request.output)
        .map_err(|e| AppError::output_dir(&request.output, "--output", e))?;
    // What killed runs (SIGKILL, a crash) left: their work dirs and half-written ISOs.
    for dir in [std::env::temp_dir(), request.output.clone()] {
        for path in crate::atomic::sweep_stale(&dir) {
            tracing::info!("removed {}, left by a run that was killed", path.display());
        }
    }
    let work = work_dir()?;
    let runtime = net::transfer_runtime()?;
    let fetched = runtime.block_on(fetch::all(
        &request,
        partial,
        &settings,
        cache,
        lock.as_ref(),
        checker.as_ref(),
        work.path(),
        ui,
    ))?;
    let lock = record::lock(&request, &fetched, volume_id.as_str(), epoch);
    let built = write::all(&request, &fetched, &lock, &volume_id, epoch, ui)?;
    if let Some(path) = &args.lock_file
        && let Err(e) = record::write(path, &lock)
    {
        write::remove(&built);
        return Err(e);
    }
    drop(work);
    let kubernetes = fetched.resolution.kubernetes.to_string();
    let registrations: Vec<register::Registration> = built
        .iter()
        .map(|b| register::Registration::of(b, &kubernetes, publish.as_deref()))
        .collect();
    let mut versions = fetched.versions_line();
    if let Some(label) = &request.kubernetes_label {
        versions = format!("{versions} (kubernetes from {label})");
    }
    let fields =
        super::resolve::versions_json(&fetched.resolution, request.kubernetes_label.as_deref());
    summary(&built, &registrations, (&versions, fields), args.json);
    Ok(())
}

/// A version label given for Kubernetes (`--kubernetes stable-1.33`, or the positional form's
/// argument 2) is read now and replaced by the release it names, so that the rest of the build,
/// the default ISO name included, is that release's; returns the label.
fn kubernetes_label(args: &mut BuildArgs) -> Result<Option<String>, AppError> {
    let positional = (7..=9).contains(&args.positional.len());
    let text = match (&args.kubernetes, positional) {
        (Some(k), _) => k.clone(),
        (None, true) => args.positional[1].clone(),
        (None, false) => return Ok(None),
    };
    if crate::upstream::label::label(&text).is_none() {
        return Ok(None);
    }
    let mut settings = net::settings(args.net.clone())?;
    settings.http.offline = args.offline;
    let cache = net::writable_cache(args.cache_dir.clone())?;
    let Some((label, version)) = super::resolve::release_of_label(&text, &settings, Some(&cache))?
    else {
        return Ok(None);
    };
    match &mut args.kubernetes {
        Some(k) => *k = version,
        None => args.positional[1] = version,
    }
    Ok(Some(label))
}

/// The setup of an ordinary build: flags, positional arguments and environment.
fn setup(args: &BuildArgs) -> Result<Setup, AppError> {
    let request = plan::request(&args.positional, flags(args))?;
    let kube: KubeVersion = request.kubernetes.parse()?;
    check_supported(&kube)?;
    let volume_id = VolumeId::parse(
        args.volume_id
            .as_deref()
            .unwrap_or(crate::iso::DEFAULT_VOLUME_ID),
    )?;
    let epoch = super::iso::epoch(args.source_date_epoch)?;
    let partial = Partial::new(
        kube,
        request.arches[0],
        // The positional form may give these three instead of the flags.
        Given {
            cni: request.cni.clone(),
            crictl: request.crictl.clone(),
            etcd: request.etcd.clone(),
            ..super::resolve::given(&args.versions)
        },
    )?;
    Ok(Setup {
        request,
        partial,
        volume_id,
        epoch,
        lock: None,
    })
}

/// The setup of `--locked`: everything from the lock; flags may only repeat it.
fn locked_setup(args: &BuildArgs, path: &std::path::Path) -> Result<Setup, AppError> {
    let (lock, origin) = locks::read(path)?;
    let v = &args.versions;
    // Where a pin came from, for the message when it contradicts the lock.
    let from = |value: &Option<String>, id, flag: &'static str, var: &env::Var| {
        let origin = if v.from_env(id) { var.name } else { flag };
        value.clone().map(|value| (value, origin))
    };
    let extra = plan::Extra {
        autoscaler: from(
            &v.autoscaler_version,
            "autoscaler_version",
            "--autoscaler-version",
            &env::AUTOSCALER_VERSION,
        ),
        ccm: from(
            &v.ccm_version,
            "ccm_version",
            "--ccm-version",
            &env::CCM_VERSION,
        ),
        csi: v.csi_version.clone(),
        volume_id: args.volume_id.clone(),
    };
    let locked = plan::locked(&lock, &origin, &args.positional, flags(args), extra)?;
    let kube: KubeVersion = locked.request.kubernetes.parse()?;
    check_supported(&kube)?;
    let volume_id = VolumeId::parse(&locked.volume_id)?;
    let epoch = match args.source_date_epoch {
        Some(epoch) => epoch,
        None => env::source_date_epoch()?.unwrap_or(lock.epoch),
    };
    let lock = locked.lock;
    let r = &lock.request;
    let partial = Partial {
        arch: locked.request.arches[0],
        ccm: r.ccm.clone(),
        pin: Some(lock.autoscaler.version.clone()),
        pin_origin: "the lock's autoscaler",
        cni: r.cni.clone(),
        crictl: r.crictl.clone(),
        etcd: r.etcd.clone(),
        // Locks written before arm64 etcd went under the name etcd nodes read rebuild as they
        // were.
        etcd_own_name: lock
            .arches
            .values()
            .flat_map(|a| &a.files)
            .any(|f| f.path == crate::contract::etcd_tarball("arm64", true)),
        csi: r.csi.clone(),
        kube,
        locked: Some(LockedInputs {
            extras: Extras {
                pause: lock.kubeadm.pause.clone(),
                etcd: lock.kubeadm.etcd.clone(),
                coredns: lock.kubeadm.coredns.clone(),
            },
            extras_source: lock.kubeadm.source.clone(),
            commit: lock.autoscaler.commit.clone(),
            pinned: lock.autoscaler.pinned,
        }),
    };
    tracing::info!("building what {origin} locks ({})", lock.arch_list());
    Ok(Setup {
        request: locked.request,
        partial,
        volume_id,
        epoch,
        lock: Some(lock),
    })
}

fn flags(args: &BuildArgs) -> Flags {
    Flags {
        kubernetes: args.kubernetes.clone(),
        cni: args.versions.cni.clone(),
        crictl: args.versions.crictl.clone(),
        arches: args.arches.clone(),
        etcd: args.versions.etcd.clone(),
        network: args.network.clone(),
        dashboard: args.dashboard.clone(),
        headlamp: args.headlamp.clone(),
        headlamp_version: args.headlamp_version.clone(),
        output: args.output.clone(),
        name: args.name.clone(),
    }
}

/// A fresh private directory, removed on drop and on Ctrl-C.
fn work_dir() -> Result<Pending, AppError> {
    let dir = tempfile::Builder::new()
        .prefix(&crate::atomic::work_dir_prefix("build"))
        .tempdir()
        .map_err(|e| {
            AppError::failure(
                anyhow::Error::new(e).context("cannot create a work directory"),
                Some("set TMPDIR to a writable directory with room for the images".into()),
            )
        })?;
    Ok(Pending::track(dir.keep()))
}

/// The version of `build --json`'s document (its `format` field).
pub const FORMAT: u32 = 1;

/// stdout's summary; `versions` is the one-line text and the same as fields (`--json`).
fn summary(
    built: &[Built],
    registrations: &[register::Registration],
    versions: (&str, serde_json::Value),
    json: bool,
) {
    let (versions, fields) = versions;
    if json {
        let isos: Vec<_> = built
            .iter()
            .zip(registrations)
            .map(|(b, r)| {
                json!({
                    "iso": b.path, "arch": b.arch, "size": b.size, "sha256": b.sha256,
                    "images": b.images, "files": b.files, "registration": r.json(),
                })
            })
            .collect();
        let value = json!({
            "format": FORMAT, "isos": isos, "versions": fields, "summary": versions,
        });
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&value).expect("plain JSON")
        );
        return;
    }
    for b in built {
        crate::outln!(
            "{}  {} ({}, {} images, {} files, sha256 {})",
            b.path.display(),
            indicatif::HumanBytes(b.size),
            b.arch,
            b.images,
            b.files,
            &b.sha256[..16]
        );
    }
    crate::outln!("{versions}");
    crate::outln!("register each ISO with CloudStack (addKubernetesSupportedVersion):");
    for r in registrations {
        crate::outln!("  {}", r.cmk());
    }
}
