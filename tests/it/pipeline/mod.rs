//! The build pipeline called in this process ([`cks_iso::pipeline::Build`]) against the test
//! world, with a recording reporter: what a build made is judged on its [`Built`] value, the lock
//! and the [`BuildError`] variant, not on a command's stdout. New in-process tests of the
//! pipeline go here, one file per concern (`build.rs`: whole builds; `errors.rs`: each failure's
//! variant, hint and exit kind; `locks.rs`: locked builds held to their lock; `signatures.rs`:
//! the evidence locked and refused; `matrix.rs`: several releases built at once); what is truly
//! the CLI (exit codes, messages, `--json`) stays in the subprocess suites.

mod build;
mod errors;
mod locks;
mod matrix;
mod signatures;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use cks_iso::cache::Cache;
use cks_iso::pipeline::{
    self, Build, BuildError, BuildOptions, Built, RequestOptions, Settings, Shared,
};
use cks_iso::progress::Progress;
use cks_iso::registry::{AuthFiles, Registry, RegistryConfig, RegistryMirror, Routes};
use cks_iso::reporter::{Event, Reporter};
use cks_iso_testworld::world::World;

/// The epoch every build here is dated with, so two builds compare byte for byte.
const EPOCH: i64 = 1_700_000_000;

/// A reporter that keeps every step event as a line (`lock 1.33.1 amd64,arm64`,
/// `realized amd64 …`, `written amd64 …`) and shows no progress.
#[derive(Default)]
struct Recording(Mutex<Vec<String>>);

impl Recording {
    fn events(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl Reporter for Recording {
    fn items(&self, _what: &str) -> Box<dyn Progress> {
        Box::new(())
    }

    fn bytes_group(&self, whats: &[&str]) -> Vec<Box<dyn Progress>> {
        whats
            .iter()
            .map(|_| Box::new(()) as Box<dyn Progress>)
            .collect()
    }

    fn event(&self, event: &Event<'_>) {
        let line = match event {
            Event::LockResolved { lock } => {
                format!("lock {} {}", lock.request.kubernetes, lock.arch_list())
            }
            Event::ArchRealized {
                arch,
                files,
                images,
            } => format!("realized {} {files} files {images} images", arch.k8s()),
            Event::IsoWritten {
                path, arch, size, ..
            } => {
                assert_eq!(std::fs::metadata(path).unwrap().len(), *size);
                format!("written {}", arch.k8s())
            }
        };
        self.0.lock().unwrap().push(line);
    }
}

/// What several builds borrow, made the way `cks-iso build` makes them from the world's
/// configuration: settings, a registry client on the cache at `cache`, the signature checker the
/// configuration asks for, a runtime.
struct Tools {
    settings: Settings,
    registry: Registry,
    checker: Option<cks_iso::trust::checker::Checker>,
    runtime: tokio::runtime::Runtime,
}

impl Tools {
    fn open(world: &World, cache: &Path) -> Self {
        Self::with(world, cache, None, false)
    }

    /// [`Tools::open`] with `--signatures MODE` and `--offline`.
    fn with(world: &World, cache: &Path, signatures: Option<&str>, offline: bool) -> Self {
        let mut settings = pipeline::settings(world.config_path()).unwrap();
        settings.http.offline = offline;
        Self::on(settings, cache, signatures)
    }

    /// [`Tools::open`] with the world's registry reached through `proxy` (`http://host:port`,
    /// for example a fault proxy that logs each request).
    fn through(world: &World, cache: &Path, proxy: &str) -> Self {
        let mut settings = pipeline::settings(world.config_path()).unwrap();
        let registry = world.registry_url();
        for url in settings.registry_mirrors.values_mut() {
            *url = url.replace(&registry, proxy);
        }
        let host = proxy.trim_start_matches("http://").to_owned();
        settings.insecure_registries.push(host.clone());
        settings.http.plain_http_hosts.push(host);
        Self::on(settings, cache, None)
    }

    fn on(settings: Settings, cache: &Path, signatures: Option<&str>) -> Self {
        let mirrors = (settings.registry_mirrors.iter())
            .map(|(registry, url)| format!("{registry}={url}").parse::<RegistryMirror>())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let config = RegistryConfig {
            routes: Routes {
                mirrors,
                insecure: settings.insecure_registries.clone(),
            },
            auth: AuthFiles::from_env(settings.authfile.clone()),
            jobs: settings.jobs,
            adaptive: settings.jobs_adaptive,
        };
        let registry = Registry::new(config, &settings.http, Cache::new(cache)).unwrap();
        let flags = cks_iso::trust::checker::Flags {
            mode: signatures,
            trusted_root: None,
            policy: None,
            rekor_url: None,
        };
        let checker = cks_iso::trust::checker::select(flags, &settings).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        Self {
            settings,
            registry,
            checker,
            runtime,
        }
    }

    fn shared(&self) -> Shared<'_> {
        Shared {
            settings: &self.settings,
            registry: &self.registry,
            checker: self.checker.as_ref(),
            runtime: &self.runtime,
        }
    }
}

/// The world's request for `arches`, written to `output`.
fn request(world: &World, arches: &[&str], output: &Path) -> RequestOptions {
    RequestOptions {
        kubernetes: Some(world.kubernetes().to_owned()),
        arches: arches.iter().map(|a| (*a).to_owned()).collect(),
        output: Some(output.to_owned()),
        network: Some(world.network_url().to_owned()),
        dashboard: Some(world.dashboard_url().to_owned()),
        source_date_epoch: Some(EPOCH),
        ..RequestOptions::default()
    }
}

/// Prepares and runs a build of `options` on `tools`, recording its events.
fn build(tools: &Tools, options: &BuildOptions) -> (Result<Built, BuildError>, Vec<String>) {
    let recording = Recording::default();
    let build = Build::new(tools.shared(), &recording);
    let built = build.prepare(options).and_then(|input| build.run(input));
    (built, recording.events())
}

/// `e`'s message and each of its causes', joined by `: ` as the command prints them.
fn causes(e: &BuildError) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// The files directly in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}
