//! The effective network settings of a subcommand: the configuration file (flag or
//! `CKS_ISO_CONFIG`) combined with the network flags.

use std::path::PathBuf;

use super::AppError;
use crate::cache::Cache;
use crate::cli::Net;
use crate::config::{self, Settings};
use crate::pipeline::Shared;
use crate::progress::Progress;
use crate::registry::{AuthFiles, Registry, RegistryConfig, RegistryMirror, Routes};
use crate::trust::checker::{self, Checker};
use crate::upstream::Fetcher;

/// Loads the file, if any, and lets the flags override it.
pub(crate) fn settings(net: Net) -> Result<Settings, AppError> {
    let settings = config::load(net.into_inner())?;
    if let Some(source) = &settings.source {
        tracing::debug!("configuration from {}", source.display());
    }
    Ok(settings)
}

/// The registry mirrors of these settings, each checked: a build calls it before any request,
/// so a malformed one fails before anything is fetched.
pub(crate) fn registry_mirrors(settings: &Settings) -> Result<Vec<RegistryMirror>, AppError> {
    settings
        .registry_mirrors
        .iter()
        .map(|(registry, url)| format!("{registry}={url}").parse::<RegistryMirror>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            AppError::usage(
                anyhow::anyhow!(e),
                Some("a registry mirror is REGISTRY=http(s)://HOST[:PORT][/PREFIX]".into()),
            )
        })
}

/// The registry client for these settings: mirrors, insecure registries, credentials, jobs.
pub(crate) fn registry(settings: &Settings, cache: Cache) -> Result<Registry, AppError> {
    let mirrors = registry_mirrors(settings)?;
    let config = RegistryConfig {
        routes: Routes {
            mirrors,
            insecure: settings.insecure_registries.clone(),
        },
        auth: AuthFiles::from_env(settings.authfile.clone()),
        jobs: settings.jobs,
        adaptive: settings.jobs_adaptive,
    };
    Ok(Registry::new(config, &settings.http, cache)?)
}

/// The blob cache at `--cache-dir`, else at the default root.
pub(crate) fn cache(dir: Option<PathBuf>) -> Result<Cache, AppError> {
    let root = match dir {
        Some(dir) => dir,
        None => Cache::default_root().map_err(|e| {
            let hint = e.hint();
            AppError::usage(e, hint)
        })?,
    };
    let cache = Cache::new(root);
    safe(&cache)?;
    Ok(cache)
}

/// Refuses a cache that others can write (see [`Cache::check_safe`]), naming it.
fn safe(cache: &Cache) -> Result<(), AppError> {
    cache.check_safe().map_err(|e| {
        let hint = e.hint();
        AppError::failure(e, hint)
    })
}

/// The blob cache a build or pull writes to, checked writable before any request: `--cache-dir`
/// must be (or the run fails at once, naming it); the default location, when it is not (a
/// rootless CI container with `HOME=/nonexistent`), gives way to one under TMPDIR, with a warning
/// that names both.
pub(crate) fn writable_cache(dir: Option<PathBuf>) -> Result<Cache, AppError> {
    if let Some(dir) = dir {
        writable(&dir).map_err(|e| {
            AppError::failure(
                anyhow::Error::new(e).context(format!(
                    "cannot write to the cache directory {}",
                    dir.display()
                )),
                Some(
                    "pass --cache-dir a directory you can write to (it is created if its parent \
                     exists)"
                        .into(),
                ),
            )
        })?;
        let cache = Cache::new(dir);
        safe(&cache)?;
        return Ok(cache);
    }
    let default = Cache::default_root();
    let reason = match &default {
        Ok(root) => match writable(root) {
            Ok(()) => {
                let cache = Cache::new(root.clone());
                safe(&cache)?;
                return Ok(cache);
            }
            Err(e) => format!("{} is not writable ({e})", root.display()),
        },
        Err(e) => e.to_string(),
    };
    let fallback = std::env::temp_dir().join(format!(
        "cks-iso-cache-{}",
        rustix::process::geteuid().as_raw()
    ));
    writable(&fallback).map_err(|e| {
        AppError::failure(
            anyhow::Error::new(e).context(format!(
                "no usable cache: {reason}, and {} is not writable either",
                fallback.display()
            )),
            Some(
                "pass --cache-dir DIR, or set XDG_CACHE_HOME or TMPDIR to a writable place".into(),
            ),
        )
    })?;
    tracing::warn!(
        "the default cache cannot be used: {reason}; using {} instead, which may not last \
         (set --cache-dir or XDG_CACHE_HOME to keep the cache between runs)",
        fallback.display()
    );
    let cache = Cache::new(fallback);
    safe(&cache)?;
    Ok(cache)
}

/// Creates `dir` if needed and proves a file can be made in it.
pub(crate) fn writable(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    tempfile::tempfile_in(dir).map(drop)
}

/// The upstream downloader for these settings, on `client`, reporting to `progress`, keeping
/// downloads in `store` when given.
pub(crate) fn fetcher<'a>(
    client: &'a reqwest::Client,
    settings: &'a Settings,
    store: Option<&'a Cache>,
    progress: &'a dyn Progress,
) -> Fetcher<'a> {
    Fetcher::new(client, &settings.http, &settings.mirrors, store, progress)
}

/// A single-threaded runtime for the subcommands that only fetch metadata.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, AppError> {
    started(tokio::runtime::Builder::new_current_thread().enable_all())
}

/// The two-worker runtime of `build` and `pull`: transfers and archive writing overlap.
pub(crate) fn transfer_runtime() -> Result<tokio::runtime::Runtime, AppError> {
    started(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all(),
    )
}

fn started(builder: &mut tokio::runtime::Builder) -> Result<tokio::runtime::Runtime, AppError> {
    builder.build().map_err(|e| {
        AppError::failure(
            anyhow::Error::new(e).context("cannot start the async runtime"),
            None,
        )
    })
}

/// What a command that builds lends every build of its run ([`Shared`]): the signature checker,
/// the registry client with its cache, and the transfer runtime, made once per process (`build`,
/// `sync`).
pub(crate) struct BuildTools {
    checker: Option<Checker>,
    registry: Registry,
    runtime: tokio::runtime::Runtime,
}

impl BuildTools {
    /// The checker `flags` ask for, the cache (`cache_dir`, else the user's) and a registry client
    /// on `settings`.
    pub(crate) fn open(
        settings: &Settings,
        flags: checker::Flags<'_>,
        cache_dir: Option<PathBuf>,
    ) -> Result<Self, AppError> {
        let checker = checker::select(flags, settings)?;
        let cache = writable_cache(cache_dir)?;
        let runtime = transfer_runtime()?;
        let registry = registry(settings, cache)?;
        Ok(Self {
            checker,
            registry,
            runtime,
        })
    }

    /// What the builds borrow.
    pub(crate) fn shared<'a>(&'a self, settings: &'a Settings) -> Shared<'a> {
        Shared {
            settings,
            registry: &self.registry,
            checker: self.checker.as_ref(),
            runtime: &self.runtime,
        }
    }
}
