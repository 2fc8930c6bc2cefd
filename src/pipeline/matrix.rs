//! Several builds in one process, the second caller of [`Build`]: every Kubernetes release asked
//! for (or every lock) is prepared, then built at the same time as the others, each through the
//! very [`Build::run`] a single build takes, so each ISO is the single build's byte for byte.
//!
//! What the builds share is the one [`Shared`] they borrow: the registry client with its cache,
//! connections, token cache and single-flight per blob (a blob two releases share is downloaded
//! once), the signature checker, the runtime, and the one [`Reporter`]. Each build runs on its own
//! thread, whose network steps `block_on` the shared runtime; so the releases resolve and realize
//! concurrently while each build's steps keep their order. A build that fails stops no other:
//! each [`Outcome`] holds its own result.

use std::path::{Path, PathBuf};

use super::{Build, BuildError, BuildOptions, Built, Input, Setup, Shared};
use crate::reporter::Reporter;

/// What `--lock-file` takes for the release of each build (`locks/{kubernetes}.lock`).
pub const KUBERNETES_PLACEHOLDER: &str = "{kubernetes}";

/// One build of a matrix: how it was asked for and what became of it.
#[derive(Debug)]
pub struct Outcome {
    /// As the user named it: the release (`1.33.1`, `stable-1.33`) or the lock's path.
    pub asked: String,
    /// The build, or why it failed.
    pub result: Result<Built, BuildError>,
}

/// The options of one build per release in `kubernetes` (or per lock in `locked`), from the
/// options `base` of them all: `(as asked, options)`. Refused before anything is read: both
/// lists at once, `--name` for several builds (their ISOs would share it) and a `--lock-file`
/// without [`KUBERNETES_PLACEHOLDER`] for several (their locks would share it).
pub fn options_for(
    base: &BuildOptions,
    kubernetes: &[String],
    locked: &[PathBuf],
) -> Result<Vec<(String, BuildOptions)>, BuildError> {
    let several = kubernetes.len().max(locked.len());
    if several > 1 && !kubernetes.is_empty() && !locked.is_empty() {
        return Err(BuildError::Several {
            flag: "--kubernetes with --locked",
            count: several,
            why: "each lock names its own release",
            hint: "give several --locked alone (each builds the release it locks), or several \
                   --kubernetes alone",
        });
    }
    if several > 1 && base.request.name.is_some() {
        return Err(BuildError::Several {
            flag: "--name",
            count: several,
            why: "each release's ISOs need their own name",
            hint: "leave --name out: each release's ISOs are then named setup-v<release>-<arch>.iso",
        });
    }
    let template = (base.lock_file.as_ref()).is_some_and(|p| has_placeholder(p));
    if several > 1 && base.lock_file.is_some() && !template {
        return Err(BuildError::Several {
            flag: "--lock-file without {kubernetes}",
            count: several,
            why: "each release's lock needs its own file",
            hint: "put {kubernetes} in the path for the release: --lock-file 'locks/{kubernetes}.lock'",
        });
    }
    let each = |asked: String, options: BuildOptions| (asked, options);
    Ok(match (kubernetes, locked) {
        ([], []) => vec![each(String::new(), base.clone())],
        ([], locks) => (locks.iter())
            .map(|lock| {
                let locked = Some(lock.clone());
                let options = BuildOptions {
                    locked,
                    ..base.clone()
                };
                each(lock.display().to_string(), options)
            })
            .collect(),
        (versions, locks) => (versions.iter())
            .map(|version| {
                let mut options = BuildOptions {
                    locked: locks.first().cloned(),
                    ..base.clone()
                };
                options.request.kubernetes = Some(version.clone());
                each(version.clone(), options)
            })
            .collect(),
    })
}

/// `path` with [`KUBERNETES_PLACEHOLDER`] replaced by the release `kubernetes` (without `v`).
pub fn lock_file_for(path: &Path, kubernetes: &str) -> PathBuf {
    let text = path.to_string_lossy();
    match has_placeholder(path) {
        true => {
            let bare = kubernetes.trim().trim_start_matches('v');
            PathBuf::from(text.replace(KUBERNETES_PLACEHOLDER, bare))
        }
        false => path.to_owned(),
    }
}

fn has_placeholder(path: &Path) -> bool {
    path.to_string_lossy().contains(KUBERNETES_PLACEHOLDER)
}

/// Several builds on one [`Shared`], reporting to one [`Reporter`].
pub struct Matrix<'a> {
    shared: Shared<'a>,
    reporter: &'a (dyn Reporter + Sync),
}

impl<'a> Matrix<'a> {
    /// Builds on `shared`, reporting to `reporter`.
    pub fn new(shared: Shared<'a>, reporter: &'a (dyn Reporter + Sync)) -> Self {
        Self { shared, reporter }
    }

    /// [`Matrix::prepare`], then [`Matrix::run`].
    pub fn build(&self, setups: Vec<(String, Setup)>) -> Vec<Outcome> {
        self.run(self.prepare(setups))
    }

    /// Each setup's preparation ([`Build::prepare_setup`]: a label read, the output checked), in
    /// the order given; one whose ISOs or lock file an earlier one writes fails
    /// ([`BuildError::SameIsos`]) rather than overwrite them.
    pub fn prepare(
        &self,
        setups: Vec<(String, Setup)>,
    ) -> Vec<(String, Result<Input, BuildError>)> {
        let build = Build::new(self.shared, self.reporter);
        let mut taken: Vec<(String, PathBuf)> = Vec::new();
        let mut prepared = Vec::new();
        for (asked, setup) in setups {
            let input = build.prepare_setup(setup).and_then(|input| {
                let paths = written(&input);
                let earlier = taken.iter().find(|(_, p)| paths.contains(p));
                if let Some((other, path)) = earlier {
                    return Err(BuildError::SameIsos {
                        path: path.clone(),
                        other: other.clone(),
                    });
                }
                taken.extend(paths.into_iter().map(|p| (asked.clone(), p)));
                Ok(input)
            });
            prepared.push((asked, input));
        }
        prepared
    }

    /// Every prepared input built at the same time, each on its own thread through
    /// [`Build::run`]; a failed preparation is its build's outcome. The outcomes come in the
    /// order of `prepared`.
    pub fn run(&self, prepared: Vec<(String, Result<Input, BuildError>)>) -> Vec<Outcome> {
        let (shared, reporter) = (self.shared, self.reporter);
        std::thread::scope(|scope| {
            let running: Vec<_> = (prepared.into_iter())
                .map(|(asked, input)| {
                    let thread = std::thread::Builder::new().name(format!("build {asked}"));
                    let name = asked.clone();
                    let handle = thread.spawn_scoped(scope, move || {
                        let _span = tracing::info_span!("build", kubernetes = %name).entered();
                        input.and_then(|input| Build::new(shared, reporter).run(input))
                    });
                    (asked, handle)
                })
                .collect();
            (running.into_iter())
                .map(|(asked, handle)| {
                    let result = match handle {
                        Ok(handle) => handle
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                        Err(e) => Err(BuildError::Thread(e)),
                    };
                    Outcome { asked, result }
                })
                .collect()
        })
    }
}

/// What a prepared build writes: each ISO's path and the lock file, if asked.
fn written(input: &Input) -> Vec<PathBuf> {
    let prepared = match input {
        Input::Request(prepared) | Input::Locked(prepared, _) => prepared,
    };
    let request = &prepared.request;
    let isos = (request.arches.iter())
        .map(|arch| request.output.join(crate::plan::iso_name(request, *arch)));
    isos.chain(prepared.lock_file.clone()).collect()
}
