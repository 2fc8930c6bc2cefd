//! The CloudStack API as the commands reach it: credentials found from the flags, the
//! configuration file and the environment, the API client built, a list of ISOs registered and
//! each outcome's line, and the CloudStack errors turned into exit codes and hints. `register`,
//! `build --register`, `versions`, `sync` and `doctor` all do this the same way.
//!
//! Not a command: CLI glue shared by five of them (it takes their parsed `ApiArgs` and
//! `RegisterOptions` and returns [`AppError`]s), kept here so that no command imports another
//! (`tests/it/project/layers.rs`). The work itself is [`crate::cloudstack`]'s.

use std::time::Duration;

use super::{AppError, net};
use crate::cli::{ApiArgs, BuildRegisterArgs, RegisterOptions};
use crate::cloudstack::IsoToRegister;
use crate::cloudstack::api::Api;
use crate::cloudstack::credentials::{self, Credentials, CredentialsError};
use crate::cloudstack::run::{self, Outcome, Target};
use crate::cloudstack::run::{Options, RegistrationError};
use crate::config::Settings;
use crate::env;

impl From<RegistrationError> for AppError {
    fn from(err: RegistrationError) -> Self {
        let hint = err.hint();
        Self::failure(err, hint)
    }
}

impl From<crate::cloudstack::api::ApiError> for AppError {
    fn from(err: crate::cloudstack::api::ApiError) -> Self {
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
pub(super) fn credentials(args: &ApiArgs, settings: &Settings) -> Result<Credentials, AppError> {
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
pub(super) fn clients(
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
pub(super) fn targets(isos: Vec<IsoToRegister>, base: &str) -> Vec<Target> {
    let base = base.trim_end_matches('/');
    isos.into_iter()
        .map(|iso| Target {
            url: format!("{base}/{}", iso.file_name()),
            iso,
        })
        .collect()
}

pub(super) fn register(
    targets: &[Target],
    api: &ApiArgs,
    o: &RegisterOptions,
    settings: &Settings,
) -> Result<Vec<Outcome>, AppError> {
    let (api, http) = clients(api, settings)?;
    let runtime = net::transfer_runtime()?;
    Ok(runtime.block_on(run::register(&api, &http, targets, &options(o)))?)
}

/// `build --register`: the ISOs the build wrote, registered at `base`.
pub(super) fn after_build(
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

pub(super) fn line(o: &Outcome) -> String {
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
