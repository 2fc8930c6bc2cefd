//! cosign 3's image signatures: a Sigstore bundle v0.3 attached to the image as an OCI 1.1
//! referrer, the way `cosign sign` writes it by default since 3.0 (`--new-bundle-format` on).
//!
//! What cosign 3.0.6 writes (`cmd/cosign/cli/sign/sign.go` `signDigestBundle`,
//! `pkg/oci/remote/write.go` `WriteAttestationNewBundleFormat` and `WriteReferrer`):
//!
//! - the signed content is an in-toto statement (`_type` `https://in-toto.io/Statement/v1`) whose
//!   one subject is the image digest (`{"digest": {"sha256": HEX}}`, no name, the `-a`
//!   annotations as its annotations), predicate type [`COSIGN_SIGN_PREDICATE`] and an empty
//!   predicate, in a DSSE envelope of payload type `application/vnd.in-toto+json`, logged as a
//!   Rekor v1 `dsse` 0.0.1 entry (or a Rekor v2 `hashedrekord` of the PAE);
//! - the bundle (media type [`BUNDLE_ARTIFACT_TYPE`]) is the one layer of an OCI image manifest
//!   (`application/vnd.oci.image.manifest.v1+json`) pushed by digest, whose `artifactType` is the
//!   bundle media type, whose config is the empty descriptor (`application/vnd.oci.empty.v1+json`,
//!   the 2 bytes `{}`), whose `subject` is the image's descriptor, and whose annotations are
//!   `org.opencontainers.image.created`, `dev.sigstore.bundle.content: dsse-envelope` and
//!   [`ANN_PREDICATE_TYPE`] (the statement's predicate type);
//! - the registry lists it in the Referrers API (`GET /v2/<name>/referrers/<digest>`, distribution
//!   spec 1.1), or, where it has none, go-containerregistry's `remote.Put` adds it to the
//!   tag-schema fallback: the image index tagged `sha256-<hex>` ([`fallback_tag`]).
//!
//! `cosign verify` (`pkg/cosign/verify.go` `GetBundles`) lists every referrer of the digest,
//! keeps those whose manifest has exactly one layer of a `application/vnd.dev.sigstore.bundle*`
//! media type and whose bundle is v0.3 or later, verifies each with sigstore-go against the image
//! digest (the statement's subject) and the identity policy, and falls back to the legacy `.sig`
//! tag when none is found. cks-iso does the same, with two restrictions: the referrer must be
//! a referrer of this digest (`subject`), and the statement's predicate type must be
//! cosign's signature predicate (another attestation by the same signer is not a signature).
//! Attestations are passed over, not judged: by the predicate annotation when the list carries
//! it, else by the statement itself ([`predicate_type`]) — registry.k8s.io's promoter attaches a
//! signed `https://k8s.io/promo-tools/promotion/v1` statement the same way (promo-tools PR
//! #1903, `docs/image-promotion.md` "Provenance generation"), beside SBOMs, VEX and provenance.

use cks_iso_oci::image::{Descriptor, Digest};
use serde::Deserialize;

use crate::Invalid;

use crate::dsse::Statement;
use crate::policy::Rule;
use crate::rekor::{BUNDLE_MEDIA_TYPES, Evidence, MAX_BUNDLE_SIZE, verify_digest};
use crate::root::TrustedRoot;
use crate::verify::{Failure, Step, Verified};

use crate::dsse::COSIGN_SIGN_PREDICATE;

/// The artifact type (and layer media type) of a cosign 3 signature referrer.
pub const BUNDLE_ARTIFACT_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The referrer manifest's annotation naming the statement's predicate type.
pub const ANN_PREDICATE_TYPE: &str = "dev.sigstore.bundle.predicateType";
/// The most signature referrers of one digest fetched (after attestations, SBOMs and other
/// artifacts are passed over by their listed type): each costs two requests of at most 4 MiB
/// (manifest and bundle). cosign adds one per `cosign sign` of the digest, and registry.k8s.io's
/// promoter signs a digest once (promo-tools #1948 keeps it from appending again), so 128 is
/// far above any signing history while a hostile list of thousands costs at most 256 requests.
pub const MAX_REFERRERS: usize = 128;

/// The tag-schema fallback's tag for `digest`: `sha256-<hex>` (distribution spec 1.1).
pub fn fallback_tag(digest: &Digest) -> String {
    format!("sha256-{}", digest.hex())
}

/// Whether a layer's media type is a Sigstore bundle's, as cosign 3 attaches it.
pub fn is_bundle_layer(media_type: &str) -> bool {
    BUNDLE_MEDIA_TYPES.contains(&media_type)
}

#[derive(Deserialize)]
struct ListIndex {
    #[serde(default)]
    manifests: Vec<Listed>,
}

#[derive(Deserialize)]
struct Listed {
    digest: Digest,
    size: u64,
    #[serde(rename = "artifactType", default)]
    artifact_type: String,
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
}

/// A referrers list sorted: the signature referrers worth fetching, and the others with why.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// At most [`MAX_REFERRERS`], in the list's order, each with its listed size.
    pub candidates: Vec<(Digest, u64)>,
    /// Attestations, SBOMs and other artifacts, and the signature referrers past the cap: never
    /// fetched.
    pub passed_over: Vec<(Digest, String)>,
}

/// The referrer manifests worth fetching from a referrers list (the Referrers API's reply or the
/// fallback tag's index): those of artifact type [`BUNDLE_ARTIFACT_TYPE`] (the registry may not
/// have filtered) whose predicate annotation, when present, is cosign's signature's (an
/// attestation without it is known by its statement, see [`predicate_type`]); at most
/// [`MAX_REFERRERS`], in the list's order. Each with its size, to bound its fetch.
pub fn candidates(list: &[u8]) -> Result<Vec<(Digest, u64)>, Invalid> {
    Ok(listing(list)?.candidates)
}

/// [`candidates`], and the listed manifests passed over with the reason (another artifact type,
/// another predicate, past the cap).
pub fn listing(list: &[u8]) -> Result<Listing, Invalid> {
    let index: ListIndex = serde_json::from_slice(list)
        .map_err(|e| format!("the referrers list is not an image index: {e}"))?;
    let mut out = Listing::default();
    for m in index.manifests {
        let predicate = m.annotations.get(ANN_PREDICATE_TYPE);
        let why = if m.artifact_type != BUNDLE_ARTIFACT_TYPE {
            format!(
                "its artifact type is {:?}, not a signature's",
                m.artifact_type
            )
        } else if let Some(p) = predicate.filter(|p| *p != COSIGN_SIGN_PREDICATE) {
            format!("it is a {p:?} attestation, not a signature")
        } else if out.candidates.len() == MAX_REFERRERS {
            format!("more than {MAX_REFERRERS} signature referrers are listed")
        } else {
            out.candidates.push((m.digest, m.size));
            continue;
        };
        out.passed_over.push((m.digest, why));
    }
    Ok(out)
}

#[derive(Deserialize)]
struct PeekBundle {
    #[serde(rename = "dsseEnvelope")]
    envelope: Option<PeekEnvelope>,
}

#[derive(Deserialize)]
struct PeekEnvelope {
    payload: String,
}

/// The predicate type of the in-toto statement a bundle's DSSE envelope carries, read without
/// judging anything; `None` when the bundle holds no readable statement (the verifier then says
/// why). A referrer whose statement is not [`COSIGN_SIGN_PREDICATE`] is an attestation, whatever
/// its annotations say, and is passed over rather than judged as a signature: a
/// registry that drops annotations, or a signer that never wrote them, must not make an
/// attestation fail an image as a bad signature.
pub fn predicate_type(bundle: &[u8]) -> Option<String> {
    use base64::Engine as _;
    let peek: PeekBundle = serde_json::from_slice(bundle).ok()?;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(peek.envelope?.payload)
        .ok()?;
    Statement::parse(&payload).ok().map(|s| s.predicate_type)
}

#[derive(Deserialize)]
struct ReferrerManifest {
    #[serde(rename = "artifactType", default)]
    artifact_type: String,
    config: Descriptor,
    #[serde(default)]
    layers: Vec<Descriptor>,
    subject: Option<Descriptor>,
}

/// The bundle layer of the referrer manifest `bytes`, which must refer to `subject` and hold
/// exactly one layer, a Sigstore bundle (cosign's own rule).
pub fn bundle_layer(bytes: &[u8], subject: &Digest) -> Result<Descriptor, Invalid> {
    let m: ReferrerManifest = serde_json::from_slice(bytes)
        .map_err(|e| format!("the referrer is not an image manifest: {e}"))?;
    let artifact_type = match m.artifact_type.is_empty() {
        true => m.config.media_type.as_str(),
        false => m.artifact_type.as_str(),
    };
    if artifact_type != BUNDLE_ARTIFACT_TYPE {
        return Err(format!(
            "the referrer's artifact type is {artifact_type:?}, not {BUNDLE_ARTIFACT_TYPE}"
        )
        .into());
    }
    match &m.subject {
        Some(s) if s.digest == *subject => {}
        Some(s) => {
            return Err(format!(
                "the referrer's subject is {}, not {subject} (listed for another image)",
                s.digest
            )
            .into());
        }
        None => return Err("the referrer has no subject".into()),
    }
    let [layer] = m.layers.as_slice() else {
        return Err(format!(
            "the referrer has {} layers, a signature referrer has one bundle",
            m.layers.len()
        )
        .into());
    };
    if !is_bundle_layer(&layer.media_type) {
        return Err(format!(
            "the referrer's layer is a {:?}, not a Sigstore bundle",
            layer.media_type
        )
        .into());
    }
    Ok(layer.clone())
}

/// Judges one referrer's bundle layer (`desc`, whose bytes are `bundle`) as a cosign 3 signature
/// of `signs`, under `rule`, at `now`: the bytes are at most [`MAX_BUNDLE_SIZE`] and the
/// descriptor's; the bundle holds a DSSE
/// envelope whose statement is cosign's signature predicate; then every check of a DSSE bundle
/// (see [`crate::dsse`]), the statement's subject being `signs`.
pub fn verify_layer(
    root: &TrustedRoot,
    rule: &Rule,
    signs: &Digest,
    desc: &Descriptor,
    bundle: &[u8],
    now: i64,
) -> Result<Verified, Failure> {
    let failure = |step, reason: String| Failure { step, reason };
    if bundle.len() > MAX_BUNDLE_SIZE {
        return Err(failure(
            Step::LayerIntegrity,
            format!(
                "the bundle is {} bytes, more than the {MAX_BUNDLE_SIZE} a signature's bundle \
                 needs",
                bundle.len()
            ),
        ));
    }
    let actual = Digest::of(bundle);
    if actual != desc.digest {
        return Err(failure(
            Step::LayerIntegrity,
            format!(
                "the bundle hashes to {actual}, its descriptor says {}",
                desc.digest
            ),
        ));
    }
    let evidence = Evidence::from_bundle(bundle)
        .map_err(|e| failure(Step::LayerIntegrity, format!("the bundle is refused: {e}")))?;
    let Some(env) = &evidence.envelope else {
        return Err(failure(
            Step::Envelope,
            "the bundle holds a message signature, not the DSSE envelope cosign signs images with"
                .into(),
        ));
    };
    let statement =
        Statement::parse(&env.payload).map_err(|e| failure(Step::Envelope, e.into()))?;
    if statement.predicate_type != COSIGN_SIGN_PREDICATE {
        return Err(failure(
            Step::Binding,
            format!(
                "the statement is a {:?} attestation, not cosign's image signature \
                 ({COSIGN_SIGN_PREDICATE})",
                statement.predicate_type
            ),
        ));
    }
    let digest: [u8; 32] = signs.sum().into();
    verify_digest(root, rule, &digest, &evidence, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(c: char) -> Digest {
        Digest::parse(&format!("sha256:{}", c.to_string().repeat(64))).unwrap()
    }

    #[test]
    fn candidates_are_bundles_of_cosigns_signature_predicate_only() {
        let list = serde_json::json!({"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest('a').to_string(),
             "size": 10, "artifactType": BUNDLE_ARTIFACT_TYPE,
             "annotations": {ANN_PREDICATE_TYPE: COSIGN_SIGN_PREDICATE}},
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest('b').to_string(),
             "size": 11, "artifactType": BUNDLE_ARTIFACT_TYPE,
             "annotations": {ANN_PREDICATE_TYPE: "https://slsa.dev/provenance/v1"}},
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest('c').to_string(),
             "size": 12, "artifactType": "application/spdx+json"},
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest('d').to_string(),
             "size": 13, "artifactType": BUNDLE_ARTIFACT_TYPE},
        ]});
        let found = candidates(list.to_string().as_bytes()).unwrap();
        assert_eq!(found, vec![(digest('a'), 10), (digest('d'), 13)]);
        let sorted = listing(list.to_string().as_bytes()).unwrap();
        assert_eq!(
            sorted.passed_over,
            vec![
                (
                    digest('b'),
                    "it is a \"https://slsa.dev/provenance/v1\" attestation, not a signature"
                        .into()
                ),
                (
                    digest('c'),
                    "its artifact type is \"application/spdx+json\", not a signature's".into()
                ),
            ]
        );
        assert!(candidates(br#"{"manifests": 5}"#).is_err());
    }

    #[test]
    fn past_the_cap_signature_referrers_are_passed_over_and_named() {
        let one = |i: usize| {
            serde_json::json!({"mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": format!("sha256:{i:064x}"), "size": 10, "artifactType": BUNDLE_ARTIFACT_TYPE})
        };
        let list =
            serde_json::json!({"manifests": (0..MAX_REFERRERS + 2).map(one).collect::<Vec<_>>()});
        let sorted = listing(list.to_string().as_bytes()).unwrap();
        assert_eq!(sorted.candidates.len(), MAX_REFERRERS);
        assert_eq!(sorted.passed_over.len(), 2);
        assert!(sorted.passed_over[0].1.contains("more than 128"));
    }

    #[test]
    fn the_statement_names_the_predicate_whatever_the_annotations() {
        use base64::Engine as _;
        let bundle = |predicate: &str| {
            let statement = serde_json::json!({"_type": "https://in-toto.io/Statement/v1",
                "subject": [{"digest": {"sha256": "ab"}}], "predicateType": predicate, "predicate": {}});
            let payload = base64::engine::general_purpose::STANDARD.encode(statement.to_string());
            serde_json::json!({"mediaType": BUNDLE_ARTIFACT_TYPE,
                "dsseEnvelope": {"payload": payload, "payloadType": "application/vnd.in-toto+json",
                                 "signatures": []}})
            .to_string()
        };
        let promotion = "https://k8s.io/promo-tools/promotion/v1";
        assert_eq!(
            predicate_type(bundle(promotion).as_bytes()).as_deref(),
            Some(promotion)
        );
        assert_eq!(
            predicate_type(bundle(COSIGN_SIGN_PREDICATE).as_bytes()).as_deref(),
            Some(COSIGN_SIGN_PREDICATE)
        );
        assert_eq!(predicate_type(br#"{"messageSignature": {}}"#), None);
        assert_eq!(predicate_type(b"not json"), None);
    }

    #[test]
    fn a_referrer_must_name_its_subject_and_hold_one_bundle() {
        let manifest = |subject: char, layers: usize, media: &str| {
            let layer = serde_json::json!({"mediaType": media, "digest": digest('e').to_string(), "size": 5});
            serde_json::json!({
                "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "artifactType": BUNDLE_ARTIFACT_TYPE,
                "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                           "digest": digest('f').to_string(), "size": 2},
                "layers": vec![layer; layers],
                "subject": {"mediaType": "application/vnd.oci.image.index.v1+json",
                            "digest": digest(subject).to_string(), "size": 100},
            })
            .to_string()
        };
        let ok = bundle_layer(
            manifest('1', 1, BUNDLE_ARTIFACT_TYPE).as_bytes(),
            &digest('1'),
        );
        assert_eq!(ok.unwrap().digest, digest('e'));
        let other = bundle_layer(
            manifest('2', 1, BUNDLE_ARTIFACT_TYPE).as_bytes(),
            &digest('1'),
        );
        assert!(
            other
                .unwrap_err()
                .reason()
                .contains("listed for another image")
        );
        let two = bundle_layer(
            manifest('1', 2, BUNDLE_ARTIFACT_TYPE).as_bytes(),
            &digest('1'),
        );
        assert!(two.unwrap_err().reason().contains("2 layers"));
        let media = bundle_layer(manifest('1', 1, "text/plain").as_bytes(), &digest('1'));
        assert!(
            media
                .unwrap_err()
                .reason()
                .contains("not a Sigstore bundle")
        );
    }
}
