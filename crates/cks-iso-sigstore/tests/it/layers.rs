//! Each check of `verify::layer` against signatures the test world's Sigstore makes,
//! good and spoiled one way at a time: every spoiled one must fail at its own step.

use cks_iso_testworld::sigstore::{IssuerForm, SignOptions, SignedLayer, Sigstore};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use cks_iso_sigstore::verify::{Blob, Step, layer};
use cks_iso_sigstore::{
    ANN_BUNDLE, ANN_CERTIFICATE, ANN_CHAIN, ANN_SIGNATURE, Policy, TrustedRoot,
};

use crate::now;

const REPO: &str = "registry.k8s.io/pause";
const SIGNED: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const OTHER: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn digest_of(payload: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(payload)))
}

fn check_with(root: &TrustedRoot, l: &SignedLayer, digest: &str, at: i64) -> Result<(), Step> {
    let rule = Policy::builtin()
        .rule_for("registry.k8s.io/pause")
        .unwrap()
        .clone();
    layer(root, &rule, SIGNED, digest, &l.annotations, &l.payload, at)
        .map(|_| ())
        .map_err(|f| f.step)
}

fn check(store: &Sigstore, l: &SignedLayer) -> Result<(), Step> {
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    check_with(&root, l, &digest_of(&l.payload), now())
}

fn signed(store: &Sigstore, opts: SignOptions) -> SignedLayer {
    store.sign(REPO, SIGNED, &opts)
}

#[test]
fn a_good_signature_verifies_and_says_who_signed() {
    let store = Sigstore::generate();
    let l = signed(&store, SignOptions::default());
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let rule = Policy::builtin()
        .rule_for("registry.k8s.io/pause")
        .unwrap()
        .clone();
    let v = layer(
        &root,
        &rule,
        SIGNED,
        &digest_of(&l.payload),
        &l.annotations,
        &l.payload,
        now(),
    )
    .unwrap();
    assert_eq!(v.identity, cks_iso_sigstore::K8S_IMAGE_IDENTITY);
    assert_eq!(v.issuer, cks_iso_sigstore::GOOGLE_ISSUER);
    assert_eq!(v.docker_reference, REPO);
    // The issuer in either extension form alone is accepted.
    for form in [IssuerForm::V1, IssuerForm::V2] {
        let opts = SignOptions {
            issuer_form: form,
            ..SignOptions::default()
        };
        assert_eq!(check(&store, &signed(&store, opts)), Ok(()));
    }
}

#[test]
fn each_spoiled_signature_fails_at_its_own_step() {
    let store = Sigstore::generate();
    let cases = [
        (
            SignOptions {
                identity: "mallory@example.com".into(),
                ..SignOptions::default()
            },
            Step::Identity,
        ),
        (
            SignOptions {
                issuer: "https://evil.example".into(),
                ..SignOptions::default()
            },
            Step::Issuer,
        ),
        (
            SignOptions {
                issuer: "https://evil.example".into(),
                issuer_form: IssuerForm::V1,
                ..SignOptions::default()
            },
            Step::Issuer,
        ),
        (
            SignOptions {
                rogue_ca: true,
                ..SignOptions::default()
            },
            Step::CertificateChain,
        ),
        (
            SignOptions {
                flip_set: true,
                ..SignOptions::default()
            },
            Step::RekorSet,
        ),
        (
            SignOptions {
                payload_digest: Some(OTHER.into()),
                ..SignOptions::default()
            },
            Step::Binding,
        ),
        (
            SignOptions {
                integrated_after: 3600,
                ..SignOptions::default()
            },
            Step::Time,
        ),
    ];
    for (opts, step) in cases {
        let what = format!("{opts:?}");
        assert_eq!(check(&store, &signed(&store, opts)), Err(step), "{what}");
    }
}

fn annotated(l: &SignedLayer, name: &str, value: String) -> SignedLayer {
    let mut out = l.clone();
    out.annotations.insert(name.to_owned(), value);
    out
}

#[test]
fn swapped_or_altered_material_fails() {
    let store = Sigstore::generate();
    let good = signed(&store, SignOptions::default());
    let other = signed(&store, SignOptions::default());
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    // The payload is not what its descriptor names.
    assert_eq!(
        check_with(&root, &good, OTHER, now()),
        Err(Step::LayerIntegrity)
    );
    // Another valid signature or certificate than the one Rekor logged.
    let sig = annotated(
        &good,
        ANN_SIGNATURE,
        other.annotations[ANN_SIGNATURE].clone(),
    );
    assert_eq!(check(&store, &sig), Err(Step::RekorEntry));
    let cert = annotated(
        &good,
        ANN_CERTIFICATE,
        other.annotations[ANN_CERTIFICATE].clone(),
    );
    assert_eq!(check(&store, &cert), Err(Step::RekorEntry));
    // Another entry's bundle: its SET is valid, its entry is for another payload.
    let bundle = annotated(&good, ANN_BUNDLE, other.annotations[ANN_BUNDLE].clone());
    assert_eq!(check(&store, &bundle), Err(Step::RekorEntry));
    // Another payload under its own digest: Rekor logged a different hash.
    let mut payload = good.clone();
    payload.payload.push(b' ');
    assert_eq!(check(&store, &payload), Err(Step::RekorEntry));
    // Missing annotation.
    let mut bare = good.clone();
    bare.annotations.remove(ANN_BUNDLE);
    assert_eq!(check(&store, &bare), Err(Step::LayerIntegrity));
    // An entry integrated in the future of the verifier's clock.
    let digest = digest_of(&good.payload);
    assert_eq!(
        check_with(&root, &good, &digest, now() - 3600),
        Err(Step::Time)
    );
}

#[test]
fn the_chain_annotation_is_never_trusted() {
    let store = Sigstore::generate();
    let rogue = signed(
        &store,
        SignOptions {
            rogue_ca: true,
            ..SignOptions::default()
        },
    );
    let good = signed(&store, SignOptions::default());
    // A rogue leaf shipped with the trusted chain is still rogue…
    let dressed = annotated(&rogue, ANN_CHAIN, good.annotations[ANN_CHAIN].clone());
    assert_eq!(check(&store, &dressed), Err(Step::CertificateChain));
    // …and a good leaf shipped with garbage as its chain is still good.
    let undressed = annotated(&good, ANN_CHAIN, "not a chain".into());
    assert_eq!(check(&store, &undressed), Ok(()));
}

/// The world's root with one log's id replaced.
fn root_without(store: &Sigstore, list: &str) -> TrustedRoot {
    let mut json: Value = serde_json::from_str(store.trusted_root()).unwrap();
    json[list][0]["logId"]["keyId"] =
        Value::String("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into());
    TrustedRoot::from_json(&json.to_string()).unwrap()
}

#[test]
fn logs_outside_the_root_are_refused() {
    let store = Sigstore::generate();
    let l = signed(&store, SignOptions::default());
    let digest = digest_of(&l.payload);
    let no_ct = root_without(&store, "ctlogs");
    assert_eq!(check_with(&no_ct, &l, &digest, now()), Err(Step::Sct));
    let mut json: Value = serde_json::from_str(store.trusted_root()).unwrap();
    json["ctlogs"][0]["publicKey"]["validFor"]["end"] =
        Value::String("2021-06-01T00:00:00Z".into());
    let retired = TrustedRoot::from_json(&json.to_string()).unwrap();
    assert_eq!(check_with(&retired, &l, &digest, now()), Err(Step::Sct));
    let mut json: Value = serde_json::from_str(store.trusted_root()).unwrap();
    json["tlogs"][0]["publicKey"]["validFor"]["end"] = Value::String("2021-06-01T00:00:00Z".into());
    let retired = TrustedRoot::from_json(&json.to_string()).unwrap();
    assert_eq!(
        check_with(&retired, &l, &digest, now()),
        Err(Step::RekorSet)
    );
    let no_rekor = root_without(&store, "tlogs");
    assert_eq!(
        check_with(&no_rekor, &l, &digest, now()),
        Err(Step::RekorSet)
    );
    // Another world's root trusts none of it.
    let elsewhere = TrustedRoot::from_json(Sigstore::generate().trusted_root()).unwrap();
    assert_eq!(
        check_with(&elsewhere, &l, &digest, now()),
        Err(Step::RekorSet)
    );
}

#[test]
fn a_tampered_sct_fails() {
    let store = Sigstore::generate();
    let l = signed(
        &store,
        SignOptions {
            spoil_sct: true,
            ..SignOptions::default()
        },
    );
    assert_eq!(check(&store, &l), Err(Step::Sct));
}

fn manifest(signs: &str, layers: &[&SignedLayer]) -> cks_iso_sigstore::SignatureManifest {
    use cks_iso_oci::image::{Descriptor, Digest};
    cks_iso_sigstore::SignatureManifest {
        signs: Digest::parse(signs).unwrap(),
        digest: Digest::of(b"manifest"),
        bytes: b"manifest".to_vec(),
        layers: layers
            .iter()
            .map(|l| {
                let desc = Descriptor {
                    media_type: cks_iso_sigstore::SIMPLE_SIGNING.into(),
                    digest: Digest::parse(&digest_of(&l.payload)).unwrap(),
                    size: l.payload.len() as u64,
                    platform: None,
                    annotations: l.annotations.clone(),
                };
                (desc, l.payload.clone())
            })
            .collect(),
    }
}

#[test]
fn any_layer_that_verifies_accepts_and_otherwise_the_first_failure_is_named() {
    // kpromo copies the staging signature, then appends its own: two layers, one manifest.
    let store = Sigstore::generate();
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let rule = Policy::builtin()
        .rule_for("registry.k8s.io/pause")
        .unwrap()
        .clone();
    let staging = signed(
        &store,
        SignOptions {
            identity: "krel-staging@k8s-releng-prod.iam.gserviceaccount.com".into(),
            ..SignOptions::default()
        },
    );
    let trust = signed(&store, SignOptions::default());
    let both = manifest(SIGNED, &[&staging, &trust]);
    let (signed_digest, _, v) = cks_iso_sigstore::judge(&root, &rule, REPO, &[both], now())
        .unwrap()
        .unwrap();
    assert_eq!(signed_digest.to_string(), SIGNED);
    assert_eq!(v.identity, cks_iso_sigstore::K8S_IMAGE_IDENTITY);
    let only_staging = manifest(SIGNED, &[&staging]);
    let err = cks_iso_sigstore::judge(&root, &rule, REPO, &[only_staging], now()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("identity check") && text.contains("krel-staging"),
        "{text}"
    );
    // A manifest without layers is malformed, never "unsigned".
    let empty = manifest(SIGNED, &[]);
    assert!(cks_iso_sigstore::judge(&root, &rule, REPO, &[empty], now()).is_err());
    assert!(
        cks_iso_sigstore::judge(&root, &rule, REPO, &[], now())
            .unwrap()
            .is_none()
    );
}

/// A real public-good signature (see `testdata/README.md`): cosign's annotations rebuilt from
/// its bundle, judged against the embedded root. Checks 1 to 8 pass on production material:
/// the P-384 Fulcio chain, the CT log's SCT, Rekor's SET over its entry, the signature, the time,
/// identity and issuer.
#[test]
fn production_material_verifies_under_the_embedded_root() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let blob = include_bytes!("../testdata/cosign-v3-blob.txt");
    let bundle: Value =
        serde_json::from_str(include_str!("../testdata/cosign-v3-blob.sigstore.json")).unwrap();
    let vm = &bundle["verificationMaterial"];
    let entry = &vm["tlogEntries"][0];
    let cert = b64
        .decode(vm["certificate"]["rawBytes"].as_str().unwrap())
        .unwrap();
    let pem = format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        b64.encode(&cert)
    );
    let log_id = b64
        .decode(entry["logId"]["keyId"].as_str().unwrap())
        .unwrap();
    let rekor = serde_json::json!({
        "SignedEntryTimestamp": entry["inclusionPromise"]["signedEntryTimestamp"],
        "Payload": {
            "body": entry["canonicalizedBody"],
            "integratedTime": entry["integratedTime"].as_str().unwrap().parse::<i64>().unwrap(),
            "logID": hex::encode(log_id),
            "logIndex": entry["logIndex"].as_str().unwrap().parse::<i64>().unwrap(),
        },
    });
    let annotations = std::collections::BTreeMap::from([
        (
            ANN_SIGNATURE.to_owned(),
            bundle["messageSignature"]["signature"]
                .as_str()
                .unwrap()
                .to_owned(),
        ),
        (ANN_CERTIFICATE.to_owned(), pem),
        (ANN_BUNDLE.to_owned(), rekor.to_string()),
    ]);
    let root = TrustedRoot::from_json(cks_iso_sigstore::PUBLIC_GOOD_ROOT).unwrap();
    let rule = cks_iso_sigstore::Rule::exact(
        "**",
        "w.vollprecht@gmail.com",
        "https://github.com/login/oauth",
    );
    let digest = digest_of(blob);
    let under = |root: &TrustedRoot| {
        cks_iso_sigstore::verify::blob(root, &rule, &digest, &annotations, Blob::Bytes(blob), now())
    };
    let v = under(&root).unwrap();
    assert_eq!(v.log_index, 738_312_748);
    // The same material under the test world's root, or for another signer, fails.
    let world = TrustedRoot::from_json(Sigstore::generate().trusted_root()).unwrap();
    let err = under(&world).unwrap_err();
    assert_eq!(err.step, Step::RekorSet);
    let k8s = Policy::builtin()
        .rule_for("registry.k8s.io/pause")
        .unwrap()
        .clone();
    let err = cks_iso_sigstore::verify::blob(
        &root,
        &k8s,
        &digest,
        &annotations,
        Blob::Bytes(blob),
        now(),
    )
    .unwrap_err();
    assert_eq!(err.step, Step::Identity);
    // And one flipped byte of the blob breaks it.
    let mut other = blob.to_vec();
    other[0] ^= 1;
    let err = cks_iso_sigstore::verify::blob(
        &root,
        &rule,
        &digest_of(&other),
        &annotations,
        Blob::Bytes(&other),
        now(),
    )
    .unwrap_err();
    assert_eq!(err.step, Step::RekorEntry);
}

#[test]
fn a_backing_registry_docker_reference_is_recorded_not_trusted() {
    // Before kpromo 4.0.2 the payload named the backing registry, not registry.k8s.io.
    let store = Sigstore::generate();
    let backing = "europe-west1-docker.pkg.dev/k8s-artifacts-prod/images/pause";
    let l = store.sign(backing, SIGNED, &SignOptions::default());
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let rule = Policy::builtin()
        .rule_for("registry.k8s.io/pause")
        .unwrap()
        .clone();
    let v = layer(
        &root,
        &rule,
        SIGNED,
        &digest_of(&l.payload),
        &l.annotations,
        &l.payload,
        now(),
    )
    .unwrap();
    assert_eq!(v.docker_reference, backing);
}

#[test]
fn modes_parse() {
    assert_eq!(
        "enforce".parse::<cks_iso_sigstore::Mode>().unwrap(),
        cks_iso_sigstore::Mode::Enforce
    );
    assert_eq!(
        "warn".parse::<cks_iso_sigstore::Mode>().unwrap(),
        cks_iso_sigstore::Mode::Warn
    );
    assert_eq!(cks_iso_sigstore::Mode::Warn.to_string(), "warn");
    assert!("on".parse::<cks_iso_sigstore::Mode>().is_err());
    assert_eq!(
        cks_iso_sigstore::Mode::default(),
        cks_iso_sigstore::Mode::Verify
    );
}
