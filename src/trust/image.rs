//! An image's cosign signature: for the digests that may speak for it (its platform manifest
//! first, then its index), the legacy `sha256-<hex>.sig` tags, then — when those give none that
//! verifies — cosign 3's OCI 1.1 referrers holding a Sigstore bundle, fetched through the
//! registry (its mirrors, credentials, cache and `--offline`) and judged against a trusted root
//! and a policy rule. Only signature manifests, bundles and payloads are fetched here, never the
//! image.

use crate::image::{Digest, Reference};
use crate::registry::{Registry, RegistryError};
use crate::signature::{self, Rule, SignatureError, SignatureManifest, TrustedRoot, Verified};

/// The signature that verified.
#[derive(Debug)]
pub struct Accepted {
    /// The digest it signs.
    pub signed: Digest,
    /// The signature manifest (`.sig` tag) or referrer that carried it.
    pub manifest: SignatureManifest,
    /// Who signed it, and its log entry.
    pub verified: Verified,
}

/// Why an image's signatures could not be judged, or were judged bad.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A `.sig` tag or its payloads could not be fetched.
    #[error("cannot fetch the signatures of {artifact}")]
    Fetch {
        /// The image reference.
        artifact: String,
        /// Why.
        #[source]
        source: RegistryError,
    },
    /// Signatures exist and none verifies.
    #[error(transparent)]
    Untrusted(#[from] SignatureError),
}

impl CheckError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Fetch { source, .. } => source.hint(),
            Self::Untrusted(err) => err.hint(),
        }
    }
}

/// Fetches the signatures of `digests` (the most wanted first: a platform manifest, then its
/// index) in `reference`'s repository, and judges them under `rule` at `now`: the first that
/// verifies, fetching nothing further once one does (each digest's `.sig` tag, then each one's
/// referrers); `Ok(None)` when none of `digests` has a signature; the first failure when
/// signatures exist and none verifies.
pub async fn check(
    registry: &Registry,
    root: &TrustedRoot,
    rule: &Rule,
    reference: &Reference,
    digests: &[&Digest],
    now: i64,
) -> Result<Option<Accepted>, CheckError> {
    let artifact = reference.to_string();
    let fetch_err = |source| CheckError::Fetch {
        artifact: artifact.clone(),
        source,
    };
    let mut found = Vec::new();
    // The legacy `.sig` tags first (what registry.k8s.io serves: no further request when one
    // verifies), then cosign 3's referrers.
    for digest in digests {
        found.extend(
            registry
                .signature(reference, digest)
                .await
                .map_err(fetch_err)?,
        );
        // A bad signature of the platform manifest does not yet fail: the index's may do.
        if let Ok(Some(accepted)) = signature::judge(root, rule, &artifact, &found, now) {
            return Ok(Some(take(found, accepted)));
        }
    }
    for digest in digests {
        found.extend(
            registry
                .referrers(reference, digest)
                .await
                .map_err(fetch_err)?,
        );
        if let Ok(Some(accepted)) = signature::judge(root, rule, &artifact, &found, now) {
            return Ok(Some(take(found, accepted)));
        }
    }
    Ok(signature::judge(root, rule, &artifact, &found, now)?.map(|accepted| take(found, accepted)))
}

/// The accepted signature `(signed digest, signature manifest digest, verdict)` with its
/// manifest out of `found`.
fn take(found: Vec<SignatureManifest>, accepted: (Digest, Digest, Verified)) -> Accepted {
    let (signed, manifest_digest, verified) = accepted;
    let manifest = found
        .into_iter()
        .find(|m| m.digest == manifest_digest)
        .expect("judge accepts only a manifest it was given");
    Accepted {
        signed,
        manifest,
        verified,
    }
}
