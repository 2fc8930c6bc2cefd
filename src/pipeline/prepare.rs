//! Before anything is fetched: what a caller asks for ([`RequestOptions`], plain values a command
//! fills from its flags and a configuration file could as well) turned into a
//! [`plan::Request`] with its [`Partial`] versions, volume ID and epoch ([`Prepared`]), settled
//! with the CloudStack release and the configuration's add-ons — or, with a lock, everything from
//! the lock, the options only repeating it. One wiring for `build` and `resolve --lock`, so the
//! lock `resolve --lock` prints is the one `build` realizes for the same flags.

use std::path::PathBuf;

use super::BuildError;
use crate::cloudstack::CloudStack;
use crate::config::Settings;
use crate::lock::Lock;
use crate::plan::{self, Flags, Given, Partial};
use crate::release::KubeVersion;
use crate::release::check_supported;
use cks_iso_iso9660::VolumeId;

/// What a request is made of, as a caller gives it. Every field is optional the way its flag is:
/// the defaults are the ones `cks-iso build` documents.
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    /// The upstream script's positional arguments (`build` only).
    pub positional: Vec<String>,
    /// `--kubernetes`: a release, or a label (`stable-1.33`) read into one.
    pub kubernetes: Option<String>,
    /// The label `kubernetes` was already read from, when the caller read it.
    pub kubernetes_label: Option<String>,
    /// `--cni`, `--crictl`, `--etcd`, `--csi-version`.
    pub cni: Option<String>,
    /// See `cni`.
    pub crictl: Option<String>,
    /// See `cni`.
    pub etcd: Option<String>,
    /// See `cni`.
    pub csi: Option<String>,
    /// The autoscaler release pinned, and where the pin came from (a flag or a variable's name).
    pub autoscaler: Option<(String, &'static str)>,
    /// The CCM tag pinned, and where the pin came from.
    pub ccm: Option<(String, &'static str)>,
    /// `--arch`, as given.
    pub arches: Vec<String>,
    /// `--output` (`build` only).
    pub output: Option<PathBuf>,
    /// `--network`, `--dashboard`, `--headlamp`, `--headlamp-version`, `--name`.
    pub network: Option<String>,
    /// See `network`.
    pub dashboard: Option<String>,
    /// See `network`.
    pub headlamp: Option<String>,
    /// See `network`.
    pub headlamp_version: Option<String>,
    /// See `network`.
    pub name: Option<String>,
    /// `--volume-id`.
    pub volume_id: Option<String>,
    /// `--source-date-epoch`.
    pub source_date_epoch: Option<i64>,
    /// `--cloudstack`.
    pub cloudstack: Option<String>,
    /// `--image`.
    pub images: Vec<String>,
    /// `--images-file`.
    pub images_files: Vec<PathBuf>,
    /// `--manifest`.
    pub manifests: Vec<String>,
}

/// What `build` is asked for: the request, or the lock it repeats, and what goes beside the ISOs.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// The request (with `locked`: only repeating the lock).
    pub request: RequestOptions,
    /// `--locked`: the lock file (or ISO) to build exactly.
    pub locked: Option<PathBuf>,
    /// `--from-iso`: ISOs whose images fill the cache first (with `locked` only).
    pub from_iso: Vec<PathBuf>,
    /// `--lock-file`: where the run's lock goes too.
    pub lock_file: Option<PathBuf>,
    /// `--sign-key`: the key each ISO is signed with once written.
    pub sign_key: Option<PathBuf>,
    /// `--sign`: each ISO signed keyless once written (token, services, root).
    pub keyless: Option<crate::trust::keyless::KeylessOptions>,
    /// `--tlog`: each `--sign-key` signature entered in this Rekor (services, root).
    pub tlog: Option<crate::trust::keyless::KeylessOptions>,
}

/// A request set up and settled, before anything is fetched.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// What goes into the ISOs.
    pub request: plan::Request,
    /// The versions given, to be resolved.
    pub partial: Partial,
    /// The ISOs' volume ID.
    pub volume_id: VolumeId,
    /// The ISOs' `SOURCE_DATE_EPOCH` when given (flag, variable); else the lock's, or for a fresh
    /// request the date [`crate::lock::epoch`] takes from kubeadm's images.
    pub epoch: Option<i64>,
    /// Where the run's lock goes too (`--lock-file`).
    pub lock_file: Option<PathBuf>,
    /// The key each ISO is signed with (`--sign-key`), read before anything is fetched.
    pub sign_key: Option<std::sync::Arc<cks_iso_sigstore::keyed::SigningKey>>,
    /// The keyless signer (`--sign`), its token read before anything is fetched.
    pub keyless: Option<std::sync::Arc<crate::trust::keyless::KeylessSigner>>,
    /// The Rekor `--sign-key` signatures are entered in (`--tlog`).
    pub key_log: Option<std::sync::Arc<crate::trust::keyless::KeyLog>>,
}

/// What `build`'s options say before the configuration or the network is read: the request set
/// up (or the lock read and the options held to it), in the order a user reads the errors — a
/// wrong flag or lock first, before anything about the configuration or the registry. A version
/// label waits for the network ([`super::Build::prepare_setup`]).
#[derive(Debug)]
pub struct Setup {
    options: BuildOptions,
    start: Start,
    settled: bool,
}

/// Where a [`Setup`] stands.
#[derive(Debug)]
enum Start {
    /// A request, set up.
    Request(Prepared),
    /// A request whose Kubernetes release is a label, to be read first.
    Label,
    /// A lock and the request it settles.
    Locked(Prepared, Box<Lock>),
}

impl Setup {
    /// The request (or the lock) of `options`, set up.
    pub fn new(options: &BuildOptions) -> Result<Self, BuildError> {
        let start = match &options.locked {
            Some(path) => {
                let (prepared, lock) = locked(&options.request, path)?;
                Start::Locked(prepared, Box::new(lock))
            }
            None if label_text(&options.request).is_some() => Start::Label,
            None => Start::Request(fresh(&options.request)?),
        };
        Ok(Self {
            options: options.clone(),
            start,
            settled: false,
        })
    }

    /// Settles the request with the CloudStack release and the configuration's add-ons
    /// ([`crate::plan::settle`]), once however often it is called; a request that waits for its
    /// label is settled once it is read.
    pub fn settle(&mut self, settings: &Settings) -> Result<(), BuildError> {
        if self.settled {
            return Ok(());
        }
        let request = &self.options.request;
        match &mut self.start {
            Start::Request(prepared) => settle(request, settings, prepared, false)?,
            Start::Locked(prepared, _) => settle(request, settings, prepared, true)?,
            Start::Label => return Ok(()),
        }
        self.settled = true;
        Ok(())
    }

    /// The options, what was set up, whether it is settled.
    pub(super) fn parts(self) -> (BuildOptions, Option<(Prepared, Option<Lock>)>, bool) {
        let started = match self.start {
            Start::Request(prepared) => Some((prepared, None)),
            Start::Locked(prepared, lock) => Some((prepared, Some(*lock))),
            Start::Label => None,
        };
        (self.options, started, self.settled)
    }
}

/// The version label `options` give for Kubernetes, if they give one (`--kubernetes
/// stable-1.33`, or the positional form's argument 2).
pub(super) fn label_text(options: &RequestOptions) -> Option<String> {
    let positional = (7..=9).contains(&options.positional.len());
    let text = match (&options.kubernetes, positional) {
        (Some(k), _) => k,
        (None, true) => &options.positional[1],
        (None, false) => return None,
    };
    crate::upstream::label::label(text).map(|_| text.clone())
}

/// What a build starts from: a request resolved first, or a lock realized as it is.
#[derive(Debug, Clone)]
pub enum Input {
    /// A fresh request: resolved into a lock, then realized.
    Request(Prepared),
    /// A lock (`--locked`) and the request it settles.
    Locked(Prepared, Box<Lock>),
}

impl RequestOptions {
    /// The versions given, as the resolution takes them.
    pub fn given(&self) -> Given {
        Given {
            autoscaler_origin: self
                .autoscaler
                .as_ref()
                .map_or("--autoscaler-version", |a| a.1),
            cni: self.cni.clone(),
            crictl: self.crictl.clone(),
            etcd: self.etcd.clone(),
            csi: self.csi.clone(),
            ccm: self.ccm.as_ref().map(|c| c.0.clone()),
            autoscaler: self.autoscaler.as_ref().map(|a| a.0.clone()),
        }
    }

    /// The request's flags as [`plan::request`] takes them.
    fn flags(&self) -> Flags {
        Flags {
            kubernetes: self.kubernetes.clone(),
            cni: self.cni.clone(),
            crictl: self.crictl.clone(),
            arches: self.arches.clone(),
            etcd: self.etcd.clone(),
            network: self.network.clone(),
            dashboard: self.dashboard.clone(),
            headlamp: self.headlamp.clone(),
            headlamp_version: self.headlamp_version.clone(),
            output: self.output.clone(),
            name: self.name.clone(),
        }
    }
}

/// A request resolved afresh (no lock): options, positional arguments, environment.
pub(super) fn fresh(options: &RequestOptions) -> Result<Prepared, BuildError> {
    let request = plan::Request {
        addons: addons(&options.images, &options.images_files, &options.manifests)?,
        kubernetes_label: options.kubernetes_label.clone(),
        ..plan::request(&options.positional, options.flags())?
    };
    let kube: KubeVersion = request.kubernetes.parse()?;
    check_supported(&kube)?;
    let volume_id = VolumeId::parse(
        options
            .volume_id
            .as_deref()
            .unwrap_or(cks_iso_iso9660::DEFAULT_VOLUME_ID),
    )?;
    let epoch = crate::env::given_epoch(options.source_date_epoch)?;
    let partial = Partial::new(
        kube,
        request.arches[0],
        // The positional form may give these three instead of the flags.
        Given {
            cni: request.cni.clone(),
            crictl: request.crictl.clone(),
            etcd: request.etcd.clone(),
            ..options.given()
        },
    )?;
    Ok(Prepared {
        request,
        partial,
        volume_id,
        epoch,
        lock_file: None,
        sign_key: None,
        keyless: None,
        key_log: None,
    })
}

/// A build from the lock at `path`: everything from the lock; the options may only repeat it.
pub(super) fn locked(
    options: &RequestOptions,
    path: &std::path::Path,
) -> Result<(Prepared, Lock), BuildError> {
    let (lock, origin) = crate::lock::source::read(path)?;
    let extra = plan::Extra {
        autoscaler: options.autoscaler.clone(),
        ccm: options.ccm.clone(),
        csi: options.csi.clone(),
        volume_id: options.volume_id.clone(),
        addons: addons(&options.images, &options.images_files, &options.manifests)?,
    };
    let pinned = plan::locked(&lock, &origin, &options.positional, options.flags(), extra)?;
    let kube: KubeVersion = pinned.request.kubernetes.parse()?;
    check_supported(&kube)?;
    let volume_id = VolumeId::parse(&pinned.volume_id)?;
    let epoch = Some(crate::env::given_epoch(options.source_date_epoch)?.unwrap_or(lock.epoch));
    let partial = pinned.partial(kube);
    let lock = pinned.lock;
    tracing::info!("building what {origin} locks ({})", lock.arch_list());
    let prepared = Prepared {
        request: pinned.request,
        partial,
        volume_id,
        epoch,
        lock_file: None,
        sign_key: None,
        keyless: None,
        key_log: None,
    };
    Ok((prepared, lock))
}

/// Settles the CloudStack release the build is for (`--cloudstack`, else the configuration's)
/// and what it implies ([`plan::settle`]), and the configuration's add-ons.
pub(super) fn settle(
    options: &RequestOptions,
    settings: &Settings,
    prepared: &mut Prepared,
    from_lock: bool,
) -> Result<(), BuildError> {
    let given = match &options.cloudstack {
        Some(text) => Some(CloudStack::parse(text)?),
        None => settings.cloudstack,
    };
    let csi_given = options.csi.as_deref().is_some_and(|c| c.trim() != "none");
    let Prepared {
        request, partial, ..
    } = prepared;
    plan::settle(request, partial, given, from_lock, csi_given)?;
    // The configuration's add-ons come before the flags'; a lock's add-ons are its own.
    if !from_lock {
        request.addons = std::mem::take(&mut request.addons).after(configured(settings)?)?;
    }
    Ok(())
}

/// The add-ons asked for: `images` (`--image`), then each of `files`' lines (`--images-file`),
/// and the `manifests` (`--manifest`).
pub fn addons(
    images: &[String],
    files: &[PathBuf],
    manifests: &[String],
) -> Result<plan::Addons, BuildError> {
    let mut all = images.to_vec();
    for file in files {
        let text = crate::input::read_text(file, crate::config::MAX_CONFIG_SIZE).map_err(|e| {
            BuildError::ImagesFile {
                path: file.clone(),
                source: e,
            }
        })?;
        all.extend(plan::image_lines(&text));
    }
    Ok(plan::addons(&all, manifests)?)
}

/// The configuration's add-ons (`extras:`), which come before the flags'.
pub fn configured(settings: &Settings) -> Result<plan::Addons, BuildError> {
    let extras = &settings.extras;
    Ok(plan::addons(&extras.images, &extras.manifests)?)
}

/// A fresh private work directory for `command`, removed on drop and on Ctrl-C.
pub fn work_dir(command: &str) -> Result<crate::atomic::Pending, BuildError> {
    let dir = tempfile::Builder::new()
        .prefix(&crate::atomic::work_dir_prefix(command))
        .tempdir()
        .map_err(BuildError::WorkDir)?;
    Ok(crate::atomic::Pending::track(dir.keep()))
}
