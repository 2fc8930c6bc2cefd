//! `cks-iso register`, `build --register` and the doctor's CloudStack check: wiring only — the
//! ISOs read, the credentials found, the client built, the outcome printed. The work is in
//! [`crate::cloudstack`].

use std::time::Duration;

use super::{AppError, net};
use crate::cli::{ApiArgs, BuildRegisterArgs, RegisterArgs, RegisterOptions};
use crate::cloudstack::credentials::{self, Credentials, CredentialsError};
use crate::cloudstack::run::{self, Outcome, Target};
use crate::cloudstack::{Api, IsoToRegister, Options, RegistrationError};
use crate::config::Settings;
use crate::env;

impl From<RegistrationError> for AppError {
    fn from(err: RegistrationError) -> Self {
        let hint = err.hint();
        Self::failure(err, hint)
    }
}

impl From<crate::cloudstack::ApiError> for AppError {
    fn from(err: crate::cloudstack::ApiError) -> Self {
        let hint = err.hint();
        Self::failure(err, hint)
    }
}

impl From<CredentialsError> for AppError {
    fn from(err: CredentialsError) -> Self {
        let hint = Some(err.hint());
        Self::usage(err, hint)
    }
}

impl From<crate::cloudstack::IsoError> for AppError {
    fn from(err: crate::cloudstack::IsoError) -> Self {
        Self::usage(
            err,
            Some("give ISOs cks-iso built: their versions.txt says the version and arch".into()),
        )
    }
}

/// Finds the credentials (never printing them); `-v` names where they came from.
pub(crate) fn credentials(args: &ApiArgs, settings: &Settings) -> Result<Credentials, AppError> {
    let flags = credentials::Flags {
        url: args.api_url.clone(),
        api_key: args.api_key.clone(),
        secret_key_file: args.secret_key_file.clone(),
        profile: args.profile.clone(),
        config: settings.cloudstack_api.clone().map(|api| {
            let file = settings
                .source
                .as_ref()
                .map_or("the configuration file".into(), |p| p.display().to_string());
            (file, api)
        }),
    };
    let home = env::HOME.get().map(std::path::PathBuf::from);
    let cwd = std::env::current_dir().unwrap_or_default();
    let creds = credentials::find(&flags, home.as_deref(), &cwd)?;
    for warning in &creds.warnings {
        tracing::warn!("{warning}");
    }
    tracing::debug!(
        "CloudStack API {}, credentials from {}",
        crate::fetch::redact(&creds.endpoint),
        creds.source
    );
    Ok(creds)
}

/// The API client and a plain client for the URL checks, neither following redirects.
pub(crate) fn clients(
    args: &ApiArgs,
    settings: &Settings,
) -> Result<(Api, reqwest::Client), AppError> {
    let creds = credentials(args, settings)?;
    let http = crate::fetch::build_client_without_redirects(&settings.http)?;
    Ok((Api::new(http.clone(), creds), http))
}

fn options(o: &RegisterOptions) -> Options {
    Options {
        min_cpu: o.min_cpu,
        min_memory: o.min_memory,
        zones: o.zones.clone(),
        replace: o.replace,
        retire: o.retire,
        wait: !o.no_wait,
        timeout: Duration::from_secs(o.timeout),
        poll: Duration::from_secs_f64(o.poll_interval.max(0.05)),
    }
}

/// `base/<file name>` for each ISO.
fn targets(isos: Vec<IsoToRegister>, base: &str) -> Vec<Target> {
    let base = base.trim_end_matches('/');
    isos.into_iter()
        .map(|iso| Target {
            url: format!("{base}/{}", iso.file_name()),
            iso,
        })
        .collect()
}

fn register(
    targets: &[Target],
    api: &ApiArgs,
    o: &RegisterOptions,
    settings: &Settings,
) -> Result<Vec<Outcome>, AppError> {
    let (api, http) = clients(api, settings)?;
    let runtime = net::transfer_runtime()?;
    Ok(runtime.block_on(run::register(&api, &http, targets, &options(o)))?)
}

/// `cks-iso register`.
pub fn run(args: RegisterArgs) -> Result<(), AppError> {
    let settings = net::settings(args.net)?;
    let isos = args
        .isos
        .iter()
        .map(|p| IsoToRegister::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    let targets = match (&args.url, &args.publish_url) {
        (Some(url), _) => {
            let [iso] = <[IsoToRegister; 1]>::try_from(isos).map_err(|isos| {
                AppError::usage(
                    anyhow::anyhow!(
                        "--url names one ISO's URL, but {} ISOs are given",
                        isos.len()
                    ),
                    Some("register one ISO per --url, or give --publish-url BASE".into()),
                )
            })?;
            vec![Target {
                iso,
                url: url.clone(),
            }]
        }
        (None, Some(base)) => targets(isos, base),
        (None, None) => unreachable!("clap requires --url or --publish-url"),
    };
    signed_as_required(&args.isos, &args.signer, &settings)?;
    let outcomes = register(&targets, &args.api, &args.options, &settings)?;
    print(&outcomes, args.json);
    Ok(())
}

/// With a signer policy (flags, else the configuration's `iso-signer-policy:`), every ISO's
/// signature must verify before anything is sent to CloudStack; each refusal is named.
fn signed_as_required(
    isos: &[std::path::PathBuf],
    signer: &crate::cli::SignerArgs,
    settings: &Settings,
) -> Result<(), AppError> {
    let mut flags = signer.flags();
    if flags.policy.is_none() {
        flags.policy = settings.iso_signer_policy.as_deref();
    }
    let Some(signers) = crate::trust::sign::signers(&flags)? else {
        return Ok(());
    };
    let root = crate::trust::sign::root_for(
        &signers,
        signer.signer_trusted_root.as_deref(),
        settings.trusted_root.as_deref(),
    )?;
    let mut refused = 0;
    for iso in isos {
        let digest = crate::trust::sign::hash(iso)?;
        match signers.check(iso, &digest, &root, crate::trust::now()) {
            Ok(s) => tracing::info!(
                "{}: signed by {}, {}",
                iso.display(),
                s.signer,
                crate::trust::sign::when(s.when)
            ),
            Err(e) => {
                tracing::error!("{e}");
                refused += 1;
            }
        }
    }
    match refused {
        0 => Ok(()),
        n => Err(AppError::failure(
            anyhow::anyhow!(
                "{n} of {} ISO(s) not signed by a trusted signer; nothing was registered",
                isos.len()
            ),
            Some(
                "sign the ISOs with `cks-iso sign ISO --key KEY` (or build them with --sign-key), \
                 or name their signer with --key, --certificate-identity or --signer-policy"
                    .into(),
            ),
        )),
    }
}

/// `build --register`: the ISOs the build wrote, registered at `base`.
pub(crate) fn after_build(
    isos: Vec<IsoToRegister>,
    base: &str,
    args: &BuildRegisterArgs,
    settings: &Settings,
) -> Result<(), AppError> {
    let outcomes = register(&targets(isos, base), &args.api, &args.options, settings)?;
    for o in &outcomes {
        tracing::info!("{}", line(o));
    }
    Ok(())
}

fn line(o: &Outcome) -> String {
    let zone = if o.zone.is_empty() {
        String::new()
    } else {
        format!(" zone {}", o.zone)
    };
    let retired = if o.retired.is_empty() {
        String::new()
    } else {
        format!("; replaced {}", o.retired.join(", "))
    };
    format!(
        "{}  {} {}  {}  {}  id {}{zone}{retired}",
        o.name, o.semanticversion, o.arch, o.status, o.isostate, o.id
    )
}

fn print(outcomes: &[Outcome], json: bool) {
    if json {
        let value = serde_json::json!({ "format": 1, "registered": outcomes });
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&value).expect("plain JSON")
        );
        return;
    }
    for o in outcomes {
        crate::outln!("{}", line(o));
    }
}

/// The doctor's check: `None` when nothing is configured anywhere (registering is optional);
/// else where the credentials come from and what `listCapabilities` says with them.
pub(crate) fn doctor_check(
    args: &ApiArgs,
    settings: &Settings,
) -> Option<Result<String, AppError>> {
    let creds = match credentials(args, settings) {
        Err(AppError { error, .. })
            if error
                .downcast_ref::<CredentialsError>()
                .is_some_and(|e| matches!(e, CredentialsError::Missing { .. })) =>
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
        let api = Api::new(http, creds);
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
