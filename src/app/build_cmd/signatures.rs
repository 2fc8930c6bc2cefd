//! Signatures in `build`: which mode and trust root apply, fetching and judging every image's
//! `.sig` tags after the pull, and what goes into the ISO's `signatures/` directory. The
//! downloaded files' signatures are checked in [`super::binary_signatures`].

use std::path::{Path, PathBuf};

use futures_util::{StreamExt, stream};

use super::super::AppError;
use super::fetch::IsoFile;
use crate::config::Settings;
use crate::image::Digest;
use crate::image::Image;
use crate::registry::Registry;
use crate::signature::{
    self, BinaryEvidence, ImageReport, Mode, Policy, Report, SignatureError, SignatureManifest,
    TrustedRoot,
};
use crate::trust::{self, now};

/// The directory at the ISO's root that holds the evidence.
pub(crate) const DIR: &str = "signatures";

/// How this build judges signatures.
pub(crate) struct Checker {
    pub(super) mode: Mode,
    pub(super) root: TrustedRoot,
    root_text: String,
    pub(super) policy: Policy,
    /// Where binaries' Rekor entries are looked up.
    pub(super) rekor_url: String,
}

/// One architecture's verdicts and the signature manifests that carried them.
pub(crate) struct ArchSignatures {
    pub(crate) report: Report,
    pub(crate) manifests: Vec<SignatureManifest>,
    /// The verified binaries' signature material.
    pub(crate) binaries: Vec<BinaryEvidence>,
    /// The trusted root's text, copied into the ISO for third-party tools.
    pub(crate) trusted_root: String,
}

/// The mode (flag or `CKS_ISO_SIGNATURES`, else the config file, else `verify`) and the trusted
/// root (`--trusted-root`, else the config file, else the embedded public-good root); `None` for
/// `off`.
pub(crate) fn checker(
    flag: Option<&str>,
    trusted_root_flag: Option<&PathBuf>,
    policy_flag: Option<&PathBuf>,
    rekor_flag: Option<&str>,
    settings: &Settings,
) -> Result<Option<Checker>, AppError> {
    let mode = match flag {
        Some(text) => text.parse::<Mode>().map_err(|e| {
            AppError::usage(
                anyhow::anyhow!("--signatures: {e}"),
                Some("pass --signatures off, verify (the default) or enforce".into()),
            )
        })?,
        None => settings.signatures.unwrap_or_default(),
    };
    if mode == Mode::Off {
        tracing::warn!("--signatures off: image and binary signatures are not checked");
        return Ok(None);
    }
    let (root, root_text) = trust::trusted_root(
        trusted_root_flag.map(PathBuf::as_path),
        settings.trusted_root.as_deref(),
    )?;
    let policy = trust::policy(
        policy_flag
            .or(settings.signature_policy.as_ref())
            .map(PathBuf::as_path),
    )?;
    tracing::info!("signatures: {mode}");
    let rekor_url = rekor_flag
        .map(str::to_owned)
        .or_else(|| settings.rekor_url.clone())
        .unwrap_or_else(|| trust::rekor::DEFAULT_REKOR_URL.to_owned());
    Ok(Some(Checker {
        mode,
        root_text,
        root,
        policy,
        rekor_url: rekor_url.trim_end_matches('/').to_owned(),
    }))
}

/// Fetches and judges the signatures of `images` for linux/`arch` (under `--locked`, the
/// signature manifests `locked` names); fails, naming every image that failed, before anything is
/// written.
pub(super) async fn check(
    checker: &Checker,
    registry: &Registry,
    images: &[Image],
    locked: Option<&crate::lock::ArchEntry>,
    arch: &str,
) -> Result<ArchSignatures, AppError> {
    let lock_sig = |image: &Image| {
        let reference = image.reference.to_string();
        locked
            .and_then(|l| l.images.iter().find(|i| i.reference == reference))
            .and_then(|i| i.signature.as_ref())
    };
    let results: Vec<Result<(ImageReport, Option<SignatureManifest>), AppError>> =
        stream::iter(images)
            .map(|image| {
                let from_cache = registry.offline() && locked.is_none();
                check_image_from(checker, registry, image, lock_sig(image), from_cache)
            })
            .buffered(registry.jobs())
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
        let mut first = failures.swap_remove(0);
        if count > 1 {
            first.error = first.error.context(format!(
                "{count} images of linux/{arch} failed the signature check, this one first"
            ));
        }
        return Err(first);
    }
    reports.sort_by(|a, b| a.reference.cmp(&b.reference));
    let verified = reports.iter().filter(|r| r.verdict == "verified").count();
    let unsigned = reports.iter().filter(|r| r.verdict == "unsigned").count();
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

/// Fetches and judges one image's signatures (see [`check`]); `locked`, the signature manifest a
/// lock names for it, is fetched by digest instead of resolving the `.sig` tags. Offline, an
/// image a rule covers needs a signature in the cache (see [`check_image_from`]).
pub(crate) async fn check_image(
    checker: &Checker,
    registry: &Registry,
    image: &Image,
    locked: Option<&crate::lock::ImageSignature>,
) -> Result<(ImageReport, Option<SignatureManifest>), AppError> {
    check_image_from(checker, registry, image, locked, registry.offline()).await
}

/// [`check_image`]; with `from_cache` (offline without a lock: the image is what the cache's
/// index named), an image a rule covers and the cache holds no signature for fails as untied,
/// whatever the mode: the cache cannot show that upstream left it unsigned, and an online build
/// would have asked the registry.
async fn check_image_from(
    checker: &Checker,
    registry: &Registry,
    image: &Image,
    locked: Option<&crate::lock::ImageSignature>,
    from_cache: bool,
) -> Result<(ImageReport, Option<SignatureManifest>), AppError> {
    let artifact = image.reference.to_string();
    let mut report = ImageReport {
        reference: artifact.clone(),
        digest: image.top.digest.to_string(),
        manifest: image.manifest.digest.to_string(),
        verdict: "not-covered".into(),
        signed_digest: None,
        signature_manifest: None,
        found: None,
        signer: None,
        docker_reference: None,
    };
    let Some(rule) = checker.policy.rule_for(&image.reference.repository()) else {
        return Ok((report, None));
    };
    if let Some(locked) = locked {
        let found = locked_signature(registry, image, locked).await?;
        let accepted = signature::judge(&checker.root, rule, &artifact, &found, now())
            .map_err(untrusted)?
            .ok_or_else(|| {
                untrusted(SignatureError::Unsigned {
                    artifact: artifact.clone(),
                    digest: image.manifest.digest.to_string(),
                })
            })?;
        let (signed, manifest_digest, verified) = accepted;
        let manifest = found.into_iter().find(|m| m.digest == manifest_digest);
        let accepted = trust::image::Accepted {
            signed,
            manifest: manifest.expect("judge accepts only a manifest it was given"),
            verified,
        };
        return Ok(accepted_report(report, accepted));
    }
    // The platform manifest's own signature first; the index's only when that does not do.
    let mut digests = vec![&image.manifest.digest];
    if image.top.digest != image.manifest.digest {
        digests.push(&image.top.digest);
    }
    let found = trust::image::check(
        registry,
        &checker.root,
        rule,
        &image.reference,
        &digests,
        now(),
    )
    .await
    .map_err(|e| {
        let hint = e.hint();
        AppError::failure(e, hint)
    })?;
    let accepted = match found {
        Some(accepted) => accepted,
        None if from_cache => return Err(untied(image)),
        None if checker.mode == Mode::Enforce => {
            return Err(untrusted(SignatureError::Unsigned {
                artifact,
                digest: image.manifest.digest.to_string(),
            }));
        }
        None => {
            tracing::warn!(
                "{artifact}: UNSIGNED: no signature for {} or its index; recorded as unsigned \
                 (--signatures enforce refuses it)",
                image.manifest.digest
            );
            report.verdict = "unsigned".into();
            return Ok((report, None));
        }
    };
    Ok(accepted_report(report, accepted))
}

/// The report of an image whose signature `accepted` verified, and that signature manifest.
fn accepted_report(
    mut report: ImageReport,
    accepted: trust::image::Accepted,
) -> (ImageReport, Option<SignatureManifest>) {
    let trust::image::Accepted {
        signed,
        manifest,
        verified,
    } = accepted;
    let manifest_digest = manifest.digest.clone();
    report.verdict = "verified".into();
    report.signed_digest = Some(signed.to_string());
    report.signature_manifest = Some(format!("{DIR}/images/{}.json", manifest_digest.hex()));
    report.found = Some(manifest.found().to_owned());
    report.signer = Some(signature::Signer::from(&verified));
    // A cosign 3 statement names no docker-reference.
    report.docker_reference =
        Some(verified.docker_reference).filter(|r| !r.is_empty() || manifest.found() == "tag");
    (report, Some(manifest))
}

/// The signature manifest a lock names for `image`, by digest (see
/// [`Registry::locked_signature`]); an error naming the image and the digest when the registry
/// or the cache no longer has it, or when the lock names a tag that is not the image's.
async fn locked_signature(
    registry: &Registry,
    image: &Image,
    locked: &crate::lock::ImageSignature,
) -> Result<Vec<SignatureManifest>, AppError> {
    let artifact = image.reference.to_string();
    let lock_err = |reason: String| {
        AppError::failure(
            anyhow::anyhow!("{artifact}: the lock's signature {reason}"),
            Some("the lock was written by another cks-iso; build without --locked".into()),
        )
    };
    let (signs, is_referrer) = [&image.manifest.digest, &image.top.digest]
        .into_iter()
        .find_map(|d| match &locked.tag {
            tag if *tag == signature::tag_for(d) => Some((d, false)),
            tag if *tag == signature::referrer::fallback_tag(d) => Some((d, true)),
            _ => None,
        })
        .ok_or_else(|| {
            lock_err(format!(
                "tag {:?} is neither the .sig tag nor the referrers tag of {} or of {}",
                locked.tag, image.manifest.digest, image.top.digest
            ))
        })?;
    let digest = Digest::parse(&locked.manifest).map_err(|e| {
        lock_err(format!(
            "manifest {:?} is not a digest: {e}",
            locked.manifest
        ))
    })?;
    let fetched = match is_referrer {
        true => {
            registry
                .locked_referrer(&image.reference, signs, &digest)
                .await
        }
        false => {
            registry
                .locked_signature(&image.reference, signs, &digest)
                .await
        }
    };
    let fetched = fetched.map_err(|e| {
        let hint = e.hint();
        AppError::failure(
            anyhow::Error::new(e).context(format!(
                "cannot fetch the locked signature manifest {digest} ({}) of {artifact}",
                locked.tag
            )),
            hint,
        )
    })?;
    match fetched {
        Some(found) => Ok(vec![found]),
        None => Err(AppError::failure(
            anyhow::anyhow!(
                "{artifact}: the signature manifest the lock names is gone: expected {digest} \
                 (the lock), but the registry has no such manifest and {} points elsewhere",
                locked.tag
            ),
            Some(
                "the image was signed again since it was locked; build without --locked to take \
                 its new signature (and review the change), or build from a cache that holds the \
                 locked one"
                    .into(),
            ),
        )),
    }
}

/// Offline without a lock, an image a rule covers whose signature the cache does not hold.
fn untied(image: &Image) -> AppError {
    let artifact = image.reference.to_string();
    let entry = match image.reference.digest() {
        Some(_) => format!("the image {}", image.top.digest),
        None => format!("the cache's entry tag:{artifact}"),
    };
    AppError::failure(
        anyhow::anyhow!(
            "{artifact}: offline without --locked, {entry} cannot be tied to a verification: the \
             cache holds no signature for {} or its index, which an online build checks at the \
             registry",
            image.manifest.digest
        ),
        Some(
            "build once with network (it asks the registry for the signature and keeps it in the \
             cache), or build --locked from a lock you trust; offline, an image its publisher \
             leaves unsigned needs one of those (or --signatures off)"
                .into(),
        ),
    )
}

pub(super) fn untrusted(err: SignatureError) -> AppError {
    let hint = err.hint();
    AppError::failure(anyhow::Error::new(err), hint)
}

/// The lock's record of `image`'s verified signature: its `.sig` tag (for a referrer, the
/// tag-schema name `sha256-<hex>` of the digest it refers to) and the digest of the signature
/// manifest stored in `signatures/`; `None` when none verified.
pub(super) fn lock_signature(
    sigs: &ArchSignatures,
    image: &Image,
) -> Option<crate::lock::ImageSignature> {
    let reference = image.reference.to_string();
    let report = sigs
        .report
        .images
        .iter()
        .find(|r| r.reference == reference && r.verdict == "verified")?;
    let signed = Digest::parse(report.signed_digest.as_deref()?).ok()?;
    let hex = report
        .signature_manifest
        .as_deref()?
        .strip_prefix(&format!("{DIR}/images/"))?
        .strip_suffix(".json")?;
    let manifest = Digest::parse(&format!("sha256:{hex}")).ok()?;
    let tag = match report.found.as_deref() {
        Some("referrer") => signature::referrer::fallback_tag(&signed),
        _ => signature::tag_for(&signed),
    };
    Some(crate::lock::ImageSignature {
        tag,
        manifest: manifest.to_string(),
    })
}

/// Per image archive (`docker/<file>`), what the SBOM says of its signature; images no rule
/// covers get nothing. `files` names each reference's archive.
pub(super) fn sbom_notes(
    sigs: &ArchSignatures,
    files: &std::collections::BTreeMap<crate::image::Reference, String>,
) -> std::collections::BTreeMap<String, String> {
    let mut notes = std::collections::BTreeMap::new();
    for (reference, file) in files {
        let Some(r) = sigs
            .report
            .images
            .iter()
            .find(|i| i.reference == reference.to_string())
        else {
            continue;
        };
        if let Some(note) = note(&r.verdict, r.signer.as_ref()) {
            notes.insert(format!("docker/{file}"), note);
        }
    }
    for b in &sigs.report.binaries {
        if let Some(note) = note(&b.verdict, b.signer.as_ref()) {
            notes.insert(b.path.clone(), note);
        }
    }
    notes
}

/// What the SBOM says of a covered artifact's signature under `--signatures off`.
pub(super) const NOT_CHECKED: &str = "not checked (--signatures off)";

/// Per image archive and per downloaded file the built-in rules cover, [`NOT_CHECKED`]: what the
/// SBOM says under `--signatures off`, when nothing was fetched or judged.
pub(super) fn off_notes(
    images: &[Image],
    files: &[IsoFile],
    naming: &std::collections::BTreeMap<crate::image::Reference, String>,
) -> std::collections::BTreeMap<String, String> {
    let policy = Policy::builtin();
    let mut notes = std::collections::BTreeMap::new();
    for image in images {
        if policy.rule_for(&image.reference.repository()).is_some()
            && let Some(file) = naming.get(&image.reference)
        {
            notes.insert(format!("docker/{file}"), NOT_CHECKED.to_owned());
        }
    }
    for file in files {
        if policy.rule_for_url(&file.source).is_some() {
            notes.insert(file.dest.clone(), NOT_CHECKED.to_owned());
        }
    }
    notes
}

/// The line `versions.txt` gets under `--signatures off`.
pub(super) const OFF_SUMMARY: &str = "# signatures off: not checked\n";

/// `verified: <identity> via <issuer>, Rekor log index N`, `unsigned`, or nothing (not covered).
fn note(verdict: &str, signer: Option<&signature::Signer>) -> Option<String> {
    match (verdict, signer) {
        ("verified", Some(s)) => Some(format!(
            "verified: {} via {}, Rekor log index {}",
            s.identity, s.issuer, s.log_index
        )),
        ("unsigned", _) => Some("unsigned".to_owned()),
        _ => None,
    }
}

/// The one line `versions.txt` gets: `# signatures verify: 9 of 9 covered images verified, 0
/// unsigned (signatures/report.json)`.
pub(super) fn summary(sigs: &ArchSignatures) -> String {
    let count = |v: &str| sigs.report.images.iter().filter(|i| i.verdict == v).count();
    let (verified, unsigned) = (count("verified"), count("unsigned"));
    let bins = |v: &str| {
        let b = &sigs.report.binaries;
        b.iter().filter(|i| i.verdict == v).count()
    };
    let binaries = match sigs.report.binaries.is_empty() {
        true => String::new(),
        false => format!(
            "; {} of {} binaries verified",
            bins("verified"),
            sigs.report.binaries.len()
        ),
    };
    format!(
        "# signatures {}: {verified} of {} covered images verified, {unsigned} unsigned\
         {binaries} ({DIR}/report.json)\n",
        sigs.report.mode,
        verified + unsigned
    )
}

/// Writes `signatures/` (see [`signature::evidence`]) into the staging directory `staging`.
pub(super) fn write_into(staging: &Path, sigs: &ArchSignatures) -> Result<(), AppError> {
    for (rel, bytes) in signature::evidence(
        &sigs.report,
        &sigs.manifests,
        &sigs.binaries,
        &sigs.trusted_root,
    ) {
        let path = staging.join(DIR).join(&rel);
        let fail = |e: std::io::Error| {
            AppError::failure(
                anyhow::Error::new(e).context(format!("cannot write {}", path.display())),
                None,
            )
        };
        std::fs::create_dir_all(path.parent().expect("under signatures/")).map_err(fail)?;
        std::fs::write(&path, bytes).map_err(fail)?;
    }
    Ok(())
}
