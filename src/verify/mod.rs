//! `cks-iso verify`: reads a finished ISO with the project's own reader and checks the whole CKS
//! contract (the README's section [`README_SECTION`]), listing every violation rather than
//! stopping at the first.
//!
//! It answers "will CloudStack nodes accept this disk?" without a node: the volume ID `blkid`
//! looks for, the layout and the exactly-one globs the node scripts use, `docker/` holding only
//! image archives for the ISO's platform whose every blob matches its digest, `versions.txt`
//! agreeing with the files (hashes) and the archives (one line each), every image referenced by a
//! root `*.yaml` being bundled (air-gap completeness) and every archive being accounted for (by
//! kubeadm, a root `*.yaml` or the lock's extra images: `accounted.rs`), exactly one image whose
//! name contains `pause`, kubeadm's (the sandbox nodes pick with `grep pause | sort | tail -n 1`:
//! `pause.rs`), the SBOMs listing exactly the files and archives the ISO holds with their hashes, modes and owners, and the embedded `cks-iso.lock`
//! agreeing with all of it. With `--signatures`, the image signatures in `signatures/` verify
//! again against cks-iso's trusted root and bind to the archives the ISO holds. No network.
//!
//! An ISO without `versions.txt` was not built by cks-iso (an official or community ISO): it gets
//! a note saying so and only the checks of what nodes read, its archives judged by containerd's
//! import rules first (`foreign.rs`).

mod accounted;
mod checks;
mod ctx;
mod foreign;
mod lock;
mod pause;
mod render;
mod sboms;
mod signatures;
mod yamls;

use std::path::{Path, PathBuf};

pub use render::{closing_hint, document};

pub use foreign::iso_arch;

use cks_iso_iso9660::read::{IsoReader, ReadError};

/// The README section that states the contract for users; `verify`'s hint points there.
pub const README_SECTION: &str = "The ISO contract";

/// What the ISO should be, beyond the contract.
#[derive(Debug, Clone)]
pub struct Expect {
    /// The volume ID nodes search for.
    pub volume_id: String,
    /// Re-verify the image signatures in `signatures/` (`verify --signatures`).
    pub signatures: Option<SignatureCheck>,
    /// The CloudStack release the ISO is for (`verify --cloudstack`); `None` checks what every
    /// release from 4.20 on needs.
    pub cloudstack: Option<crate::cloudstack::CloudStack>,
}

/// What image signatures are judged against: never anything found in the ISO itself.
#[derive(Debug, Clone)]
pub struct SignatureCheck {
    /// The trusted root.
    pub root: cks_iso_sigstore::TrustedRoot,
    /// Who must have signed.
    pub policy: cks_iso_sigstore::Policy,
    /// The verifier's clock (seconds), for "not integrated in the future".
    pub now: i64,
}

impl Default for Expect {
    fn default() -> Self {
        Self {
            volume_id: cks_iso_iso9660::DEFAULT_VOLUME_ID.to_owned(),
            signatures: None,
            cloudstack: None,
        }
    }
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The ISO path at fault, or empty for the image as a whole.
    pub path: String,
    /// What is wrong.
    pub problem: String,
    /// What the violation most likely means, for the hint that closes the report.
    pub cause: Cause,
}

/// What a violation most likely means: the hint a report ends with follows the gravest one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// The ISO breaks a rule of the contract.
    Contract,
    /// An image archive does not read well (a blob that does not match its digest, a broken
    /// tar): the image is damaged.
    Image,
    /// A signature or its evidence does not verify against the trusted root and policy given.
    Signature,
    /// The ISO's own signature (`ISO.sigstore.json`) does not verify for the signers named.
    IsoSignature,
    /// The file is cut short or cannot be read where its directory points: a damaged copy.
    Damaged,
}

impl Report {
    /// The gravest cause among the violations, if any.
    pub fn cause(&self) -> Option<Cause> {
        self.violations.iter().map(|v| v.cause).max()
    }
}

/// The outcome for one ISO.
#[derive(Debug, Clone)]
pub struct Report {
    /// The ISO.
    pub iso: PathBuf,
    /// The architecture `versions.txt` names, if readable.
    pub arch: Option<String>,
    /// Files checked.
    pub files: usize,
    /// Image archives checked.
    pub images: usize,
    /// Every broken rule; empty when the ISO is good.
    pub violations: Vec<Violation>,
    /// What the reader should know that is not a violation (an ISO cks-iso did not build).
    pub notes: Vec<String>,
}

/// Checks `iso`; an `Err` only when it cannot be read as an ISO at all.
pub fn verify(iso: &Path, expect: &Expect) -> Result<Report, ReadError> {
    let reader = IsoReader::open(iso)?;
    let mut report = Report {
        iso: iso.to_owned(),
        arch: None,
        files: 0,
        images: 0,
        violations: Vec::new(),
        notes: Vec::new(),
    };
    // A copy cut short breaks every rule whose bytes lie past its end: say that once, alone.
    let (declared, actual) = reader.sizes();
    if actual < declared {
        report.violations.push(Violation {
            path: String::new(),
            problem: format!(
                "a truncated copy: the volume declares {}, the file has {}",
                indicatif::HumanBytes(declared),
                indicatif::HumanBytes(actual)
            ),
            cause: Cause::Damaged,
        });
        return Ok(report);
    }
    checks::run(&reader, iso, expect, &mut report)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_readme_has_the_section_the_hint_names() {
        let readme = include_str!("../../README.md");
        let heading = format!("\n## {}\n", super::README_SECTION);
        assert!(readme.contains(&heading), "README.md lacks {heading:?}");
    }
}
