//! One architecture of a lock realized: its downloads taken as the lock names them, the shared
//! files staged beside them, and its images pulled by their locked digests into the cache while
//! their and the covered files' signatures are fetched and judged.

use std::path::{Path, PathBuf};

use futures_util::future::try_join_all;
use futures_util::{StreamExt, stream};

use super::manifests::forged;
use super::signatures::{self, ArchSignatures};
use super::{ArchRealized, RealizeError};
use crate::image::{Arch, Digest, Image, Reference};
use crate::lock;
use crate::plan::IsoFile;
use crate::registry::{Registry, RegistryError};
use crate::reporter::Reporter;
use crate::trust::checker::Checker;
use crate::upstream::{Artifact, Content, Expected, Fetcher, Pins, catalog};

/// What every architecture of a build is realized with.
pub(super) struct Shared<'a, 'f> {
    pub(super) fetcher: &'a Fetcher<'f>,
    pub(super) pins: &'a Pins,
    /// The arch-independent files (manifests, units), staged once.
    pub(super) files: &'a [IsoFile],
    pub(super) registry: &'a Registry,
    pub(super) checker: Option<&'a Checker>,
    /// See [`super::Inputs::tags_from_cache`].
    pub(super) tags_from_cache: bool,
    pub(super) work: &'a Path,
}

/// Downloads, stages and pulls linux/`arch`, judging its signatures alongside.
pub(super) async fn one_arch(
    shared: &Shared<'_, '_>,
    arch: Arch,
    entry: &lock::ArchEntry,
    reporter: &dyn Reporter,
) -> Result<ArchRealized, RealizeError> {
    let staging = shared.work.join(arch.k8s()).join("iso");
    std::fs::create_dir_all(staging.join(crate::contract::IMAGES_DIR))
        .map_err(RealizeError::io("work dir"))?;
    tracing::info!(
        "linux/{arch}: downloading binaries and tarballs",
        arch = arch.k8s()
    );
    let artifacts = artifacts(shared.pins, arch);
    let mut expected = Vec::new();
    for a in &artifacts {
        expected.push(Some(expected_file(entry, a, arch)?));
    }
    let mut files = download(shared.fetcher, &artifacts, &expected, &staging).await?;
    for file in shared.files {
        let path = staging.join(&file.dest);
        std::fs::create_dir_all(path.parent().expect("parent"))
            .map_err(RealizeError::io("work dir"))?;
        std::fs::hard_link(&file.path, &path)
            .or_else(|_| std::fs::copy(&file.path, &path).map(|_| ()))
            .map_err(RealizeError::io(format!("cannot stage {}", file.dest)))?;
        files.push(IsoFile {
            path,
            ..file.clone()
        });
    }
    let (images, signatures) = pull(shared, arch, &files, entry, reporter).await?;
    Ok(ArchRealized {
        arch,
        staging,
        files,
        images,
        signatures,
    })
}

/// The binaries and tarballs linux/`arch` downloads (the manifests are taken once for all).
pub(in crate::pipeline) fn artifacts(pins: &Pins, arch: Arch) -> Vec<Artifact> {
    catalog(pins, arch)
        .into_iter()
        .filter(|a| !matches!(a.content, Content::Yaml))
        .collect()
}

/// Takes `artifacts` under `staging`, each checked against what `expected` says of it (the
/// lock's entry), or else verified as published.
pub(in crate::pipeline) async fn download(
    fetcher: &Fetcher<'_>,
    artifacts: &[Artifact],
    expected: &[Option<Expected>],
    staging: &Path,
) -> Result<Vec<IsoFile>, RealizeError> {
    let dests: Vec<PathBuf> = artifacts.iter().map(|a| staging.join(&a.dest)).collect();
    for dest in &dests {
        std::fs::create_dir_all(dest.parent().expect("parent"))
            .map_err(RealizeError::io("work dir"))?;
    }
    let got = try_join_all(
        artifacts
            .iter()
            .zip(&dests)
            .zip(expected)
            .map(|((a, d), e)| fetcher.get_expecting(a, d, e.as_ref())),
    )
    .await?;
    let mut files: Vec<IsoFile> = Vec::new();
    for (a, g) in artifacts.iter().zip(got) {
        let size = std::fs::metadata(&g.path)
            .map_err(RealizeError::io(format!(
                "cannot read {}",
                g.path.display()
            )))?
            .len();
        files.push(IsoFile {
            dest: a.dest.clone(),
            source: g.url,
            sha256: g.sha256.to_string(),
            path: g.path,
            size,
        });
    }
    Ok(files)
}

/// What the lock says `artifact`'s download must be.
fn expected_file(
    entry: &lock::ArchEntry,
    artifact: &Artifact,
    arch: Arch,
) -> Result<Expected, RealizeError> {
    let file = entry
        .files
        .iter()
        .find(|f| f.path == artifact.dest)
        .ok_or_else(|| RealizeError::NoLockedFile {
            dest: artifact.dest.clone(),
            arch: arch.k8s(),
        })?;
    if !artifact.taken_from(&file.url) {
        return Err(forged(
            &format!("{} for linux/{}", artifact.dest, arch.k8s()),
            &file.url,
            &artifact.urls().collect::<Vec<_>>().join(" or "),
        ));
    }
    Ok(Expected {
        sha256: file.sha256.clone(),
        // 0: a lock this run resolved, before the body was downloaded (see `to_lock::files`).
        size: (file.size != 0).then_some(file.size),
        url: file.url.clone(),
    })
}

/// Pulls the architecture's images; their signatures need only the resolved digests, so they
/// are fetched and judged while the blobs stream in.
async fn pull(
    shared: &Shared<'_, '_>,
    arch: Arch,
    files: &[IsoFile],
    entry: &lock::ArchEntry,
    reporter: &dyn Reporter,
) -> Result<(Vec<Image>, Option<ArchSignatures>), RealizeError> {
    let registry = shared.registry;
    tracing::info!(
        "linux/{}: pulling {} images",
        arch.k8s(),
        entry.images.len()
    );
    let progress = reporter.bytes(&format!("pulling images for linux/{}", arch.k8s()));
    let mut images = Vec::new();
    let mut failures = Vec::new();
    let results = resolve_locked(registry, entry, arch).await?;
    for result in results {
        match result {
            Ok(image) => images.push(image),
            Err(e) => failures.push(e),
        }
    }
    let mut signatures = None;
    if failures.is_empty() {
        progress.start(registry.missing_bytes(&images));
        // On a far link the signatures' round trips hide behind the pull.
        let blobs = stream::iter(&images)
            .map(|image| registry.fetch_blobs(image, progress.as_ref()))
            .buffered(registry.jobs())
            .collect::<Vec<Result<(), RegistryError>>>();
        let checks = async {
            match shared.checker {
                Some(checker) => {
                    let judged =
                        check_signatures(checker, shared, (&images, files), entry, arch.k8s());
                    Some(judged.await)
                }
                None => None,
            }
        };
        let (fetched, checked) = tokio::join!(blobs, checks);
        failures.extend(fetched.into_iter().filter_map(Result::err));
        signatures = checked;
    }
    progress.finish();
    if !failures.is_empty() {
        return Err(grouped(failures, arch));
    }
    // A failed pull is reported before a failed signature, as when the two ran one after the
    // other.
    let signatures = signatures.transpose()?;
    Ok((images, signatures))
}

/// The first of the failed pulls, with the others said once (one cause) or listed.
pub(in crate::pipeline) fn grouped(mut failures: Vec<RegistryError>, arch: Arch) -> RealizeError {
    let count = failures.len();
    // The first to fail at a registry has the details; the others that met it copy its reason.
    let at = (failures.iter())
        .position(|e| !matches!(e, RegistryError::Unreachable { .. }))
        .unwrap_or(0);
    let first = failures.swap_remove(at);
    let others: Vec<String> = failures.iter().map(ToString::to_string).collect();
    let mut context = format!("cannot bundle the images for linux/{}", arch.k8s());
    let root = |e: &RegistryError| {
        // An image that met a registry another image could not reach carries that image's
        // causes as text: its root cause is the last of them.
        if let RegistryError::Unreachable { reason, .. } = e {
            return reason.rsplit(": ").next().unwrap_or(reason).to_owned();
        }
        let mut cause: &dyn std::error::Error = e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        // A root cause may start with its image (`ref: host refused access`): compared
        // without it, one refusing registry is one cause.
        let text = cause.to_string();
        text.split_once(": ")
            .map_or(text.clone(), |(_, rest)| rest.to_owned())
    };
    let one_cause = failures.iter().all(|e| root(e) == root(&first));
    if count > 1 && one_cause {
        // One cause (an unwritable cache, a dead mirror) said once, not once per image.
        context.push_str(&format!(": {count} images failed for one cause"));
    } else if count > 1 {
        context.push_str(&format!(
            " ({count} failed; the others: {})",
            others.join("; ")
        ));
    }
    RealizeError::Images {
        context,
        source: Box::new(first),
    }
}

/// The images' and the downloaded files' signatures, judged side by side; an image's failure is
/// reported before a file's.
async fn check_signatures(
    checker: &Checker,
    shared: &Shared<'_, '_>,
    (images, files): (&[Image], &[IsoFile]),
    entry: &lock::ArchEntry,
    arch: &'static str,
) -> Result<ArchSignatures, RealizeError> {
    let (images, binaries) = tokio::join!(
        signatures::check(
            checker,
            shared.registry,
            images,
            entry,
            shared.tags_from_cache,
            arch
        ),
        crate::trust::binaries::check_files(
            checker,
            shared.fetcher,
            &shared.pins.kubernetes,
            files,
            entry,
            arch
        ),
    );
    let mut sigs = images?;
    let (reports, evidence) = binaries?;
    sigs.report.binaries = reports;
    sigs.binaries = evidence;
    Ok(sigs)
}

/// The lock's images, each by its registry digest, checked to give the locked platform manifest.
async fn resolve_locked(
    registry: &Registry,
    entry: &lock::ArchEntry,
    arch: Arch,
) -> Result<Vec<Result<Image, RegistryError>>, RealizeError> {
    let mut wanted = Vec::new();
    for image in &entry.images {
        let bad = |source: crate::image::ImageError| RealizeError::LockedImage {
            reference: image.reference.clone(),
            source: Box::new(source),
        };
        let reference = Reference::parse(&image.reference)?;
        let top = Digest::parse(&image.digest).map_err(bad)?;
        let platform = Digest::parse(&image.manifest).map_err(bad)?;
        wanted.push((reference, top, platform));
    }
    let results = stream::iter(&wanted)
        .map(|(reference, top, platform)| async move {
            let image = registry.resolve_at(reference, top, arch).await?;
            if image.manifest.digest != *platform {
                return Err(RegistryError::Image(
                    crate::image::ImageError::DigestMismatch {
                        image: reference.to_string(),
                        what: format!("platform manifest for linux/{}", arch.k8s()),
                        expected: platform.clone(),
                        actual: image.manifest.digest.clone(),
                    },
                ));
            }
            Ok(image)
        })
        .buffered(registry.jobs())
        .collect()
        .await;
    Ok(results)
}
