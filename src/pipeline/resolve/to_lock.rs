//! The first step of an unlocked build: the request resolved into a complete lock before any
//! binary body or image blob is downloaded — the versions, every manifest taken and edited (its
//! bytes kept in the cache, so that realizing the lock takes them from there), per architecture
//! each file's URL and published sha256 (the small `.sha256`/`SHA256SUMS` files), and each image's
//! index digest, platform manifest and size (manifest requests only, `jobs` at a time, beside the
//! checksum requests, and kept in the cache so that the pull does not ask again).
//! [`crate::pipeline::realize`] then realizes that lock exactly as it realizes one given with `--locked`.
//!
//! Two things are left to the realization. Signature material is judged only there: this lock
//! names none, and the run's lock gains what verified ([`crate::pipeline::realize::Realized::lock`]). A file's size
//! is known only once its body is: this lock says 0 (the realization then bounds nothing and
//! checks the sha256), and the run's lock records the size staged. A file without a readable
//! published checksum is the exception: see [`files`].

use std::collections::BTreeMap;
use std::path::Path;

use futures_util::future::join_all;
use futures_util::{StreamExt, stream};

use super::resolution::{Resolution, ResolutionError, resolve};
use crate::cache::Cache;
use crate::config::Settings;
use crate::fetch::{build_bulk_client, build_client};
use crate::image::{Arch, Reference};
use crate::lock::{self, ArchEntry, Autoscaler, FileEntry, ImageEntry, Kubeadm, Lock};
use crate::lock::{LockedRequest, ManifestEntry};
use crate::pipeline::realize::{
    RealizeError, fetcher, image_entry, images, locked_request, manifests, take_common,
};
use crate::plan::{self, Partial, Request};
use crate::registry::Registry;
use crate::upstream::{Artifact, Fetcher, file_name};

/// Checksum files are a line (or, for etcd, a line per asset); more than this is not one.
const CHECKSUM_LIMIT: u64 = 1 << 20;

/// What a request is resolved with.
pub struct LockInputs<'a> {
    /// What goes into the ISOs.
    pub request: &'a Request,
    /// The versions given, to be resolved.
    pub partial: Partial,
    /// The ISOs' volume ID.
    pub volume_id: &'a str,
    /// The ISOs' `SOURCE_DATE_EPOCH` when one was given; else it is taken from the images
    /// ([`lock::epoch`]).
    pub epoch: Option<i64>,
    /// Network settings: mirrors, retries, offline.
    pub settings: &'a Settings,
    /// The registry client; its cache keeps the manifests and downloads for the realization.
    pub registry: &'a Registry,
    /// The private work directory (a scratch directory under it is removed before returning).
    pub work: &'a Path,
}

/// Why a request could not be resolved into a lock: its versions, or what was taken to lock it
/// (a manifest, a published checksum, an image's manifests), failing as the realization would.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The versions could not be resolved.
    #[error(transparent)]
    Resolution(Box<ResolutionError>),
    /// Something the lock names could not be taken or resolved.
    #[error(transparent)]
    Taking(Box<RealizeError>),
}

impl From<ResolutionError> for LockError {
    fn from(err: ResolutionError) -> Self {
        Self::Resolution(Box::new(err))
    }
}

impl From<RealizeError> for LockError {
    fn from(err: RealizeError) -> Self {
        Self::Taking(Box::new(err))
    }
}

impl LockError {
    /// What the user can do (the wrapped error's hint).
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Resolution(e) => e.hint(),
            Self::Taking(e) => e.hint(),
        }
    }

    /// Whether the user's input is at fault: a version that is not one, an image reference that
    /// is not one, or what the realization would call so. A release that was never published is
    /// a failure here, as it always was for `build`.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Resolution(e) => match &**e {
                ResolutionError::Resolve(e) => e.is_usage(),
                ResolutionError::Image(e) => e.is_usage(),
                _ => false,
            },
            Self::Taking(e) => e.is_usage(),
        }
    }
}

/// Resolves the request into the lock a build of it realizes.
pub async fn resolve_lock(inputs: LockInputs<'_>) -> Result<Lock, LockError> {
    let LockInputs {
        request,
        partial,
        volume_id,
        epoch,
        settings,
        registry,
        work,
    } = inputs;
    let client = build_client(&settings.http).map_err(RealizeError::from)?;
    let bulk = build_bulk_client(&settings.http).map_err(RealizeError::from)?;
    let cache = registry.cache().clone();
    // Quiet: what is taken here is staged from the cache by the realization, which reports it.
    let fetcher = fetcher((&client, &bulk), settings, &(), &cache);
    tracing::info!("resolving versions for Kubernetes v{}", partial.kube);
    let resolution = resolve(partial, &fetcher).await?;
    for warning in &resolution.warnings {
        tracing::warn!("{warning}");
    }
    let scratch = work.join("resolve");
    let result = async {
        tracing::info!("taking the manifests");
        let manifests = plan::manifests(request, &resolution.pins);
        let kubeadm: Vec<String> = resolution.kubeadm_images().map(str::to_owned).collect();
        let taking = (&manifests[..], &kubeadm[..], &request.addons.images[..]);
        let common = take_common(taking, &fetcher, &|_| None, &scratch).await?;
        let mut arches = BTreeMap::new();
        for &arch in &request.arches {
            let dir = scratch.join(arch.k8s());
            let references = &common.references;
            let mut entry =
                one_arch(&fetcher, &resolution, registry, references, arch, &dir).await?;
            for image in &mut entry.images {
                image.extra = common.extras.get(&image.reference).cloned();
            }
            arches.insert(
                arch.k8s().to_owned(),
                ArchEntry {
                    iso: plan::iso_name(request, arch),
                    ..entry
                },
            );
        }
        let epoch = match epoch {
            Some(epoch) => (epoch, None),
            None => {
                let (epoch, from) = dated(registry, &kubeadm).await?;
                (epoch, Some(from))
            }
        };
        Ok::<_, LockError>(lock_of(
            (request, &resolution),
            common.entries,
            arches,
            volume_id,
            epoch,
        ))
    }
    .await;
    // What was taken is in the cache; the realization stages it from there.
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// The epoch of a build given none, by [`lock::epoch`]'s rule: the newest `created` of kubeadm's
/// `images` for linux/amd64 (their manifests and configs, a few KiB each, kept in the cache).
async fn dated(
    registry: &Registry,
    images: &[String],
) -> Result<(i64, lock::epoch::EpochFrom), RealizeError> {
    let references: Vec<Reference> = images
        .iter()
        .map(|i| Reference::parse(i))
        .collect::<Result<_, _>>()?;
    let configs = stream::iter(&references)
        .map(|reference| async move {
            let image = registry.resolve(reference, Arch::Amd64).await?;
            let config = registry.config(&image).await?;
            Ok::<_, crate::registry::RegistryError>((image.config.digest.to_string(), config))
        })
        .buffered(registry.jobs())
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| RealizeError::Images {
            context: "cannot date the build from kubeadm's linux/amd64 images (pass \
                      --source-date-epoch to give the date)"
                .into(),
            source: Box::new(e),
        })?;
    let created: Vec<Option<String>> = configs
        .iter()
        .map(|(_, config)| lock::epoch::config_created(config))
        .collect();
    let (epoch, from) = lock::epoch::newest_created(images.iter().zip(&configs).zip(&created).map(
        |((image, (digest, _)), created)| lock::epoch::Dated {
            image,
            config: digest,
            created: created.as_deref(),
        },
    ));
    tracing::debug!("the build's date: {epoch} ({from:?})");
    Ok((epoch, from))
}

/// linux/`arch`'s part of the lock, its ISO not yet named: its files' published checksums and
/// its images' digests, side by side; a file's failure is reported first.
async fn one_arch(
    fetcher: &Fetcher<'_>,
    resolution: &Resolution,
    registry: &Registry,
    references: &[Reference],
    arch: Arch,
    dir: &Path,
) -> Result<ArchEntry, RealizeError> {
    let artifacts = images::artifacts(&resolution.pins, arch);
    let (files, images) = tokio::join!(
        files(fetcher, &artifacts, dir),
        resolve_images(registry, references, arch),
    );
    Ok(ArchEntry {
        iso: String::new(),
        files: files?,
        images: images?,
    })
}

/// The lock's entries for `artifacts`: each one's URL and the sha256 its publisher gives in the
/// checksum file beside it, its size left to the realization (0: not known before the body is).
/// A file whose checksum cannot be read so (none is published — the CNI plugins' is optional —,
/// the file is under its legacy name, the checksum file is damaged or unreachable) or any file
/// `--offline` (where the cache's own record of the checksum decides) is taken now, into `dir`
/// and the cache, exactly as it always was, and locked as taken: the realization then takes it
/// from the cache, and any error is the download's own.
async fn files(
    fetcher: &Fetcher<'_>,
    artifacts: &[Artifact],
    dir: &Path,
) -> Result<Vec<FileEntry>, RealizeError> {
    let published = join_all(artifacts.iter().map(|a| published(fetcher, a))).await;
    let unpublished: Vec<Artifact> = artifacts
        .iter()
        .zip(&published)
        .filter(|(_, p)| p.is_none())
        .map(|(a, _)| a.clone())
        .collect();
    let mut taken = images::download(fetcher, &unpublished, &vec![None; unpublished.len()], dir)
        .await?
        .into_iter();
    Ok(artifacts
        .iter()
        .zip(published)
        .map(|(a, sha256)| match sha256 {
            Some(sha256) => FileEntry::new(a.dest.clone(), a.url.clone(), 0, sha256),
            None => {
                let f = taken
                    .next()
                    .expect("one taken file per unpublished artifact");
                FileEntry::new(f.dest, f.source, f.size, f.sha256)
            }
        })
        .collect())
}

/// The sha256 `artifact`'s publisher gives for it, when its checksum file can be read (online).
async fn published(fetcher: &Fetcher<'_>, artifact: &Artifact) -> Option<String> {
    let checksum = artifact.checksum.as_ref()?;
    // From the network only: offline the client refuses, and the cache's copy is no publisher's.
    let text = fetcher
        .fresh_text(checksum.url(), CHECKSUM_LIMIT)
        .await
        .ok()?;
    checksum
        .expected(text.as_bytes(), file_name(&artifact.url))
        .ok()
}

/// What `references` weigh for linux/`arch`: each one's lock entry, resolved at the registry from
/// its manifests alone — no layer is downloaded — for `resolve`'s sizes and the ISO's estimate.
pub async fn size_images(
    registry: &Registry,
    references: &[Reference],
    arch: Arch,
) -> Result<Vec<ImageEntry>, RealizeError> {
    resolve_images(registry, references, arch).await
}

/// The images the add-on manifests `given` (`(name, source)`) name, normalised, each once with why
/// it is there ([`lock::extra_from_manifest`]): each manifest taken and edited exactly as a build
/// takes it (through the mirrors, kept in `cache`), for `resolve`'s sizes, which take no other
/// manifest. A second pause image among them, or among the images `asked` for by reference, is
/// refused as a build refuses it ([`plan::one_pause`], with `kubeadm`'s images).
pub async fn addon_manifest_images(
    given: &[(String, plan::Source)],
    (kubeadm, asked): (&[&str], &[String]),
    settings: &Settings,
    cache: &Cache,
    work: &Path,
) -> Result<Vec<(String, String)>, RealizeError> {
    let client = build_client(&settings.http)?;
    let bulk = build_bulk_client(&settings.http)?;
    let fetcher = fetcher((&client, &bulk), settings, &(), cache);
    let dir = work.join("addons");
    let role = plan::Role::Extra;
    let taken = join_all(
        given
            .iter()
            .map(|(dest, source)| manifests::manifest(&fetcher, &dir, dest, source, &role, None)),
    )
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    let taken = taken.into_iter().collect::<Result<Vec<_>, _>>()?;
    let named = taken
        .iter()
        .map(|(file, edited, _)| (file.dest.as_str(), file.source.as_str(), edited));
    plan::one_pause(kubeadm, named, asked).map_err(RealizeError::Pause)?;
    let mut out: Vec<(String, String)> = Vec::new();
    for (file, edited, _) in taken {
        for image in &edited.images {
            let normal = Reference::parse(image).map_err(|source| RealizeError::NotAReference {
                dest: file.dest.clone(),
                origin: file.source.clone(),
                image: image.clone(),
                source: Box::new(source),
            })?;
            let normal = normal.to_string();
            if !out.iter().any(|(i, _)| *i == normal) {
                out.push((normal, lock::extra_from_manifest(&file.dest)));
            }
        }
    }
    Ok(out)
}

/// Resolves `references` for linux/`arch` at the registry (manifests only, `jobs` at a time):
/// each one's index digest, chosen platform manifest and size.
async fn resolve_images(
    registry: &Registry,
    references: &[Reference],
    arch: Arch,
) -> Result<Vec<ImageEntry>, RealizeError> {
    let results = stream::iter(references)
        .map(|reference| registry.resolve(reference, arch))
        .buffered(registry.jobs())
        .collect::<Vec<_>>()
        .await;
    let mut images = Vec::new();
    let mut failures = Vec::new();
    for result in results {
        match result {
            Ok(image) => images.push(image_entry(&image)),
            Err(e) => failures.push(e),
        }
    }
    match failures.is_empty() {
        true => Ok(images),
        false => Err(images::grouped(failures, arch)),
    }
}

/// The lock of `request` as `resolution` resolved it, with its manifests and architectures.
fn lock_of(
    (request, resolution): (&Request, &Resolution),
    manifests: Vec<ManifestEntry>,
    arches: BTreeMap<String, ArchEntry>,
    volume_id: &str,
    (epoch, epoch_from): (i64, Option<lock::epoch::EpochFrom>),
) -> Lock {
    let v = &resolution.versions;
    let versions = LockedRequest {
        kubernetes: resolution.kubernetes.clone(),
        kubernetes_label: None,
        arches: arches.keys().cloned().collect(),
        cni: v.cni.clone(),
        crictl: v.crictl.clone(),
        etcd: v.etcd.clone(),
        csi: (v.csi != "none").then(|| v.csi.clone()),
        ccm: v.ccm.clone(),
        autoscaler: v.autoscaler.clone(),
        headlamp: None,
        headlamp_image: None,
        cloudstack: None,
        volume_id: String::new(),
        name: String::new(),
    };
    let mut lock = Lock {
        version: lock::VERSION,
        cks_iso: env!("CARGO_PKG_VERSION").to_owned(),
        epoch,
        epoch_from,
        request: locked_request(versions, request, volume_id),
        autoscaler: Autoscaler {
            version: v.autoscaler.clone(),
            tag: format!("cluster-autoscaler-{}", v.autoscaler),
            commit: v.autoscaler_commit.clone(),
            pinned: v.autoscaler_source == "pinned",
        },
        kubeadm: Kubeadm {
            pause: v.pause.clone(),
            etcd: v.etcd_image.clone(),
            coredns: v.coredns.clone(),
            source: v.kubeadm_extras_source.clone(),
        },
        manifests,
        arches,
    };
    lock.normalise();
    lock
}
