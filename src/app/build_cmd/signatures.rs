//! Signatures in `build`: which mode and trust root apply, fetching and judging every image's
//! `.sig` tags after the pull, and what goes into the ISO's `signatures/` directory.

use std::path::{Path, PathBuf};

use futures_util::{StreamExt, stream};

use super::super::AppError;
use super::fetch::IsoFile;
use crate::cache::Cache;
use crate::config::Settings;
use crate::fetch::{FetchError, get_bytes, post_json};
use crate::image::Digest;
use crate::image::Image;
use crate::registry::Registry;
use crate::signature::rekor;
use crate::signature::{
    self, BinaryEvidence, BinaryReport, ImageReport, Mode, PUBLIC_GOOD_ROOT, Policy, Report,
    SignatureError, SignatureManifest, TrustedRoot,
};
use crate::upstream::Fetcher;

/// The directory at the ISO's root that holds the evidence.
pub(crate) const DIR: &str = "signatures";

/// How this build judges signatures.
pub(crate) struct Checker {
    mode: Mode,
    root: TrustedRoot,
    root_text: String,
    policy: Policy,
    /// Where binaries' Rekor entries are looked up.
    pub(super) rekor_url: String,
}

/// Rekor's public-good instance.
pub(crate) const DEFAULT_REKOR_URL: &str = "https://rekor.sigstore.dev";

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
    let (root, root_text) = trusted_root(trusted_root_flag, settings.trusted_root.as_ref())?;
    let policy = policy(policy_flag.or(settings.signature_policy.as_ref()))?;
    tracing::info!("signatures: {mode}");
    let rekor_url = rekor_flag
        .map(str::to_owned)
        .or_else(|| settings.rekor_url.clone())
        .unwrap_or_else(|| DEFAULT_REKOR_URL.to_owned());
    Ok(Some(Checker {
        mode,
        root_text,
        root,
        policy,
        rekor_url: rekor_url.trim_end_matches('/').to_owned(),
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
        signer: None,
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
        return Ok(accepted_report(report, found, accepted));
    }
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
            Ok(None) if from_cache => return Err(untied(image)),
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
    Ok(accepted_report(report, found, accepted))
}

/// The report of an image whose signature `accepted` (signed digest, signature manifest,
/// verdict) is in `found`, and that signature manifest.
fn accepted_report(
    mut report: ImageReport,
    found: Vec<SignatureManifest>,
    accepted: (Digest, Digest, signature::Verified),
) -> (ImageReport, Option<SignatureManifest>) {
    let (signed, manifest_digest, verified) = accepted;
    let manifest = found.into_iter().find(|m| m.digest == manifest_digest);
    report.verdict = "verified".into();
    report.signed_digest = Some(signed.to_string());
    report.signature_manifest = Some(format!("{DIR}/images/{}.json", manifest_digest.hex()));
    report.signer = Some(signature::Signer::from(&verified));
    report.docker_reference = Some(verified.docker_reference);
    (report, manifest)
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
    let signs = [&image.manifest.digest, &image.top.digest]
        .into_iter()
        .find(|d| signature::tag_for(d) == locked.tag)
        .ok_or_else(|| {
            lock_err(format!(
                "tag {:?} is not the .sig tag of {} or of {}",
                locked.tag, image.manifest.digest, image.top.digest
            ))
        })?;
    let digest = Digest::parse(&locked.manifest).map_err(|e| {
        lock_err(format!(
            "manifest {:?} is not a digest: {e}",
            locked.manifest
        ))
    })?;
    let fetched = registry
        .locked_signature(&image.reference, signs, &digest)
        .await
        .map_err(|e| {
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

fn untrusted(err: SignatureError) -> AppError {
    let hint = err.hint();
    AppError::failure(anyhow::Error::new(err), hint)
}

/// The lock's record of `image`'s verified signature: its `.sig` tag and the digest of the
/// signature manifest stored in `signatures/`; `None` when none verified.
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
    Some(crate::lock::ImageSignature {
        tag: signature::tag_for(&signed),
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

/// Index key of the Rekor entry chosen for a file's sha256 (the entry reply's bytes).
fn rekor_key(rekor_url: &str, sha256_hex: &str) -> String {
    format!("rekor:{rekor_url}:sha256:{sha256_hex}")
}

/// Bytes the cache holds under `digest` (hex), if intact.
fn cached(store: Option<&Cache>, digest: &str) -> Option<Vec<u8>> {
    let store = store?;
    let digest = Digest::parse(&format!("sha256:{digest}")).ok()?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut store.open(&digest).ok()?, &mut bytes).ok()?;
    (Digest::of(&bytes) == digest).then_some(bytes)
}

/// What a signature lookup found for one file.
enum Found {
    /// `.sig`, `.cert` and the Rekor entry reply.
    Signed(Vec<u8>, Vec<u8>, Vec<u8>),
    /// No `.sig`/`.cert` (404, or offline and never seen): why.
    Unsigned(String),
}

/// The `.sig` or `.cert` beside `url`: the locked bytes when the cache has them, else through the
/// mirrors (offline: what the cache last saw); `None` when there is none.
async fn side_file(
    fetcher: &Fetcher<'_>,
    url: &str,
    locked: Option<&str>,
) -> Result<Option<Vec<u8>>, FetchError> {
    if let Some(bytes) = locked.and_then(|d| cached(fetcher.store, d)) {
        return Ok(Some(bytes));
    }
    match fetcher.text(url, 64 * 1024).await {
        Ok(text) => Ok(Some(text.into_bytes())),
        Err(e) if e.status() == Some(404) || matches!(e, FetchError::Offline { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The Rekor entry reply (`{uuid: entry}`) at `rekor_url` that logs this file, signature and
/// certificate (offline: the one the cache last saw; `locked`: the cached bytes of that digest).
pub(crate) async fn rekor_entry(
    rekor_url: &str,
    fetcher: &Fetcher<'_>,
    digest: &[u8],
    sig: &[u8],
    cert: &[u8],
    locked: Option<&str>,
) -> Result<Option<Vec<u8>>, FetchError> {
    let hex = hex::encode(digest);
    let key = rekor_key(rekor_url, &hex);
    let logs = |bytes: &[u8]| {
        rekor::entries(bytes).is_ok_and(|map| {
            map.values()
                .any(|e| rekor::Evidence::logged_by(digest, sig, cert, e))
        })
    };
    if let Some(bytes) = locked.and_then(|d| cached(fetcher.store, d)) {
        return Ok(Some(bytes));
    }
    if fetcher.download.offline {
        let recalled = fetcher.store.and_then(|s| s.recall(&key));
        let bytes = recalled.and_then(|r| cached(fetcher.store, r.digest.hex()));
        return match bytes {
            Some(bytes) => Ok(Some(bytes)),
            None => Err(FetchError::Offline {
                url: format!("{}/api/v1/index/retrieve", rekor_url),
            }),
        };
    }
    let index = fetcher
        .mirrors
        .rewrite(&format!("{}/api/v1/index/retrieve", rekor_url));
    let reply = post_json(
        &fetcher.download,
        &index,
        &rekor::index_query(&hex),
        1 << 20,
    )
    .await?;
    let uuids = rekor::uuids(&reply).unwrap_or_default();
    for uuid in uuids
        .iter()
        .filter(|u| u.chars().all(|c| c.is_ascii_alphanumeric()))
    {
        let url = format!("{}/api/v1/log/entries/{uuid}", rekor_url);
        let (bytes, _) = get_bytes(
            &fetcher.download,
            &fetcher.mirrors.rewrite(&url),
            &reqwest::header::HeaderMap::new(),
            4 << 20,
        )
        .await?;
        if logs(&bytes) {
            if let Some(store) = fetcher.store {
                let kept = store
                    .put_bytes(&bytes)
                    .and_then(|d| store.remember(&key, &d, bytes.len() as u64, &url));
                if let Err(e) = kept {
                    tracing::warn!("cannot keep the Rekor entry {uuid} in the cache: {e}");
                }
            }
            return Ok(Some(bytes));
        }
    }
    Ok(None)
}

/// How many covered files are checked at once (each with its own requests and its own hashing
/// thread): the three Kubernetes binaries of an architecture together.
const FILES_AT_ONCE: usize = 4;

/// Checks the signature of every downloaded file a policy rule covers by URL (the dl.k8s.io
/// Kubernetes binaries): `.sig`, `.cert` and the Rekor entry, verified as a Sigstore bundle.
/// The files are checked concurrently, each retried on its own; fails, naming the file's URL,
/// digest and the failed step (the first such file in `files`' order), before anything is
/// written.
pub(super) async fn check_files(
    checker: &Checker,
    fetcher: &Fetcher<'_>,
    kubernetes: &crate::resolve::KubeVersion,
    files: &[IsoFile],
    locked: Option<&crate::lock::ArchEntry>,
    arch: &str,
) -> Result<(Vec<BinaryReport>, Vec<BinaryEvidence>), AppError> {
    let covered = files.iter().filter_map(|file| {
        let rule = checker.policy.rule_for_url(&file.source)?;
        let lock_sig = locked
            .and_then(|l| l.files.iter().find(|f| f.path == file.dest))
            .and_then(|f| f.signature.as_ref());
        Some(Covered {
            file,
            rule,
            lock_sig,
        })
    });
    let results: Vec<_> = stream::iter(covered)
        .map(|covered| check_file_retrying(checker, fetcher, kubernetes, covered))
        .buffered(FILES_AT_ONCE)
        .collect()
        .await;
    let mut reports = Vec::new();
    let mut evidence = Vec::new();
    for result in results {
        let (report, found) = result?;
        reports.push(report);
        evidence.extend(found);
    }
    reports.sort_by(|a, b| a.path.cmp(&b.path));
    evidence.sort_by(|a, b| a.path.cmp(&b.path));
    let verified = reports.iter().filter(|r| r.verdict == "verified").count();
    tracing::info!(
        "linux/{arch}: {verified} of {} covered files' signatures verified",
        reports.len()
    );
    Ok((reports, evidence))
}

/// A downloaded file a policy rule covers, with what the lock says of its signature.
#[derive(Clone, Copy)]
struct Covered<'a> {
    file: &'a IsoFile,
    rule: &'a signature::Rule,
    lock_sig: Option<&'a crate::lock::FileSignature>,
}

/// [`check_file`], again while it fails in a way that fetching the material again may mend.
async fn check_file_retrying(
    checker: &Checker,
    fetcher: &Fetcher<'_>,
    kubernetes: &crate::resolve::KubeVersion,
    covered: Covered<'_>,
) -> Result<(BinaryReport, Option<BinaryEvidence>), AppError> {
    // Material that fails verification was damaged on the way until proven otherwise (a
    // flipped byte in a .sig): fetched again, within the budget of a 5xx. The file itself is
    // hashed once, whatever the number of attempts.
    let retry = fetcher.download.retry;
    let mut hash = FileHash::new(&covered.file.path);
    let mut attempt = 1;
    loop {
        match check_file(checker, fetcher, kubernetes, covered, &mut hash).await {
            Ok(done) => return Ok(done),
            Err((err, true)) if !fetcher.download.offline && attempt < retry.attempts.max(2) => {
                tracing::warn!("{:#}; fetching its signature again", err.error);
                tokio::time::sleep(retry.delay(attempt, None)).await;
                attempt += 1;
            }
            Err((err, _)) => return Err(err),
        }
    }
}

/// A covered file's sha256, computed on a blocking thread (the file streams through a small
/// buffer, so memory does not grow with its size) while its signature material is fetched, and
/// kept across attempts.
struct FileHash {
    path: PathBuf,
    state: HashState,
}

enum HashState {
    Idle,
    Running(tokio::task::JoinHandle<std::io::Result<[u8; 32]>>),
    Done([u8; 32]),
}

impl FileHash {
    fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            state: HashState::Idle,
        }
    }

    /// Starts hashing, unless it has started.
    fn start(&mut self) {
        if let HashState::Idle = self.state {
            let path = self.path.clone();
            self.state = HashState::Running(tokio::task::spawn_blocking(move || {
                crate::image::sha256_of(std::fs::File::open(&path)?)
            }));
        }
    }

    /// The file's sha256 (hashing it now if it has not started).
    async fn get(&mut self) -> std::io::Result<[u8; 32]> {
        self.start();
        let digest = match &mut self.state {
            HashState::Done(digest) => return Ok(*digest),
            HashState::Running(handle) => handle.await.map_err(std::io::Error::other),
            HashState::Idle => unreachable!("started above"),
        };
        self.state = match digest {
            Ok(Ok(digest)) => HashState::Done(digest),
            // Read again should it be asked for again.
            _ => HashState::Idle,
        };
        digest?
    }
}

/// Fetches and verifies one covered file's signature (see [`check_files`]); an error says
/// whether fetching the material again may help.
async fn check_file(
    checker: &Checker,
    fetcher: &Fetcher<'_>,
    kubernetes: &crate::resolve::KubeVersion,
    covered: Covered<'_>,
    hash: &mut FileHash,
) -> Result<(BinaryReport, Option<BinaryEvidence>), (AppError, bool)> {
    let Covered {
        file,
        rule,
        lock_sig,
    } = covered;
    let digest = hex::decode(&file.sha256).unwrap_or_default();
    let artifact = file.source.clone();
    let shown = format!("sha256:{}", file.sha256);
    let fetch_err = |e: FetchError| {
        let hint = e.hint();
        let err = AppError::failure(
            anyhow::Error::new(e).context(format!("cannot fetch the signature of {artifact}")),
            hint,
        );
        (err, false)
    };
    // The .sig and the .cert together; a failure of the .sig is told first, as it always was.
    let (sig_url, cert_url) = (
        format!("{}.sig", file.source),
        format!("{}.cert", file.source),
    );
    let (sig, cert) = futures_util::future::join(
        side_file(fetcher, &sig_url, lock_sig.map(|s| s.sig.as_str())),
        side_file(fetcher, &cert_url, lock_sig.map(|s| s.cert.as_str())),
    )
    .await;
    let (sig, cert) = (sig.map_err(fetch_err)?, cert.map_err(&fetch_err)?);
    let found = match (sig, cert) {
        (Some(sig), Some(cert)) => {
            // Signed: the file is hashed while its Rekor entry is looked up.
            hash.start();
            let entry = rekor_entry(
                &checker.rekor_url,
                fetcher,
                &digest,
                &sig,
                &cert,
                lock_sig.map(|s| s.rekor.as_str()),
            )
            .await
            .map_err(fetch_err)?;
            match entry {
                Some(entry) => Found::Signed(sig, cert, entry),
                None => {
                    let err = untrusted(SignatureError::Invalid {
                        artifact,
                        digest: shown,
                        step: signature::Step::RekorEntry,
                        reason: format!(
                            "{} has no entry that logs this file, signature and certificate",
                            checker.rekor_url
                        ),
                    });
                    return Err((err, true));
                }
            }
        }
        (None, None) => Found::Unsigned("no .sig or .cert beside it".into()),
        (None, Some(_)) => Found::Unsigned("a .cert but no .sig beside it".into()),
        (Some(_), None) => Found::Unsigned("a .sig but no .cert beside it".into()),
    };
    let mut report = BinaryReport {
        path: file.dest.clone(),
        url: file.source.clone(),
        sha256: file.sha256.clone(),
        verdict: "unsigned".into(),
        bundle: None,
        signer: None,
    };
    let (sig, cert, entry) = match found {
        Found::Signed(sig, cert, entry) => (sig, cert, entry),
        Found::Unsigned(why) => {
            let kube_binary = file.source.starts_with("https://dl.k8s.io/release/");
            let required = kube_binary && kubernetes.major == 1 && kubernetes.minor >= 26;
            if checker.mode == Mode::Enforce || required {
                let why = match required {
                    true => {
                        format!("{why}, and Kubernetes v{kubernetes} binaries are always signed")
                    }
                    false => format!("{why} (--signatures enforce)"),
                };
                let err = untrusted(SignatureError::UnsignedFile {
                    artifact,
                    digest: shown,
                    why,
                });
                return Err((err, false));
            }
            tracing::warn!(
                "{artifact}: UNSIGNED: {why}; recorded as unsigned (--signatures enforce \
                 refuses it)"
            );
            return Ok((report, None));
        }
    };
    let invalid = |step, reason| {
        let err = untrusted(SignatureError::Invalid {
            artifact: artifact.clone(),
            digest: shown.clone(),
            step,
            reason,
        });
        (err, true)
    };
    let map = rekor::entries(&entry).map_err(|e| invalid(signature::Step::RekorEntry, e))?;
    let logged = map
        .values()
        .find(|e| rekor::Evidence::logged_by(&digest, &sig, &cert, e))
        .ok_or_else(|| {
            invalid(
                signature::Step::RekorEntry,
                "the Rekor entry does not log this file, signature and certificate".into(),
            )
        })?;
    let ev = rekor::Evidence::from_rekor(&digest, &sig, &cert, logged)
        .map_err(|e| invalid(signature::Step::LayerIntegrity, e))?;
    let file_digest = hash.get().await.map_err(|e| {
        let err = AppError::failure(
            anyhow::Error::new(e).context(format!("cannot read {}", file.path.display())),
            None,
        );
        (err, false)
    })?;
    let verified = rekor::verify_digest(&checker.root, rule, &file_digest, &ev, now())
        .map_err(|f| invalid(f.step, f.reason))?;
    report.verdict = "verified".into();
    report.bundle = Some(format!("{DIR}/{}", BinaryEvidence::bundle_path(&file.dest)));
    report.signer = Some(signature::Signer::from(&verified));
    let evidence = BinaryEvidence {
        path: file.dest.clone(),
        bundle: ev.bundle(),
        sig,
        cert,
        entry,
    };
    Ok((report, Some(evidence)))
}
