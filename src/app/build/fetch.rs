//! Phase 1 of `build`: everything that needs the network, for every architecture, into the work
//! directory. Nothing here writes an ISO.

use std::path::{Path, PathBuf};

use futures_util::future::try_join_all;
use futures_util::{StreamExt, stream};
use sha2::{Digest as _, Sha256};

use super::super::resolve::{Partial, Resolution, resolve};
use super::super::{AppError, net};
use crate::cache::Cache;
use crate::config::Settings;
use crate::fetch::build_client;
use crate::image::{Image, Reference};
use crate::plan::{self, Edited, Request, Role, Source};
use crate::registry::{Registry, RegistryError};
use crate::ui::Ui;
use crate::units;
use crate::upstream::{Arch, Artifact, Content, Fetcher, catalog};

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
}

/// What one architecture's ISO holds, ready to be written.
pub(crate) struct ArchFetched {
    pub(crate) arch: Arch,
    /// The staging directory: files in place, `docker/` still empty.
    pub(crate) staging: PathBuf,
    pub(crate) files: Vec<IsoFile>,
    pub(crate) images: Vec<Image>,
}

/// Everything phase 1 produced.
pub(crate) struct Fetched {
    pub(crate) resolution: Resolution,
    pub(crate) registry: Registry,
    pub(crate) arches: Vec<ArchFetched>,
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
    })
}

/// Downloads a manifest (or reads a local one), edits it for `role`, and stores the result.
async fn manifest(
    fetcher: &Fetcher<'_>,
    dir: &Path,
    dest: &str,
    source: &Source,
    role: &Role,
) -> Result<(IsoFile, Edited), AppError> {
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
            let got = fetcher.get(&artifact, &raw).await?;
            let text = std::fs::read_to_string(&got.path)
                .map_err(io(format!("{dest} from {url} is not UTF-8 text")))?;
            (text, got.url)
        }
        Source::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                AppError::failure(
                    anyhow::Error::new(e)
                        .context(format!("cannot read {dest} from {}", path.display())),
                    Some("pass an existing file or an http(s) URL".into()),
                )
            })?;
            let abs = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            (text, format!("file://{}", abs.display()))
        }
    };
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
    for warning in &edited.warnings {
        tracing::warn!("{dest} from {origin}: {warning}");
    }
    Ok((put_text(dir, dest, origin, &edited.text)?, edited))
}

/// Resolves, downloads and pulls for every architecture of `request`.
pub(super) async fn all(
    request: &Request,
    partial: Partial,
    settings: &Settings,
    cache: Cache,
    work: &Path,
    ui: &Ui,
) -> Result<Fetched, AppError> {
    let client = build_client(&settings.http)?;
    let fetcher = net::fetcher(&client, settings);
    tracing::info!("resolving versions for Kubernetes v{}", partial.kube);
    let resolution = resolve(partial, &client, &fetcher).await?;
    for warning in &resolution.warnings {
        tracing::warn!("{warning}");
    }
    let pins = resolution.pins.clone();

    tracing::info!("taking the manifests");
    let common = work.join("common");
    let mut shared: Vec<IsoFile> = Vec::new();
    let mut manifest_images: Vec<String> = Vec::new();
    let autoscaler_image = format!(
        "registry.k8s.io/autoscaling/cluster-autoscaler:v{}",
        pins.autoscaler
    );
    let provider_image = format!("apache/cloudstack-kubernetes-provider:{}", pins.ccm_tag);
    let mut manifests: Vec<(String, Source, Role)> = Vec::new();
    for a in catalog(&pins, request.arches[0])
        .iter()
        .filter(|a| matches!(a.content, Content::Yaml))
    {
        let role = match a.dest.as_str() {
            "autoscaler.yaml" => Role::Autoscaler {
                image: autoscaler_image.clone(),
            },
            "provider.yaml" => Role::Provider {
                image: provider_image.clone(),
            },
            _ => Role::Other,
        };
        manifests.push((a.dest.clone(), Source::Url(a.url.clone()), role));
    }
    manifests.push(("network.yaml".into(), request.network.clone(), Role::Other));
    manifests.push((
        "dashboard.yaml".into(),
        request.dashboard.clone(),
        Role::Other,
    ));
    if let Some(headlamp) = &request.headlamp {
        manifests.push(("headlamp.yaml".into(), headlamp.clone(), Role::Other));
    }
    let taken = try_join_all(
        manifests
            .iter()
            .map(|(dest, source, role)| manifest(&fetcher, &common, dest, source, role)),
    )
    .await?;
    let kubeadm: Vec<&str> = resolution
        .images
        .iter()
        .filter(|row| row.source == "kubeadm")
        .map(|row| row.image.as_str())
        .collect();
    // Before any pull: a second pause image would be the one nodes run (`sort | tail -1`).
    plan::one_pause(
        &kubeadm,
        taken
            .iter()
            .map(|(file, edited)| (file.dest.as_str(), file.source.as_str(), edited)),
    )
    .map_err(|e| {
        let hint = e.hint();
        AppError::failure(*e, Some(hint))
    })?;
    for (file, edited) in taken {
        manifest_images.extend(edited.images);
        shared.push(file);
    }
    for (dest, text) in [
        ("kubelet.service", units::KUBELET_SERVICE),
        ("10-kubeadm.conf", units::KUBEADM_DROPIN),
    ] {
        let source = units::BUILTIN_SOURCE.to_owned();
        shared.push(put_text(&common, dest, source, &units::to_opt_bin(text))?);
    }

    let references = plan::image_set(
        kubeadm
            .iter()
            .copied()
            .chain(manifest_images.iter().map(String::as_str)),
    )?;

    let registry = net::registry(settings, cache)?;
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
                work,
                ui,
            )
            .await?,
        );
    }
    Ok(Fetched {
        resolution,
        registry,
        arches,
    })
}

#[allow(clippy::too_many_arguments)]
async fn one_arch(
    fetcher: &Fetcher<'_>,
    pins: &crate::upstream::Pins,
    arch: Arch,
    shared: &[IsoFile],
    references: &[Reference],
    registry: &Registry,
    work: &Path,
    ui: &Ui,
) -> Result<ArchFetched, AppError> {
    let staging = work.join(arch.k8s()).join("iso");
    std::fs::create_dir_all(staging.join("docker")).map_err(io("work dir".into()))?;
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
    let got = try_join_all(artifacts.iter().zip(&dests).map(|(a, d)| fetcher.get(a, d))).await?;
    let mut files: Vec<IsoFile> = artifacts
        .iter()
        .zip(got)
        .map(|(a, g)| IsoFile {
            dest: a.dest.clone(),
            source: g.url,
            sha256: g.sha256,
            path: g.path,
        })
        .collect();
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
    for result in registry.resolve_all(references, image_arch).await {
        match result {
            Ok(image) => images.push(image),
            Err(e) => failures.push(e),
        }
    }
    if failures.is_empty() {
        progress.start(registry.missing_bytes(&images));
        let fetched: Vec<Result<(), RegistryError>> = stream::iter(&images)
            .map(|image| registry.fetch_blobs(image, progress.as_ref()))
            .buffered(registry.jobs())
            .collect()
            .await;
        failures.extend(fetched.into_iter().filter_map(Result::err));
    }
    progress.finish();
    if !failures.is_empty() {
        let count = failures.len();
        let first = failures.swap_remove(0);
        let others: Vec<String> = failures.iter().map(ToString::to_string).collect();
        let hint = first.hint();
        let mut context = format!("cannot bundle the images for linux/{}", arch.k8s());
        if count > 1 {
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
    Ok(ArchFetched {
        arch,
        staging,
        files,
        images,
    })
}
