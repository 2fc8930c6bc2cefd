//! `cks-iso diff A B`: read both sides (and the signature beside each ISO), compare, print; the
//! exit code says identical or not.

use super::sides::{read_side, signed, signer_view};
use super::{AppError, Outcome};
use crate::cli::DiffArgs;
use crate::diff;

/// Compares A with B; stdout gets the differences (nothing when identical) or JSON.
pub fn run(args: DiffArgs) -> Result<Outcome, AppError> {
    let mut a = read_side(&args.a)?;
    let mut b = read_side(&args.b)?;
    let view = signer_view(&args.signer)?;
    signed(&mut a, &args.a, &view)?;
    signed(&mut b, &args.b, &view)?;
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
