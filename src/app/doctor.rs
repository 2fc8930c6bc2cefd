//! `cks-iso doctor`: checks, without building, what a build depends on — the configuration, every
//! mirror and registry (with authentication as configured), the git endpoint, the cache dir and
//! TMPDIR, and with `--kubernetes` the room a build needs. One line per check on stdout,
//! `ok` or `FAIL` with a `hint:`; exit 1 if any fails.
//!
//! Each network check is one attempt: doctor reports what fails, it does not wait it out.

use std::path::{Path, PathBuf};

use reqwest::Method;
use reqwest::header::HeaderMap;

use super::{AppError, net};
use crate::cache::Cache;
use crate::cli::DoctorArgs;
use crate::config::Settings;
use crate::env;
use crate::fetch::{Download, build_client, probe, redact};
use crate::image::Arch;
use crate::image::{Image, Reference};
use crate::registry::Registry;
use crate::release::version::{AUTOSCALER_REF_PREFIX, AUTOSCALER_REPO, check_supported};
use crate::resolve::{Given, Partial, resolve};
use crate::resolve::{KubeVersion, ls_remote};
use crate::ui::Ui;

mod trust;

/// The upstream hosts a build downloads from, each checked through its mirror rule.
const UPSTREAMS: &[&str] = &[
    "https://github.com",
    "https://dl.k8s.io",
    "https://raw.githubusercontent.com",
];

/// The registries a build pulls from, with one repository of each that builds use (a token is
/// asked for a repository).
const REGISTRIES: &[(&str, &str)] = &[
    ("registry.k8s.io", "registry.k8s.io/pause"),
    (
        "docker.io",
        "docker.io/apache/cloudstack-kubernetes-provider",
    ),
    ("quay.io", "quay.io/tigera/operator"),
    ("ghcr.io", "ghcr.io/cloudstack/cloudstack-csi-driver"),
];

/// Counts and prints the checks; with `--json`, keeps them for one object at the end.
#[derive(Default)]
struct Checks {
    total: usize,
    failed: usize,
    /// `Some` with `--json`: every check so far, printed by [`Checks::print_json`].
    json: Option<Vec<Checked>>,
}

/// The version of `doctor --json`'s object, bumped on any change that breaks a reader.
pub const FORMAT: u32 = 1;

/// One check in `doctor --json`.
#[derive(serde::Serialize)]
struct Checked {
    /// What was checked, as the text line names it (`configuration`, `mirror …`).
    check: String,
    ok: bool,
    /// The `ok` detail, or the failure with its causes.
    detail: String,
    hint: Option<String>,
}

/// A failed check: what went wrong, and what to do.
struct Problem {
    text: String,
    hint: Option<String>,
}

impl From<AppError> for Problem {
    fn from(err: AppError) -> Self {
        let (top, causes) = err.lines();
        let text = std::iter::once(top)
            .chain(causes)
            .collect::<Vec<_>>()
            .join(": ");
        Self {
            text,
            hint: err.advice(),
        }
    }
}

impl<E: Into<AppError>> From<E> for Box<Problem> {
    fn from(err: E) -> Self {
        Box::new(Problem::from(err.into()))
    }
}

impl Checks {
    fn report(&mut self, what: &str, result: Result<String, Box<Problem>>) -> bool {
        self.total += 1;
        if let Some(json) = &mut self.json {
            let ok = result.is_ok();
            self.failed += usize::from(!ok);
            json.push(match result {
                Ok(detail) => Checked {
                    check: what.to_owned(),
                    ok,
                    detail,
                    hint: None,
                },
                Err(problem) => Checked {
                    check: what.to_owned(),
                    ok,
                    detail: problem.text,
                    hint: problem.hint,
                },
            });
            return ok;
        }
        match result {
            Ok(detail) => {
                crate::outln!("ok    {what}: {detail}");
                true
            }
            Err(problem) => {
                self.failed += 1;
                crate::outln!("FAIL  {what}: {}", problem.text);
                if let Some(hint) = &problem.hint {
                    crate::outln!("      hint: {hint}");
                }
                false
            }
        }
    }
}

impl Checks {
    /// With `--json`, the one object: `{"format", "ok", "failed", "total", "checks": [...]}`.
    fn print_json(&self) {
        if let Some(checks) = &self.json {
            let object = serde_json::json!({
                "format": FORMAT,
                "ok": self.failed == 0,
                "failed": self.failed,
                "total": self.total,
                "checks": checks,
            });
            let text = serde_json::to_string_pretty(&object).expect("the checks serialise");
            crate::outln!("{text}");
        }
    }
}

/// What a reachable server's answer to a GET of its base URL means: a file server's root
/// often answers 403 or 404, which says nothing against the files under it.
fn answered(status: u16) -> String {
    match status {
        200..=399 => format!("answers (HTTP {status})"),
        _ => format!("reachable (HTTP {status} for the base URL itself, as file servers answer)"),
    }
}

fn problem(text: impl Into<String>, hint: impl Into<String>) -> Box<Problem> {
    Box::new(Problem {
        text: text.into(),
        hint: Some(hint.into()),
    })
}

/// Runs every check; stdout gets one line per check.
pub fn run(args: DoctorArgs, _ui: &Ui) -> Result<(), AppError> {
    // Arguments first: a wrong one is a usage error, not a failed check.
    let kube = match &args.kubernetes {
        Some(v) => {
            let kube: KubeVersion = v.parse()?;
            check_supported(&kube)?;
            Some(kube)
        }
        None => None,
    };
    let arches = net_arches(&args.arches)?;

    let mut checks = Checks {
        json: args.json.then(Vec::new),
        ..Checks::default()
    };
    let settings = net::settings(args.net);
    let settings = match settings {
        Ok(mut settings) => {
            let detail = match &settings.source {
                Some(path) => format!("{} parses", path.display()),
                None => format!(
                    "no file ({} unset, no --config, none at {}): flags and defaults",
                    env::CKS_ISO_CONFIG.name,
                    crate::config::default_locations()
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            };
            checks.report("configuration", Ok(detail));
            trust::trusted_root(&mut checks, &settings);
            settings.http.retry.attempts = 1;
            Some(settings)
        }
        Err(err) => {
            checks.report("configuration", Err(Box::new(Problem::from(err))));
            None
        }
    };

    let cache_root = net::cache(args.cache_dir);
    let cache_ok = checks.report(
        "cache dir",
        match &cache_root {
            Ok(cache) => writable(cache.root(), true).map_err(|e| {
                problem(
                    e.to_string(),
                    "pass --cache-dir a directory you can write to (or set XDG_CACHE_HOME)",
                )
            }),
            Err(err) => Err(Box::new(Problem {
                text: err.lines().0,
                hint: err.advice(),
            })),
        },
    );
    let tmp = std::env::temp_dir();
    let tmp_ok = checks.report(
        &format!("{} {}", env::TMPDIR.name, tmp.display()),
        writable(&tmp, false).map_err(|e| {
            problem(
                e.to_string(),
                "set TMPDIR to a writable directory with room for the images",
            )
        }),
    );

    if let Some(settings) = &settings {
        let cache = match &cache_root {
            Ok(cache) if cache_ok => cache.clone(),
            // The network checks still run, with a scratch cache.
            _ => Cache::new(tmp.join(format!("cks-iso-doctor-{}", std::process::id()))),
        };
        let runtime = net::runtime()?;
        runtime.block_on(network(
            &mut checks,
            settings,
            cache,
            kube.as_ref().map(|k| (k, arches.as_slice())),
            (cache_ok && tmp_ok).then_some(tmp.as_path()),
        ))?;
    }

    if let Some(settings) = &settings
        && let Some(result) = super::register::doctor_check(&args.cloudstack_api, settings)
    {
        checks.report(
            "cloudstack api",
            result.map_err(|e| Box::new(Problem::from(e))),
        );
    }

    checks.print_json();
    match checks.failed {
        0 => Ok(()),
        n => Err(AppError::failure(
            anyhow::anyhow!("{n} of {} checks failed", checks.total),
            Some(
                "each FAIL line above has its own hint; run `cks-iso doctor` again once they are \
                 fixed"
                    .into(),
            ),
        )),
    }
}

fn net_arches(given: &[String]) -> Result<Vec<Arch>, AppError> {
    if given.is_empty() {
        return Ok(vec![Arch::Amd64]);
    }
    given
        .iter()
        .map(|a| Arch::parse(a).map_err(|_| AppError::unknown_arch(a)))
        .collect()
}

/// Creates `dir` (when `create`) and a file in it, removed again.
fn writable(dir: &Path, create: bool) -> Result<String, NotWritable> {
    let failed = |create, source| NotWritable {
        dir: dir.to_owned(),
        create,
        source,
    };
    if create {
        std::fs::create_dir_all(dir).map_err(|e| failed(true, e))?;
    }
    tempfile::NamedTempFile::new_in(dir).map_err(|e| failed(false, e))?;
    Ok(format!("{} is writable", dir.display()))
}

/// A directory doctor could not create or write a file in.
#[derive(Debug, thiserror::Error)]
#[error("cannot {} {}: {source}", if *create { "create" } else { "write to" }, dir.display())]
struct NotWritable {
    dir: std::path::PathBuf,
    /// Whether creating it failed, rather than writing in it.
    create: bool,
    source: std::io::Error,
}

/// Mirrors, git, registries and, with a Kubernetes version, the room the build needs.
async fn network(
    checks: &mut Checks,
    settings: &Settings,
    cache: Cache,
    build: Option<(&KubeVersion, &[Arch])>,
    tmp: Option<&Path>,
) -> Result<(), AppError> {
    let client = build_client(&settings.http)?;
    let download = Download {
        client: &client,
        retry: settings.http.retry,
        progress: &(),
        offline: false,
        budget: None,
    };

    let mut sources: Vec<String> = UPSTREAMS.iter().map(|s| (*s).to_owned()).collect();
    for rule in settings.mirrors.rules() {
        if !sources.contains(&rule.from) {
            sources.push(rule.from.clone());
        }
    }
    for source in &sources {
        let target = settings.mirrors.rewrite(source);
        let (what, hint) = match target == *source {
            true => (
                format!("upstream {source}"),
                "check the network and HTTPS_PROXY/NO_PROXY, or point --mirror at a reachable copy (--mirror FROM=TO)"
                    .to_owned(),
            ),
            false => (
                format!("mirror {} (for {source})", redact(&target)),
                format!(
                    "check the mirror rule for {source} (--mirror, or `mirrors:` in the configuration file)"
                ),
            ),
        };
        let result = match probe(&download, Method::GET, &target, &HeaderMap::new()).await {
            Ok(p) if p.status.is_server_error() => {
                Err(problem(format!("answers HTTP {}", p.status), hint))
            }
            Ok(p) => Ok(answered(p.status.as_u16())),
            Err(e) => Err(problem(format!("{:#}", anyhow::Error::new(e)), hint)),
        };
        checks.report(&what, result);
    }

    trust::rekor(checks, settings, &download).await;

    let repo = settings.mirrors.rewrite(AUTOSCALER_REPO);
    let what = match repo == AUTOSCALER_REPO {
        true => format!("git {repo}"),
        false => format!("git {} (for {AUTOSCALER_REPO})", redact(&repo)),
    };
    let listed = ls_remote(&client, &repo, AUTOSCALER_REF_PREFIX)
        .await
        .map(|listing| format!("{} cluster-autoscaler tags listed", listing.refs.len()))
        .map_err(Box::<Problem>::from);
    checks.report(&what, listed);

    let registry = net::registry(settings, cache)?;
    let mut hosts: Vec<(String, String)> = REGISTRIES
        .iter()
        .map(|(h, r)| ((*h).to_owned(), (*r).to_owned()))
        .collect();
    for host in settings.registry_mirrors.keys() {
        if !hosts.iter().any(|(h, _)| h == host) {
            hosts.push((host.clone(), format!("{host}/cks-iso/doctor")));
        }
    }
    for (host, repository) in &hosts {
        let reference = Reference::parse(repository)?;
        let result = registry
            .check_access(&reference)
            .await
            .map_err(Box::<Problem>::from);
        checks.report(&format!("registry {host}"), result);
    }

    if let Some((kube, arches)) = build {
        room(checks, settings, &client, &registry, kube, arches, tmp).await?;
    }
    Ok(())
}

/// Resolves the build for each arch and compares what it needs with the free space of the
/// cache dir and TMPDIR (added up when they share a filesystem).
#[allow(clippy::too_many_arguments)]
async fn room(
    checks: &mut Checks,
    settings: &Settings,
    client: &reqwest::Client,
    registry: &Registry,
    kube: &KubeVersion,
    arches: &[Arch],
    tmp: Option<&Path>,
) -> Result<(), AppError> {
    let fetcher = net::fetcher(client, settings, None, &());
    let mut all_images: Vec<Image> = Vec::new();
    let mut files = 0u64;
    let mut staged = 0u64;
    for &arch in arches {
        let given = Given {
            ccm: env::CCM_VERSION.get(),
            autoscaler: env::AUTOSCALER_VERSION.get(),
            ..Given::default()
        };
        let partial = Partial::new(kube.clone(), arch, given)?;
        let what = format!("resolve Kubernetes v{kube} for {}", arch.k8s());
        let resolution = match resolve(partial, &fetcher).await {
            Ok(r) => r,
            Err(err) => {
                checks.report(&what, Err(err.into()));
                return Ok(());
            }
        };
        let mut arch_files = 0u64;
        for row in &resolution.downloads {
            let size = probe(
                &fetcher.download,
                Method::HEAD,
                // Not row.fetch_url: that one is for showing, with credentials masked.
                &fetcher.mirrors.rewrite(&row.url),
                &HeaderMap::new(),
            )
            .await
            .ok()
            .filter(|p| p.status.is_success())
            .and_then(|p| p.headers.get(reqwest::header::CONTENT_LENGTH).cloned())
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
            .unwrap_or(0);
            arch_files += size;
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
            checks.report(&what, Err(err.into()));
            return Ok(());
        }
        let image_bytes: u64 = images
            .iter()
            .flat_map(|i| std::iter::once(&i.config).chain(&i.layers))
            .map(|d| d.size)
            .sum();
        checks.report(
            &what,
            Ok(format!(
                "{} files ({}), {} images ({})",
                resolution.downloads.len(),
                size(arch_files),
                images.len(),
                size(image_bytes)
            )),
        );
        files += arch_files;
        staged += arch_files + image_bytes;
        all_images.extend(images);
    }
    // The cache gets what it lacks; TMPDIR holds each arch's staged files and archives.
    let cache_need = registry.missing_bytes(&all_images) + files;
    let cache_dir = registry.cache().root().to_owned();
    let Some(tmp) = tmp else {
        return Ok(());
    };
    let places = [(cache_dir, cache_need), (tmp.to_owned(), staged)];
    let same = device(&places[0].0).is_some() && device(&places[0].0) == device(&places[1].0);
    let groups: Vec<(Vec<&PathBuf>, u64)> = match same {
        true => vec![(vec![&places[0].0, &places[1].0], cache_need + staged)],
        false => places.iter().map(|(p, n)| (vec![p], *n)).collect(),
    };
    for (dirs, need) in groups {
        let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        let what = format!("room in {}", names.join(" and "));
        let free = free_bytes(dirs[0]);
        let result = match free {
            Some(free) if free >= need => Ok(format!(
                "{} free, the build needs about {}",
                size(free),
                size(need)
            )),
            Some(free) => Err(problem(
                format!("{} free, the build needs about {}", size(free), size(need)),
                "free space there, or point --cache-dir and TMPDIR at a disk with room",
            )),
            None => Err(problem(
                "cannot tell the free space",
                "check the directory exists and is readable",
            )),
        };
        checks.report(&what, result);
    }
    Ok(())
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

fn size(bytes: u64) -> String {
    indicatif::HumanBytes(bytes).to_string()
}
