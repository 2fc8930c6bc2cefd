//! Phase 1 of `build`: everything that needs the network, for every architecture, into the work
//! directory. Nothing here writes an ISO.

use std::path::{Path, PathBuf};

use futures_util::future::try_join_all;
use futures_util::{StreamExt, stream};
use sha2::{Digest as _, Sha256};

use super::super::{AppError, net};
use super::signatures::{self, ArchSignatures, Checker};
use crate::cache::Cache;
use crate::config::Settings;
use crate::fetch::build_client;
use crate::image::Arch;
use crate::image::{Digest, Image, Reference};
use crate::lock::{self, Lock, ManifestEntry};
use crate::plan::{self, Edited, Request, Role, Source};
use crate::registry::{Registry, RegistryError};
use crate::resolve::{Partial, Resolution, resolve};
use crate::ui::Ui;
use crate::units;
use crate::upstream::get::MANIFEST_LIMIT;
use crate::upstream::{Artifact, Content, Expected, Fetcher, catalog};

/// A file of the ISO, already in the work directory.
#[derive(Debug, Clone)]
pub(crate) struct IsoFile {
    /// Path in the ISO.
    pub(crate) dest: String,
    /// Where it came from: the upstream URL, `file://…` or `builtin:…`.
    pub(crate) source: String,
    /// sha256 of the bytes that go into the ISO.
    pub(crate) sha256: String,
    /// The bytes, in the work directory.
    pub(crate) path: PathBuf,
    /// Its size.
    pub(crate) size: u64,
}

/// What one architecture's ISO holds, ready to be written.
pub(crate) struct ArchFetched {
    pub(crate) arch: Arch,
    /// The staging directory: files in place, `docker/` still empty.
    pub(crate) staging: PathBuf,
    pub(crate) files: Vec<IsoFile>,
    pub(crate) images: Vec<Image>,
    /// The images' signature verdicts and evidence; `None` with `--signatures off`.
    pub(crate) signatures: Option<ArchSignatures>,
}

/// Everything phase 1 produced.
pub(crate) struct Fetched {
    pub(crate) resolution: Resolution,
    pub(crate) registry: Registry,
    pub(crate) arches: Vec<ArchFetched>,
    /// The manifests and units as the lock records them.
    pub(crate) manifests: Vec<ManifestEntry>,
    /// The manifest edits `versions.txt` records as comments, `(path, what)`, in manifest order.
    pub(crate) edits: Vec<(String, String)>,
}

impl Fetched {
    /// One line naming the resolved versions.
    pub(crate) fn versions_line(&self) -> String {
        let v = &self.resolution.versions;
        format!(
            "kubernetes v{}, cni-plugins v{}, crictl v{}, autoscaler {}, ccm {}, csi-driver {}{}",
            self.resolution.kubernetes,
            v.cni,
            v.crictl,
            v.autoscaler,
            v.ccm,
            v.csi,
            v.etcd
                .as_ref()
                .map_or(String::new(), |e| format!(", etcd v{e}")),
        )
    }
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> AppError {
    move |e| AppError::failure(anyhow::Error::new(e).context(what), None)
}

/// Writes `text` as the ISO file `dest` under `dir`.
fn put_text(dir: &Path, dest: &str, source: String, text: &str) -> Result<IsoFile, AppError> {
    let path = dir.join(dest);
    std::fs::create_dir_all(path.parent().expect("dest has a parent"))
        .map_err(io(format!("cannot create {}", path.display())))?;
    std::fs::write(&path, text).map_err(io(format!("cannot write {}", path.display())))?;
    Ok(IsoFile {
        dest: dest.to_owned(),
        source,
        sha256: sha256(text.as_bytes()),
        path,
        size: text.len() as u64,
    })
}

/// A locked input whose bytes are not the locked ones.
fn drift(what: &str, origin: &str, expected: &str, actual: &str) -> AppError {
    AppError::failure(
        anyhow::anyhow!(
            "{what} from {origin} changed since it was locked: expected sha256:{expected} (the \
             lock), got sha256:{actual}"
        ),
        Some(
            "restore the locked file, or build without --locked to take the new one (and review \
             the change)"
                .into(),
        ),
    )
}

/// A lock naming another URL than the one its entry is taken from: with a warm cache that URL
/// would be recorded for bytes verified under another, so one lock would give two ISOs.
fn forged(what: &str, locked: &str, expected: &str) -> AppError {
    AppError::usage(
        anyhow::anyhow!(
            "the lock's {what} names the URL {}, but cks-iso takes it from {expected}",
            crate::fetch::redact(locked)
        ),
        Some(
            "the lock was changed by hand or by someone else: pass a lock written by `cks-iso \
             build --lock-file`, or build without --locked"
                .into(),
        ),
    )
}

/// Downloads a manifest (or reads a local one), edits it for `role`, and stores the result; a
/// locked one must be the bytes the lock records.
async fn manifest(
    fetcher: &Fetcher<'_>,
    dir: &Path,
    dest: &str,
    source: &Source,
    role: &Role,
    locked: Option<&ManifestEntry>,
) -> Result<(IsoFile, Edited, ManifestEntry), AppError> {
    let (text, origin) = match source {
        Source::Url(url) => {
            let artifact = Artifact {
                name: dest.to_owned(),
                dest: dest.to_owned(),
                url: url.clone(),
                legacy: None,
                checksum: None,
                checksum_required: false,
                content: Content::Yaml,
                mode: 0o644,
            };
            let raw = dir.join("raw").join(dest);
            std::fs::create_dir_all(raw.parent().expect("parent"))
                .map_err(io("work dir".into()))?;
            let shown = crate::fetch::strip_userinfo(url);
            if let Some(entry) = locked.filter(|e| e.source != shown) {
                return Err(forged(dest, &entry.source, &shown));
            }
            let expected = locked.map(|entry| Expected {
                sha256: entry.sha256_taken.clone(),
                size: None,
                url: entry.source.clone(),
            });
            let got = fetcher
                .get_expecting(&artifact, &raw, expected.as_ref())
                .await?;
            let text = std::fs::read_to_string(&got.path).map_err(io(format!(
                "{dest} from {} is not UTF-8 text",
                crate::fetch::redact(url)
            )))?;
            (text, got.url)
        }
        Source::File(path) => {
            let text = crate::input::read_text(path, MANIFEST_LIMIT).map_err(|e| {
                AppError::failure(
                    anyhow::Error::new(e)
                        .context(format!("cannot read {dest} from {}", path.display())),
                    Some("pass an existing file or an http(s) URL".into()),
                )
            })?;
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into(),
            );
            if let Some(entry) = locked.filter(|e| e.sha256_taken != sha256(text.as_bytes())) {
                let actual = sha256(text.as_bytes());
                let origin = path.display().to_string();
                return Err(drift(dest, &origin, &entry.sha256_taken, &actual));
            }
            // No host path: the same file elsewhere makes the same ISO.
            (text, format!("file:{name}"))
        }
    };
    let taken = sha256(text.as_bytes());
    let edited = plan::edit(dest, &text, role).map_err(|e| {
        let hint = e.hint();
        AppError::failure(
            anyhow::Error::new(e).context(format!("{dest} from {origin}")),
            hint,
        )
    })?;
    for note in &edited.notes {
        tracing::info!("{dest}: {note}");
    }
    let file = put_text(dir, dest, origin.clone(), &edited.text)?;
    if let Some(entry) = locked.filter(|e| e.sha256 != file.sha256) {
        tracing::warn!(
            "{dest}: this cks-iso edits it into other bytes than the one that wrote the lock \
             (expected sha256:{}, got sha256:{}); the ISO will differ",
            entry.sha256,
            file.sha256
        );
    }
    let entry = ManifestEntry {
        path: dest.to_owned(),
        role: role.name().to_owned(),
        source: origin,
        sha256_taken: taken,
        sha256: file.sha256.clone(),
    };
    Ok((file, edited, entry))
}

/// Resolves, downloads and pulls for every architecture of `request`, and checks the images'
/// signatures with `checker`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn all(
    request: &Request,
    partial: Partial,
    settings: &Settings,
    cache: Cache,
    locked: Option<&Lock>,
    checker: Option<&Checker>,
    work: &Path,
    ui: &Ui,
) -> Result<Fetched, AppError> {
    let client = build_client(&settings.http)?;
    // Files come one by one, their total unknown up front: events in JSON mode only.
    let files = ui.items("downloading files");
    let fetcher = net::fetcher(&client, settings, Some(&cache), files.as_ref());
    tracing::info!("resolving versions for Kubernetes v{}", partial.kube);
    let resolution = resolve(partial, &fetcher).await?;
    for warning in &resolution.warnings {
        tracing::warn!("{warning}");
    }
    let pins = resolution.pins.clone();

    tracing::info!("taking the manifests");
    let common = work.join("common");
    let mut shared: Vec<IsoFile> = Vec::new();
    let mut manifest_images: Vec<String> = Vec::new();
    let manifests = plan::manifests(request, &pins);
    if let Some(missing) = locked.and_then(|lock| plan::not_taken(lock, &manifests)) {
        return Err(AppError::failure(
            anyhow::anyhow!("the lock holds {missing} but this build would not take it"),
            Some("the lock was written by another cks-iso; build without --locked".into()),
        ));
    }
    let taken = try_join_all(manifests.iter().map(|m| {
        let entry = locked.and_then(|l| l.manifest(&m.dest));
        manifest(&fetcher, &common, &m.dest, &m.source, &m.role, entry)
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
    .map_err(|e| {
        let hint = e.hint();
        AppError::failure(*e, Some(hint))
    })?;
    // A manifest's bad image is the manifest's fault, not the command line's.
    for (file, edited, _) in &taken {
        for image in &edited.images {
            if let Err(e) = Reference::parse(image) {
                return Err(AppError::failure(
                    anyhow::Error::new(e).context(format!(
                        "{} from {} names the image {image:?}, which is not a reference",
                        file.dest, file.source
                    )),
                    Some("fix that image line, or pass another manifest".into()),
                ));
            }
        }
    }
    let mut entries = Vec::new();
    let mut edits = Vec::new();
    for (file, edited, entry) in taken {
        edits.extend(edited.edits.iter().map(|e| (file.dest.clone(), e.clone())));
        manifest_images.extend(edited.images);
        shared.push(file);
        entries.push(entry);
    }
    for (dest, text) in [
        (crate::contract::KUBELET_SERVICE, units::KUBELET_SERVICE),
        (crate::contract::KUBEADM_DROPIN, units::KUBEADM_DROPIN),
    ] {
        let source = units::BUILTIN_SOURCE.to_owned();
        let file = put_text(&common, dest, source.clone(), &units::to_opt_bin(text))?;
        entries.push(ManifestEntry {
            path: dest.to_owned(),
            role: Role::Unit.name().into(),
            source,
            sha256_taken: sha256(text.as_bytes()),
            sha256: file.sha256.clone(),
        });
        shared.push(file);
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

    let registry = net::registry(settings, cache.clone())?;
    let mut arches = Vec::new();
    for &arch in &request.arches {
        arches.push(
            one_arch(
                &fetcher,
                &pins,
                arch,
                &shared,
                &references,
                &registry,
                locked.map(|l| &l.arches[arch.k8s()]),
                checker,
                work,
                ui,
            )
            .await?,
        );
    }
    files.finish();
    Ok(Fetched {
        resolution,
        registry,
        arches,
        manifests: entries,
        edits,
    })
}

/// The images the locked manifests name must be the lock's: the same bytes name the same images.
fn check_image_set(lock: &Lock, references: &[Reference]) -> Result<(), AppError> {
    let wanted: Vec<String> = references.iter().map(ToString::to_string).collect();
    for entry in lock.arches.values() {
        let locked: Vec<&str> = entry.images.iter().map(|i| i.reference.as_str()).collect();
        if let Some(extra) = wanted.iter().find(|w| !locked.contains(&w.as_str())) {
            return Err(AppError::failure(
                anyhow::anyhow!("this build would bundle {extra}, which the lock does not hold"),
                Some("the lock was written by another cks-iso; build without --locked".into()),
            ));
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn one_arch(
    fetcher: &Fetcher<'_>,
    pins: &crate::upstream::Pins,
    arch: Arch,
    shared: &[IsoFile],
    references: &[Reference],
    registry: &Registry,
    locked: Option<&lock::ArchEntry>,
    checker: Option<&Checker>,
    work: &Path,
    ui: &Ui,
) -> Result<ArchFetched, AppError> {
    let staging = work.join(arch.k8s()).join("iso");
    std::fs::create_dir_all(staging.join(crate::contract::IMAGES_DIR))
        .map_err(io("work dir".into()))?;
    tracing::info!(
        "linux/{arch}: downloading binaries and tarballs",
        arch = arch.k8s()
    );
    let artifacts: Vec<Artifact> = catalog(pins, arch)
        .into_iter()
        .filter(|a| !matches!(a.content, Content::Yaml))
        .collect();
    let dests: Vec<PathBuf> = artifacts.iter().map(|a| staging.join(&a.dest)).collect();
    for dest in &dests {
        std::fs::create_dir_all(dest.parent().expect("parent")).map_err(io("work dir".into()))?;
    }
    let mut expected = Vec::new();
    for a in &artifacts {
        expected.push(match locked {
            None => None,
            Some(entry) => {
                let file = entry
                    .files
                    .iter()
                    .find(|f| f.path == a.dest)
                    .ok_or_else(|| {
                        AppError::failure(
                            anyhow::anyhow!(
                                "the lock holds no {} for linux/{}",
                                a.dest,
                                arch.k8s()
                            ),
                            Some(
                                "the lock was written by another cks-iso; build without --locked"
                                    .into(),
                            ),
                        )
                    })?;
                if !a.taken_from(&file.url) {
                    return Err(forged(
                        &format!("{} for linux/{}", a.dest, arch.k8s()),
                        &file.url,
                        &a.urls().collect::<Vec<_>>().join(" or "),
                    ));
                }
                Some(Expected {
                    sha256: file.sha256.clone(),
                    size: Some(file.size),
                    url: file.url.clone(),
                })
            }
        });
    }
    let got = try_join_all(
        artifacts
            .iter()
            .zip(&dests)
            .zip(&expected)
            .map(|((a, d), e)| fetcher.get_expecting(a, d, e.as_ref())),
    )
    .await?;
    let mut files: Vec<IsoFile> = Vec::new();
    for (a, g) in artifacts.iter().zip(got) {
        let size = std::fs::metadata(&g.path)
            .map_err(io(format!("cannot read {}", g.path.display())))?
            .len();
        files.push(IsoFile {
            dest: a.dest.clone(),
            source: g.url,
            sha256: g.sha256,
            path: g.path,
            size,
        });
    }
    for file in shared {
        let path = staging.join(&file.dest);
        std::fs::create_dir_all(path.parent().expect("parent")).map_err(io("work dir".into()))?;
        std::fs::hard_link(&file.path, &path)
            .or_else(|_| std::fs::copy(&file.path, &path).map(|_| ()))
            .map_err(io(format!("cannot stage {}", file.dest)))?;
        files.push(IsoFile {
            path,
            ..file.clone()
        });
    }
    let image_arch = arch;
    tracing::info!("linux/{}: pulling {} images", arch.k8s(), references.len());
    let progress = ui.bytes(&format!("pulling images for linux/{}", arch.k8s()));
    let mut images = Vec::new();
    let mut failures = Vec::new();
    let results = match locked {
        None => registry.resolve_all(references, image_arch).await,
        Some(entry) => resolve_locked(registry, entry, image_arch).await?,
    };
    for result in results {
        match result {
            Ok(image) => images.push(image),
            Err(e) => failures.push(e),
        }
    }
    let mut signatures = None;
    if failures.is_empty() {
        progress.start(registry.missing_bytes(&images));
        // Signatures need only the resolved digests: they are fetched and judged while the
        // blobs stream in, so on a far link their round trips hide behind the pull.
        let blobs = stream::iter(&images)
            .map(|image| registry.fetch_blobs(image, progress.as_ref()))
            .buffered(registry.jobs())
            .collect::<Vec<Result<(), RegistryError>>>();
        let checks = async {
            match checker {
                Some(checker) => {
                    let judged = check_signatures(
                        checker,
                        registry,
                        fetcher,
                        &pins.kubernetes,
                        (&images, &files),
                        locked,
                        arch.k8s(),
                    );
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
        let count = failures.len();
        let first = failures.swap_remove(0);
        let others: Vec<String> = failures.iter().map(ToString::to_string).collect();
        let hint = first.hint();
        let mut context = format!("cannot bundle the images for linux/{}", arch.k8s());
        let root = |e: &dyn std::error::Error| {
            let mut cause = e;
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
        return Err(AppError::failure(
            anyhow::Error::new(first).context(context),
            hint,
        ));
    }
    // A failed pull is reported before a failed signature, as when the two ran one after the
    // other.
    let signatures = signatures.transpose()?;
    Ok(ArchFetched {
        arch,
        staging,
        files,
        images,
        signatures,
    })
}

/// The images' and the downloaded files' signatures, judged side by side; an image's failure is
/// reported before a file's.
async fn check_signatures(
    checker: &signatures::Checker,
    registry: &Registry,
    fetcher: &Fetcher<'_>,
    kubernetes: &crate::resolve::KubeVersion,
    (images, files): (&[Image], &[IsoFile]),
    locked: Option<&lock::ArchEntry>,
    arch: &str,
) -> Result<signatures::ArchSignatures, AppError> {
    let (images, binaries) = tokio::join!(
        signatures::check(checker, registry, images, locked, arch),
        super::binary_signatures::check_files(checker, fetcher, kubernetes, files, locked, arch),
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
) -> Result<Vec<Result<Image, RegistryError>>, AppError> {
    let mut wanted = Vec::new();
    for image in &entry.images {
        let bad = |e: crate::image::ImageError| {
            AppError::failure(
                anyhow::Error::new(e).context(format!("the lock's image {}", image.reference)),
                Some("the lock is damaged; write it again with --lock-file".into()),
            )
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
