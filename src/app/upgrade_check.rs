//! `cks-iso upgrade-check FROM TO`: reads both sides as `diff` does, TO's archives as containerd
//! imports them and TO's `verify` report, asks [`crate::upgrade`] for the verdict and prints it.
//! Exit 0 when the upgrade should work, 1 when it will not (or an ISO is refused as crafted:
//! [`cks_iso_iso9660::bounds`]), 2 for an input it cannot read.

use super::AppError;
use super::sides::judge;
use crate::cli::UpgradeCheckArgs;
use crate::cloudstack::CloudStack;
use crate::upgrade;

/// Judges the pair; stdout gets the verdict, a line per check and the changes (or JSON).
pub fn run(args: UpgradeCheckArgs) -> Result<(), AppError> {
    let cloudstack = match &args.cloudstack {
        Some(text) => Some(CloudStack::parse(text).map_err(|e| AppError::usage(e, None))?),
        None => None,
    };
    let view = super::sides::signer_view(&args.signer)?;
    let report = judge(&args.from, &args.to, cloudstack, Some(&view))?;
    print(&report, args.json);
    let failed = report.checks.iter().filter(|c| !c.ok).count();
    match failed {
        0 => Ok(()),
        n => Err(AppError::failure(
            anyhow::anyhow!(
                "{} → {} will not upgrade: {n} of {} checks failed",
                report.from.path,
                report.to.path,
                report.checks.len()
            ),
            Some("each FAIL line above has its own hint".into()),
        )),
    }
}

/// The report on stdout, as text or JSON; where a side's version was read from image names, said
/// on stderr.
fn print(report: &upgrade::Report, json: bool) {
    for side in [&report.from, &report.to] {
        if side.version_from == upgrade::VersionFrom::ImageNames {
            tracing::info!(
                "{} has no cks-iso.lock or versions.txt: its Kubernetes version {} is read from \
                 its kube-apiserver image's tag",
                side.path,
                side.kubernetes.as_deref().unwrap_or_default()
            );
        }
    }
    if json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(report).expect("JSON of plain values")
        );
    } else {
        // Names and paths come from the ISOs, whoever made them.
        crate::out::bytes(crate::ui::printable(&upgrade::render(report)).as_bytes());
    }
}
