//! What `cks-iso doctor` checks, without building, of what a build depends on: the
//! configuration, the trusted root, the cache dir and TMPDIR, every mirror and registry (with
//! authentication as configured), the Rekor server, the git endpoint, and for a Kubernetes
//! version the room a build needs. A library module so that the checks are data the command
//! prints (a line each, or one JSON object), not prints buried in the command.
//!
//! Each check is handed to the caller as soon as it is done ([`Check`]); a failed one carries
//! what went wrong and what to do ([`Problem`]) and the next checks still run. Each network check
//! is one attempt: doctor reports what fails, it does not wait it out. Only what stops the checks
//! altogether is an error ([`DoctorError`]).

mod network;
mod room;
mod trust;

use std::path::{Path, PathBuf};

pub use network::{registries, upstreams};
pub use room::{Room, room};
pub use trust::trusted_root;

use crate::config::Settings;
use crate::env;

/// One check done: what was checked, as the line names it (`configuration`, `mirror …`), and
/// the `ok` detail or the problem.
pub struct Check {
    /// What was checked.
    pub what: String,
    /// The detail of a passed check, or why it failed.
    pub result: Result<String, Problem>,
}

/// A failed check: what went wrong, with its causes on one line, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What went wrong.
    pub text: String,
    /// What the user can do, if anything.
    pub hint: Option<String>,
}

impl Problem {
    /// A problem told in words.
    pub fn new(text: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            hint: Some(hint.into()),
        }
    }

    /// An error and its distinct causes on one line, with `hint` (else the full-disk advice).
    pub fn of(err: &(dyn std::error::Error + 'static), hint: Option<String>) -> Self {
        Self {
            text: crate::failure::one_line(err),
            hint: crate::failure::advice(err, hint),
        }
    }
}

/// Where each check goes as soon as it is done.
pub type Sink<'a> = &'a mut dyn FnMut(Check);

/// Hands `sink` one check; whether it passed.
pub(crate) fn report(sink: Sink<'_>, what: &str, result: Result<String, Problem>) -> bool {
    let ok = result.is_ok();
    sink(Check {
        what: what.to_owned(),
        result,
    });
    ok
}

/// Why the checks could not go on: an error no check stands for.
#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    /// The HTTP client could not be built from the settings.
    #[error(transparent)]
    Fetch(#[from] crate::fetch::FetchError),
    /// A registry reference of the checks does not parse.
    #[error(transparent)]
    Image(#[from] crate::image::ImageError),
    /// The build to size cannot be resolved from its inputs.
    #[error(transparent)]
    Resolution(#[from] crate::pipeline::resolve::ResolutionError),
}

/// Reports the configuration: the file that parses, or that none is used; `loaded` is the
/// outcome of loading it.
pub fn configuration(sink: Sink<'_>, loaded: Result<&Settings, Problem>) -> bool {
    let detail = loaded.map(|settings| match &settings.source {
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
    });
    report(sink, "configuration", detail)
}

/// Reports the cache dir (`root`, or why there is none) and TMPDIR writable, creating the cache
/// dir; whether each passed.
pub fn directories(sink: Sink<'_>, root: Result<&Path, Problem>, tmp: &Path) -> (bool, bool) {
    let cache = root.and_then(|root| {
        writable(root, true).map_err(|e| {
            Problem::new(
                e.to_string(),
                "pass --cache-dir a directory you can write to (or set XDG_CACHE_HOME)",
            )
        })
    });
    let cache_ok = report(sink, "cache dir", cache);
    let tmp_ok = report(
        sink,
        &format!("{} {}", env::TMPDIR.name, tmp.display()),
        writable(tmp, false).map_err(|e| {
            Problem::new(
                e.to_string(),
                "set TMPDIR to a writable directory with room for the images",
            )
        }),
    );
    (cache_ok, tmp_ok)
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
    dir: PathBuf,
    /// Whether creating it failed, rather than writing in it.
    create: bool,
    source: std::io::Error,
}

/// What a reachable server's answer to a GET of its base URL means: a file server's root
/// often answers 403 or 404, which says nothing against the files under it.
fn answered(status: u16) -> String {
    match status {
        200..=399 => format!("answers (HTTP {status})"),
        _ => format!("reachable (HTTP {status} for the base URL itself, as file servers answer)"),
    }
}

/// An error with its causes, as `anyhow`'s `{:#}` writes it: every cause, joined by `: `.
fn chained(err: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(err), |&e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

fn size(bytes: u64) -> String {
    indicatif::HumanBytes(bytes).to_string()
}
