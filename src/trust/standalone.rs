//! `cks-iso verify-image`'s judgement: each image's cosign signature judged the way `build`
//! judges it ([`super::image::check`]: the same `.sig` tags and cosign 3 referrers through the
//! same mirrors, credentials, cache, policy and trusted root), without pulling the image. By
//! digest only the signature is fetched; by tag, also the digest the tag points at; with an arch,
//! also the index, to judge the platform manifest's signature first as `build` does.
//!
//! Apart from [`super::checker`] because nothing here is recorded into an ISO: every image gets a
//! [`Checked`] verdict, shown as a line or a `--json` entry, and a bad one does not stop the rest.

use std::path::Path;

use futures_util::{StreamExt, stream};
use serde::Serialize;

use super::image::{Accepted, CheckError, Verdicts};
use super::{TrustError, now};
use crate::fetch::Origin;
use crate::image::{Arch, Digest, Reference};
use crate::registry::{Registry, RegistryError};
use cks_iso_sigstore::verify::Step;
use cks_iso_sigstore::{Identity, Issuer};
use cks_iso_sigstore::{Rule, SignatureError, Signer, TrustedRoot, Verdict, tag_for};

/// Why no image could be judged, or why one failed.
#[derive(Debug, thiserror::Error)]
pub enum StandaloneError {
    /// `--certificate-identity-regexp` or `--certificate-oidc-issuer-regexp` is not a regular
    /// expression.
    #[error("--{flag} {re:?}: {reason}")]
    Regex {
        /// The flag.
        flag: &'static str,
        /// The expression.
        re: String,
        /// Why.
        reason: String,
    },
    /// The signature policy cannot be read.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// No rule says who must have signed these images.
    #[error(
        "no signature policy rule says who must have signed {}: the built-in rule covers \
         registry.k8s.io/** only",
        .0.join(", ")
    )]
    Uncovered(Vec<String>),
    /// The image's digest (or its platform manifest) cannot be learnt.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A signature does not verify, or cannot be fetched.
    #[error(transparent)]
    Check(Box<CheckError>),
    /// `--enforce`, and the image has no signature.
    #[error(
        "{reference}: UNSIGNED: no {tags} nor signature referrer {place} (--enforce refuses it)"
    )]
    Unsigned {
        /// The image.
        reference: String,
        /// The `.sig` tags looked for, joined.
        tags: String,
        /// Where they were looked for.
        place: String,
    },
}

impl StandaloneError {
    /// Whether the arguments are at fault (exit 2) rather than the image.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Regex { .. } | Self::Trust(_) | Self::Uncovered(_) => true,
            Self::Registry(e) => e.is_usage(),
            Self::Check(_) | Self::Unsigned { .. } => false,
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Regex { .. } => "pass a regular expression (Rust regex syntax)".into(),
            Self::Trust(e) => return e.hint(),
            Self::Uncovered(_) => "name the signer with --certificate-identity (or \
                 --certificate-identity-regexp) and --certificate-oidc-issuer (or \
                 --certificate-oidc-issuer-regexp), or add a rule to \
                 --signature-policy"
                .into(),
            Self::Registry(e) => return e.hint(),
            Self::Check(e) => return check_hint(e),
            Self::Unsigned { .. } => "check that the registry or mirror serving it carries its \
                 .sig tags or its referrers (offline, that the cache holds them from an online \
                 run); without --enforce an unsigned image is reported and does not fail"
                .into(),
        })
    }
}

impl From<CheckError> for StandaloneError {
    fn from(err: CheckError) -> Self {
        Self::Check(Box::new(err))
    }
}

/// What the user can do about a signature that does not verify: `build`'s advice, in the words
/// of this command.
fn check_hint(err: &CheckError) -> Option<String> {
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
        CheckError::Untrusted(SignatureError::Withheld { .. }) => Some(
            "the registry mirror serving it (--registry-mirror) or a proxy on the way does not \
             pass its sha256-<hex>.sig tags and referrers on (offline, the cache holds none from \
             an online run); an image upstream always signs is never reported as merely unsigned"
                .into(),
        ),
        CheckError::Untrusted(_) => Some(
            "the signature was altered (on the way, or where it is kept), or the trusted root \
             (--trusted-root) is not the one that signed it"
                .into(),
        ),
        CheckError::Fetch { .. } => err.hint(),
    }
}

/// Who must have signed: the identity flags, when given.
pub struct SignerFlags<'a> {
    /// `--certificate-oidc-issuer`.
    pub issuer: Option<&'a str>,
    /// `--certificate-oidc-issuer-regexp`.
    pub issuer_regexp: Option<&'a str>,
    /// `--certificate-identity`.
    pub identity: Option<&'a str>,
    /// `--certificate-identity-regexp`.
    pub regexp: Option<&'a str>,
}

/// The rule each image is judged by: the one the identity flags give, else the policy's (the
/// file `policy`, else the built-in one); an error naming every image no rule covers.
pub fn rules(
    signer: Option<SignerFlags<'_>>,
    policy: Option<&Path>,
    references: &[Reference],
) -> Result<Vec<Rule>, StandaloneError> {
    if let Some(signer) = signer {
        let identity = match (signer.identity, signer.regexp) {
            (Some(exact), _) => Identity::Exact(exact.to_owned()),
            (None, Some(re)) => {
                Identity::Regex(regex::Regex::new(re).map_err(|e| StandaloneError::Regex {
                    flag: "certificate-identity-regexp",
                    re: re.to_owned(),
                    reason: e.to_string(),
                })?)
            }
            (None, None) => unreachable!("clap requires an identity with the issuer"),
        };
        let issuer = match Issuer::new(signer.issuer, signer.issuer_regexp) {
            Some(issuer) => issuer.map_err(|e| StandaloneError::Regex {
                flag: "certificate-oidc-issuer-regexp",
                re: signer.issuer_regexp.unwrap_or_default().to_owned(),
                reason: e.to_string(),
            })?,
            None => unreachable!("clap requires an issuer with the identity"),
        };
        let rule = Rule {
            pattern: "**".into(),
            identity,
            issuer,
        };
        return Ok(vec![rule; references.len()]);
    }
    let policy = super::policy(policy)?;
    let mut rules = Vec::new();
    let mut uncovered = Vec::new();
    for reference in references {
        match policy.rule_for(&reference.repository()) {
            Some(rule) => rules.push(rule.clone()),
            None => uncovered.push(reference.to_string()),
        }
    }
    match uncovered.is_empty() {
        true => Ok(rules),
        false => Err(StandaloneError::Uncovered(uncovered)),
    }
}

/// How the images are judged.
#[derive(Clone, Copy)]
pub struct Judging<'a> {
    /// The trusted root.
    pub root: &'a TrustedRoot,
    /// With an arch: the platform manifest's signature first, as `build` does.
    pub arch: Option<Arch>,
    /// An unsigned image fails.
    pub enforce: bool,
}

/// Judges each of `references` under its rule, as many at once as the registry allows, in the
/// order named.
pub async fn check_all(
    registry: &Registry,
    references: &[Reference],
    rules: &[Rule],
    how: Judging<'_>,
) -> Vec<Checked> {
    stream::iter(references.iter().zip(rules))
        .map(|(reference, rule)| one(registry, rule, reference, how))
        .buffered(registry.jobs())
        .collect()
        .await
}

/// One image's verdict.
pub struct Checked {
    /// The image.
    pub reference: Reference,
    /// The digest the reference names, once known.
    digest: Option<Digest>,
    /// With an arch and an index: the platform manifest it lists.
    platform: Option<Digest>,
    /// Where the `.sig` tags were looked for.
    registry: String,
    /// The `.sig` tags looked for, in order.
    tags: Vec<String>,
    /// Who answered: the registry, or (`--offline`) the cache.
    origin: Origin,
    outcome: Outcome,
}

enum Outcome {
    Verified(Box<Accepted>),
    /// No signature; under `--enforce`, the error that fails the run.
    Unsigned(Option<StandaloneError>),
    /// A bad signature, or one that could not be fetched.
    Failed(StandaloneError),
}

impl Checked {
    /// Where the `.sig` tags were looked for, for messages: `at HOST`, or the cache.
    fn place(&self) -> String {
        match self.origin {
            Origin::Cache => "in the cache (--offline)".into(),
            Origin::Network => format!("at {}", self.registry),
        }
    }

    /// The error that fails the run, if any.
    pub fn error(&self) -> Option<&StandaloneError> {
        match &self.outcome {
            Outcome::Verified(_) | Outcome::Unsigned(None) => None,
            Outcome::Unsigned(Some(err)) | Outcome::Failed(err) => Some(err),
        }
    }

    /// The verdict.
    pub fn verdict(&self) -> Verdict {
        match self.outcome {
            Outcome::Verified(_) => Verdict::Verified,
            Outcome::Unsigned(_) => Verdict::Unsigned,
            Outcome::Failed(_) => Verdict::Failed,
        }
    }
}

/// Finds and judges `reference`'s signatures (see the module's doc).
async fn one(registry: &Registry, rule: &Rule, reference: &Reference, how: Judging<'_>) -> Checked {
    let mut checked = Checked {
        reference: reference.clone(),
        digest: None,
        platform: None,
        registry: registry.serving_host(reference),
        tags: Vec::new(),
        origin: Origin::Network,
        outcome: Outcome::Unsigned(None),
    };
    checked.outcome = match judge(registry, how.root, rule, &mut checked, how.arch).await {
        Ok(Some(accepted)) => Outcome::Verified(Box::new(accepted)),
        // As build: upstream signs every copy, so none found means one was withheld on the way,
        // with or without --enforce.
        Ok(None) if cks_iso_sigstore::always_signed(&reference.repository(), reference.tag()) => {
            let digest = checked.platform.as_ref().or(checked.digest.as_ref());
            Outcome::Failed(StandaloneError::from(CheckError::Untrusted(
                SignatureError::Withheld {
                    artifact: reference.to_string(),
                    digest: digest.map_or_else(|| "-".to_owned(), ToString::to_string),
                    repository: reference.repository(),
                },
            )))
        }
        Ok(None) if how.enforce => Outcome::Unsigned(Some(StandaloneError::Unsigned {
            reference: reference.to_string(),
            tags: checked.tags.join(" or "),
            place: checked.place(),
        })),
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
) -> Result<Option<Accepted>, StandaloneError> {
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
    let verdicts = Verdicts::default();
    let found = super::image::check(registry, root, rule, &reference, &digests, now(), &verdicts);
    let (accepted, origin) = found.await?;
    checked.origin = origin;
    Ok(accepted)
}

impl Checked {
    /// The line on stdout: `REFERENCE DIGEST VERDICT: details`.
    pub fn line(&self) -> String {
        let digest = (self.digest.as_ref()).map_or_else(|| "-".to_owned(), ToString::to_string);
        let details = match &self.outcome {
            Outcome::Verified(a) => format!(
                "{}: {} via {}, Rekor log index {}, {} at {} ({} {})",
                Verdict::Verified,
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
                self.place()
            ),
            Outcome::Unsigned(_) => format!(
                "UNSIGNED: no {} nor signature referrer {}",
                self.tags.join(" or "),
                self.place()
            ),
            Outcome::Failed(err) => {
                let top = crate::failure::lines(err).0;
                let prefix = format!("{}: ", self.reference);
                format!("FAILED: {}", top.strip_prefix(&prefix).unwrap_or(&top))
            }
        };
        format!("{} {digest} {details}", self.reference)
    }

    /// Its entry in `verify-image --json`.
    pub fn entry(&self) -> Entry {
        let mut e = Entry {
            reference: self.reference.to_string(),
            digest: self.digest.as_ref().map(ToString::to_string),
            platform_manifest: self.platform.as_ref().map(ToString::to_string),
            verdict: self.verdict(),
            registry: self.registry.clone(),
            tags: self.tags.clone(),
            signed_digest: None,
            found: None,
            signature: None,
            signer: None,
            error: self.error().map(|err| crate::failure::one_line(err)),
        };
        if let Outcome::Verified(a) = &self.outcome {
            e.signed_digest = Some(a.signed.to_string());
            e.found = Some(a.manifest.found());
            e.signature = Some(Found {
                tag: a.manifest.tag(),
                manifest: a.manifest.digest.to_string(),
            });
            e.signer = Some(Signer::from(&a.verified));
        }
        e
    }
}

/// One image's verdict in `--json`.
#[derive(Serialize)]
pub struct Entry {
    reference: String,
    /// The digest the reference names (null when it could not be learnt).
    digest: Option<String>,
    /// With `--arch` and an index: the platform manifest it lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    platform_manifest: Option<String>,
    /// [`Verdict::Verified`], [`Verdict::Unsigned`] or [`Verdict::Failed`].
    verdict: Verdict,
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
