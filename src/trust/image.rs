//! An image's cosign signature: for the digests that may speak for it (its platform manifest
//! first, then its index), the legacy `sha256-<hex>.sig` tags, then — when those give none that
//! verifies — cosign 3's OCI 1.1 referrers holding a Sigstore bundle, fetched through the
//! registry (its mirrors, credentials, cache and `--offline`) and judged against a trusted root
//! and a policy rule. Only signature manifests, bundles and payloads are fetched here, never the
//! image.

use crate::fetch::Origin;
use crate::image::{Digest, Reference};
use crate::registry::{Registry, RegistryError};
use std::collections::HashMap;
use std::sync::Mutex;

use cks_iso_sigstore::verify::Verified;
use cks_iso_sigstore::{Rejection, Rule, SignatureError, SignatureManifest, TrustedRoot};

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

/// A verdict's key: the rule (pattern, issuer, identity), the digest signed, the manifest's.
type VerdictKey = (String, Digest, Digest);

/// The verdicts given so far in one run, so that a signature manifest found again (the index's
/// signature, judged for each architecture; an image named twice) is judged once: by the rule,
/// the digest it signs and its own digest (whose layers' payloads the registry checked against
/// their descriptors).
#[derive(Debug, Default)]
pub struct Verdicts {
    given: Mutex<HashMap<VerdictKey, Result<Verified, Rejection>>>,
}

impl Verdicts {
    /// How many signature manifests were judged (not given again); for the tests that count them.
    #[cfg(test)]
    fn judged(&self) -> usize {
        self.given.lock().expect("never poisoned").len()
    }

    /// The verdict on `sig` under `rule`: the one given before, else judged now.
    fn judge(
        &self,
        root: &TrustedRoot,
        rule: &Rule,
        sig: &SignatureManifest,
        now: i64,
    ) -> Result<Verified, Rejection> {
        let key = (
            format!(
                "{}\n{}\n{}",
                rule.pattern,
                rule.issuer.describe(),
                rule.identity.describe()
            ),
            sig.signs.clone(),
            sig.digest.clone(),
        );
        if let Some(given) = self.given.lock().expect("never poisoned").get(&key) {
            return given.clone();
        }
        let verdict = cks_iso_sigstore::judge_manifest(root, rule, sig, now);
        tracing::debug!(
            "judged the signature manifest {} of {}: {}",
            sig.digest,
            sig.signs,
            match &verdict {
                Ok(_) => cks_iso_sigstore::Verdict::Verified.to_string(),
                Err(Rejection::NoLayers) => "no layers".to_owned(),
                Err(Rejection::Failed(f)) => format!("fails the {} check", f.step.name()),
            }
        );
        self.given
            .lock()
            .expect("never poisoned")
            .insert(key, verdict.clone());
        verdict
    }
}

/// Signature manifests judged one by one as they are found: each once, the first failure kept
/// for when none verifies.
struct Judging<'a> {
    root: &'a TrustedRoot,
    rule: &'a Rule,
    artifact: &'a str,
    now: i64,
    verdicts: &'a Verdicts,
    first: Option<SignatureError>,
}

impl Judging<'_> {
    /// The first of `found` that verifies, with its manifest.
    fn add(&mut self, found: Vec<SignatureManifest>) -> Option<Accepted> {
        for manifest in found {
            match self
                .verdicts
                .judge(self.root, self.rule, &manifest, self.now)
            {
                Ok(verified) => {
                    return Some(Accepted {
                        signed: manifest.signs.clone(),
                        manifest,
                        verified,
                    });
                }
                Err(rejection) => {
                    self.first.get_or_insert_with(|| {
                        rejection.into_error(self.artifact, &manifest.signs)
                    });
                }
            }
        }
        None
    }

    /// Nothing verified: the first failure, `None` when nothing was found.
    fn finish(self) -> Option<SignatureError> {
        self.first
    }
}

/// Fetches the signatures of `digests` (the most wanted first: a platform manifest, then its
/// index) in `reference`'s repository, and judges them under `rule` at `now`, each signature
/// manifest once (`verdicts` keeps what was judged): the first that verifies, fetching nothing
/// further once one does (each digest's `.sig` tag, then each one's referrers); `Ok(None)` when
/// none of `digests` has a signature; the first failure when signatures exist and none verifies.
/// With where the answers came from: [`Origin::Cache`] when the client is offline and the cache
/// gave them all.
pub async fn check(
    registry: &Registry,
    root: &TrustedRoot,
    rule: &Rule,
    reference: &Reference,
    digests: &[&Digest],
    now: i64,
    verdicts: &Verdicts,
) -> Result<(Option<Accepted>, Origin), CheckError> {
    let artifact = reference.to_string();
    let fetch_err = |source| CheckError::Fetch {
        artifact: artifact.clone(),
        source,
    };
    let mut judging = Judging {
        root,
        rule,
        artifact: &artifact,
        now,
        verdicts,
        first: None,
    };
    // The legacy `.sig` tags first (what registry.k8s.io serves: no further request when one
    // verifies), then cosign 3's referrers. A bad signature of the platform manifest does not
    // yet fail: the index's may do. Where the answers came from: the cache, when it gave all.
    let mut origin = Origin::Cache;
    for digest in digests {
        let (found, from) = registry
            .signature(reference, digest)
            .await
            .map_err(fetch_err)?;
        if from == Origin::Network {
            origin = from;
        }
        if let Some(accepted) = judging.add(found.into_iter().collect()) {
            return Ok((Some(accepted), origin));
        }
    }
    for digest in digests {
        let (found, from) = registry
            .referrers(reference, digest)
            .await
            .map_err(fetch_err)?;
        if from == Origin::Network {
            origin = from;
        }
        if let Some(accepted) = judging.add(found) {
            return Ok((Some(accepted), origin));
        }
    }
    match judging.finish() {
        Some(err) => Err(CheckError::Untrusted(err)),
        None => Ok((None, origin)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::Descriptor;
    use cks_iso_sigstore::verify::Step;
    use cks_iso_sigstore::{PUBLIC_GOOD_ROOT, Policy, SIMPLE_SIGNING};

    fn digest(c: char) -> Digest {
        Digest::parse(&format!("sha256:{}", c.to_string().repeat(64))).unwrap()
    }

    /// A `.sig` manifest of `signs` whose one layer lacks cosign's annotations.
    fn bad(signs: char, n: u8) -> SignatureManifest {
        let payload = vec![n];
        let desc: Descriptor = serde_json::from_value(serde_json::json!({
            "mediaType": SIMPLE_SIGNING,
            "digest": Digest::of(&payload).to_string(),
            "size": 1,
        }))
        .unwrap();
        SignatureManifest {
            signs: digest(signs),
            digest: Digest::of(&[n, 0]),
            bytes: vec![n, 0],
            layers: vec![(desc, payload)],
        }
    }

    #[test]
    fn each_signature_manifest_is_judged_once_per_run_and_the_first_failure_told() {
        let root = TrustedRoot::from_json(PUBLIC_GOOD_ROOT).unwrap();
        let policy = Policy::builtin();
        let rule = policy.rule_for("registry.k8s.io/pause").unwrap();
        let verdicts = Verdicts::default();
        // Two architectures, as `check` finds their signatures: the platform manifest's `.sig`,
        // the index's, then a few referrers of each.
        for (platform, first) in [('a', 1u8), ('b', 2)] {
            let mut judging = Judging {
                root: &root,
                rule,
                artifact: "registry.k8s.io/pause:3.10",
                now: 0,
                verdicts: &verdicts,
                first: None,
            };
            assert!(judging.add(vec![bad(platform, first)]).is_none());
            assert!(judging.add(vec![bad('f', 9)]).is_none());
            assert!(
                judging
                    .add((10..20).map(|n| bad(platform, n + first * 10)).collect())
                    .is_none()
            );
            assert!(judging.add(vec![bad('f', 30), bad('f', 31)]).is_none());
            match judging.finish() {
                Some(SignatureError::Invalid { digest, step, .. }) => {
                    assert_eq!(digest, self::digest(platform).to_string());
                    assert_eq!(step, Step::LayerIntegrity);
                }
                other => panic!("{other:?}"),
            }
        }
        // 1 + 10 per architecture, and the index's 3 once.
        assert_eq!(verdicts.judged(), 2 * 11 + 3);
    }
}
