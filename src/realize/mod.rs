//! Realizing a build: everything that needs the network, for every architecture, into a work
//! directory. Versions are resolved, every download is taken verified through the mirrors — the
//! arch-independent ones (manifests) once for all ISOs —, the manifests are edited, every image
//! is pulled for every architecture into the blob cache, and the images' and covered files'
//! signatures are judged while the blobs stream in. With a lock, exactly what it names is taken
//! and checked against it. A failure here (a 404, an image missing for arm64, a bad signature)
//! stops the run before any ISO exists; nothing here writes an ISO ([`crate::author`] does).

mod error;
mod images;
mod manifests;
mod record;
pub mod signatures;

use std::path::{Path, PathBuf};

use futures_util::future::try_join_all;

pub use error::RealizeError;
pub use signatures::ArchSignatures;

use crate::config::Settings;
use crate::fetch::{Download, build_bulk_client, build_client};
use crate::image::{Arch, Image, Reference};
use crate::lock::{Lock, ManifestEntry};
use crate::plan::{self, IsoFile, Request};
use crate::registry::Registry;
use crate::reporter::Reporter;
use crate::resolve::{Partial, Resolution, resolve};
use crate::trust::checker::Checker;
use crate::upstream::Fetcher;

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
    pub signatures: Option<ArchSignatures>,
}

/// Everything a build realized.
pub struct Realized {
    /// The versions resolved.
    pub resolution: Resolution,
    /// The registry client, whose cache holds every image's blobs.
    pub registry: Registry,
    /// One entry per architecture, in the request's order.
    pub arches: Vec<ArchRealized>,
    /// The manifests and units as the lock records them.
    pub manifests: Vec<ManifestEntry>,
    /// The manifest edits `versions.txt` records as comments, `(path, what)`, in manifest order.
    pub edits: Vec<(String, String)>,
}

/// What a build realizes, and with what.
pub struct Inputs<'a> {
    /// What goes into the ISOs.
    pub request: &'a Request,
    /// The versions given (or locked), to be resolved.
    pub partial: Partial,
    /// Network settings: mirrors, retries, offline.
    pub settings: &'a Settings,
    /// The registry client; its cache also keeps the downloads.
    pub registry: Registry,
    /// The lock to realize exactly, if any.
    pub locked: Option<&'a Lock>,
    /// The signature checker; `None` with `--signatures off`.
    pub checker: Option<&'a Checker>,
    /// The private work directory.
    pub work: &'a Path,
}

/// Resolves, downloads and pulls for every architecture of the request, and checks the images'
/// and files' signatures.
pub async fn realize(
    inputs: Inputs<'_>,
    reporter: &dyn Reporter,
) -> Result<Realized, RealizeError> {
    let Inputs {
        request,
        partial,
        settings,
        registry,
        locked,
        checker,
        work,
    } = inputs;
    let client = build_client(&settings.http)?;
    let bulk = build_bulk_client(&settings.http)?;
    // Files come one by one, their total unknown up front: a spinner with a count, plain lines
    // or events (`Ui::items`).
    let files = reporter.items("downloading files");
    let cache = registry.cache().clone();
    let fetcher = Fetcher {
        download: Download {
            client: &client,
            retry: settings.http.retry,
            progress: files.as_ref(),
            offline: settings.http.offline,
            budget: None,
        },
        bulk: Some(&bulk),
        mirrors: &settings.mirrors,
        store: Some(&cache),
    };
    tracing::info!("resolving versions for Kubernetes v{}", partial.kube);
    let resolution = resolve(partial, &fetcher).await?;
    for warning in &resolution.warnings {
        tracing::warn!("{warning}");
    }
    let pins = resolution.pins.clone();
    let common = take_common(request, &resolution, &fetcher, locked, work).await?;
    let mut arches = Vec::new();
    for &arch in &request.arches {
        let arch_lock = locked.map(|l| &l.arches[arch.k8s()]);
        let shared = images::Shared {
            fetcher: &fetcher,
            pins: &pins,
            files: &common.files,
            references: &common.references,
            registry: &registry,
            checker,
            work,
        };
        arches.push(images::one_arch(&shared, arch, arch_lock, reporter).await?);
    }
    files.finish();
    Ok(Realized {
        resolution,
        registry,
        arches,
        manifests: common.entries,
        edits: common.edits,
    })
}

/// What every architecture shares: the manifests and units, and the images they and kubeadm name.
struct Common {
    files: Vec<IsoFile>,
    entries: Vec<ManifestEntry>,
    edits: Vec<(String, String)>,
    references: Vec<Reference>,
}

/// Takes the manifests (checked against the lock, if any), stages them with the units, and
/// derives the image set.
async fn take_common(
    request: &Request,
    resolution: &Resolution,
    fetcher: &Fetcher<'_>,
    locked: Option<&Lock>,
    work: &Path,
) -> Result<Common, RealizeError> {
    tracing::info!("taking the manifests");
    let common = work.join("common");
    let manifests = plan::manifests(request, &resolution.pins);
    if let Some(missing) = locked.and_then(|lock| plan::not_taken(lock, &manifests)) {
        return Err(RealizeError::NotTaken {
            missing: missing.to_string(),
        });
    }
    let taken = try_join_all(manifests.iter().map(|m| {
        let entry = locked.and_then(|l| l.manifest(&m.dest));
        manifests::manifest(fetcher, &common, &m.dest, &m.source, &m.role, entry)
    }))
    .await?;
    let kubeadm: Vec<&str> = resolution.kubeadm_images().collect();
    // Before any pull: a second pause image would be the one nodes run (`sort | tail -1`).
    plan::one_pause(
        &kubeadm,
        taken
            .iter()
            .map(|(file, edited, _)| (file.dest.as_str(), file.source.as_str(), edited)),
    )
    .map_err(RealizeError::Pause)?;
    // A manifest's bad image is the manifest's fault, not the command line's.
    for (file, edited, _) in &taken {
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
    let mut files = Vec::new();
    let mut entries = Vec::new();
    let mut edits = Vec::new();
    let mut manifest_images: Vec<String> = Vec::new();
    for (file, edited, entry) in taken {
        edits.extend(edited.edits.iter().map(|e| (file.dest.clone(), e.clone())));
        manifest_images.extend(edited.images);
        files.push(file);
        entries.push(entry);
    }
    for (file, entry) in manifests::units(&common)? {
        files.push(file);
        entries.push(entry);
    }
    let references = plan::image_set(
        kubeadm
            .iter()
            .copied()
            .chain(manifest_images.iter().map(String::as_str)),
    )?;
    if let Some(lock) = locked {
        check_image_set(lock, &references)?;
    }
    Ok(Common {
        files,
        entries,
        edits,
        references,
    })
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
