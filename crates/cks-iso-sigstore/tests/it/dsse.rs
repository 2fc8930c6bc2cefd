//! DSSE bundles of the Sigstore conformance suite (real public-good signatures) read, written
//! back and spoiled, each refusal naming its check or field.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::now;
use cks_iso_sigstore::dsse::Logged;
use cks_iso_sigstore::rekor::{BundleError, Evidence, verify_digest};
use cks_iso_sigstore::verify::{Failure, Step, Verified};
use cks_iso_sigstore::{PUBLIC_GOOD_ROOT, Rule, TrustedRoot};

const V1: &str = include_str!(
    "../../../../tests/sigstore-conformance/bundle-verify/happy-path-intoto-in-dsse-v3/bundle.sigstore.json"
);
const V2: &str = include_str!(
    "../../../../tests/sigstore-conformance/bundle-verify/rekor2-dsse-happy-path/bundle.sigstore.json"
);
const V2_ROOT: &str = include_str!(
    "../../../../tests/sigstore-conformance/bundle-verify/rekor2-dsse-happy-path/trusted_root.json"
);
const ARTIFACT: &[u8] =
    include_bytes!("../../../../tests/sigstore-conformance/bundle-verify/a.txt");
const IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";

fn judge(bundle: &str, root: &str, digest: &[u8; 32]) -> Result<Verified, Failure> {
    let root = TrustedRoot::from_json(root).unwrap();
    let rule = Rule::exact(
        "**",
        IDENTITY,
        "https://token.actions.githubusercontent.com",
    );
    let ev = Evidence::from_bundle(bundle.as_bytes()).unwrap();
    verify_digest(&root, &rule, digest, &ev, now())
}

fn artifact() -> [u8; 32] {
    Sha256::digest(ARTIFACT).into()
}

#[test]
fn dsse_bundles_read_write_back_and_verify_on_rekor_v1_and_v2() {
    for (bundle, root, logged) in [
        (V1, PUBLIC_GOOD_ROOT, Logged::Dsse),
        (V2, V2_ROOT, Logged::HashedRekord),
    ] {
        let ev = Evidence::from_bundle(bundle.as_bytes()).unwrap();
        let env = ev.envelope.as_ref().expect("a DSSE bundle");
        assert_eq!(env.logged, logged);
        assert_eq!(Evidence::from_bundle(&ev.bundle()), Ok(ev.clone()));
        let verified = judge(bundle, root, &artifact()).unwrap();
        assert_eq!(verified.identity, IDENTITY);
    }
}

#[test]
fn a_dsse_bundle_of_another_artifact_fails_the_signed_digest_check() {
    let err = judge(V1, PUBLIC_GOOD_ROOT, &[9u8; 32]).unwrap_err();
    assert_eq!(err.step, Step::Binding, "{err:?}");
    assert!(err.reason.contains("not sha256:0909"), "{}", err.reason);
}

#[test]
fn an_envelope_of_another_payload_type_fails_the_envelope_check() {
    let mut b: Value = serde_json::from_str(V1).unwrap();
    b["dsseEnvelope"]["payloadType"] = "text/plain".into();
    let err = judge(&b.to_string(), PUBLIC_GOOD_ROOT, &artifact()).unwrap_err();
    assert_eq!(err.step, Step::Envelope, "{err:?}");
    assert!(err.reason.contains("\"text/plain\""), "{}", err.reason);
}

#[test]
fn a_dsse_envelope_needs_one_signature_and_a_kind_the_log_writes() {
    let mut b: Value = serde_json::from_str(V1).unwrap();
    let sig = b["dsseEnvelope"]["signatures"][0].clone();
    b["dsseEnvelope"]["signatures"] = Value::Array(vec![sig.clone(), sig]);
    assert_eq!(
        Evidence::from_bundle(b.to_string().as_bytes()),
        Err(BundleError::EnvelopeSignatures(2))
    );
    // Rekor v2 dropped its dsse kind before deployment: no verifier reads one.
    let mut b: Value = serde_json::from_str(V2).unwrap();
    b["verificationMaterial"]["tlogEntries"][0]["kindVersion"]["kind"] = "dsse".into();
    let err = Evidence::from_bundle(b.to_string().as_bytes()).unwrap_err();
    assert_eq!(err.field(), Some("kindVersion"));
    assert!(
        err.to_string().contains("Rekor v2 logs no dsse entries"),
        "{err}"
    );
    // A message signature is never logged as a dsse entry, nor an envelope as a hashedrekord 0.0.1.
    let mut b: Value = serde_json::from_str(V1).unwrap();
    b["verificationMaterial"]["tlogEntries"][0]["kindVersion"] =
        serde_json::json!({"kind": "hashedrekord", "version": "0.0.1"});
    assert!(matches!(
        Evidence::from_bundle(b.to_string().as_bytes()),
        Err(BundleError::EntryKind { .. })
    ));
    let mut b: Value = serde_json::from_str(V1).unwrap();
    b["messageSignature"] = serde_json::json!({});
    assert_eq!(
        Evidence::from_bundle(b.to_string().as_bytes()),
        Err(BundleError::Content("both"))
    );
}

#[test]
fn a_payload_other_than_the_logged_one_fails_the_rekor_entry_check() {
    let mut b: Value = serde_json::from_str(V1).unwrap();
    let payload = b["dsseEnvelope"]["payload"].as_str().unwrap().to_owned();
    let text = base64::engine::general_purpose::STANDARD
        .decode(&payload)
        .unwrap();
    let spoiled = String::from_utf8(text).unwrap().replace("a.txt", "b.txt");
    use base64::Engine as _;
    b["dsseEnvelope"]["payload"] = base64::engine::general_purpose::STANDARD
        .encode(spoiled)
        .into();
    let err = judge(&b.to_string(), PUBLIC_GOOD_ROOT, &artifact()).unwrap_err();
    assert_eq!(err.step, Step::RekorEntry, "{err:?}");
    assert!(
        err.reason.contains("the entry logs a payload hashing to"),
        "{}",
        err.reason
    );
}

/// What the world's cosign 3 signer makes for `opts`, judged as a referrer's bundle layer.
fn world_judged(opts: &cks_iso_testworld::referrers::DsseOptions) -> Result<Verified, Failure> {
    use cks_iso_oci::image::{Descriptor, Digest};
    let store = world();
    let signs = Digest::parse(&format!("sha256:{}", "3".repeat(64))).unwrap();
    let bundle = store.sign_dsse(&signs.to_string(), opts);
    let desc = Descriptor::new(
        cks_iso_sigstore::referrer::BUNDLE_ARTIFACT_TYPE,
        Digest::of(&bundle),
        bundle.len() as u64,
    );
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let rule = Rule::exact(
        "**",
        cks_iso_testworld::sigstore::K8S_IDENTITY,
        cks_iso_testworld::sigstore::GOOGLE_ISSUER,
    );
    cks_iso_sigstore::referrer::verify_layer(&root, &rule, &signs, &desc, &bundle, now())
}

fn world() -> &'static cks_iso_testworld::sigstore::Sigstore {
    static STORE: std::sync::OnceLock<cks_iso_testworld::sigstore::Sigstore> =
        std::sync::OnceLock::new();
    STORE.get_or_init(cks_iso_testworld::sigstore::Sigstore::generate)
}

#[test]
fn cosign3_signatures_of_the_world_verify_and_each_spoiling_names_its_check() {
    use cks_iso_testworld::referrers::{DsseOptions, Tamper};
    let verified = world_judged(&DsseOptions::default()).unwrap();
    assert_eq!(verified.identity, cks_iso_testworld::sigstore::K8S_IDENTITY);
    let cases = [
        (
            DsseOptions {
                tamper: Tamper::AfterLogging,
                ..DsseOptions::default()
            },
            Step::RekorEntry,
            "the entry logs a payload hashing to",
        ),
        (
            DsseOptions {
                tamper: Tamper::BeforeLogging,
                ..DsseOptions::default()
            },
            Step::Signature,
            "the leaf's key",
        ),
        (
            DsseOptions {
                subject: Some(format!("sha256:{}", "4".repeat(64))),
                ..DsseOptions::default()
            },
            Step::Binding,
            "a signature of another artifact",
        ),
        (
            DsseOptions {
                predicate_type: "https://slsa.dev/provenance/v1".into(),
                ..DsseOptions::default()
            },
            Step::Binding,
            "not cosign's image signature",
        ),
        (
            DsseOptions {
                sign: cks_iso_testworld::sigstore::SignOptions {
                    identity: "mallory@example.com".into(),
                    ..Default::default()
                },
                ..DsseOptions::default()
            },
            Step::Identity,
            "signed by mallory@example.com",
        ),
        (
            DsseOptions {
                sign: cks_iso_testworld::sigstore::SignOptions {
                    flip_set: true,
                    ..Default::default()
                },
                ..DsseOptions::default()
            },
            Step::RekorSet,
            "does not verify",
        ),
    ];
    for (opts, step, words) in cases {
        let err = world_judged(&opts).unwrap_err();
        assert_eq!(err.step, step, "{opts:?}: {err:?}");
        assert!(err.reason.contains(words), "{opts:?}: {}", err.reason);
    }
}

#[test]
fn cosign3_signatures_on_the_worlds_rekor_v2_verify_and_each_spoiling_names_its_check() {
    use cks_iso_testworld::referrers::{DsseOptions, OnRekorV2, Tamper};
    use cks_iso_testworld::rekor_v2::Authority;
    let v2 = |on: OnRekorV2, tamper: Tamper| DsseOptions {
        rekor_v2: Some(on),
        tamper,
        ..DsseOptions::default()
    };
    let verified = world_judged(&v2(OnRekorV2::default(), Tamper::None)).unwrap();
    assert_eq!(verified.identity, cks_iso_testworld::sigstore::K8S_IDENTITY);
    let cases = [
        (
            v2(
                OnRekorV2 {
                    authority: Authority::Rogue,
                    ..OnRekorV2::default()
                },
                Tamper::None,
            ),
            Step::Timestamp,
            "no timestamp authority of the trusted root",
        ),
        (
            v2(
                OnRekorV2 {
                    foreign_checkpoint_key: true,
                    ..OnRekorV2::default()
                },
                Tamper::None,
            ),
            Step::Checkpoint,
            "does not verify",
        ),
        (
            v2(
                OnRekorV2 {
                    other_envelope: true,
                    ..OnRekorV2::default()
                },
                Tamper::None,
            ),
            Step::RekorEntry,
            "not this payload",
        ),
        (
            v2(OnRekorV2::default(), Tamper::AfterLogging),
            Step::RekorEntry,
            "not this payload",
        ),
        (
            v2(OnRekorV2::default(), Tamper::BeforeLogging),
            Step::Signature,
            "the leaf's key",
        ),
    ];
    for (opts, step, words) in cases {
        let err = world_judged(&opts).unwrap_err();
        assert_eq!(err.step, step, "{opts:?}: {err:?}");
        assert!(err.reason.contains(words), "{opts:?}: {}", err.reason);
    }
}
