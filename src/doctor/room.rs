//! The room a build needs: the build resolved for each arch, its downloads and images sized,
//! and that compared with the free space of the cache dir and TMPDIR (added up when they share a
//! filesystem).

use std::path::{Path, PathBuf};

use reqwest::Method;
use reqwest::header::HeaderMap;

use super::{DoctorError, Problem, Sink, report, size};
use crate::config::Settings;
use crate::env;
use crate::fetch::probe;
use crate::image::{Arch, Image, Reference};
use crate::pipeline::resolve::{ResolutionError, resolve};
use crate::plan::{Given, Partial};
use crate::registry::Registry;
use crate::release::KubeVersion;
use crate::upstream::Fetcher;

/// The build whose room is checked.
pub struct Room<'a> {
    /// The Kubernetes release.
    pub kube: &'a KubeVersion,
    /// Each arch built.
    pub arches: &'a [Arch],
    /// TMPDIR, when it passed its check (else only the build is resolved).
    pub tmp: Option<&'a Path>,
}

/// One arch's build, sized.
struct Sized {
    /// How many files it downloads.
    count: usize,
    /// Their bytes, as the servers announce them.
    files: u64,
    images: Vec<Image>,
}

/// Resolves the build for each arch (a check each) and compares what it needs with the free
/// space of the cache dir and TMPDIR (a check each, or one when they share a filesystem).
pub async fn room(
    sink: Sink<'_>,
    settings: &Settings,
    client: &reqwest::Client,
    registry: &Registry,
    build: Room<'_>,
) -> Result<(), DoctorError> {
    let fetcher = Fetcher::new(client, &settings.http, &settings.mirrors, None, &());
    let (mut all_images, mut files, mut staged) = (Vec::new(), 0u64, 0u64);
    for &arch in build.arches {
        let what = format!("resolve Kubernetes v{} for {}", build.kube, arch.k8s());
        let sized = match one_arch(&fetcher, registry, build.kube, arch).await? {
            Ok(sized) => sized,
            Err(problem) => {
                report(sink, &what, Err(problem));
                return Ok(());
            }
        };
        let image_bytes: u64 = sized
            .images
            .iter()
            .flat_map(|i| std::iter::once(&i.config).chain(&i.layers))
            .map(|d| d.size)
            .sum();
        let detail = format!(
            "{} files ({}), {} images ({})",
            sized.count,
            size(sized.files),
            sized.images.len(),
            size(image_bytes)
        );
        report(sink, &what, Ok(detail));
        files += sized.files;
        staged += sized.files + image_bytes;
        all_images.extend(sized.images);
    }
    // The cache gets what it lacks; TMPDIR holds each arch's staged files and archives.
    let cache_need = registry.missing_bytes(&all_images) + files;
    if let Some(tmp) = build.tmp {
        space(sink, registry.cache().root(), cache_need, tmp, staged);
    }
    Ok(())
}

/// `arch`'s build resolved and sized; a problem when it cannot be resolved or an image is not
/// found.
async fn one_arch(
    fetcher: &Fetcher<'_>,
    registry: &Registry,
    kube: &KubeVersion,
    arch: Arch,
) -> Result<Result<Sized, Problem>, DoctorError> {
    let given = Given {
        ccm: env::CCM_VERSION.get(),
        autoscaler: env::AUTOSCALER_VERSION.get(),
        autoscaler_origin: env::AUTOSCALER_VERSION.name,
        ..Given::default()
    };
    let partial = Partial::new(kube.clone(), arch, given).map_err(ResolutionError::from)?;
    let resolution = match resolve(partial, fetcher).await {
        Ok(r) => r,
        Err(err) => return Ok(Err(Problem::of(&err, err.hint()))),
    };
    let mut files = 0u64;
    for row in &resolution.downloads {
        // Not row.fetch_url: that one is for showing, with credentials masked.
        files += announced(fetcher, &fetcher.mirrors.rewrite(&row.url)).await;
    }
    let references = resolution
        .images
        .iter()
        .map(|row| Reference::parse(&row.image))
        .collect::<Result<Vec<_>, _>>()?;
    let mut images = Vec::new();
    let mut failed = None;
    for result in registry.resolve_all(&references, arch).await {
        match result {
            Ok(image) => images.push(image),
            Err(err) => {
                failed.get_or_insert(err);
            }
        }
    }
    if let Some(err) = failed {
        return Ok(Err(Problem::of(&err, err.hint())));
    }
    Ok(Ok(Sized {
        count: resolution.downloads.len(),
        files,
        images,
    }))
}

/// The size a HEAD of `url` announces; 0 when it announces none.
async fn announced(fetcher: &Fetcher<'_>, url: &str) -> u64 {
    probe(&fetcher.download, Method::HEAD, url, &HeaderMap::new())
        .await
        .ok()
        .filter(|p| p.status.is_success())
        .and_then(|p| p.headers.get(reqwest::header::CONTENT_LENGTH).cloned())
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .unwrap_or(0)
}

/// Reports the free space of the cache dir and TMPDIR against what each needs, added up when they
/// share a filesystem.
fn space(sink: Sink<'_>, cache_dir: &Path, cache_need: u64, tmp: &Path, staged: u64) {
    let places = [(cache_dir.to_owned(), cache_need), (tmp.to_owned(), staged)];
    let same = device(&places[0].0).is_some() && device(&places[0].0) == device(&places[1].0);
    let groups: Vec<(Vec<&PathBuf>, u64)> = match same {
        true => vec![(vec![&places[0].0, &places[1].0], cache_need + staged)],
        false => places.iter().map(|(p, n)| (vec![p], *n)).collect(),
    };
    for (dirs, need) in groups {
        let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        let what = format!("room in {}", names.join(" and "));
        let result = match free_bytes(dirs[0]) {
            Some(free) if free >= need => Ok(format!(
                "{} free, the build needs about {}",
                size(free),
                size(need)
            )),
            Some(free) => Err(Problem::new(
                format!("{} free, the build needs about {}", size(free), size(need)),
                "free space there, or point --cache-dir and TMPDIR at a disk with room",
            )),
            None => Err(Problem::new(
                "cannot tell the free space",
                "check the directory exists and is readable",
            )),
        };
        report(sink, &what, result);
    }
}

/// The filesystem `path` (or its nearest existing ancestor) is on.
fn device(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    path.ancestors()
        .find_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.dev())
}

/// Bytes an unprivileged user may still write on the filesystem of `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let stat = rustix::fs::statvfs(existing).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}
