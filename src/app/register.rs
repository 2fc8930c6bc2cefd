//! `cks-iso register`: wiring only — the ISOs read, their signatures checked when a signer
//! policy asks, registered through [`super::cloudstack_api`], the outcome printed. The work is in
//! [`crate::cloudstack`].

use super::cloudstack_api::{line, register, targets};
use super::{AppError, net};
use crate::cli::RegisterArgs;
use crate::cloudstack::IsoToRegister;
use crate::cloudstack::run::{Outcome, Target};
use crate::config::Settings;

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
