//! Signatures in `build`: which mode and trust root apply, fetching and judging every image's
//! `.sig` tags after the pull, and what goes into the ISO's `signatures/` directory.

use std::path::{Path, PathBuf};

use futures_util::{StreamExt, stream};

use super::super::AppError;
use crate::config::Settings;
use crate::image::Image;
use crate::registry::Registry;
use crate::signature::{
    self, ImageReport, Mode, PUBLIC_GOOD_ROOT, Policy, Report, SignatureError, SignatureManifest,
    TrustedRoot,
};

/// The directory at the ISO's root that holds the evidence.
pub(crate) const DIR: &str = "signatures";

/// How this build judges signatures.
pub(crate) struct Checker {
    mode: Mode,
    root: TrustedRoot,
    root_text: String,
    policy: Policy,
}

/// One architecture's verdicts and the signature manifests that carried them.
pub(crate) struct ArchSignatures {
    pub(crate) report: Report,
    pub(crate) manifests: Vec<SignatureManifest>,
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
        tracing::warn!("--signatures off: image signatures are not checked");
        return Ok(None);
    }
    let (root, root_text) = trusted_root(trusted_root_flag, settings.trusted_root.as_ref())?;
    let policy = policy(policy_flag.or(settings.signature_policy.as_ref()))?;
    tracing::info!("image signatures: {mode}");
    Ok(Some(Checker {
        mode,
        root_text,
        root,
        policy,
    }))
}

/// The built-in policy, after the rules of `file` when given.
pub(crate) fn policy(file: Option<&PathBuf>) -> Result<Policy, AppError> {
    let Some(path) = file else {
        return Ok(Policy::builtin());
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        AppError::usage(
            anyhow::Error::new(e).context(format!(
                "cannot read the signature policy {}",
                path.display()
            )),
            None,
        )
    })?;
    Policy::with_file(&text).map_err(|e| {
        AppError::usage(
            anyhow::anyhow!("signature policy {}: {e}", path.display()),
            Some(
                "each rule has match, issuer and one of identity, identity-regex (see README, \
                 Signatures)"
                    .into(),
            ),
        )
    })
}

/// The trusted root: `flag`, else `file` (the configuration's), else the embedded public-good
/// root; with its text.
pub(crate) fn trusted_root(
    flag: Option<&PathBuf>,
    file: Option<&PathBuf>,
) -> Result<(TrustedRoot, String), AppError> {
    let (text, origin) = match flag.or(file) {
        Some(path) => (read_root(path)?, path.display().to_string()),
        None => (
            PUBLIC_GOOD_ROOT.to_owned(),
            "Sigstore's public-good root (embedded)".to_owned(),
        ),
    };
    let root = TrustedRoot::from_json(&text).map_err(|e| {
        AppError::usage(
            anyhow::anyhow!("the trusted root {origin}: {e}"),
            Some("pass a Sigstore trusted_root.json with --trusted-root".into()),
        )
    })?;
    tracing::info!("trusted root for signatures: {origin}");
    Ok((root, text))
}

fn read_root(path: &PathBuf) -> Result<String, AppError> {
    std::fs::read_to_string(path).map_err(|e| {
        AppError::usage(
            anyhow::Error::new(e)
                .context(format!("cannot read the trusted root {}", path.display())),
            Some("pass a readable Sigstore trusted_root.json with --trusted-root".into()),
        )
    })
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Fetches and judges the signatures of `images` for linux/`arch`; fails, naming every image
/// that failed, before anything is written.
pub(super) async fn check(
    checker: &Checker,
    registry: &Registry,
    images: &[Image],
    arch: &str,
) -> Result<ArchSignatures, AppError> {
    let results: Vec<Result<(ImageReport, Option<SignatureManifest>), AppError>> =
        stream::iter(images)
            .map(|image| check_image(checker, registry, image))
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
        },
        manifests,
        trusted_root: checker.root_text.clone(),
    })
}

/// Fetches and judges one image's signatures (see [`check`]).
pub(crate) async fn check_image(
    checker: &Checker,
    registry: &Registry,
    image: &Image,
) -> Result<(ImageReport, Option<SignatureManifest>), AppError> {
    let artifact = image.reference.to_string();
    let mut report = ImageReport {
        reference: artifact.clone(),
        digest: image.top.digest.to_string(),
        manifest: image.manifest.digest.to_string(),
        verdict: "not-covered".into(),
        signed_digest: None,
        signature_manifest: None,
        identity: None,
        issuer: None,
        log_index: None,
        integrated_time: None,
        docker_reference: None,
    };
    let Some(rule) = checker.policy.rule_for(&image.reference.repository()) else {
        return Ok((report, None));
    };
    let fetch_err = |e: crate::registry::RegistryError| {
        let hint = e.hint();
        AppError::failure(
            anyhow::Error::new(e).context(format!("cannot fetch the signatures of {artifact}")),
            hint,
        )
    };
    // The platform manifest's own signature first; the index's only when that does not do.
    let mut found = Vec::new();
    let mut digests = vec![&image.manifest.digest];
    if image.top.digest != image.manifest.digest {
        digests.push(&image.top.digest);
    }
    let mut accepted = None;
    for digest in digests {
        if let Some(sig) = registry
            .signature(&image.reference, digest)
            .await
            .map_err(fetch_err)?
        {
            found.push(sig);
        }
        match signature::judge(&checker.root, rule, &artifact, &found, now()) {
            Ok(Some(ok)) => {
                accepted = Some(ok);
                break;
            }
            Ok(None) | Err(_) => continue,
        }
    }
    let accepted = match accepted {
        Some(ok) => ok,
        None => match signature::judge(&checker.root, rule, &artifact, &found, now()) {
            Err(e) => return Err(untrusted(e)),
            Ok(Some(ok)) => ok,
            Ok(None) if checker.mode == Mode::Enforce => {
                return Err(untrusted(SignatureError::Unsigned {
                    artifact,
                    digest: image.manifest.digest.to_string(),
                }));
            }
            Ok(None) => {
                tracing::warn!(
                    "{artifact}: UNSIGNED: no signature for {} or its index; recorded as unsigned \
                     (--signatures enforce refuses it)",
                    image.manifest.digest
                );
                report.verdict = "unsigned".into();
                return Ok((report, None));
            }
        },
    };
    let (signed, manifest_digest, verified) = accepted;
    let manifest = found.into_iter().find(|m| m.digest == manifest_digest);
    report.verdict = "verified".into();
    report.signed_digest = Some(signed.to_string());
    report.signature_manifest = Some(format!("{DIR}/images/{}.json", manifest_digest.hex()));
    report.identity = Some(verified.identity);
    report.issuer = Some(verified.issuer);
    report.log_index = Some(verified.log_index);
    report.integrated_time = Some(verified.integrated_time);
    report.docker_reference = Some(verified.docker_reference);
    Ok((report, manifest))
}

fn untrusted(err: SignatureError) -> AppError {
    let hint = err.hint();
    AppError::failure(anyhow::Error::new(err), hint)
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
        let note = match r.verdict.as_str() {
            "verified" => format!(
                "verified: {} via {}, Rekor log index {}",
                r.identity.as_deref().unwrap_or_default(),
                r.issuer.as_deref().unwrap_or_default(),
                r.log_index.unwrap_or_default()
            ),
            "unsigned" => "unsigned".to_owned(),
            _ => continue,
        };
        notes.insert(format!("docker/{file}"), note);
    }
    notes
}

/// The one line `versions.txt` gets: `# signatures verify: 9 of 9 covered images verified, 0
/// unsigned (signatures/report.json)`.
pub(super) fn summary(sigs: &ArchSignatures) -> String {
    let count = |v: &str| sigs.report.images.iter().filter(|i| i.verdict == v).count();
    let (verified, unsigned) = (count("verified"), count("unsigned"));
    format!(
        "# signatures {}: {verified} of {} covered images verified, {unsigned} unsigned \
         ({DIR}/report.json)\n",
        sigs.report.mode,
        verified + unsigned
    )
}

/// Writes `signatures/` (see [`signature::evidence`]) into the staging directory `staging`.
pub(super) fn write_into(staging: &Path, sigs: &ArchSignatures) -> Result<(), AppError> {
    for (rel, bytes) in signature::evidence(&sigs.report, &sigs.manifests, &sigs.trusted_root) {
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
