//! `cks-iso verify-image IMAGE...`: each image's cosign signature judged the way `build` judges
//! it ([`trust::image::check`]: the same `.sig` tags and cosign 3 referrers through the same
//! mirrors, credentials, cache, policy and trusted root), without pulling the image. By digest only the signature is
//! fetched; by tag, also the digest the tag points at; with `--arch`, also the index, to judge
//! the platform manifest's signature first as `build` does.

use futures_util::{StreamExt, stream};
use serde::Serialize;

use super::{AppError, net};
use crate::cli::VerifyImageArgs;
use crate::fetch::Origin;
use crate::image::{Arch, Digest, Reference};
use crate::registry::Registry;
use crate::signature::policy::Identity;
use crate::signature::{Rule, SignatureError, Signer, Step, TrustedRoot, tag_for};
use crate::trust::{self, image::Accepted, image::CheckError};
use crate::ui::Ui;

/// The version of `verify-image --json`'s object, bumped on any change that breaks a reader.
pub const FORMAT: u32 = 1;

/// Judges every image, prints a line (or the JSON object) on stdout, and fails when one failed
/// (with `--enforce`, or is unsigned).
pub fn run(args: VerifyImageArgs, ui: &Ui) -> Result<(), AppError> {
    let arch = match args.arch.as_deref() {
        Some(text) => Some(Arch::parse(text).map_err(|_| AppError::unknown_arch(text))?),
        None => None,
    };
    let mut references: Vec<Reference> = Vec::new();
    for text in &args.images {
        let reference = Reference::parse(text)?;
        if !references.contains(&reference) {
            references.push(reference);
        }
    }
    let mut settings = net::settings(args.net.clone())?;
    settings.http.offline = args.offline;
    let rules = rules(&args, &settings, &references)?;
    let (root, _) = trust::trusted_root(
        args.trust.trusted_root.as_deref(),
        settings.trusted_root.as_deref(),
    )?;
    let cache = net::writable_cache(args.cache_dir.clone())?;
    let registry = net::registry(&settings, cache)?;
    let runtime = net::runtime()?;
    let checked: Vec<Checked> = runtime.block_on(
        stream::iter(references.iter().zip(&rules))
            .map(|(reference, rule)| one(&registry, &root, rule, reference, arch, args.enforce))
            .buffered(registry.jobs())
            .collect(),
    );

    let mut failed = Vec::new();
    let mut entries = Vec::new();
    for c in checked {
        if let Some(err) = c.outcome.error() {
            let (top, causes) = err.lines();
            ui.error(&top, &causes, err.advice().as_deref());
            failed.push(c.reference.to_string());
        }
        match args.json {
            true => entries.push(entry(&c)),
            false => crate::outln!("{}", line(&c)),
        }
    }
    if args.json {
        let report = Report {
            format: FORMAT,
            arch: arch.map(|a| format!("linux/{a}")),
            images: entries,
        };
        let text = serde_json::to_string_pretty(&report).expect("the report serialises");
        crate::outln!("{text}");
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(AppError::failure(
            anyhow::anyhow!(
                "{} of {} image(s) failed the signature check{}: {}",
                failed.len(),
                references.len(),
                match args.enforce {
                    true => " (unsigned ones fail under --enforce)",
                    false => "",
                },
                failed.join(", ")
            ),
            Some("each error above names its image, the digest and the failed check".into()),
        )),
    }
}

/// The rule each image is judged by: the one the identity flags give, else the policy's (the
/// flag's file, else the configuration's); a usage error naming every image no rule covers.
fn rules(
    args: &VerifyImageArgs,
    settings: &crate::config::Settings,
    references: &[Reference],
) -> Result<Vec<Rule>, AppError> {
    if let Some(issuer) = &args.certificate_oidc_issuer {
        let identity = match (
            &args.certificate_identity,
            &args.certificate_identity_regexp,
        ) {
            (Some(exact), _) => Identity::Exact(exact.clone()),
            (None, Some(re)) => Identity::Regex(regex::Regex::new(re).map_err(|e| {
                AppError::usage(
                    anyhow::anyhow!("--certificate-identity-regexp {re:?}: {e}"),
                    Some("pass a regular expression (Rust regex syntax)".into()),
                )
            })?),
            (None, None) => unreachable!("clap requires an identity with the issuer"),
        };
        let rule = Rule {
            pattern: "**".into(),
            identity,
            issuer: issuer.clone(),
        };
        return Ok(vec![rule; references.len()]);
    }
    let file = args
        .trust
        .signature_policy
        .as_deref()
        .or(settings.signature_policy.as_deref());
    let policy = trust::policy(file)?;
    let mut rules = Vec::new();
    let mut uncovered = Vec::new();
    for reference in references {
        match policy.rule_for(&reference.repository()) {
            Some(rule) => rules.push(rule.clone()),
            None => uncovered.push(reference.to_string()),
        }
    }
    if !uncovered.is_empty() {
        return Err(AppError::usage(
            anyhow::anyhow!(
                "no signature policy rule says who must have signed {}: the built-in rule covers \
                 registry.k8s.io/** only",
                uncovered.join(", ")
            ),
            Some(
                "name the signer with --certificate-identity (or --certificate-identity-regexp) \
                 and --certificate-oidc-issuer, or add a rule to --signature-policy"
                    .into(),
            ),
        ));
    }
    Ok(rules)
}

/// One image's verdict.
struct Checked {
    reference: Reference,
    /// The digest the reference names, once known.
    digest: Option<Digest>,
    /// With `--arch` and an index: the platform manifest it lists.
    platform: Option<Digest>,
    /// Where the `.sig` tags were looked for.
    registry: String,
    /// The `.sig` tags looked for, in order.
    tags: Vec<String>,
    /// Who answered: the registry, or (`--offline`) the cache.
    origin: Origin,
    outcome: Outcome,
}

impl Checked {
    /// Where the `.sig` tags were looked for, for messages: `at HOST`, or the cache.
    fn place(&self) -> String {
        match self.origin {
            Origin::Cache => "in the cache (--offline)".into(),
            Origin::Network => format!("at {}", self.registry),
        }
    }
}

enum Outcome {
    Verified(Box<Accepted>),
    /// No signature; under `--enforce`, the error that fails the run.
    Unsigned(Option<AppError>),
    /// A bad signature, or one that could not be fetched.
    Failed(AppError),
}

impl Outcome {
    /// The error that fails the run, if any.
    fn error(&self) -> Option<&AppError> {
        match self {
            Self::Verified(_) | Self::Unsigned(None) => None,
            Self::Unsigned(Some(err)) | Self::Failed(err) => Some(err),
        }
    }
}

/// Finds and judges `reference`'s signatures (see the module's doc).
async fn one(
    registry: &Registry,
    root: &TrustedRoot,
    rule: &Rule,
    reference: &Reference,
    arch: Option<Arch>,
    enforce: bool,
) -> Checked {
    let mut checked = Checked {
        reference: reference.clone(),
        digest: None,
        platform: None,
        registry: registry.serving_host(reference),
        tags: Vec::new(),
        origin: Origin::Network,
        outcome: Outcome::Unsigned(None),
    };
    checked.outcome = match judge(registry, root, rule, &mut checked, arch).await {
        Ok(Some(accepted)) => Outcome::Verified(Box::new(accepted)),
        Ok(None) if enforce => Outcome::Unsigned(Some(AppError::failure(
            anyhow::anyhow!(
                "{reference}: UNSIGNED: no {} nor signature referrer {} (--enforce refuses it)",
                checked.tags.join(" or "),
                checked.place()
            ),
            Some(
                "check that the registry or mirror serving it carries its .sig tags or its \
                 referrers (offline, that the cache holds them from an online run); without \
                 --enforce an unsigned image is reported and does not fail"
                    .into(),
            ),
        ))),
        Ok(None) => {
            tracing::warn!(
                "{reference}: UNSIGNED: no {} nor signature referrer {}",
                checked.tags.join(" or "),
                checked.place()
            );
            Outcome::Unsigned(None)
        }
        Err(err) => Outcome::Failed(err),
    };
    checked
}

/// The digests that may speak for the image, then their signatures judged.
async fn judge(
    registry: &Registry,
    root: &TrustedRoot,
    rule: &Rule,
    checked: &mut Checked,
    arch: Option<Arch>,
) -> Result<Option<Accepted>, AppError> {
    let reference = checked.reference.clone();
    let (top, origin) = registry.digest_of(&reference).await?;
    checked.digest = Some(top.clone());
    if let Some(arch) = arch {
        checked.platform = registry.platform_of(&reference, &top, arch).await?;
        registry.remember_tag(&reference, &top, origin);
    }
    // As build: the platform manifest's own signature first, the index's when that does not do.
    let digests: Vec<&Digest> = checked.platform.iter().chain([&top]).collect();
    checked.tags = digests.iter().map(|d| tag_for(d)).collect();
    let verdicts = trust::image::Verdicts::default();
    let (accepted, origin) = trust::image::check(
        registry,
        root,
        rule,
        &reference,
        &digests,
        trust::now(),
        &verdicts,
    )
    .await
    .map_err(|err| {
        let hint = hint(&err);
        AppError::failure(err, hint)
    })?;
    checked.origin = origin;
    Ok(accepted)
}

/// What the user can do about a signature that does not verify: `build`'s advice, in the words
/// of this command.
fn hint(err: &CheckError) -> Option<String> {
    match err {
        CheckError::Untrusted(SignatureError::Invalid {
            step: Step::Identity | Step::Issuer,
            ..
        }) => Some(
            "it is signed, but not by the signer asked for: check --certificate-identity, \
             --certificate-identity-regexp and --certificate-oidc-issuer, or the rule of \
             --signature-policy, and the registry mirror serving the image (--registry-mirror)"
                .into(),
        ),
        // Nothing dated it by an authority of the root: build's words, which name the root's list.
        CheckError::Untrusted(
            e @ SignatureError::Invalid {
                step: Step::Timestamp,
                ..
            },
        ) => e.hint(),
        CheckError::Untrusted(_) => Some(
            "the signature was altered (on the way, or where it is kept), or the trusted root \
             (--trusted-root) is not the one that signed it"
                .into(),
        ),
        CheckError::Fetch { .. } => err.hint(),
    }
}

/// The line on stdout: `REFERENCE DIGEST VERDICT: details`.
fn line(c: &Checked) -> String {
    let digest = c
        .digest
        .as_ref()
        .map_or_else(|| "-".to_owned(), ToString::to_string);
    let details = match &c.outcome {
        Outcome::Verified(a) => format!(
            "verified: {} via {}, Rekor log index {}, {} at {} ({} {})",
            a.verified.identity,
            a.verified.issuer,
            a.verified.log_index,
            // A Rekor v2 entry has no integrated time: its signing time is a timestamp's.
            match a.verified.timestamped {
                true => "timestamped",
                false => "integrated",
            },
            a.verified.integrated_time,
            match a.manifest.found() {
                "referrer" => format!("referrer {} of {}", a.manifest.digest, a.signed),
                _ => tag_for(&a.signed),
            },
            c.place()
        ),
        Outcome::Unsigned(_) => {
            format!(
                "UNSIGNED: no {} nor signature referrer {}",
                c.tags.join(" or "),
                c.place()
            )
        }
        Outcome::Failed(err) => {
            let top = err.lines().0;
            let prefix = format!("{}: ", c.reference);
            format!("FAILED: {}", top.strip_prefix(&prefix).unwrap_or(&top))
        }
    };
    format!("{} {digest} {details}", c.reference)
}

/// `verify-image --json`: one entry per image, in the order named.
#[derive(Serialize)]
struct Report {
    format: u32,
    /// `linux/<arch>` with `--arch`, else null.
    arch: Option<String>,
    images: Vec<Entry>,
}

/// One image's verdict in `--json`.
#[derive(Serialize)]
struct Entry {
    reference: String,
    /// The digest the reference names (null when it could not be learnt).
    digest: Option<String>,
    /// With `--arch` and an index: the platform manifest it lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    platform_manifest: Option<String>,
    /// `verified`, `unsigned` or `failed`.
    verdict: &'static str,
    /// `host[:port]` the `.sig` tags and referrers were looked for at (a mirror's when one serves
    /// the image).
    registry: String,
    /// The `.sig` tags looked for, in order (each digest's referrers were looked for too).
    tags: Vec<String>,
    /// The digest the accepted signature signs.
    #[serde(skip_serializing_if = "Option::is_none")]
    signed_digest: Option<String>,
    /// Where the accepted signature was found: `tag` (its `.sig` tag) or `referrer` (an OCI 1.1
    /// referrer holding a Sigstore bundle, as cosign 3 signs).
    #[serde(skip_serializing_if = "Option::is_none")]
    found: Option<&'static str>,
    /// The accepted signature's tag (`sha256-<hex>.sig`, or for a referrer `sha256-<hex>`, the
    /// tag schema's name of the signed digest) and the digest of its signature manifest or
    /// referrer.
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<Found>,
    /// Who signed it and its Rekor entry (`identity`, `issuer`, `log_index`, `integrated_time`).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    signer: Option<Signer>,
    /// What failed, as stderr says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Where the accepted signature was found.
#[derive(Serialize)]
struct Found {
    tag: String,
    manifest: String,
}

fn entry(c: &Checked) -> Entry {
    let mut e = Entry {
        reference: c.reference.to_string(),
        digest: c.digest.as_ref().map(ToString::to_string),
        platform_manifest: c.platform.as_ref().map(ToString::to_string),
        verdict: "unsigned",
        registry: c.registry.clone(),
        tags: c.tags.clone(),
        signed_digest: None,
        found: None,
        signature: None,
        signer: None,
        error: None,
    };
    match &c.outcome {
        Outcome::Verified(a) => {
            e.verdict = "verified";
            e.signed_digest = Some(a.signed.to_string());
            e.found = Some(a.manifest.found());
            e.signature = Some(Found {
                tag: a.manifest.tag(),
                manifest: a.manifest.digest.to_string(),
            });
            e.signer = Some(Signer::from(&a.verified));
        }
        Outcome::Unsigned(_) => {}
        Outcome::Failed(_) => e.verdict = "failed",
    }
    if let Some(err) = c.outcome.error() {
        let (top, causes) = err.lines();
        e.error = Some(
            std::iter::once(top)
                .chain(causes)
                .collect::<Vec<_>>()
                .join(": "),
        );
    }
    e
}
