//! `cks-iso diff A B`: read both sides (and the signature beside each ISO), compare, print; the
//! exit code says identical or not.

use super::sides::read_side;
use super::{AppError, Outcome};
use crate::cli::{DiffArgs, ShowSignerArgs};
use crate::diff::{self, Kind, Side};
use crate::trust::signer::SignerView;

/// Compares A with B; stdout gets the differences (nothing when identical) or JSON.
pub fn run(args: DiffArgs) -> Result<Outcome, AppError> {
    let a = read_side(&args.a)?;
    let b = read_side(&args.b)?;
    let report = diff::compare(&a, &b);
    if args.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&report).expect("JSON of plain values")
        );
    } else {
        // Entry names and manifest lines come from the ISOs, whoever made them.
        crate::out::bytes(crate::ui::printable(&diff::render(&report)).as_bytes());
    }
    if report.identical {
        tracing::info!("{} and {} are identical", a.label, b.label);
        return Ok(Outcome::Done);
    }
    Ok(Outcome::Differ)
}

/// What the signatures beside the ISOs are checked with: the `--key` files and the
/// `--signer-trusted-root` (read up front, so that a bad one is a usage error).
pub(super) fn signer_view(args: &ShowSignerArgs) -> Result<SignerView, AppError> {
    let flags = crate::trust::sign::SignerFlags {
        keys: &args.keys,
        ..Default::default()
    };
    let keys = crate::trust::sign::signers(&flags)?.map_or_else(Vec::new, |s| s.keys);
    let root = match &args.signer_trusted_root {
        Some(path) => Some(crate::trust::trusted_root(Some(path), None)?.0),
        None => None,
    };
    Ok(SignerView::new(keys, root))
}

/// An ISO side gets the signature beside it, checked; a lock has none.
pub(super) fn signed(
    side: &mut Side,
    path: &std::path::Path,
    view: &SignerView,
) -> Result<(), AppError> {
    if side.kind == Kind::Iso {
        side.signature = Some(view.of(path)?);
    }
    Ok(())
}
