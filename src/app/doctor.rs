//! `cks-iso doctor`: the checks of [`crate::doctor`] run in order and printed, one line per
//! check on stdout (`ok` or `FAIL` with a `hint:`) or one JSON object; exit 1 if any fails.

use super::{AppError, net};
use crate::cache::Cache;
use crate::cli::DoctorArgs;
use crate::doctor::{self, Check, Problem, Room};
use crate::image::Arch;
use crate::release::KubeVersion;
use crate::release::check_supported;
use crate::ui::Ui;

/// The version of `doctor --json`'s object, bumped on any change that breaks a reader.
pub const FORMAT: u32 = 1;

/// Counts and prints the checks; with `--json`, keeps them for one object at the end.
#[derive(Default)]
struct Printer {
    total: usize,
    failed: usize,
    /// `Some` with `--json`: every check so far, printed by [`Printer::print_json`].
    json: Option<Vec<Checked>>,
}

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

impl Printer {
    fn print(&mut self, check: Check) {
        self.total += 1;
        self.failed += usize::from(check.result.is_err());
        let (ok, detail, hint) = match check.result {
            Ok(detail) => (true, detail, None),
            Err(problem) => (false, problem.text, problem.hint),
        };
        if let Some(json) = &mut self.json {
            json.push(Checked {
                check: check.what,
                ok,
                detail,
                hint,
            });
            return;
        }
        match ok {
            true => crate::outln!("ok    {}: {detail}", check.what),
            false => crate::outln!("FAIL  {}: {detail}", check.what),
        }
        if let Some(hint) = &hint {
            crate::outln!("      hint: {hint}");
        }
    }

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

/// A failed step of the command's own as a failed check: the error and its causes, its advice.
fn problem(err: &AppError) -> Problem {
    Problem {
        text: err.one_line(),
        hint: err.advice(),
    }
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
    let arches = match args.arches.is_empty() {
        true => vec![Arch::Amd64],
        false => (args.arches.iter())
            .map(|a| Arch::parse(a).map_err(|_| AppError::unknown_arch(a)))
            .collect::<Result<_, _>>()?,
    };
    let mut printer = Printer {
        json: args.json.then(Vec::new),
        ..Printer::default()
    };
    let sink: doctor::Sink<'_> = &mut |check| printer.print(check);
    let settings = net::settings(args.net).map_err(|e| problem(&e));
    let settings = match doctor::configuration(sink, settings.as_ref().map_err(Clone::clone)) {
        true => settings.ok().map(|mut settings| {
            doctor::trusted_root(sink, &settings);
            settings.http.retry.attempts = 1;
            settings
        }),
        false => None,
    };
    let cache = net::cache(args.cache_dir);
    // Only the top line: the cause is the directory named in it.
    let root = (cache.as_ref().map(Cache::root)).map_err(|e| Problem {
        text: e.lines().0,
        hint: e.advice(),
    });
    let tmp = std::env::temp_dir();
    let (cache_ok, tmp_ok) = doctor::directories(sink, root, &tmp);
    if let Some(settings) = &settings {
        let cache = match cache {
            Ok(cache) if cache_ok => cache,
            // The network checks still run, with a scratch cache.
            _ => Cache::new(tmp.join(format!("cks-iso-doctor-{}", std::process::id()))),
        };
        let client = crate::fetch::build_client(&settings.http)?;
        let runtime = net::runtime()?;
        runtime.block_on(doctor::upstreams(sink, settings, &client));
        let registry = net::registry(settings, cache)?;
        runtime.block_on(doctor::registries(sink, settings, &registry))?;
        if let Some(kube) = &kube {
            let tmp = (cache_ok && tmp_ok).then_some(tmp.as_path());
            let build = Room {
                kube,
                arches: &arches,
                tmp,
            };
            runtime.block_on(doctor::room(sink, settings, &client, &registry, build))?;
        }
        if let Some(result) = cloudstack_check(&args.cloudstack_api, settings) {
            let what = "cloudstack api".to_owned();
            let result = result.map_err(|e| problem(&e));
            sink(Check { what, result });
        }
    }
    printer.print_json();
    match printer.failed {
        0 => Ok(()),
        n => Err(AppError::failure(
            anyhow::anyhow!("{n} of {} checks failed", printer.total),
            Some(
                "each FAIL line above has its own hint; run `cks-iso doctor` again once they are \
                 fixed"
                    .into(),
            ),
        )),
    }
}

impl From<doctor::DoctorError> for AppError {
    fn from(err: doctor::DoctorError) -> Self {
        match err {
            doctor::DoctorError::Fetch(e) => e.into(),
            doctor::DoctorError::Image(e) => e.into(),
            doctor::DoctorError::Resolution(e) => e.into(),
        }
    }
}

/// The doctor's check: `None` when nothing is configured anywhere (registering is optional);
/// else where the credentials come from and what `listCapabilities` says with them.
fn cloudstack_check(
    args: &crate::cli::ApiArgs,
    settings: &crate::config::Settings,
) -> Option<Result<String, AppError>> {
    let creds = match super::cloudstack_api::credentials(args, settings) {
        Err(AppError { error, .. })
            if error
                .downcast_ref::<crate::cloudstack::credentials::CredentialsError>()
                .is_some_and(|e| {
                    matches!(
                        e,
                        crate::cloudstack::credentials::CredentialsError::Missing { .. }
                    )
                }) =>
        {
            return None;
        }
        Err(e) => return Some(Err(e)),
        Ok(creds) => creds,
    };
    let source = creds.source.clone();
    let endpoint = crate::fetch::redact(&creds.endpoint);
    Some((|| {
        let http = crate::fetch::build_client_without_redirects(&settings.http)?;
        let api = crate::cloudstack::api::Api::new(http, creds);
        let caps = net::transfer_runtime()?.block_on(api.capabilities())?;
        Ok(format!(
            "{endpoint} answers as CloudStack {} (Kubernetes service {}; arch parameter {}), \
             credentials from {source}",
            caps.cloudstackversion,
            if caps.kubernetesserviceenabled {
                "enabled"
            } else {
                "disabled"
            },
            if caps.has_arch() {
                "yes"
            } else {
                "no: x86_64 only"
            },
        ))
    })())
}
