//! `cks-iso build`: the whole CKS binaries ISO, one per `--arch`. The arguments become a request,
//! which the library resolves into a lock ([`crate::realize::resolve_lock`]) — or, with
//! `--locked`, they name the lock —; the library realizes the lock ([`crate::realize`]: fetch and
//! verify exactly what it names, the network part, where any failure stops the run before an ISO
//! exists) and writes the ISOs ([`crate::author`]); this module then prints the summary and the
//! registration lines.
//!
//! Everything happens in a private work directory that is removed on success, error and Ctrl-C.

use serde_json::json;

use super::{AppError, net};
use crate::atomic::Pending;
use crate::author::{self, BuiltIso};
use crate::cli::BuildArgs;
use crate::cloudstack::CloudStack;
use crate::env;
use crate::lock::Lock;
use crate::plan::{self, Flags};
use crate::realize;
use crate::registration::line::{Registration, publish_base};
use crate::release::version::check_supported;
use crate::resolve::{Given, KubeVersion, Partial};
use crate::trust;
use crate::ui::Ui;
use cks_iso_iso9660::VolumeId;

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
    let (setup, labelled) = match args.locked.clone() {
        Some(path) => (lock_setup(&args, &path)?, None),
        None => {
            let labelled = kubernetes_label(&mut args)?;
            (setup(&args)?, labelled)
        }
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
    let publish = publish_base(args.publish_url.as_deref())?;
    let mut settings = net::settings(args.net)?;
    settings.http.offline = args.offline;
    net::registry_mirrors(&settings)?;
    let given = (
        args.cloudstack.as_deref(),
        args.versions.csi_version.as_deref(),
    );
    settle(
        given,
        &settings,
        (&mut request, &mut partial),
        lock.is_some(),
    )?;
    let checker = checker(&args.signing, args.rekor_url.as_deref(), &settings)?;
    let (cache, work) = places(args.cache_dir, &request.output)?;
    if let (Some(lock), Some(path), false) = (&lock, &args.locked, args.from_iso.is_empty()) {
        super::cache::from_iso(&cache, lock, path, &args.from_iso, args.offline)?;
    }
    let runtime = net::transfer_runtime()?;
    let registry = net::registry(&settings, cache)?;
    let inputs = realize::LockInputs {
        request: &request,
        partial,
        volume_id: volume_id.as_str(),
        epoch,
        settings: &settings,
        registry: &registry,
        work: work.path(),
    };
    let (lock, tags_from_cache) = to_realize(lock, inputs, &runtime)?;
    let inputs = realize::Inputs {
        request: &request,
        lock: &lock,
        tags_from_cache,
        settings: &settings,
        registry,
        checker: checker.as_ref(),
        work: work.path(),
    };
    let realized = runtime.block_on(realize::realize(inputs, ui))?;
    let lock = realized.lock(&lock, &request, volume_id.as_str(), epoch);
    let built = author::all(&request, &realized, &lock, &volume_id, epoch, ui)?;
    if let Some(path) = &args.lock_file
        && let Err(e) = author::write_lock(path, &lock)
    {
        author::remove(&built);
        return Err(e.into());
    }
    drop(work);
    print_summary(&built, (&lock, &request), publish.as_deref(), args.json);
    if args.registering.register {
        register(&built, publish.as_deref(), &args.registering, &settings)?;
    }
    Ok(())
}

/// The signature checker the signing flags and the configuration ask for.
fn checker(
    signing: &crate::cli::SignatureArgs,
    rekor_url: Option<&str>,
    settings: &crate::config::Settings,
) -> Result<Option<trust::checker::Checker>, AppError> {
    let flags = trust::checker::Flags {
        mode: signing.signatures.as_deref(),
        trusted_root: signing.trust.trusted_root.as_deref(),
        policy: signing.trust.signature_policy.as_deref(),
        rekor_url,
    };
    Ok(trust::checker::select(flags, settings)?)
}

/// `build --register`: the ISOs just written, registered with CloudStack.
fn register(
    built: &[BuiltIso],
    publish: Option<&str>,
    registering: &crate::cli::BuildRegisterArgs,
    settings: &crate::config::Settings,
) -> Result<(), AppError> {
    let isos = built
        .iter()
        .map(crate::registration::IsoToRegister::from)
        .collect();
    super::register::after_build(isos, publish.unwrap_or_default(), registering, settings)
}

/// The lock to realize: the one given, as it is, or else the request resolved into one; with
/// whether its images are what the cache's index named (resolved `--offline`).
fn to_realize(
    given: Option<Lock>,
    inputs: realize::LockInputs<'_>,
    runtime: &tokio::runtime::Runtime,
) -> Result<(Lock, bool), AppError> {
    Ok(match given {
        Some(lock) => (lock, false),
        None => {
            let offline = inputs.settings.http.offline;
            (runtime.block_on(realize::resolve_lock(inputs))?, offline)
        }
    })
}

/// Settles the CloudStack release the build is for (`--cloudstack`, else the configuration's)
/// and what it implies ([`plan::settle`]), given `--cloudstack` and `--csi-version`; and the
/// configuration's add-ons.
fn settle(
    (cloudstack, csi): (Option<&str>, Option<&str>),
    settings: &crate::config::Settings,
    (request, partial): (&mut plan::Request, &mut Partial),
    from_lock: bool,
) -> Result<(), AppError> {
    let given = match cloudstack {
        Some(text) => Some(CloudStack::parse(text).map_err(|e| {
            let hint = "or leave --cloudstack out: the ISO then suits 4.22 and 4.23";
            AppError::usage(e, Some(hint.into()))
        })?),
        None => settings.cloudstack,
    };
    let csi_given = csi.is_some_and(|c| c.trim() != "none");
    plan::settle(request, partial, given, from_lock, csi_given)?;
    // The configuration's add-ons come before the flags'; a lock's add-ons are its own.
    if !from_lock {
        let extras = &settings.extras;
        let configured = plan::addons(&extras.images, &extras.manifests)?;
        request.addons = std::mem::take(&mut request.addons).after(configured)?;
    }
    Ok(())
}

/// Prints the summary of the ISOs `built` from `lock` for `request`, with their registration
/// lines: the versions render from the lock.
fn print_summary(
    built: &[BuiltIso],
    (lock, request): (&Lock, &plan::Request),
    publish: Option<&str>,
    json: bool,
) {
    let registrations: Vec<Registration> =
        built.iter().map(|b| Registration::of(b, publish)).collect();
    let mut versions = lock.versions_line();
    if let Some(label) = &request.kubernetes_label {
        versions = format!("{versions} (kubernetes from {label})");
    }
    let fields = super::resolve::versions_json(lock, request.kubernetes_label.as_deref());
    summary(built, &registrations, (&versions, fields), json);
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
    let request = plan::Request {
        addons: addons(args)?,
        ..plan::request(&args.positional, flags(args))?
    };
    let kube: KubeVersion = request.kubernetes.parse()?;
    check_supported(&kube)?;
    let volume_id = VolumeId::parse(
        args.volume_id
            .as_deref()
            .unwrap_or(cks_iso_iso9660::DEFAULT_VOLUME_ID),
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

/// The add-ons the flags ask for (`--image`, `--images-file`, `--manifest`).
fn addons(args: &BuildArgs) -> Result<plan::Addons, AppError> {
    let images = super::resolve::addon_images(&args.addons, &[])?;
    Ok(plan::addons(&images, &args.manifests)?)
}

/// The setup of a build from a lock: everything from the lock; flags may only repeat it.
fn lock_setup(args: &BuildArgs, path: &std::path::Path) -> Result<Setup, AppError> {
    let (lock, origin) = crate::lock::source::read(path)?;
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
        addons: addons(args)?,
    };
    let pinned = plan::locked(&lock, &origin, &args.positional, flags(args), extra)?;
    let kube: KubeVersion = pinned.request.kubernetes.parse()?;
    check_supported(&kube)?;
    let volume_id = VolumeId::parse(&pinned.volume_id)?;
    let epoch = match args.source_date_epoch {
        Some(epoch) => epoch,
        None => env::source_date_epoch()?.unwrap_or(lock.epoch),
    };
    let partial = pinned.partial(kube);
    let lock = pinned.lock;
    tracing::info!("building what {origin} locks ({})", lock.arch_list());
    Ok(Setup {
        request: pinned.request,
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

/// The cache and the output checked writable, what killed runs left removed, and a fresh work
/// directory.
fn places(
    cache_dir: Option<std::path::PathBuf>,
    output: &std::path::Path,
) -> Result<(crate::cache::Cache, Pending), AppError> {
    let cache = net::writable_cache(cache_dir)?;
    net::writable(output).map_err(|e| AppError::output_dir(output, "--output", e))?;
    // What killed runs (SIGKILL, a crash) left: their work dirs and half-written ISOs.
    for dir in [std::env::temp_dir(), output.to_owned()] {
        for path in crate::atomic::sweep_stale(&dir) {
            tracing::info!("removed {}, left by a run that was killed", path.display());
        }
    }
    Ok((cache, work_dir()?))
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
    built: &[BuiltIso],
    registrations: &[Registration],
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
                    "iso": b.path, "arch": b.arch.k8s(), "size": b.size, "sha256": b.sha256,
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
            b.arch.k8s(),
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
