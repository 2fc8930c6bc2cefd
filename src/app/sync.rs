//! `cks-iso sync`: wiring only — the desired state read, the run lock taken, what every build
//! shares made once (settings, checker, cache and registry client, runtime), the CloudStack client
//! made from the credentials `register` finds, `upgrade-check`'s verdict lent as the gate; the
//! work is [`crate::sync`]'s. The report goes to stdout; exit 1 when anything failed or was gated.

use std::time::Duration;

use super::{AppError, net};
use crate::cli::{ApiArgs, SyncArgs};
use crate::cloudstack::CloudStack;
use crate::sync::{Context, Desired, DesiredError, LockError, Mode, RunLock, SyncError};
use crate::trust::checker;
use crate::ui::Ui;

impl From<DesiredError> for AppError {
    fn from(err: DesiredError) -> Self {
        let hint = Some(err.hint());
        Self::usage(err, hint)
    }
}

impl From<SyncError> for AppError {
    fn from(err: SyncError) -> Self {
        let hint = err.hint();
        Self::failure(err, hint)
    }
}

impl From<LockError> for AppError {
    fn from(err: LockError) -> Self {
        let hint = match &err {
            LockError::Held { .. } => "run again later, or give --wait to wait for it".into(),
            LockError::Io { .. } => {
                "the directory holding the publish directory must be writable".into()
            }
        };
        Self::failure(err, Some(hint))
    }
}

/// Runs (or with `--plan`, plans) a sync and prints its report.
pub fn run(args: SyncArgs, ui: &Ui) -> Result<(), AppError> {
    let desired = Desired::load(&args.desired)?;
    let mut settings = net::settings(args.net.clone())?;
    net::registry_mirrors(&settings)?;
    if let Some(dir) = &args.write_locks {
        return write_locks(&args, &desired, &settings, dir, ui);
    }
    let api_args = ApiArgs {
        profile: args
            .api
            .profile
            .clone()
            .or(desired.cloudstack.profile.clone()),
        ..args.api.clone()
    };
    let (api, http) = super::cloudstack_api::clients(&api_args, &settings)?;
    if let Some(endpoint) = &desired.cloudstack.endpoint
        && api.endpoint().trim_end_matches('/') != endpoint.trim_end_matches('/')
    {
        return Err(AppError::usage(
            anyhow::anyhow!(
                "desired state: cloudstack.endpoint is {endpoint}, but the credentials found are for {}",
                crate::fetch::redact(api.endpoint())
            ),
            Some("give the credentials of that endpoint (--profile, or cloudstack.profile)".into()),
        ));
    }
    let keyless = keyless(&args, &desired)?;
    let tlog = tlog(&args, &desired)?;
    // Only a run that acts takes the lock: a plan changes nothing.
    let _lock = match args.plan {
        true => None,
        false => {
            if let Some(parent) = desired.lock_path().parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            Some(RunLock::take(&desired.lock_path(), args.wait)?)
        }
    };
    // Offline is the builds' (their HTTP layer refuses every request); CloudStack's client was
    // made above and still answers.
    settings.http.offline = args.offline;
    let tools = net::BuildTools::open(&settings, flags(&args, &desired), args.cache_dir.clone())?;
    let shared = tools.shared(&settings);
    let release = CloudStack::parse(&desired.cloudstack.release).ok();
    let gate = |from: &std::path::Path, to: &std::path::Path| {
        super::sides::judge(from, to, release, None)
            .map_err(|e| crate::sync::GateError::from(e.error))
    };
    // Who must have signed an ISO before it is registered: the desired state's policy, else the
    // configuration's, as `register` takes it.
    let policy = (desired.iso_signer_policy.as_deref()).or(settings.iso_signer_policy.as_deref());
    let flags = crate::trust::sign::SignerFlags {
        policy,
        ..Default::default()
    };
    let signers = crate::trust::sign::signers(&flags)?;
    let root = match &signers {
        Some(s) => Some(crate::trust::sign::root_for(
            s,
            desired.trusted_root.as_deref(),
            settings.trusted_root.as_deref(),
        )?),
        None => None,
    };
    let ctx = Context {
        shared,
        reporter: ui,
        api: &api,
        http: &http,
        gate: &gate,
        signers: signers.as_ref().zip(root.as_ref()),
        signing: crate::sync::Signing {
            keyless: keyless.as_ref(),
            tlog: tlog.as_ref(),
        },
        poll: Duration::from_secs_f64(args.poll_interval.max(0.05)),
        timeout: Duration::from_secs(args.timeout),
    };
    let mode = Mode {
        plan: args.plan,
        locks: args.locks.clone(),
    };
    let report = crate::sync::run(&desired, &ctx, &mode)?;
    print(&report, &args)
}

/// `sign: keyless`: the token (the flag or `SIGSTORE_ID_TOKEN`, else the desired state's
/// `identity-token-file:`) and the services, flags over the desired state's keys. A run that
/// builds with no token to sign with, or `--offline`, is refused before it takes the lock.
fn keyless(
    args: &SyncArgs,
    desired: &Desired,
) -> Result<Option<crate::trust::keyless::KeylessOptions>, AppError> {
    if desired.sign != Some(crate::sync::SignHow::Keyless) {
        return Ok(None);
    }
    let flags = &args.keyless;
    let options = crate::trust::keyless::KeylessOptions {
        token: flags.identity_token.clone(),
        token_file: desired.identity_token_file.clone(),
        signing_config: (flags.signing_config.clone()).or(desired.signing_config.clone()),
        fulcio_url: (flags.fulcio_url.clone()).or(desired.fulcio_url.clone()),
        rekor_url: args.rekor_url.clone(),
        trusted_root: desired.trusted_root.clone(),
    };
    let usage = |message: &str, hint: &str| {
        AppError::usage(anyhow::anyhow!("{message}"), Some(hint.to_owned()))
    };
    if args.plan {
        return Ok(Some(options));
    }
    if args.offline {
        return Err(usage(
            "desired state: sign: keyless asks Fulcio and Rekor, and --offline forbids the network",
            "sign with sign-key on the far side of an air gap, or leave --offline out",
        ));
    }
    let no_token = (options.token.as_deref()).is_none_or(|t| t.trim().is_empty());
    if no_token && options.token_file.is_none() {
        return Err(usage(
            "desired state: sign: keyless, and no identity token: no --identity-token, \
             SIGSTORE_ID_TOKEN or identity-token-file",
            "set SIGSTORE_ID_TOKEN to a fresh token each run (CI), or point identity-token-file \
             at the file a token helper keeps fresh (see docs/guide/sync.md)",
        ));
    }
    Ok(Some(options))
}

/// `tlog: true`: where each `sign-key` signature is entered (`--rekor-url`, else the desired
/// state's `signing-config`, else the public-good Rekor) and the root its entry is proven
/// against. `--offline` is refused before the run takes its lock, as `build --tlog --offline` is.
fn tlog(
    args: &SyncArgs,
    desired: &Desired,
) -> Result<Option<crate::trust::keyless::KeylessOptions>, AppError> {
    if !desired.tlog {
        return Ok(None);
    }
    if args.offline && !args.plan {
        return Err(AppError::usage(
            anyhow::anyhow!(
                "desired state: tlog enters each signature in Rekor, and --offline forbids the \
                 network"
            ),
            Some(
                "leave tlog out on the far side of an air gap (the key signature stands alone)"
                    .into(),
            ),
        ));
    }
    Ok(Some(crate::trust::keyless::KeylessOptions {
        signing_config: desired.signing_config.clone(),
        rekor_url: args.rekor_url.clone(),
        trusted_root: desired.trusted_root.clone(),
        ..Default::default()
    }))
}

/// The signature flags of the builds, from the desired state.
fn flags<'a>(args: &'a SyncArgs, desired: &'a Desired) -> checker::Flags<'a> {
    checker::Flags {
        mode: desired.signatures.as_deref(),
        trusted_root: desired.trusted_root.as_deref(),
        policy: desired.signature_policy.as_deref(),
        rekor_url: args.rekor_url.as_deref(),
    }
}

/// `--plan --write-locks DIR`: no CloudStack, no publish directory, no run lock.
fn write_locks(
    args: &SyncArgs,
    desired: &Desired,
    settings: &crate::config::Settings,
    dir: &std::path::Path,
    ui: &Ui,
) -> Result<(), AppError> {
    let tools = net::BuildTools::open(settings, flags(args, desired), args.cache_dir.clone())?;
    let build = crate::pipeline::Build::new(tools.shared(settings), ui);
    let report = crate::sync::locks::write(&build, desired, dir);
    print(&report, args)
}

/// The report on stdout (text or `--json`); exit 1 when anything failed or was gated.
fn print(report: &crate::sync::report::Report, args: &SyncArgs) -> Result<(), AppError> {
    if args.json {
        let text = serde_json::to_string_pretty(report).expect("plain JSON");
        crate::outln!("{text}");
    } else {
        crate::out::bytes(crate::ui::printable(&report.text()).as_bytes());
    }
    match report.failed() {
        0 => Ok(()),
        n => Err(AppError::failure(
            anyhow::anyhow!("sync: {n} failed or gated; the zone does not match the desired state"),
            Some("each item's lines above say why; a gated ISO stays in the publish directory, unregistered".into()),
        )),
    }
}
