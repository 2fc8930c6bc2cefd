//! `verify --signatures`: the image signatures carried in `signatures/` verify again, offline,
//! against cks-iso's own trusted root (or `--trusted-root`), never a root found in the ISO, and
//! they belong to the archives the ISO holds: each covered image's accepted signature signs the
//! platform manifest of its archive (recomputed from the archive's blobs) or the index
//! `versions.txt` records for it (a cosign 3 referrer's bundle, kept beside its referrer manifest,
//! is judged as build judged it). Each dl.k8s.io binary's Sigstore bundle (built from its
//! `.sig`/`.cert`, or the one its publisher shipped) verifies fully (chain, SCT, signature over
//! the digest of the file's bytes as they stream out of the ISO, SET or, for a Rekor v2 entry,
//! RFC 3161 timestamps, inclusion proof, checkpoint).

use std::collections::BTreeMap;

use super::SignatureCheck;
use super::ctx::{Ctx, sha256_of};
use crate::contract;
use crate::image::{Descriptor, Digest, MAX_MANIFEST_SIZE, Manifest, parse};
use crate::versions::Versions;
use cks_iso_io::Sha256Sum;
use cks_iso_sigstore::{BinaryEvidence, REPORT_PATH, Report, SignatureManifest, Verdict, rekor};

pub(super) fn check(cx: &mut Ctx, versions: Option<&Versions>, sig: &SignatureCheck) {
    let Some(versions) = versions else { return };
    let Some(report) = read_report(cx) else {
        return;
    };
    let reported: BTreeMap<&str, &cks_iso_sigstore::ImageReport> = report
        .images
        .iter()
        .map(|i| (i.reference.as_str(), i))
        .collect();
    for image in &versions.images {
        let Some(entry) = reported.get(image.name.as_str()) else {
            cx.violation(
                REPORT_PATH,
                format!("{} is bundled but not reported", image.name),
            );
            continue;
        };
        let Some(manifest) = cx
            .archives
            .get(&image.archive)
            .map(|a| a.manifest.to_string())
        else {
            continue; // The archive's own violation is reported elsewhere.
        };
        if entry.manifest != manifest || entry.digest != image.digest {
            cx.violation(
                REPORT_PATH,
                format!(
                    "{}: reported for {} / {}, but the ISO holds {} / {}",
                    image.name, entry.digest, entry.manifest, image.digest, manifest
                ),
            );
            continue;
        }
        let repository = crate::image::Reference::parse(&image.name)
            .map(|r| r.repository())
            .unwrap_or_default();
        let Some(rule) = sig.policy.rule_for(&repository) else {
            continue;
        };
        if !verified(cx, &image.name, &entry.verdict) {
            continue;
        }
        let signed = entry.signed_digest.clone().unwrap_or_default();
        if signed != manifest && signed != image.digest {
            cx.violation(
                REPORT_PATH,
                format!(
                    "{}: the signature is for {signed}, which the ISO does not ship",
                    image.name
                ),
            );
            continue;
        }
        let path = entry.signature_manifest.clone().unwrap_or_default();
        let Some(found) = load(cx, &path, &signed) else {
            continue;
        };
        match cks_iso_sigstore::judge(&sig.root, rule, &image.name, &[found], sig.now) {
            Ok(Some(_)) => {}
            Ok(None) => cx.violation(&path, format!("{}: the signature has no layer", image.name)),
            Err(e) => cx.violation(&path, e.to_string()),
        }
    }
    binaries(cx, versions, &report, sig);
}

/// The ISO's signature report, read; a violation when it is missing (saying why when the ISO
/// was built with signatures off) or unreadable.
fn read_report(cx: &mut Ctx) -> Option<Report> {
    if !cx.entries.contains_key(REPORT_PATH) {
        let off = cx
            .text(contract::VERSIONS)
            .is_some_and(|t| t.lines().any(|l| l.starts_with("# signatures off:")));
        match off {
            true => cx.violation(
                contract::VERSIONS,
                "the ISO was built with --signatures off: no signature was checked, so there is \
                 nothing to re-verify; rebuild it with --signatures verify (the default) to carry \
                 the evidence",
            ),
            false => cx.violation(
                REPORT_PATH,
                "missing: the ISO carries no signature evidence (built by a cks-iso that did not \
                 check signatures?); rebuild it with this cks-iso to carry the evidence",
            ),
        }
        return None;
    }
    let text = cx.text(REPORT_PATH)?;
    match serde_json::from_str(&text) {
        Ok(r) => Some(r),
        Err(e) => {
            cx.violation(REPORT_PATH, format!("not a signature report: {e}"));
            None
        }
    }
}

/// Whether a covered artifact is reported verified; a violation when not.
fn verified(cx: &mut Ctx, artifact: &str, verdict: &Verdict) -> bool {
    let verified = *verdict == Verdict::Verified;
    if !verified {
        cx.violation(
            REPORT_PATH,
            format!("{artifact}: recorded as {verdict}, nothing to re-verify"),
        );
    }
    verified
}

/// Each file a rule covers by URL has a verified bundle in `signatures/binaries/` that verifies
/// again against the file's bytes as read from the ISO.
fn binaries(cx: &mut Ctx, versions: &Versions, report: &Report, sig: &SignatureCheck) {
    let reported: BTreeMap<&str, &cks_iso_sigstore::BinaryReport> = report
        .binaries
        .iter()
        .map(|b| (b.path.as_str(), b))
        .collect();
    if report.binaries.is_empty() {
        // Written before binaries' signatures were checked: name them once, not as missing one
        // by one.
        let covered: Vec<&str> = versions
            .files
            .iter()
            .filter(|f| f.source.starts_with("https://") || f.source.starts_with("http://"))
            .filter(|f| sig.policy.rule_for_url(&f.source).is_some())
            .map(|f| f.path.as_str())
            .collect();
        if !covered.is_empty() {
            cx.violation(
                REPORT_PATH,
                format!(
                    "it reports no binaries, as ISOs built by a cks-iso that checked only images' \
                     signatures: {} cannot be re-verified; rebuild the ISO with this cks-iso to \
                     carry their evidence",
                    covered.join(", ")
                ),
            );
        }
        return;
    }
    for file in &versions.files {
        let Some(rule) = sig.policy.rule_for_url(&file.source) else {
            continue;
        };
        if !file.source.starts_with("https://") && !file.source.starts_with("http://") {
            continue;
        }
        let Some(entry) = reported.get(file.path.as_str()) else {
            cx.violation(
                REPORT_PATH,
                format!(
                    "{} ({}) is covered but not reported",
                    file.path, file.source
                ),
            );
            continue;
        };
        if !verified(cx, &file.source, &entry.verdict) {
            continue;
        }
        let bundle_path = format!(
            "{}{}",
            contract::SIGNATURES_PREFIX,
            BinaryEvidence::bundle_path(&file.path)
        );
        let Some(evidence) = bundle(cx, &bundle_path) else {
            continue;
        };
        let Some((actual, digest)) = file_digest(cx, &file.path) else {
            continue;
        };
        if actual != entry.sha256 {
            cx.violation(
                &file.path,
                format!(
                    "hashes to sha256:{actual}, the signature report says sha256:{}",
                    entry.sha256
                ),
            );
            continue;
        }
        if let Err(f) = rekor::verify_digest(&sig.root, rule, &digest, &evidence, sig.now) {
            cx.violation(
                &bundle_path,
                format!(
                    "{}: the signature of sha256:{actual} fails the {} check: {}",
                    file.source,
                    f.step.name(),
                    f.reason
                ),
            );
        }
    }
}

/// The signature manifest at `path` and its payloads, each checked against its digest.
fn load(cx: &mut Ctx, path: &str, signed: &str) -> Option<SignatureManifest> {
    let bytes = match cx.reader.read_small(path, MAX_MANIFEST_SIZE) {
        Ok(b) => b,
        Err(e) => {
            cx.violation(path, e.reason);
            return None;
        }
    };
    let digest = Digest::of(&bytes);
    let named = path
        .rsplit('/')
        .next()
        .and_then(|n| n.strip_suffix(".json"))
        .unwrap_or_default();
    if digest.hex() != named {
        cx.violation(
            path,
            format!("does not match its name: expected sha256:{named}, got {digest}"),
        );
        return None;
    }
    let manifest: Manifest = match parse(&bytes, &digest, "signature manifest") {
        Ok(m) => m,
        Err(e) => {
            cx.violation(path, e.to_string());
            return None;
        }
    };
    let mut layers: Vec<(Descriptor, Vec<u8>)> = Vec::new();
    for desc in manifest.layers {
        let blob = format!(
            "{}images/blobs/sha256/{}",
            contract::SIGNATURES_PREFIX,
            desc.digest.hex()
        );
        match cx.reader.read_small(&blob, MAX_MANIFEST_SIZE) {
            Ok(payload) => layers.push((desc, payload)),
            Err(e) => cx.violation(&blob, e.reason),
        }
    }
    Some(SignatureManifest {
        signs: Digest::parse(signed).ok()?,
        digest,
        bytes,
        layers,
    })
}

/// The bundle at `path` in the ISO, read as evidence; a violation when it cannot be. Build keeps
/// none larger than [`rekor::MAX_BUNDLE_SIZE`] (a published bundle, or one written from a `.sig`,
/// `.cert` and Rekor entry at their caps).
fn bundle(cx: &mut Ctx, path: &str) -> Option<rekor::Evidence> {
    let bundle = match cx.reader.read_small(path, rekor::MAX_BUNDLE_SIZE as u64) {
        Ok(b) => b,
        Err(e) => {
            cx.violation(path, e.reason);
            return None;
        }
    };
    match rekor::Evidence::from_bundle(&bundle) {
        Ok(e) => Some(e),
        Err(e) => {
            cx.violation(path, format!("not a usable Sigstore bundle: {e}"));
            None
        }
    }
}

/// The sha256 of the file at `path` in the ISO, as hex and as bytes: hashed when versions.txt was
/// checked (streamed out of the ISO, never held), read again only if that failed, for the error.
fn file_digest(cx: &mut Ctx, path: &str) -> Option<(String, [u8; 32])> {
    let actual = match cx.hashes.get(path) {
        Some(hex) => Ok(hex.clone()),
        None => sha256_of(cx.reader, path),
    };
    let actual = match actual {
        Ok(a) => a,
        Err(e) => {
            cx.violation(path, e.to_string());
            return None;
        }
    };
    let Ok(digest) = Sha256Sum::parse_hex(&actual).map(<[u8; 32]>::from) else {
        cx.violation(path, format!("sha256 {actual} is not 32 bytes of hex"));
        return None;
    };
    Some((actual, digest))
}
