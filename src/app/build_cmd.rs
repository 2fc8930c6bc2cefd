//! `cks-iso build`: the whole CKS binaries ISO, one per `--arch`. The arguments become a request,
//! which the library resolves into a lock ([`crate::realize::resolve_lock`]) — or, with
//! `--locked`, they name the lock —; the library realizes the lock ([`crate::realize`]: fetch and
//! verify exactly what it names, the network part, where any failure stops the run before an ISO
//! exists) and writes the ISOs ([`crate::author`]); this module then prints the summary and the
//! registration lines.
//!
//! Everything happens in a private work directory that is removed on success, error and Ctrl-C.

use serde_json::json;

use super::request::{self, Setup};
use super::{AppError, net};
use crate::atomic::Pending;
use crate::author::{self, BuiltIso};
use crate::cli::BuildArgs;
use crate::env;
use crate::lock::Lock;
use crate::plan;
use crate::realize;
use crate::registration::line::{Registration, publish_base};
use crate::release::version::check_supported;
use crate::resolve::KubeVersion;
use crate::trust;
use crate::ui::Ui;
use cks_iso_iso9660::VolumeId;

/// Builds the ISOs and prints a summary (or JSON) on stdout.
pub fn run(mut args: BuildArgs, ui: &Ui) -> Result<(), AppError> {
    let (setup, labelled) = match args.locked.clone() {
        Some(path) => (lock_setup(&args, &path)?, None),
        None => {
            let labelled = kubernetes_label(&mut args)?;
            (request::setup(&asked(&args))?, labelled)
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
        args.request.cloudstack.as_deref(),
        args.versions.csi_version.as_deref(),
    );
    request::settle(
        given,
        &settings,
        (&mut request, &mut partial),
        lock.is_some(),
    )?;
    let checker = checker(&args.signing, args.rekor_url.as_deref(), &settings)?;
    let sign_key = super::sign::build_key(args.sign_key.as_deref())?;
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
    if let Some(key) = &sign_key
        && let Err(e) = super::sign::built(&built, key)
    {
        super::sign::remove(&built);
        return Err(e);
    }
    if let Some(path) = &args.lock_file
        && let Err(e) = author::write_lock(path, &lock)
    {
        super::sign::remove(&built);
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
        volume_id: args.request.volume_id.clone(),
        addons: request::addons(&args.addons)?,
    };
    let pinned = plan::locked(
        &lock,
        &origin,
        &args.positional,
        request::flags(&asked(args)),
        extra,
    )?;
    let kube: KubeVersion = pinned.request.kubernetes.parse()?;
    check_supported(&kube)?;
    let volume_id = VolumeId::parse(&pinned.volume_id)?;
    let epoch = match args.request.source_date_epoch {
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
    Ok((cache, request::work_dir("build")?))
}

/// What `args` say of the request.
fn asked(args: &BuildArgs) -> request::Asked<'_> {
    request::Asked {
        positional: &args.positional,
        kubernetes: args.kubernetes.clone(),
        versions: &args.versions,
        arches: &args.arches,
        output: args.output.clone(),
        request: &args.request,
        addons: &args.addons,
    }
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
