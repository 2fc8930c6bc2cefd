//! One build as one operation: the composition of the steps that `cks-iso build` runs, owned here
//! so that every caller builds the same way — the command, a test in the same process, and a
//! caller that builds several ISOs in one process.
//!
//! What several builds share is borrowed, never moved through a result ([`Shared`]: the settings,
//! the registry client with its cache, connections and tokens, the signature checker, the async
//! runtime), so one of each serves every build of a process. [`Build::prepare`] turns options
//! into an [`Input`] (a request, or a lock); [`Build::run`] takes it through
//! [`Build::resolve`] → [`Build::realize`] → [`Build::author`], each step also callable alone,
//! and says each step done on the [`Reporter`] ([`Event`]). Every failure is a [`BuildError`].

use std::path::Path;

use super::BuildError;
use super::author::{self, BuiltIso};
use super::prepare::{self, BuildOptions, Input, Prepared, RequestOptions, Setup};
use super::realize::{self, Realized};
use super::resolve::{self, ResolvedVersions};
use crate::config::Settings;
use crate::fetch::build_client;
use crate::lock::Lock;
use crate::registry::Registry;
use crate::reporter::{Event, Reporter};
use crate::trust::checker::Checker;
use crate::trust::sign;
use crate::upstream::label;

/// What every build of a process borrows.
#[derive(Clone, Copy)]
pub struct Shared<'a> {
    /// Network settings: mirrors, retries, offline; the configuration's add-ons and release.
    pub settings: &'a Settings,
    /// The registry client; its cache keeps every download.
    pub registry: &'a Registry,
    /// The signature checker; `None` with `--signatures off` (or for a resolve only).
    pub checker: Option<&'a Checker>,
    /// The runtime the network steps run on.
    pub runtime: &'a tokio::runtime::Runtime,
}

/// What a build made: its ISOs and the run's lock.
#[derive(Debug, Clone)]
pub struct Built {
    /// The ISOs, one per architecture, in the request's order.
    pub isos: Vec<BuiltIso>,
    /// The run's lock: the lock realized, with what was judged and staged.
    pub lock: Lock,
    /// The label the Kubernetes release was read from (`stable-1.33`), if one was given.
    pub kubernetes_label: Option<String>,
}

impl Built {
    /// The versions of the run's lock: one line for a summary, and the same as fields
    /// (`kubernetes`, the label when one was given, and every field of [`ResolvedVersions`]).
    pub fn versions(&self) -> (String, serde_json::Value) {
        let mut line = self.lock.versions_line();
        if let Some(label) = &self.kubernetes_label {
            line = format!("{line} (kubernetes from {label})");
        }
        let versions = ResolvedVersions::of_lock(&self.lock);
        let mut value = serde_json::to_value(&versions).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            let kubernetes = self.lock.request.kubernetes.clone();
            object.insert("kubernetes".into(), kubernetes.into());
            if let Some(label) = &self.kubernetes_label {
                object.insert("kubernetes_label".into(), label.as_str().into());
            }
        }
        (line, value)
    }
}

/// One build, on what it borrows, reporting to `reporter`.
pub struct Build<'a> {
    shared: Shared<'a>,
    reporter: &'a dyn Reporter,
}

impl<'a> Build<'a> {
    /// A build on `shared`, reporting to `reporter`.
    pub fn new(shared: Shared<'a>, reporter: &'a dyn Reporter) -> Self {
        Self { shared, reporter }
    }

    /// What `options` ask `build` for, checked before anything is fetched: [`Setup::new`],
    /// [`Setup::settle`] and [`Build::prepare_setup`] in one.
    pub fn prepare(&self, options: &BuildOptions) -> Result<Input, BuildError> {
        let mut setup = Setup::new(options)?;
        setup.settle(self.shared.settings)?;
        self.prepare_setup(setup)
    }

    /// The rest of the preparation of `setup`: a version label read into its release (the
    /// request then set up and settled), the output directory checked writable (what killed
    /// runs left there removed), and with `--from-iso` the cache filled from the ISOs.
    pub fn prepare_setup(&self, setup: Setup) -> Result<Input, BuildError> {
        let settings = self.shared.settings;
        let (options, started, settled) = setup.parts();
        let (mut prepared, lock) = match started {
            Some(started) => started,
            None => (self.request_unsettled(&options.request)?, None),
        };
        if !settled {
            prepare::settle(&options.request, settings, &mut prepared, lock.is_some())?;
        }
        let output = &prepared.request.output;
        writable(output).map_err(|source| BuildError::OutputDir {
            dir: output.clone(),
            source,
        })?;
        // What killed runs (SIGKILL, a crash) left: their work dirs and half-written ISOs.
        for dir in [std::env::temp_dir(), output.clone()] {
            for path in crate::atomic::sweep_stale(&dir) {
                tracing::info!("removed {}, left by a run that was killed", path.display());
            }
        }
        let kubernetes = &prepared.request.kubernetes;
        prepared.lock_file = (options.lock_file.as_deref())
            .map(|path| super::matrix::lock_file_for(path, kubernetes));
        // A wrong key path, format or password stops the build before anything is fetched.
        if let Some(path) = &options.sign_key {
            prepared.sign_key = Some(std::sync::Arc::new(crate::trust::key::load_key(path)?));
        }
        if let (Some(_), Some(services)) = (&options.sign_key, &options.tlog) {
            let log = crate::trust::keyless::KeyLog::new(services, &keyless_defaults(settings))?;
            prepared.key_log = Some(std::sync::Arc::new(log));
        }
        if let Some(keyless) = &options.keyless {
            let signer =
                crate::trust::keyless::KeylessSigner::new(keyless, &keyless_defaults(settings))?;
            prepared.keyless = Some(std::sync::Arc::new(signer));
        }
        let Some(lock) = lock else {
            return Ok(Input::Request(prepared));
        };
        if let (Some(path), false) = (&options.locked, options.from_iso.is_empty()) {
            let cache = self.shared.registry.cache();
            let offline = settings.http.offline;
            crate::carry::from_iso(cache, &lock, path, &options.from_iso, offline)?;
        }
        Ok(Input::Locked(prepared, Box::new(lock)))
    }

    /// The request `options` ask for, set up and settled as `build` settles it (no lock, no
    /// output directory): what `resolve --lock` resolves.
    pub fn request(&self, options: &RequestOptions) -> Result<Prepared, BuildError> {
        let mut prepared = self.request_unsettled(options)?;
        prepare::settle(options, self.shared.settings, &mut prepared, false)?;
        Ok(prepared)
    }

    /// The request of `options` set up, a version label given for Kubernetes first read into
    /// the release it names, so that the rest of the build, the default ISO name included, is
    /// that release's.
    fn request_unsettled(&self, options: &RequestOptions) -> Result<Prepared, BuildError> {
        let mut options = options.clone();
        if let Some(text) = prepare::label_text(&options) {
            let cache = Some(self.shared.registry.cache());
            let read = release_of_label(&text, self.shared.settings, cache, self.shared.runtime)?;
            if let Some((label, version)) = read {
                match &mut options.kubernetes {
                    Some(k) => *k = version,
                    None => options.positional[1] = version,
                }
                options.kubernetes_label = Some(label);
            }
        }
        prepare::fresh(&options)
    }

    /// The request resolved into the lock a build of it realizes (metadata only: the manifests
    /// taken into the cache, published checksums, image digests), in a scratch directory under
    /// `work`.
    pub fn resolve(&self, prepared: &Prepared, work: &Path) -> Result<Lock, BuildError> {
        let inputs = resolve::LockInputs {
            request: &prepared.request,
            partial: prepared.partial.clone(),
            volume_id: prepared.volume_id.as_str(),
            epoch: prepared.epoch,
            settings: self.shared.settings,
            registry: self.shared.registry,
            work,
        };
        let lock = self
            .shared
            .runtime
            .block_on(resolve::resolve_lock(inputs))?;
        self.reporter.event(&Event::LockResolved { lock: &lock });
        Ok(lock)
    }

    /// Exactly what `lock` names fetched and verified into `work`, for every architecture of
    /// the request; `tags_from_cache`: the lock was resolved `--offline`, its images are what the
    /// cache's index named (see [`realize::Inputs::tags_from_cache`]).
    pub fn realize(
        &self,
        prepared: &Prepared,
        lock: &Lock,
        tags_from_cache: bool,
        work: &Path,
    ) -> Result<Realized, BuildError> {
        let inputs = realize::Inputs {
            request: &prepared.request,
            lock,
            tags_from_cache,
            settings: self.shared.settings,
            registry: self.shared.registry,
            checker: self.shared.checker,
            work,
        };
        let realized = self
            .shared
            .runtime
            .block_on(realize::realize(inputs, self.reporter))?;
        for a in &realized.arches {
            let (files, images) = (a.files.len(), a.images.len());
            let event = Event::ArchRealized {
                arch: a.arch,
                files,
                images,
            };
            self.reporter.event(&event);
        }
        Ok(realized)
    }

    /// The ISOs written from what was `realized` under `lock` (the run's lock), with their
    /// `.sha256` and SBOMs; all or none.
    pub fn author(
        &self,
        prepared: &Prepared,
        realized: &Realized,
        lock: &Lock,
    ) -> Result<Vec<BuiltIso>, BuildError> {
        let cache = self.shared.registry.cache();
        // The run's lock holds the date chosen: given, locked or taken from the images.
        let (volume_id, epoch) = (&prepared.volume_id, lock.epoch);
        let run = author::Run {
            request: &prepared.request,
            fetched: realized,
            lock,
            volume_id,
            epoch,
            cache,
        };
        let built = author::all(run, self.reporter)?;
        for b in &built {
            let event = Event::IsoWritten {
                path: &b.path,
                arch: b.arch,
                size: b.size,
                sha256: &b.sha256,
            };
            self.reporter.event(&event);
        }
        Ok(built)
    }

    /// The whole build, in a private work directory removed on success, error and Ctrl-C: the
    /// request resolved (unless `input` is a lock), the lock realized, the run's lock recorded,
    /// the ISOs written and the run's lock written where asked (or no ISO is left).
    pub fn run(&self, input: Input) -> Result<Built, BuildError> {
        let work = prepare::work_dir("build")?;
        let (prepared, realized, lock) = self.realize_input(input, work.path())?;
        let isos = self.author(&prepared, &realized, &lock)?;
        // Signed with the sha256 the writer computed: no ISO is read again.
        if let Some(key) = &prepared.sign_key
            && let Err(e) = isos.iter().try_for_each(|b| match &prepared.key_log {
                None => sign::sign_iso(&b.path, &b.sha256, key),
                Some(log) => {
                    let digest = hex::decode(&b.sha256).ok().and_then(|d| d.try_into().ok());
                    let digest: [u8; 32] = digest.expect("the writer's sha256 is 64 hex digits");
                    (self.shared.runtime).block_on(log.sign_iso(&b.path, &digest, key))
                }
            })
        {
            remove(&isos);
            return Err(e.into());
        }
        if let Some(signer) = &prepared.keyless
            && let Err(e) = isos.iter().try_for_each(|b| {
                let digest = hex::decode(&b.sha256).ok().and_then(|d| d.try_into().ok());
                let digest: [u8; 32] = digest.expect("the writer's sha256 is 64 hex digits");
                self.shared
                    .runtime
                    .block_on(signer.sign_iso(&b.path, &digest))
                    .map(drop)
            })
        {
            remove(&isos);
            return Err(e.into());
        }
        if let Some(path) = &prepared.lock_file
            && let Err(e) = author::write_lock(path, &lock)
        {
            remove(&isos);
            return Err(e.into());
        }
        drop(work);
        Ok(Built {
            isos,
            lock,
            kubernetes_label: prepared.request.kubernetes_label.clone(),
        })
    }

    /// The run's lock a build of `input` writes (its `--lock-file`, the lock inside its ISOs),
    /// with everything that lock names fetched into the cache and verified, and no ISO written:
    /// what `sync --plan --write-locks` gives the far side of an air gap to build `--locked`.
    pub fn lock_only(&self, input: Input) -> Result<Lock, BuildError> {
        let work = prepare::work_dir("lock")?;
        let (_, _, lock) = self.realize_input(input, work.path())?;
        drop(work);
        Ok(lock)
    }

    /// [`Build::run`] up to the ISOs: the request resolved (unless `input` is a lock), the lock
    /// realized into `work`, and the run's lock recorded.
    fn realize_input(
        &self,
        input: Input,
        work: &Path,
    ) -> Result<(Prepared, Realized, Lock), BuildError> {
        let (prepared, lock, tags_from_cache) = match input {
            Input::Locked(prepared, lock) => (prepared, *lock, false),
            Input::Request(prepared) => {
                let lock = self.resolve(&prepared, work)?;
                (prepared, lock, self.shared.settings.http.offline)
            }
        };
        let realized = self.realize(&prepared, &lock, tags_from_cache, work)?;
        let (request, volume_id) = (&prepared.request, prepared.volume_id.as_str());
        let epoch = prepared.epoch.unwrap_or(lock.epoch);
        let lock = realized.lock(&lock, request, volume_id, epoch);
        Ok((prepared, realized, lock))
    }
}

/// When `text` is a version label (`stable-1.33`, or `1.33` for it), the release it names, read
/// through the mirrors of `settings` (kept in `cache` when given, and taken from there with
/// `--offline`), logged with where it came from: `(label, release)`.
pub fn release_of_label(
    text: &str,
    settings: &Settings,
    cache: Option<&crate::cache::Cache>,
    runtime: &tokio::runtime::Runtime,
) -> Result<Option<(String, String)>, BuildError> {
    let Some(label) = label::label(text) else {
        return Ok(None);
    };
    let version = runtime.block_on(async {
        let client = build_client(&settings.http)?;
        let fetcher =
            crate::upstream::Fetcher::new(&client, &settings.http, &settings.mirrors, cache, &());
        Ok::<_, BuildError>(label::resolve_label(&fetcher, &label).await?)
    })?;
    tracing::info!(
        "{label} is Kubernetes v{version} ({})",
        label::label_url(&label)
    );
    Ok(Some((label, version.to_string())))
}

/// The settings of the configuration file `config` with no flag over it, as `build --config
/// FILE` loads them: for a caller that builds in its own process.
pub fn settings(config: &Path) -> Result<Settings, crate::config::ConfigError> {
    crate::config::load(crate::config::Network {
        config: Some(config.to_owned()),
        ..Default::default()
    })
}

/// What keyless signing takes from the settings: HTTP, `rekor-url:`, `trusted-root:`.
pub fn keyless_defaults(settings: &Settings) -> crate::trust::keyless::Defaults<'_> {
    crate::trust::keyless::Defaults {
        http: &settings.http,
        rekor_url: settings.rekor_url.as_deref(),
        trusted_root: settings.trusted_root.as_deref(),
    }
}

/// Creates `dir` if needed and proves a file can be made in it.
fn writable(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    tempfile::tempfile_in(dir).map(drop)
}

/// Removes what a failed build wrote: the ISOs with their `.sha256` and SBOMs, and the
/// signatures `--sign-key` wrote beside them.
fn remove(isos: &[BuiltIso]) {
    author::remove(isos);
    for iso in isos {
        for suffix in [sign::SIG_SUFFIX, sign::BUNDLE_SUFFIX] {
            let _ = std::fs::remove_file(sign::beside(&iso.path, suffix));
        }
    }
}
