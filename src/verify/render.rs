//! How `cks-iso verify` shows its reports: one JSON document for all ISOs, or per ISO its notes,
//! an `ok` line or a line per violation; and the hint the run ends with, chosen by the gravest
//! cause found.

use serde_json::json;

use super::{Cause, README_SECTION, Report};

/// The version of `verify --json`'s document (its `format` field): 1 is `{"format", "isos":
/// [...]}`, one object per ISO.
pub const FORMAT: u32 = 1;

/// `verify --json`'s document of `reports`.
pub fn document(reports: &[Report]) -> serde_json::Value {
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
    json!({ "format": FORMAT, "isos": isos })
}

impl Report {
    /// Its lines: the notes first, so that what follows reads in their light; then `ok …` or a
    /// line per violation, made printable (names and lines come from the ISO, whoever made it).
    pub fn lines(&self) -> Vec<String> {
        let iso = self.iso.display();
        let mut out: Vec<String> = self.notes.iter().map(|n| format!("{iso}: {n}")).collect();
        if self.violations.is_empty() {
            let arch = self.arch.as_deref().unwrap_or("?");
            out.push(format!(
                "ok {iso} ({arch}, {} files and {} image archives checked)",
                self.files, self.images
            ));
        }
        for v in &self.violations {
            let line = match v.path.is_empty() {
                true => format!("{iso}: {}", v.problem),
                false => format!("{iso}: {}: {}", v.path, v.problem),
            };
            out.push(crate::ui::printable(&line).into_owned());
        }
        out
    }
}

/// The hint that fits the gravest cause: a damaged copy, then signatures judged against another
/// root than the ISO's (`own_root`: a `--trusted-root` was given), then a damaged image, then the
/// contract's rules.
pub fn closing_hint(cause: Option<Cause>, own_root: bool) -> String {
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
        Some(Cause::IsoSignature) => "the ISO's own signature (ISO.sigstore.json) does not \
             verify for the signers named: sign the ISO with `cks-iso sign ISO --key KEY` (or build \
             it with --sign-key), or name its signer with --key, --certificate-identity or \
             --signer-policy; a bundle that no longer matches means the ISO changed after signing"
            .into(),
        Some(Cause::Image) => "each line above names the image archive and what in it does not \
             match (a blob and its digest): the image is damaged; build the ISO again, or copy it \
             again and check it against its .sha256"
            .into(),
        Some(Cause::Contract) | None => format!(
            "each line above names the path and the rule; the rules are in README.md, section \
             \"{README_SECTION}\""
        ),
    }
}
