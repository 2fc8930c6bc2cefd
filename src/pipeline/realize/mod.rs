//! Realizing a lock: everything that needs the network, for every architecture, into a work
//! directory. Exactly what the lock names is taken, through the mirrors and checked against it:
//! the manifests (once for all ISOs, edited again for their roles), every architecture's files,
//! and every image by its locked digests, its blobs pulled into the cache while the images' and
//! covered files' signatures are fetched and judged. An unlocked build first resolves its request
//! into a lock ([`super::resolve::resolve_lock`], which takes manifests and files with the
//! functions here) and then realizes it exactly so: one path for both. A failure here (a 404, an
//! image missing for arm64, a bad signature) stops the run before any ISO exists; nothing here
//! writes an ISO ([`super::author`] does).

mod error;
pub(super) mod images;
pub(super) mod manifests;
mod record;
pub mod signatures;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures_util::future::try_join_all;

pub use error::RealizeError;
pub(super) use record::{image_entry, locked_request};

use crate::cache::Cache;
use crate::config::Settings;
use crate::fetch::{build_bulk_client, build_client};
use crate::image::{Arch, Image, Reference};
use crate::lock::{self, Lock, ManifestEntry};
use crate::plan::{self, IsoFile, Request};
use crate::progress::Progress;
use crate::registry::Registry;
use crate::release::autoscaler_pin;
use crate::release::kubeadm::Extras;
use crate::release::{KubeVersion, ResolveError};
use crate::reporter::Reporter;
use crate::trust::checker::Checker;
use crate::upstream::{Fetcher, Pins};

/// What one architecture's ISO holds, ready to be written.
pub struct ArchRealized {
    /// The architecture.
    pub arch: Arch,
    /// The staging directory: files in place, `docker/` still empty.
    pub staging: PathBuf,
    /// The files of the ISO, staged.
    pub files: Vec<IsoFile>,
    /// The images, their blobs in the cache.
    pub images: Vec<Image>,
    /// The images' signature verdicts and evidence; `None` with `--signatures off`.
    pub signatures: Option<signatures::ArchSignatures>,
}

/// Everything a build realized (the images' blobs are in the registry client's cache).
pub struct Realized {
    /// One entry per architecture, in the request's order.
    pub arches: Vec<ArchRealized>,
    /// The manifests and units as the lock records them.
    pub manifests: Vec<ManifestEntry>,
    /// The manifest edits `versions.txt` records as comments, `(path, what)`, in manifest order.
    pub edits: Vec<(String, String)>,
}

/// What a build realizes, and with what.
pub struct Inputs<'a> {
    /// What goes into the ISOs (where local manifests are read from, the ISOs' names).
    pub request: &'a Request,
    /// The lock to realize exactly.
    pub lock: &'a Lock,
    /// Whether this run resolved `lock` with `--offline`: its images are then what the cache's
    /// index named for their tags, and a covered image the cache holds no signature for is
    /// refused as untied ([`Checker::check_image_from`]).
    pub tags_from_cache: bool,
    /// Network settings: mirrors, retries, offline.
    pub settings: &'a Settings,
    /// The registry client; its cache also keeps the downloads.
    pub registry: &'a Registry,
    /// The signature checker; `None` with `--signatures off`.
    pub checker: Option<&'a Checker>,
    /// The private work directory.
    pub work: &'a Path,
}

/// Takes, downloads and pulls exactly what `lock` names for every architecture of the request,
/// and checks the images' and files' signatures.
pub async fn realize(
    inputs: Inputs<'_>,
    reporter: &dyn Reporter,
) -> Result<Realized, RealizeError> {
    let Inputs {
        request,
        lock,
        tags_from_cache,
        settings,
        registry,
        checker,
        work,
    } = inputs;
    let client = build_client(&settings.http)?;
    let bulk = build_bulk_client(&settings.http)?;
    // Files come one by one, their total unknown up front: a spinner with a count, plain lines
    // or events (`Ui::items`).
    let files = reporter.items("downloading files");
    let cache = registry.cache().clone();
    let fetcher = fetcher((&client, &bulk), settings, files.as_ref(), &cache);
    let pins = pins_of(lock)?;
    let kubeadm = kubeadm_images(lock, &pins.kubernetes)?;
    tracing::info!("taking the manifests");
    let manifests = plan::manifests(request, &pins);
    if let Some(missing) = plan::not_taken(lock, &manifests) {
        return Err(RealizeError::NotTaken {
            missing: missing.to_string(),
        });
    }
    let common = take_common(
        (&manifests, &kubeadm, &request.addons.images),
        &fetcher,
        &|dest| lock.manifest(dest),
        work,
    )
    .await?;
    check_image_set(lock, &common.references)?;
    let kubeadm_names: Vec<&str> = kubeadm.iter().map(String::as_str).collect();
    for (arch, entry) in &lock.arches {
        let images: Vec<String> = entry.images.iter().map(|i| i.reference.clone()).collect();
        plan::locked_pause(&kubeadm_names, arch, &images).map_err(RealizeError::Pause)?;
    }
    // Said once, as the manifests are staged (resolving a request took them too).
    for note in &common.notes {
        tracing::info!("{note}");
    }
    let mut arches = Vec::new();
    for &arch in &request.arches {
        let shared = images::Shared {
            fetcher: &fetcher,
            pins: &pins,
            files: &common.files,
            registry,
            checker,
            tags_from_cache,
            work,
        };
        let entry = lock
            .arches
            .get(arch.k8s())
            .ok_or_else(|| RealizeError::NoLockedArch {
                arch: arch.k8s(),
                locked: lock.arch_list(),
            })?;
        arches.push(images::one_arch(&shared, arch, entry, reporter).await?);
    }
    files.finish();
    Ok(Realized {
        arches,
        manifests: common.entries,
        edits: common.edits,
    })
}

/// The upstream client of a run: through the mirrors, its downloads kept in (and, when the lock
/// names them, taken from) `cache`; small texts on `client`, file bodies on `bulk` (HTTP/1.1).
pub(super) fn fetcher<'a>(
    (client, bulk): (&'a reqwest::Client, &'a reqwest::Client),
    settings: &'a Settings,
    progress: &'a dyn Progress,
    cache: &'a Cache,
) -> Fetcher<'a> {
    Fetcher::new(
        client,
        &settings.http,
        &settings.mirrors,
        Some(cache),
        progress,
    )
    .with_bulk(bulk)
}

/// What the URLs of `lock`'s downloads are derived from: its versions (the autoscaler's read as
/// a pin, which warns when it is another minor's).
fn pins_of(lock: &Lock) -> Result<Pins, RealizeError> {
    let r = &lock.request;
    let resolution = |e: crate::release::VersionError| RealizeError::from(ResolveError::from(e));
    let kubernetes: KubeVersion = r.kubernetes.parse().map_err(resolution)?;
    let choice = autoscaler_pin(
        &kubernetes,
        &lock.autoscaler.version,
        "the lock's autoscaler",
    )
    .map_err(resolution)?;
    if let Some(warning) = &choice.warning {
        tracing::warn!("{warning}");
    }
    Ok(Pins {
        kubernetes,
        cni: r.cni.clone(),
        crictl: r.crictl.clone(),
        etcd: r.etcd.clone(),
        etcd_own_name: lock.etcd_own_name(),
        autoscaler: choice.version,
        ccm_tag: r.ccm.clone(),
        csi: r.csi.clone(),
    })
}

/// The images kubeadm names for `kube` with the lock's pause, etcd and CoreDNS, normalised.
fn kubeadm_images(lock: &Lock, kube: &KubeVersion) -> Result<Vec<String>, RealizeError> {
    let extras = Extras {
        pause: lock.kubeadm.pause.clone(),
        etcd: lock.kubeadm.etcd.clone(),
        coredns: lock.kubeadm.coredns.clone(),
    };
    let mut out: Vec<String> = Vec::new();
    for image in crate::release::kubeadm::images(kube, &extras) {
        let normalised = Reference::parse(&image)?.to_string();
        if !out.contains(&normalised) {
            out.push(normalised);
        }
    }
    Ok(out)
}

/// What every architecture shares: the manifests and units, and the images they and kubeadm name.
pub(super) struct Common {
    files: Vec<IsoFile>,
    /// What the edits repaired, `dest: note`, for the log.
    notes: Vec<String>,
    pub(super) entries: Vec<ManifestEntry>,
    edits: Vec<(String, String)>,
    pub(super) references: Vec<Reference>,
    /// The add-on images among `references`, with why each is there ([`lock::ImageEntry::extra`]).
    pub(super) extras: BTreeMap<String, String>,
}

/// Takes `manifests` (each checked against the entry `entry_of` its path gives, where the lock
/// holds one), stages them with the units, and derives the image set with the images `kubeadm`
/// names and the add-on images `asked` (normalised).
pub(super) async fn take_common<'l>(
    (manifests, kubeadm, asked): (&[plan::Taken], &[String], &[String]),
    fetcher: &Fetcher<'_>,
    entry_of: &(dyn Fn(&str) -> Option<&'l ManifestEntry> + Sync),
    work: &Path,
) -> Result<Common, RealizeError> {
    let common = work.join("common");
    let taken = try_join_all(manifests.iter().map(|m| {
        manifests::manifest(
            fetcher,
            &common,
            &m.dest,
            &m.source,
            &m.role,
            entry_of(&m.dest),
        )
    }))
    .await?;
    let kubeadm: Vec<&str> = kubeadm.iter().map(String::as_str).collect();
    check_taken(&kubeadm, asked, &taken)?;
    let mut files = Vec::new();
    let mut entries = Vec::new();
    let mut edits = Vec::new();
    let mut notes = Vec::new();
    let mut manifest_images: Vec<String> = Vec::new();
    let mut named_by = Vec::new();
    for (file, edited, entry) in taken {
        edits.extend(edited.edits.iter().map(|e| (file.dest.clone(), e.clone())));
        notes.extend(edited.notes.iter().map(|n| format!("{}: {n}", file.dest)));
        named_by.push((
            entry.role == lock::EXTRA_ROLE,
            file.dest.clone(),
            edited.images.clone(),
        ));
        manifest_images.extend(edited.images.iter().cloned());
        files.push(file);
        entries.push(entry);
    }
    let extras = extras(&kubeadm, asked, named_by)?;
    // An add-on image that is a core one is bundled once, as the core one.
    for image in asked.iter().filter(|i| !extras.contains_key(*i)) {
        notes.push(format!("--image {image}: already bundled as a core image"));
    }
    for (file, entry) in manifests::units(&common)? {
        files.push(file);
        entries.push(entry);
    }
    let references = plan::image_set(
        kubeadm
            .iter()
            .copied()
            .chain(manifest_images.iter().map(String::as_str))
            .chain(asked.iter().map(String::as_str)),
    )?;
    Ok(Common {
        files,
        notes,
        entries,
        edits,
        references,
        extras,
    })
}

/// Before any pull: one pause image (another would be the one nodes run, `grep pause | sort |
/// tail -n 1`), the images `asked` for by reference included; and every image `taken`'s
/// manifests name a reference (a manifest's bad image is the manifest's fault, not the command
/// line's).
fn check_taken(
    kubeadm: &[&str],
    asked: &[String],
    taken: &[(IsoFile, plan::Edited, ManifestEntry)],
) -> Result<(), RealizeError> {
    plan::one_pause(
        kubeadm,
        taken
            .iter()
            .map(|(file, edited, _)| (file.dest.as_str(), file.source.as_str(), edited)),
        asked,
    )
    .map_err(RealizeError::Pause)?;
    for (file, edited, _) in taken {
        for image in &edited.images {
            if let Err(source) = Reference::parse(image) {
                return Err(RealizeError::NotAReference {
                    dest: file.dest.clone(),
                    origin: file.source.clone(),
                    image: image.clone(),
                    source: Box::new(source),
                });
            }
        }
    }
    Ok(())
}

/// The add-on images and why each is there: every image neither kubeadm nor a core manifest
/// names, asked for by reference ([`lock::EXTRA_ASKED`]) or else named by the first extra
/// manifest (by path) that names it. `named_by` holds each manifest's (is extra, path, images).
fn extras(
    kubeadm: &[&str],
    asked: &[String],
    mut named_by: Vec<(bool, String, Vec<String>)>,
) -> Result<BTreeMap<String, String>, RealizeError> {
    let normal = |text: &str| Reference::parse(text).map(|r| r.to_string());
    let mut core = std::collections::BTreeSet::new();
    for image in kubeadm.iter().copied() {
        core.insert(normal(image)?);
    }
    for (_, _, images) in named_by.iter().filter(|(extra, _, _)| !extra) {
        for image in images.iter() {
            core.insert(normal(image)?);
        }
    }
    let mut extras = BTreeMap::new();
    for image in asked.iter().filter(|i| !core.contains(*i)) {
        extras.insert(image.clone(), lock::EXTRA_ASKED.to_owned());
    }
    named_by.sort_by(|a, b| a.1.cmp(&b.1));
    for (_, path, images) in named_by.iter().filter(|(extra, _, _)| *extra) {
        for image in images.iter() {
            let image = normal(image)?;
            if !core.contains(&image) && !extras.contains_key(&image) {
                extras.insert(image, lock::extra_from_manifest(path));
            }
        }
    }
    Ok(extras)
}

/// The images the locked manifests name must be the lock's: the same bytes name the same images.
fn check_image_set(lock: &Lock, references: &[Reference]) -> Result<(), RealizeError> {
    let wanted: Vec<String> = references.iter().map(ToString::to_string).collect();
    for entry in lock.arches.values() {
        let locked: Vec<&str> = entry.images.iter().map(|i| i.reference.as_str()).collect();
        if let Some(extra) = wanted.iter().find(|w| !locked.contains(&w.as_str())) {
            return Err(RealizeError::NotLocked {
                extra: extra.clone(),
            });
        }
    }
    Ok(())
}
