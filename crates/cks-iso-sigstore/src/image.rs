//! An image's verdict: the signature manifests found for its platform manifest and its index
//! (legacy `.sig` tags and cosign 3 referrers), judged layer by layer under a policy rule, and the
//! typed error that says why none is acceptable (with the hint a user can act on). The layer checks
//! themselves are [`crate::verify`]'s and [`crate::referrer`]'s.

use cks_iso_oci::image::{Descriptor, Digest};

use crate::cosign::tag_for;
use crate::policy::{ALWAYS_SIGNED_SINCE_MINOR, Rule};
use crate::referrer;
use crate::root::TrustedRoot;
use crate::verify::{self, Failure, Step, Verified};

/// One `sha256-<digest>.sig` manifest as the registry served it, with its layers' payloads; or
/// one cosign 3 signature referrer (see [`referrer`]), its layer the Sigstore bundle.
#[derive(Debug, Clone)]
pub struct SignatureManifest {
    /// The digest it signs (whose tag it is).
    pub signs: Digest,
    /// Its own digest (of `bytes`).
    pub digest: Digest,
    /// Its exact bytes.
    pub bytes: Vec<u8>,
    /// Each layer's descriptor and payload.
    pub layers: Vec<(Descriptor, Vec<u8>)>,
}

impl SignatureManifest {
    /// Where cosign put it: `referrer` (an OCI 1.1 referrer holding a Sigstore bundle) or `tag`
    /// (the legacy `sha256-<hex>.sig` tag).
    pub fn found(&self) -> &'static str {
        match self
            .layers
            .iter()
            .any(|(d, _)| referrer::is_bundle_layer(&d.media_type))
        {
            true => "referrer",
            false => "tag",
        }
    }

    /// The tag that names it for `signs`: the `.sig` tag, or for a referrer the tag-schema name
    /// `sha256-<hex>` of the digest it refers to (what a lock records).
    pub fn tag(&self) -> String {
        match self.found() {
            "referrer" => referrer::fallback_tag(&self.signs),
            _ => tag_for(&self.signs),
        }
    }
}

/// Why an image's signatures are not acceptable.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// Signatures exist, and none verifies.
    #[error("{artifact}: the signature of {digest} fails the {} check: {reason}", step.name())]
    Invalid {
        /// The image reference.
        artifact: String,
        /// The digest the failing signature is for.
        digest: String,
        /// The failed step (of the first failing layer).
        step: Step,
        /// What that step found.
        reason: String,
    },
    /// `--signatures enforce` and no signature.
    #[error("{artifact}: no signature for {digest} or its index (--signatures enforce)")]
    Unsigned {
        /// The image reference.
        artifact: String,
        /// The platform manifest.
        digest: String,
    },
    /// A covered image that upstream always signs ([`always_signed`](crate::always_signed)) without a signature: the
    /// registry or a mirror on the way withheld it.
    #[error(
        "{artifact}: no signature for {digest} or its index, and registry.k8s.io signs every \
         {repository} image of Kubernetes 1.{ALWAYS_SIGNED_SINCE_MINOR} and later"
    )]
    Withheld {
        /// The image reference.
        artifact: String,
        /// The platform manifest.
        digest: String,
        /// The image's repository (`registry.k8s.io/kube-apiserver`).
        repository: String,
    },
    /// A covered file without a signature, where one is required: `enforce`, or a Kubernetes
    /// binary of a release that always publishes one.
    #[error("{artifact}: no signature for {digest}: {why}")]
    UnsignedFile {
        /// The file's URL.
        artifact: String,
        /// Its digest.
        digest: String,
        /// Why that fails the build.
        why: String,
    },
    /// The `.sig` manifest itself is malformed.
    #[error("{artifact}: the signature manifest for {digest} is malformed: {reason}")]
    Malformed {
        /// The image reference.
        artifact: String,
        /// The digest it signs.
        digest: String,
        /// What is wrong.
        reason: String,
    },
}

impl SignatureError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Invalid {
                step: Step::Identity | Step::Issuer,
                ..
            } => "it is signed, but not by whom the policy expects; check the registry mirror \
                 (--registry-mirror) or mirror (--mirror) serving it, or the identities in \
                 --signature-policy"
                .into(),
            Self::Invalid {
                step: Step::Timestamp,
                ..
            } => "nothing dates the signature by a timestamp authority the trusted root lists: \
                  check its timestampAuthorities (--trusted-root), or the bundle was altered"
                .into(),
            Self::Invalid { .. } | Self::Malformed { .. } => {
                "the artifact or its signature was altered, or the trusted root (--trusted-root) \
                 is not the one that signed it"
                    .into()
            }
            Self::UnsignedFile { .. } => {
                "dl.k8s.io publishes .sig and .cert beside every Kubernetes >= 1.26 binary: check \
                 that the mirror serving it (--mirror) carries them too (offline, that the cache \
                 holds them from an online build); --signatures warn accepts it with a warning, \
                 --signatures off skips the check"
                    .into()
            }
            Self::Withheld { .. } => {
                "the registry mirror serving it (--registry-mirror) or a proxy on the way does not \
                 pass its sha256-<hex>.sig tags and referrers on (offline, the cache holds none \
                 from an online build); --signatures warn accepts it with a warning"
                    .into()
            }
            Self::Unsigned { .. } => {
                "use --signatures verify to accept unsigned images with a warning".into()
            }
        })
    }
}

/// Why one signature manifest was not accepted (see [`judge_manifest`]), without the image it
/// was found for, so that a verdict can be kept and given again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// It has no layers.
    NoLayers,
    /// How its first failing layer failed.
    Failed(Failure),
}

impl Rejection {
    /// The error that says it of `artifact`'s signature manifest for `signs`.
    pub fn into_error(self, artifact: &str, signs: &Digest) -> SignatureError {
        match self {
            Self::NoLayers => SignatureError::Malformed {
                artifact: artifact.into(),
                digest: signs.to_string(),
                reason: "it has no layers".into(),
            },
            Self::Failed(Failure { step, reason }) => SignatureError::Invalid {
                artifact: artifact.into(),
                digest: signs.to_string(),
                step,
                reason,
            },
        }
    }
}

/// Judges one signature manifest (a `.sig` manifest or a referrer) under `rule`: the first of
/// its layers that verifies, else how the first one failed. Its layers' payloads must be those
/// its descriptors name (the registry checks each one it fetches).
pub fn judge_manifest(
    root: &TrustedRoot,
    rule: &Rule,
    sig: &SignatureManifest,
    now: i64,
) -> Result<Verified, Rejection> {
    let mut first = None;
    for (desc, payload) in &sig.layers {
        let result = match referrer::is_bundle_layer(&desc.media_type) {
            true => referrer::verify_layer(root, rule, &sig.signs, desc, payload, now),
            false => verify::layer(
                root,
                rule,
                &sig.signs.to_string(),
                &desc.digest.to_string(),
                &desc.annotations,
                payload,
                now,
            ),
        };
        match result {
            Ok(verified) => return Ok(verified),
            Err(failure) => {
                first.get_or_insert(failure);
            }
        }
    }
    Err(first.map_or(Rejection::NoLayers, Rejection::Failed))
}

/// Judges an image's signatures: those found for its platform manifest and for its index
/// (`found`, either may be missing), under `rule`. `Ok(None)` when nothing was found; the
/// caller's [`Mode`](crate::Mode) decides what that means. The index path needs no extra membership check:
/// the platform manifest was chosen from that index, verified by digest.
pub fn judge(
    root: &TrustedRoot,
    rule: &Rule,
    artifact: &str,
    found: &[SignatureManifest],
    now: i64,
) -> Result<Option<(Digest, Digest, Verified)>, SignatureError> {
    let mut first: Option<SignatureError> = None;
    for sig in found {
        match judge_manifest(root, rule, sig, now) {
            Ok(verified) => return Ok(Some((sig.signs.clone(), sig.digest.clone(), verified))),
            Err(rejection) => {
                first.get_or_insert_with(|| rejection.into_error(artifact, &sig.signs));
            }
        }
    }
    match first {
        Some(err) => Err(err),
        None => Ok(None),
    }
}
