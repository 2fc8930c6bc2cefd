//! The request `build` and `resolve --lock` both resolve into a lock: their shared flags
//! ([`crate::cli::RequestArgs`], the versions, the add-ons) become a [`plan::Request`] with its
//! [`Partial`] versions, volume ID and epoch, settled with the CloudStack release and the
//! configuration's add-ons. One wiring for both commands, so that the lock `resolve --lock`
//! prints is the one `build` realizes for the same flags.

use std::path::PathBuf;

use super::AppError;
use crate::atomic::Pending;
use crate::cli::{AddonArgs, FromEnv, RequestArgs, VersionArgs};
use crate::cloudstack::CloudStack;
use crate::config::Settings;
use crate::lock::Lock;
use crate::plan::{self, Flags};
use crate::release::version::check_supported;
use crate::resolve::{Given, KubeVersion, Partial};
use cks_iso_iso9660::VolumeId;

/// What the arguments (and a lock) decided before anything is fetched.
pub(super) struct Setup {
    pub request: plan::Request,
    pub partial: Partial,
    pub volume_id: VolumeId,
    /// The epoch given (flag, `SOURCE_DATE_EPOCH`) or locked; `None`: taken from the images.
    pub epoch: Option<i64>,
    pub lock: Option<Lock>,
}

/// What a command's flags say of the request: `build`'s, or `resolve`'s with `--lock`.
pub(super) struct Asked<'a> {
    /// Upstream's positional arguments (`build` only).
    pub positional: &'a [String],
    /// `--kubernetes`, a label already read into its release.
    pub kubernetes: Option<String>,
    /// The component versions.
    pub versions: &'a FromEnv<VersionArgs>,
    /// `--arch`, as given.
    pub arches: &'a [String],
    /// `--output` (`build` only).
    pub output: Option<PathBuf>,
    /// The manifests, name, volume ID, date and CloudStack release.
    pub request: &'a RequestArgs,
    /// The add-ons the flags ask for.
    pub addons: &'a AddonArgs,
}

/// The setup of a request resolved afresh (no lock): flags, positional arguments, environment.
pub(super) fn setup(asked: &Asked<'_>) -> Result<Setup, AppError> {
    let request = plan::Request {
        addons: addons(asked.addons)?,
        ..plan::request(asked.positional, flags(asked))?
    };
    let kube: KubeVersion = request.kubernetes.parse()?;
    check_supported(&kube)?;
    let volume_id = VolumeId::parse(
        asked
            .request
            .volume_id
            .as_deref()
            .unwrap_or(cks_iso_iso9660::DEFAULT_VOLUME_ID),
    )?;
    let epoch = super::iso::given_epoch(asked.request.source_date_epoch)?;
    let partial = Partial::new(
        kube,
        request.arches[0],
        // The positional form may give these three instead of the flags.
        Given {
            cni: request.cni.clone(),
            crictl: request.crictl.clone(),
            etcd: request.etcd.clone(),
            ..super::resolve::given(asked.versions)
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
pub(super) fn addons(args: &AddonArgs) -> Result<plan::Addons, AppError> {
    let images = super::resolve::addon_images(args, &[])?;
    Ok(plan::addons(&images, &args.manifests)?)
}

/// The configuration's add-ons (`extras:`), which come before the flags'.
pub(super) fn configured(settings: &Settings) -> Result<plan::Addons, AppError> {
    let extras = &settings.extras;
    Ok(plan::addons(&extras.images, &extras.manifests)?)
}

/// Settles the CloudStack release the build is for (`--cloudstack`, else the configuration's)
/// and what it implies ([`plan::settle`]), given `--cloudstack` and `--csi-version`; and the
/// configuration's add-ons.
pub(super) fn settle(
    (cloudstack, csi): (Option<&str>, Option<&str>),
    settings: &Settings,
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
        request.addons = std::mem::take(&mut request.addons).after(configured(settings)?)?;
    }
    Ok(())
}

/// The request's flags as [`plan::request`] takes them.
pub(super) fn flags(asked: &Asked<'_>) -> Flags {
    let (versions, request) = (asked.versions, asked.request);
    Flags {
        kubernetes: asked.kubernetes.clone(),
        cni: versions.cni.clone(),
        crictl: versions.crictl.clone(),
        arches: asked.arches.to_vec(),
        etcd: versions.etcd.clone(),
        network: request.network.clone(),
        dashboard: request.dashboard.clone(),
        headlamp: request.headlamp.clone(),
        headlamp_version: request.headlamp_version.clone(),
        output: asked.output.clone(),
        name: request.name.clone(),
    }
}

/// A fresh private work directory for `command`, removed on drop and on Ctrl-C.
pub(super) fn work_dir(command: &str) -> Result<Pending, AppError> {
    let dir = tempfile::Builder::new()
        .prefix(&crate::atomic::work_dir_prefix(command))
        .tempdir()
        .map_err(|e| {
            AppError::failure(
                anyhow::Error::new(e).context("cannot create a work directory"),
                Some("set TMPDIR to a writable directory with room for the images".into()),
            )
        })?;
    Ok(Pending::track(dir.keep()))
}
