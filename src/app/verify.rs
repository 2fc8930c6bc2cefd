//! `cks-iso verify ISO...`: check finished ISOs, print every violation, exit 1 if there is one.

use serde_json::json;

use super::AppError;
use crate::cli::VerifyArgs;
use crate::verify::{self, Cause, Expect, SignatureCheck};

/// The version of `verify --json`'s document (its `format` field): 1 is `{"format", "isos":
/// [...]}`, one object per ISO.
pub const FORMAT: u32 = 1;

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
            let c =
                crate::cloudstack::CloudStack::parse(text).map_err(|e| AppError::usage(e, None))?;
            if !c.is_known() {
                tracing::warn!(
                    "CloudStack {c} is newer than any release cks-iso knows: checking with {}'s \
                     rules",
                    crate::cloudstack::CloudStack::newest_known()
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
    let bad: usize = reports.iter().map(|r| r.violations.len()).sum();
    if args.json {
        let isos: Vec<_> = reports
            .iter()
            .map(|r| {
                json!({
                    "iso": r.iso,
                    "ok": r.violations.is_empty(),
                    "arch": r.arch,
                    "files": r.files,
                    "images": r.images,
                    "notes": r.notes,
                    "violations": r.violations.iter()
                        .map(|v| json!({"path": v.path, "problem": v.problem}))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        let value = json!({ "format": FORMAT, "isos": isos });
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&value).expect("JSON of plain values")
        );
    } else {
        for r in &reports {
            let iso = r.iso.display();
            // First, so that what follows reads in its light.
            for note in &r.notes {
                crate::outln!("{iso}: {note}");
            }
            if r.violations.is_empty() {
                let arch = r.arch.as_deref().unwrap_or("?");
                crate::outln!(
                    "ok {iso} ({arch}, {} files and {} image archives checked)",
                    r.files,
                    r.images
                );
            }
            for v in &r.violations {
                let line = match v.path.is_empty() {
                    true => format!("{iso}: {}", v.problem),
                    false => format!("{iso}: {}: {}", v.path, v.problem),
                };
                // Names and lines come from the ISO, whoever made it.
                crate::outln!("{}", crate::ui::printable(&line));
            }
        }
    }
    if bad > 0 {
        let isos = reports.iter().filter(|r| !r.violations.is_empty()).count();
        let cause = reports.iter().filter_map(|r| r.cause()).max();
        return Err(AppError::failure(
            anyhow::anyhow!("{bad} contract violation(s) in {isos} ISO(s)"),
            Some(closing_hint(cause, args.trusted_root.is_some())),
        ));
    }
    Ok(())
}

/// The hint that fits the gravest cause: a damaged copy, then signatures judged against another
/// root than the ISO's, then a damaged image, then the contract's rules.
fn closing_hint(cause: Option<Cause>, own_root: bool) -> String {
    match cause {
        Some(Cause::Damaged) => "the file is damaged or incomplete: copy the ISO again and check \
             it against its .sha256 (sha256sum -c ISO.sha256)"
            .into(),
        Some(Cause::Signature) if !own_root => "the signatures were judged against Sigstore's \
             public-good root; an ISO built against another Sigstore (a private one, or \
             cks-iso-world's) needs that root: pass --trusted-root FILE"
            .into(),
        Some(Cause::Signature) => "check that --trusted-root and --signature-policy are the ones \
             the ISO was built with; if they are, the signatures or their evidence were changed \
             after the build"
            .into(),
        Some(Cause::Image) => "each line above names the image archive and what in it does not \
             match (a blob and its digest): the image is damaged; build the ISO again, or copy it \
             again and check it against its .sha256"
            .into(),
        Some(Cause::Contract) | None => format!(
            "each line above names the path and the rule; the rules are in README.md, section \
             \"{}\"",
            crate::verify::README_SECTION
        ),
    }
}
