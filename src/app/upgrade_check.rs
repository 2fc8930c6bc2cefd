//! `cks-iso upgrade-check FROM TO`: reads both sides as `diff` does, TO's archives as containerd
//! imports them and TO's `verify` report, asks [`crate::upgrade`] for the verdict and prints it.
//! Exit 0 when the upgrade should work, 1 when it will not (or an ISO is refused as crafted:
//! [`cks_iso_iso9660::bounds`]), 2 for an input it cannot read.

use super::AppError;
use super::diff::load;
use crate::cli::UpgradeCheckArgs;
use crate::cloudstack::CloudStack;
use crate::diff::{self, Kind};
use crate::image::Arch;
use crate::trust::signer::SignerView;
use crate::upgrade::{self, Input};
use crate::verify::{self, Expect};

/// Judges the pair; stdout gets the verdict, a line per check and the changes (or JSON).
pub fn run(args: UpgradeCheckArgs) -> Result<(), AppError> {
    let cloudstack = match &args.cloudstack {
        Some(text) => Some(CloudStack::parse(text).map_err(|e| AppError::usage(e, None))?),
        None => None,
    };
    let view = super::diff::signer_view(&args.signer)?;
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

/// The verdict on FROM → TO (ISOs or locks) for the cluster's CloudStack release (else what TO
/// records): what `upgrade-check` prints, and what `sync` gates its candidates on; with `view`,
/// who signed each ISO too.
pub(super) fn judge(
    from_path: &std::path::Path,
    to_path: &std::path::Path,
    cloudstack: Option<CloudStack>,
    view: Option<&SignerView>,
) -> Result<upgrade::Report, AppError> {
    let read = |path| {
        load::side(path).map_err(|e| {
            let hint = e.hint();
            match e.is_usage() {
                true => AppError::usage(e, hint),
                false => AppError::failure(e, hint),
            }
        })
    };
    let mut from = read(from_path)?;
    let mut to = read(to_path)?;
    if let Some(view) = view {
        super::diff::signed(&mut from, from_path, view)?;
        super::diff::signed(&mut to, to_path, view)?;
    }
    let from_scan = scan(&from, from_path)?;
    let to_scan = scan(&to, to_path)?;
    let recorded = to
        .versions
        .get("cloudstack")
        .cloned()
        .flatten()
        .and_then(|c| CloudStack::parse(&c).ok());
    let to_verify = match to.kind {
        Kind::Iso => Some(verify::verify(
            to_path,
            &Expect {
                cloudstack: cloudstack.or(recorded),
                ..Expect::default()
            },
        )?),
        Kind::Lock => None,
    };
    let changes = diff::compare(&from, &to);
    Ok(upgrade::check(&Input {
        from: &from,
        to: &to,
        from_scan: from_scan.as_ref(),
        to_scan: to_scan.as_ref(),
        cloudstack,
        to_verify: to_verify.as_ref(),
        changes: &changes,
    }))
}

/// An ISO's archives as containerd imports them (for its one arch, when it has one); `None` for
/// a lock.
fn scan(
    side: &diff::Side,
    path: &std::path::Path,
) -> Result<Option<upgrade::scan::IsoScan>, AppError> {
    let arch = match side.arches.len() {
        1 => side.arches.keys().next().and_then(|a| Arch::parse(a).ok()),
        _ => None,
    };
    match side.kind {
        Kind::Iso => Ok(Some(upgrade::scan::scan(path, arch)?)),
        Kind::Lock => Ok(None),
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
