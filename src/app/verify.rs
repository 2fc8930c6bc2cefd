//! `cks-iso verify ISO...`: check finished ISOs with [`crate::verify`], print every violation,
//! exit 1 if there is one.

use super::AppError;
use crate::cli::VerifyArgs;
use crate::cloudstack::CloudStack;
use crate::trust::sign::Signers;
use crate::verify::{self, Expect, SignatureCheck};

/// Verifies each ISO; stdout gets one line per violation (or per good ISO), or JSON.
pub fn run(args: VerifyArgs) -> Result<(), AppError> {
    let signers = iso_signers(&args)?;
    let signatures = match args.signatures {
        true => Some(SignatureCheck {
            root: crate::trust::trusted_root(args.trusted_root.as_deref(), None)?.0,
            policy: crate::trust::policy(args.signature_policy.as_deref())?,
            now: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
        }),
        false => None,
    };
    let cloudstack = match &args.cloudstack {
        Some(text) => {
            let c = CloudStack::parse(text).map_err(|e| AppError::usage(e, None))?;
            if !c.is_known() {
                tracing::warn!(
                    "CloudStack {c} is newer than any release cks-iso knows: checking with {}'s \
                     rules",
                    CloudStack::newest_known()
                );
            }
            Some(c)
        }
        None => None,
    };
    let expect = Expect {
        volume_id: args.volume_id,
        signatures,
        cloudstack,
    };
    let mut reports = Vec::new();
    for iso in &args.isos {
        let mut report = verify::verify(iso, &expect)?;
        if let Some((signers, root)) = &signers {
            iso_signature(&mut report, signers, root)?;
        }
        reports.push(report);
    }
    match args.json {
        true => crate::outln!(
            "{}",
            serde_json::to_string_pretty(&verify::document(&reports))
                .expect("JSON of plain values")
        ),
        false => {
            (reports.iter().flat_map(verify::Report::lines)).for_each(|l| crate::outln!("{l}"))
        }
    }
    let bad: usize = reports.iter().map(|r| r.violations.len()).sum();
    if bad > 0 {
        let isos = reports.iter().filter(|r| !r.violations.is_empty()).count();
        let cause = reports.iter().filter_map(|r| r.cause()).max();
        return Err(AppError::failure(
            anyhow::anyhow!("{bad} contract violation(s) in {isos} ISO(s)"),
            Some(verify::closing_hint(cause, args.trusted_root.is_some())),
        ));
    }
    Ok(())
}

/// The signers `--iso-signature` accepts, with the root keyless ones are judged against.
fn iso_signers(
    args: &VerifyArgs,
) -> Result<Option<(Signers, cks_iso_sigstore::TrustedRoot)>, AppError> {
    let signers = crate::trust::sign::signers(&args.signer.flags())?;
    match (args.iso_signature, signers) {
        (false, None) => Ok(None),
        (false, Some(_)) => Err(AppError::usage(
            anyhow::anyhow!("signer flags given without --iso-signature"),
            Some("pass --iso-signature to check the ISO's own signature".into()),
        )),
        (true, None) => Err(AppError::usage(
            anyhow::anyhow!("--iso-signature names no signer to accept"),
            Some(
                "pass --key PUB, or --certificate-identity ID with --certificate-oidc-issuer \
                 URL, or --signer-policy FILE"
                    .into(),
            ),
        )),
        (true, Some(signers)) => {
            let root = crate::trust::sign::root_for(
                &signers,
                args.signer.signer_trusted_root.as_deref(),
                None,
            )?;
            Ok(Some((signers, root)))
        }
    }
}

/// Judges the bundle beside the ISO: a note naming the signer, or a violation saying why not.
fn iso_signature(
    report: &mut verify::Report,
    signers: &Signers,
    root: &cks_iso_sigstore::TrustedRoot,
) -> Result<(), AppError> {
    let digest = crate::trust::sign::hash(&report.iso)?;
    match signers.check(&report.iso, &digest, root, crate::trust::now()) {
        Ok(signed) => report.notes.push(format!(
            "signed by {}, {}",
            signed.signer,
            crate::trust::sign::when(signed.when)
        )),
        Err(refused) => report.violations.push(verify::Violation {
            path: String::new(),
            problem: format!(
                "its signature is refused: {}; signer found: {}; expected: {}",
                refused.reason, refused.found, refused.expected
            ),
            cause: verify::Cause::IsoSignature,
        }),
    }
    Ok(())
}
