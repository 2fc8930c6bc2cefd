//! Signatures in a build: every image of an architecture judged beside the pull (each one by
//! [`Checker`], in the library's `trust` module, as `pull` judges it; an add-on image as an
//! extra, which enforce refuses when no rule covers it), what goes into the ISO's
//! `signatures/` directory, the lock's record, and the verdicts `versions.txt` and the SBOMs
//! render ([`judged`]). The downloaded files' signatures are checked in
//! [`crate::trust::binaries`].

use futures_util::{StreamExt, stream};

use super::RealizeError;
use crate::image::Digest;
use crate::image::Image;
use crate::plan::IsoFile;
use crate::registry::Registry;
use crate::staged::{Judged, Signatures, Signer};
use crate::trust::checker::{Checker, CheckerError};
use cks_iso_sigstore::{
    BinaryEvidence, ImageReport, Policy, Report, SignatureManifest, TrustedRoot, Verdict,
};

/// The directory at the ISO's root that holds the evidence (the contract's name).
pub const DIR: &str = crate::contract::SIGNATURES_DIR;

/// One architecture's verdicts and the signature manifests that carried them.
pub struct ArchSignatures {
    /// The verdicts, as `signatures/report.json` holds them.
    pub report: Report,
    /// The signature manifests that carried the images' verdicts.
    pub manifests: Vec<SignatureManifest>,
    /// The verified binaries' signature material.
    pub binaries: Vec<BinaryEvidence>,
    /// The trusted root's text, copied into the ISO for third-party tools.
    pub trusted_root: String,
}

/// How many images' signatures are fetched and judged at once. They run beside the blob pull
/// (see `images::pull`): a few at a time hide their round trips behind the blobs without
/// doubling the pull's connections and buffers (peak memory).
const IMAGES_AT_ONCE: usize = 4;

/// Fetches and judges the signatures of `images` for linux/`arch` (the signature manifests
/// `entry` names, where it names one; else found anew); fails, naming every image that failed,
/// before anything is written. `tags_from_cache`: see [`super::Inputs::tags_from_cache`].
pub(super) async fn check(
    checker: &Checker,
    registry: &Registry,
    images: &[Image],
    entry: &crate::lock::ArchEntry,
    tags_from_cache: bool,
    arch: &'static str,
) -> Result<ArchSignatures, RealizeError> {
    let locked = |image: &Image| {
        let reference = image.reference.to_string();
        entry.images.iter().find(|i| i.reference == reference)
    };
    // An add-on image (the lock says why it is there) is judged as an extra: see
    // `Checker::check_extra_from`.
    let results: Vec<Result<(ImageReport, Option<SignatureManifest>), CheckerError>> =
        stream::iter(images)
            .map(|image| async move {
                let vouched = !tags_from_cache;
                let locked = locked(image);
                let named = locked.and_then(|i| i.signature.as_ref());
                if locked.is_some_and(|i| i.extra.is_some()) {
                    return checker
                        .check_extra_from(registry, image, named, vouched)
                        .await;
                }
                checker
                    .check_image_from(registry, image, named, vouched)
                    .await
            })
            .buffered(IMAGES_AT_ONCE)
            .collect()
            .await;
    let mut reports = Vec::new();
    let mut manifests = Vec::new();
    let mut failures = Vec::new();
    for result in results {
        match result {
            Ok((report, manifest)) => {
                reports.push(report);
                manifests.extend(manifest);
            }
            Err(e) => failures.push(e),
        }
    }
    if !failures.is_empty() {
        let count = failures.len();
        let first = failures.swap_remove(0);
        return Err(match count {
            1 => RealizeError::from(first),
            _ => RealizeError::Signatures {
                count,
                arch,
                source: Box::new(first),
            },
        });
    }
    reports.sort_by(|a, b| a.reference.cmp(&b.reference));
    let verified = reports
        .iter()
        .filter(|r| r.verdict == Verdict::Verified)
        .count();
    let unsigned = reports
        .iter()
        .filter(|r| r.verdict == Verdict::Unsigned)
        .count();
    tracing::info!(
        "linux/{arch}: {verified} image signatures verified, {unsigned} covered images unsigned"
    );
    Ok(ArchSignatures {
        report: Report {
            version: 1,
            mode: checker.mode.to_string(),
            trusted_root_sha256: TrustedRoot::fingerprint(&checker.root_text),
            images: reports,
            binaries: Vec::new(),
        },
        manifests,
        binaries: Vec::new(),
        trusted_root: checker.root_text.clone(),
    })
}

/// The lock's record of `image`'s verified signature: its `.sig` tag (for a referrer, the
/// tag-schema name `sha256-<hex>` of the digest it refers to) and the digest of the signature
/// manifest stored in `signatures/`; `None` when none verified.
pub fn lock_signature(sigs: &ArchSignatures, image: &Image) -> Option<crate::lock::ImageSignature> {
    let reference = image.reference.to_string();
    let report = sigs
        .report
        .images
        .iter()
        .find(|r| r.reference == reference && r.verdict == Verdict::Verified)?;
    let signed = Digest::parse(report.signed_digest.as_deref()?).ok()?;
    let hex = report
        .signature_manifest
        .as_deref()?
        .strip_prefix(&format!("{DIR}/images/"))?
        .strip_suffix(".json")?;
    let manifest = Digest::from_hex(hex).ok()?;
    let tag = match report.found.as_deref() {
        Some("referrer") => cks_iso_sigstore::referrer::fallback_tag(&signed),
        _ => cks_iso_sigstore::tag_for(&signed),
    };
    Some(crate::lock::ImageSignature {
        tag,
        manifest: manifest.to_string(),
    })
}

/// What linux/`arch`'s signature checks found, as `versions.txt` and the SBOMs tell it
/// ([`crate::staged`]): the verdicts of `sigs`; under `--signatures off` (`None`), not checked for
/// every image and file the built-in rules cover, and nothing for the rest.
pub fn judged(sigs: Option<&ArchSignatures>, images: &[Image], files: &[IsoFile]) -> Signatures {
    let Some(sigs) = sigs else {
        let policy = Policy::builtin();
        let covered = images
            .iter()
            .filter(|i| policy.rule_for(&i.reference.repository()).is_some())
            .map(|i| (i.reference.to_string(), Judged::NotChecked));
        let covered_files = (files.iter())
            .filter(|f| policy.rule_for_url(&f.source).is_some())
            .map(|f| (f.dest.clone(), Judged::NotChecked));
        return Signatures {
            mode: None,
            images: covered.collect(),
            files: covered_files.collect(),
        };
    };
    let mut judged = Signatures {
        mode: Some(sigs.report.mode.clone()),
        ..Signatures::default()
    };
    for i in &sigs.report.images {
        let verdict = judgement(&i.verdict, i.signer.as_ref());
        judged.images.entry(i.reference.clone()).or_insert(verdict);
    }
    for b in &sigs.report.binaries {
        let verdict = judgement(&b.verdict, b.signer.as_ref());
        judged.files.insert(b.path.clone(), verdict);
    }
    judged
}

/// A report's verdict and signer, as far as `versions.txt` and the SBOMs tell them.
fn judgement(verdict: &Verdict, signer: Option<&cks_iso_sigstore::Signer>) -> Judged {
    match verdict {
        Verdict::Verified => Judged::Verified(signer.map(|s| Signer {
            identity: s.identity.clone(),
            issuer: s.issuer.clone(),
            log_index: s.log_index,
        })),
        Verdict::Unsigned => Judged::Unsigned,
        // A failed check stops the build, so what is left is not covered.
        _ => Judged::NotCovered,
    }
}
