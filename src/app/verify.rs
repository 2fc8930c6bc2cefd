//! `cks-iso verify ISO...`: check finished ISOs with [`crate::verify`], print every violation,
//! exit 1 if there is one.

use super::AppError;
use crate::cli::VerifyArgs;
use crate::cloudstack::CloudStack;
use crate::verify::{self, Expect, SignatureCheck};

/// Verifies each ISO; stdout gets one line per violation (or per good ISO), or JSON.
pub fn run(args: VerifyArgs) -> Result<(), AppError> {
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
        reports.push(verify::verify(iso, &expect)?);
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
