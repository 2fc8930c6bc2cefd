//! How a run judges signatures, and one image judged: the mode, trusted root, policy and Rekor
//! server chosen from the flags, the environment (through the flags) and the configuration file;
//! then an image's verdict — the signature manifest a lock names, else its `.sig` tags and
//! cosign 3 referrers (see [`super::image`]) — with the unsigned and the offline-untied cases.
//! `build` and `pull` share it so that both judge an image the same way; the commands only turn
//! a [`CheckerError`] into their exit code and hint.

use std::path::Path;

use crate::contract::SIGNATURES_PREFIX;
use crate::fetch::Origin;
use crate::image::{Digest, Image, ImageError};
use crate::lock::ImageSignature;
use crate::registry::{Registry, RegistryError};
use cks_iso_sigstore::{
    ImageReport, Invalid, Mode, Policy, SignatureError, SignatureManifest, TrustedRoot, Verdict,
};

use super::image::{Accepted, CheckError, Verdicts};
use super::{TrustError, now};

/// What the user can do when a lock's signature record makes no sense to this cks-iso.
const FOREIGN_LOCK_HINT: &str = "the lock was written by another cks-iso; build without --locked";

/// How a run judges signatures (`None` from [`select`] for `--signatures off`).
pub struct Checker {
    /// `verify` or `enforce`.
    pub mode: Mode,
    /// What signatures are verified against.
    pub root: TrustedRoot,
    /// The trusted root's text, copied into the ISO for third-party tools.
    pub root_text: String,
    /// Who must have signed what.
    pub policy: Policy,
    /// Where binaries' Rekor entries are looked up, without a trailing `/`.
    pub rekor_url: String,
    /// The image signature manifests judged so far in this run, each judged once.
    pub verdicts: Verdicts,
}

/// The flags (or, through clap, the environment) a command was given; `None` leaves the choice
/// to the configuration file, then the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags<'a> {
    /// `--signatures` (`CKS_ISO_SIGNATURES`).
    pub mode: Option<&'a str>,
    /// `--trusted-root`.
    pub trusted_root: Option<&'a Path>,
    /// `--signature-policy`.
    pub policy: Option<&'a Path>,
    /// `--rekor-url` (`CKS_ISO_REKOR_URL`).
    pub rekor_url: Option<&'a str>,
}

/// What the configuration file says about signatures, taken where a flag is not given. Only
/// these four values, not the whole configuration, so that `trust` does not depend on `config`
/// (`config` fills it from its settings).
#[derive(Debug, Clone, Copy, Default)]
pub struct Defaults<'a> {
    /// `signatures:`.
    pub mode: Option<Mode>,
    /// `trusted-root:`.
    pub trusted_root: Option<&'a Path>,
    /// `signature-policy:`.
    pub policy: Option<&'a Path>,
    /// `rekor-url:`.
    pub rekor_url: Option<&'a str>,
}

/// Why signatures cannot be judged, or an image was judged bad.
#[derive(Debug, thiserror::Error)]
pub enum CheckerError {
    /// `--signatures` names no mode.
    #[error("--signatures: {reason}")]
    Mode {
        /// What is wrong with the value given.
        reason: Invalid,
    },
    /// The policy or trusted root named cannot be used.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// The image's signatures could not be fetched, or none verifies.
    #[error(transparent)]
    Check(Box<CheckError>),
    /// The image's signature does not verify, or (enforced, or locked) it has none.
    #[error(transparent)]
    Untrusted(#[from] SignatureError),
    /// The lock records a signature tag that belongs to neither of the image's digests.
    #[error(
        "{artifact}: the lock's signature tag {tag:?} is neither the .sig tag nor the referrers \
         tag of {manifest} or of {index}"
    )]
    LockTag {
        /// The image reference.
        artifact: String,
        /// The tag the lock records.
        tag: String,
        /// The image's platform manifest.
        manifest: Digest,
        /// The image's top digest (its index, or the manifest again).
        index: Digest,
    },
    /// The lock records a signature manifest that is not a digest.
    #[error("{artifact}: the lock's signature manifest {manifest:?} is not a digest: {reason}")]
    LockDigest {
        /// The image reference.
        artifact: String,
        /// What the lock records.
        manifest: String,
        /// Why it is not a digest.
        reason: Box<ImageError>,
    },
    /// The signature manifest the lock names could not be fetched.
    #[error("cannot fetch the locked signature manifest {digest} ({tag}) of {artifact}")]
    LockedFetch {
        /// The image reference.
        artifact: String,
        /// The manifest the lock names.
        digest: Digest,
        /// Its tag in the lock.
        tag: String,
        /// Why.
        #[source]
        source: Box<RegistryError>,
    },
    /// The signature manifest the lock names is no longer served nor cached.
    #[error(
        "{artifact}: the signature manifest the lock names is gone: expected {digest} (the \
         lock), but the registry has no such manifest and {tag} points elsewhere"
    )]
    LockedGone {
        /// The image reference.
        artifact: String,
        /// The manifest the lock names.
        digest: Digest,
        /// Its tag in the lock.
        tag: String,
    },
    /// Under `--signatures enforce`, an extra image (one the operator added) that no rule covers:
    /// nothing says who must have signed it.
    #[error(
        "{artifact}: an extra image no signature rule covers, so its signature cannot be checked, \
         and --signatures enforce requires every extra image verified"
    )]
    ExtraUncovered {
        /// The image reference.
        artifact: String,
        /// Its repository, for the rule the hint suggests.
        repository: String,
    },
    /// Offline without a lock, a covered image whose signature the cache does not hold.
    #[error(
        "{artifact}: offline without --locked, {entry} cannot be tied to a verification: the \
         cache holds no signature for {manifest} or its index, which an online build checks at \
         the registry"
    )]
    Untied {
        /// The image reference.
        artifact: String,
        /// What the image was taken from: `the image <digest>` or the cache's tag entry.
        entry: String,
        /// The image's platform manifest.
        manifest: Digest,
    },
}

impl From<CheckError> for CheckerError {
    fn from(err: CheckError) -> Self {
        Self::Check(Box::new(err))
    }
}

impl CheckerError {
    /// Whether the flags or configuration are at fault (exit 2) rather than the work (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Mode { .. } | Self::Trust(_))
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Mode { .. } => {
                Some("pass --signatures off, verify (the default), warn or enforce".into())
            }
            Self::Trust(err) => err.hint(),
            Self::Check(err) => err.hint(),
            Self::Untrusted(err) => err.hint(),
            Self::LockTag { .. } | Self::LockDigest { .. } => Some(FOREIGN_LOCK_HINT.into()),
            Self::LockedFetch { source, .. } => source.hint(),
            Self::LockedGone { .. } => Some(
                "the image was signed again since it was locked; build without --locked to take \
                 its new signature (and review the change), or build from a cache that holds the \
                 locked one"
                    .into(),
            ),
            Self::ExtraUncovered { repository, .. } => Some(format!(
                "add a rule for it to the signature policy (--signature-policy FILE: `prefix: \
                 {repository}` with the identity or identity-regex and the issuer its publisher \
                 signs with, as `cosign verify` takes them), or build with --signatures verify, \
                 which records it as not covered"
            )),
            Self::Untied { .. } => Some(
                "build once with network (it asks the registry for the signature and keeps it in \
                 the cache), or build --locked from a lock you trust; offline, an image its \
                 publisher leaves unsigned needs one of those (or --signatures off)"
                    .into(),
            ),
        }
    }
}

/// The mode (flag or `CKS_ISO_SIGNATURES`, else the config file, else `verify`), the trusted
/// root (`--trusted-root`, else the config file, else the embedded public-good root), the policy
/// (the built-in rules after those of `--signature-policy`, else the config file's) and the Rekor
/// server (`--rekor-url`, else the config file, else Rekor's public-good instance); `None` for
/// `off`.
pub fn select<'a>(
    flags: Flags<'_>,
    defaults: impl Into<Defaults<'a>>,
) -> Result<Option<Checker>, CheckerError> {
    let defaults = defaults.into();
    let mode = match flags.mode {
        Some(text) => text
            .parse::<Mode>()
            .map_err(|reason| CheckerError::Mode { reason })?,
        None => defaults.mode.unwrap_or_default(),
    };
    if mode == Mode::Off {
        tracing::warn!("--signatures off: image and binary signatures are not checked");
        return Ok(None);
    }
    let (root, root_text) = super::trusted_root(flags.trusted_root, defaults.trusted_root)?;
    let policy = super::policy(flags.policy.or(defaults.policy))?;
    tracing::info!("signatures: {mode}");
    let rekor_url = flags
        .rekor_url
        .or(defaults.rekor_url)
        .unwrap_or(super::rekor::DEFAULT_REKOR_URL)
        .to_owned();
    Ok(Some(Checker {
        mode,
        root_text,
        root,
        policy,
        rekor_url: rekor_url.trim_end_matches('/').to_owned(),
        verdicts: Verdicts::default(),
    }))
}

impl Checker {
    /// Fetches and judges one image's signatures; `named`, the signature manifest a lock names
    /// for it, is fetched by digest instead of resolving the `.sig` tags. Offline, an image a
    /// rule covers needs a signature in the cache (see [`Self::check_image_from`]).
    pub async fn check_image(
        &self,
        registry: &Registry,
        image: &Image,
        named: Option<&ImageSignature>,
    ) -> Result<(ImageReport, Option<SignatureManifest>), CheckerError> {
        self.check_image_from(registry, image, named, false).await
    }

    /// An image whose signature manifest the lock names (`named`): that manifest, fetched by
    /// digest, must be accepted.
    async fn check_locked(
        &self,
        registry: &Registry,
        image: &Image,
        named: &ImageSignature,
        rule: &cks_iso_sigstore::Rule,
        report: ImageReport,
    ) -> Result<(ImageReport, Option<SignatureManifest>), CheckerError> {
        let artifact = image.reference.to_string();
        let found = locked_signature(registry, image, named).await?;
        let accepted = cks_iso_sigstore::judge(&self.root, rule, &artifact, &found, now())?
            .ok_or_else(|| SignatureError::Unsigned {
                artifact: artifact.clone(),
                digest: image.manifest.digest.to_string(),
            })?;
        let (signed, manifest_digest, verified) = accepted;
        let manifest = found.into_iter().find(|m| m.digest == manifest_digest);
        let accepted = Accepted {
            signed,
            manifest: manifest.expect("judge accepts only a manifest it was given"),
            verified,
        };
        Ok(accepted_report(report, accepted))
    }

    /// [`Self::check_image`]; unless `vouched` (the image's tags came from a lock, which says
    /// what is signed, not from the cache's index offline), an
    /// image a rule covers for which the cache, answering offline, holds no signature fails as
    /// untied, whatever the mode: the cache cannot show that upstream left it unsigned, and an
    /// online build would have asked the registry.
    pub async fn check_image_from(
        &self,
        registry: &Registry,
        image: &Image,
        named: Option<&ImageSignature>,
        vouched: bool,
    ) -> Result<(ImageReport, Option<SignatureManifest>), CheckerError> {
        let artifact = image.reference.to_string();
        let mut report = ImageReport {
            reference: artifact.clone(),
            digest: image.top.digest.to_string(),
            manifest: image.manifest.digest.to_string(),
            verdict: Verdict::NotCovered,
            signed_digest: None,
            signature_manifest: None,
            found: None,
            signer: None,
            docker_reference: None,
        };
        let Some(rule) = self.policy.rule_for(&image.reference.repository()) else {
            return Ok((report, None));
        };
        if let Some(named) = named {
            return self
                .check_locked(registry, image, named, rule, report)
                .await;
        }
        // The platform manifest's own signature first; the index's only when that does not do.
        let mut digests = vec![&image.manifest.digest];
        if image.top.digest != image.manifest.digest {
            digests.push(&image.top.digest);
        }
        let (found, origin) = super::image::check(
            registry,
            &self.root,
            rule,
            &image.reference,
            &digests,
            now(),
            &self.verdicts,
        )
        .await?;
        let withheld =
            cks_iso_sigstore::always_signed(&image.reference.repository(), image.reference.tag());
        let accepted = match found {
            Some(accepted) => accepted,
            None if origin == Origin::Cache && !vouched => return Err(untied(image)),
            // Upstream signs every copy: none found means one was withheld on the way.
            None if withheld && self.mode != Mode::Warn => {
                return Err(CheckerError::Untrusted(SignatureError::Withheld {
                    artifact,
                    digest: image.manifest.digest.to_string(),
                    repository: image.reference.repository(),
                }));
            }
            None if self.mode == Mode::Enforce => {
                return Err(CheckerError::Untrusted(SignatureError::Unsigned {
                    artifact,
                    digest: image.manifest.digest.to_string(),
                }));
            }
            None if withheld => {
                tracing::warn!(
                    "{artifact}: UNSIGNED: no signature for {} or its index, though upstream \
                     signs every copy; recorded as unsigned (--signatures warn)",
                    image.manifest.digest
                );
                report.verdict = Verdict::Unsigned;
                return Ok((report, None));
            }
            None => {
                tracing::warn!(
                    "{artifact}: UNSIGNED: no signature for {} or its index; recorded as \
                     unsigned (--signatures enforce refuses it)",
                    image.manifest.digest
                );
                report.verdict = Verdict::Unsigned;
                return Ok((report, None));
            }
        };
        Ok(accepted_report(report, accepted))
    }
}

impl Checker {
    /// [`Self::check_image_from`] for an extra image (one the operator added, by `--image` or
    /// named by an extra manifest): judged exactly as a core image when a rule covers it (built
    /// in, or a policy file's); otherwise recorded as not covered with a warning, and refused
    /// under `--signatures enforce`, which promises that every extra image is verified.
    pub async fn check_extra_from(
        &self,
        registry: &Registry,
        image: &Image,
        named: Option<&ImageSignature>,
        vouched: bool,
    ) -> Result<(ImageReport, Option<SignatureManifest>), CheckerError> {
        let repository = image.reference.repository();
        if self.policy.rule_for(&repository).is_some() {
            return self.check_image_from(registry, image, named, vouched).await;
        }
        let artifact = image.reference.to_string();
        if self.mode == Mode::Enforce {
            return Err(CheckerError::ExtraUncovered {
                artifact,
                repository,
            });
        }
        tracing::warn!(
            "{artifact}: NOT COVERED: an extra image no signature rule covers, so its signature is \
             not checked (add a `prefix: {repository}` rule to --signature-policy; --signatures \
             enforce refuses it)"
        );
        self.check_image_from(registry, image, named, vouched).await
    }
}

/// The report of an image whose signature `accepted` verified, and that signature manifest.
fn accepted_report(
    mut report: ImageReport,
    accepted: Accepted,
) -> (ImageReport, Option<SignatureManifest>) {
    let Accepted {
        signed,
        manifest,
        verified,
    } = accepted;
    let manifest_digest = manifest.digest.clone();
    report.verdict = Verdict::Verified;
    report.signed_digest = Some(signed.to_string());
    report.signature_manifest = Some(format!(
        "{SIGNATURES_PREFIX}images/{}.json",
        manifest_digest.hex()
    ));
    report.found = Some(manifest.found().to_owned());
    report.signer = Some(cks_iso_sigstore::Signer::from(&verified));
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
    locked: &ImageSignature,
) -> Result<Vec<SignatureManifest>, CheckerError> {
    let artifact = image.reference.to_string();
    let (signs, is_referrer) = [&image.manifest.digest, &image.top.digest]
        .into_iter()
        .find_map(|d| match &locked.tag {
            tag if *tag == cks_iso_sigstore::tag_for(d) => Some((d, false)),
            tag if *tag == cks_iso_sigstore::referrer::fallback_tag(d) => Some((d, true)),
            _ => None,
        })
        .ok_or_else(|| CheckerError::LockTag {
            artifact: artifact.clone(),
            tag: locked.tag.clone(),
            manifest: image.manifest.digest.clone(),
            index: image.top.digest.clone(),
        })?;
    let digest = Digest::parse(&locked.manifest).map_err(|reason| CheckerError::LockDigest {
        artifact: artifact.clone(),
        manifest: locked.manifest.clone(),
        reason: Box::new(reason),
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
    let fetched = fetched.map_err(|source| CheckerError::LockedFetch {
        artifact: artifact.clone(),
        digest: digest.clone(),
        tag: locked.tag.clone(),
        source: Box::new(source),
    })?;
    match fetched {
        Some(found) => Ok(vec![found]),
        None => Err(CheckerError::LockedGone {
            artifact,
            digest,
            tag: locked.tag.clone(),
        }),
    }
}

/// Offline without a lock, an image a rule covers whose signature the cache does not hold.
fn untied(image: &Image) -> CheckerError {
    let artifact = image.reference.to_string();
    let entry = match image.reference.digest() {
        Some(_) => format!("the image {}", image.top.digest),
        None => format!("the cache's entry tag:{artifact}"),
    };
    CheckerError::Untied {
        artifact,
        entry,
        manifest: image.manifest.digest.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Defaults<'static> {
        Defaults::default()
    }

    #[test]
    fn off_checks_nothing_and_a_mode_without_flags_or_config_is_verify_with_public_good_rekor() {
        let off = Flags {
            mode: Some("off"),
            ..Flags::default()
        };
        assert!(select(off, settings()).unwrap().is_none());
        let checker = select(Flags::default(), settings()).unwrap().unwrap();
        assert_eq!(checker.mode, Mode::Verify);
        assert_eq!(checker.rekor_url, super::super::rekor::DEFAULT_REKOR_URL);
        assert!(checker.root_text.contains("tlogs"), "the embedded root");
    }

    #[test]
    fn the_flag_beats_the_config_file_and_the_rekor_url_loses_its_trailing_slash() {
        let config = Defaults {
            mode: Some(Mode::Verify),
            rekor_url: Some("https://config.example"),
            ..Defaults::default()
        };
        let flags = Flags {
            mode: Some("enforce"),
            rekor_url: Some("https://rekor.example/"),
            ..Flags::default()
        };
        let checker = select(flags, config).unwrap().unwrap();
        assert_eq!(checker.mode, Mode::Enforce);
        assert_eq!(checker.rekor_url, "https://rekor.example");
        let from_config = select(Flags::default(), config).unwrap().unwrap();
        assert_eq!(from_config.rekor_url, "https://config.example");
    }

    #[test]
    fn a_bad_mode_or_an_unreadable_policy_is_a_usage_error_naming_it_with_a_hint() {
        let bad = Flags {
            mode: Some("sometimes"),
            ..Flags::default()
        };
        let err = select(bad, settings()).err().expect("refused");
        assert!(err.is_usage());
        assert_eq!(
            err.to_string(),
            "--signatures: \"sometimes\" is not off, verify, warn or enforce"
        );
        assert_eq!(
            err.hint().as_deref(),
            Some("pass --signatures off, verify (the default), warn or enforce")
        );
        let missing = Path::new("/nonexistent/policy.yaml");
        let flags = Flags {
            policy: Some(missing),
            ..Flags::default()
        };
        let err = select(flags, settings()).err().expect("refused");
        assert!(err.is_usage());
        assert!(
            err.to_string().contains("/nonexistent/policy.yaml"),
            "{err}"
        );
    }
}
