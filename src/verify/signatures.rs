//! `verify --signatures`: the image signatures carried in `signatures/` verify again, offline,
//! against cks-iso's own trusted root (or `--trusted-root`), never a root found in the ISO, and
//! they belong to the archives the ISO holds: each covered image's accepted signature signs the
//! platform manifest of its archive (recomputed from the archive's blobs) or the index
//! `versions.txt` records for it.

use std::collections::BTreeMap;

use super::SignatureCheck;
use super::checks::Ctx;
use crate::image::{Descriptor, Digest, MAX_MANIFEST_SIZE, Manifest, parse};
use crate::signature::{self, REPORT_PATH, Report, SignatureManifest};
use crate::versions::Versions;

pub(super) fn check(cx: &mut Ctx, versions: Option<&Versions>, sig: &SignatureCheck) {
    let Some(versions) = versions else { return };
    if !cx.entries.contains_key(REPORT_PATH) {
        cx.violation(
            REPORT_PATH,
            "missing: the ISO carries no signature evidence (built with --signatures off?)",
        );
        return;
    }
    let Some(text) = cx.text(REPORT_PATH) else {
        return;
    };
    let report: Report = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => return cx.violation(REPORT_PATH, format!("not a signature report: {e}")),
    };
    let reported: BTreeMap<&str, &signature::ImageReport> = report
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
        if entry.verdict != "verified" {
            cx.violation(
                REPORT_PATH,
                format!(
                    "{}: recorded as {}, nothing to re-verify",
                    image.name, entry.verdict
                ),
            );
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
        match signature::judge(&sig.root, rule, &image.name, &[found], sig.now) {
            Ok(Some(_)) => {}
            Ok(None) => cx.violation(&path, format!("{}: the signature has no layer", image.name)),
            Err(e) => cx.violation(&path, e.to_string()),
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
        let blob = format!("signatures/images/blobs/sha256/{}", desc.digest.hex());
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
