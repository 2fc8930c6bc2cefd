//! Property tests for the signature parsers that read what a user or a registry hands cks-iso:
//! Sigstore bundles (Rekor v1 and v2 entries, message signatures and DSSE envelopes), trusted roots, checkpoints (signed notes),
//! inclusion proofs and RFC 3161 timestamps. None may
//! panic on any input, whether random bytes or real Sigstore material (from the conformance
//! suite's data) with one byte changed or cut short; a refusal always says why; a bundle that
//! reads writes back to the same evidence. `make fuzz` runs the same parsers coverage-guided.

use cks_iso_sigstore::rekor::{self, Evidence};
use cks_iso_sigstore::{PUBLIC_GOOD_ROOT, Rule, TrustedRoot};
use proptest::prelude::*;
use sha2::{Digest as _, Sha256};

const BUNDLES: [&str; 7] = [
    include_str!("../../sigstore-conformance/bundle-verify/happy-path-v0.1/bundle.sigstore.json"),
    include_str!("../../sigstore-conformance/bundle-verify/happy-path-v0.2/bundle.sigstore.json"),
    include_str!("../../sigstore-conformance/bundle-verify/happy-path-v0.3/bundle.sigstore.json"),
    include_str!("../../sigstore-conformance/bundle-verify/rekor2-happy-path/bundle.sigstore.json"),
    // DSSE envelopes: Rekor v1 dsse 0.0.1, Rekor v2 hashedrekord 0.0.2, Rekor v1 intoto 0.0.2.
    include_str!(
        "../../sigstore-conformance/bundle-verify/happy-path-intoto-in-dsse-v3/bundle.sigstore.json"
    ),
    include_str!(
        "../../sigstore-conformance/bundle-verify/rekor2-dsse-happy-path/bundle.sigstore.json"
    ),
    include_str!(
        "../../sigstore-conformance/bundle-verify/intoto-with-custom-trust-root/bundle.sigstore.json"
    ),
];
/// The (staging) trusted root that judges the Rekor v2 bundle, and the file it signs.
const REKOR_V2_ROOT: &str =
    include_str!("../../sigstore-conformance/bundle-verify/rekor2-happy-path/trusted_root.json");
const ARTIFACT: &[u8] = include_bytes!("../../sigstore-conformance/bundle-verify/a.txt");
const BEACON: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
/// The production Rekor v1 log id (SHA-256 of its key).
const REKOR_V1: &str = "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d";

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// `text` with the byte at `at` (modulo its length) replaced by `byte`, or cut there.
fn spoiled(text: &str, at: usize, byte: u8, cut: bool) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    let at = at % bytes.len();
    match cut {
        true => bytes.truncate(at),
        false => bytes[at] = byte,
    }
    bytes
}

/// A bundle either refuses with a reason or reads, and what it read writes back to itself.
fn judged(bytes: &[u8]) -> Result<(), TestCaseError> {
    match Evidence::from_bundle(bytes) {
        Ok(ev) => {
            let again = Evidence::from_bundle(&ev.bundle());
            prop_assert_eq!(again.as_ref(), Ok(&ev));
        }
        Err(why) => prop_assert!(!why.to_string().is_empty()),
    }
    Ok(())
}

fn public_good() -> TrustedRoot {
    TrustedRoot::from_json(PUBLIC_GOOD_ROOT).unwrap()
}

/// The real checkpoint of a conformance bundle.
fn real_checkpoint() -> String {
    let v: serde_json::Value = serde_json::from_str(BUNDLES[2]).unwrap();
    v["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["checkpoint"]["envelope"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_real_material_reads_and_its_checkpoint_verifies() {
    for bundle in BUNDLES {
        Evidence::from_bundle(bundle.as_bytes()).unwrap();
    }
    let log = hex::decode(REKOR_V1).unwrap();
    let cp = rekor::checkpoint(&public_good(), &log, &real_checkpoint()).unwrap();
    assert!(cp.origin.starts_with("rekor.sigstore.dev - "), "{cp:?}");
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn bundles_of_any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
        judged(&bytes)?;
    }

    #[test]
    fn real_bundles_spoiled_by_one_byte_never_panic(
        which in 0..BUNDLES.len(), at in any::<usize>(), byte in any::<u8>(), cut in any::<bool>()
    ) {
        judged(&spoiled(BUNDLES[which], at, byte, cut))?;
    }

    #[test]
    fn bundles_with_any_value_in_any_field_never_panic(
        which in 0..BUNDLES.len(), field in 0..18usize, value in prop_oneof![
            "\\PC{0,40}".prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            Just(serde_json::Value::Null),
            Just(serde_json::json!([])),
            Just(serde_json::json!({})),
        ]
    ) {
        let mut v: serde_json::Value = serde_json::from_str(BUNDLES[which]).unwrap();
        let e = "/verificationMaterial/tlogEntries/0";
        let pointer = [
            "/mediaType".to_owned(),
            format!("{e}/logIndex"),
            format!("{e}/logId/keyId"),
            format!("{e}/integratedTime"),
            format!("{e}/canonicalizedBody"),
            format!("{e}/inclusionPromise/signedEntryTimestamp"),
            format!("{e}/inclusionProof/logIndex"),
            format!("{e}/inclusionProof/treeSize"),
            format!("{e}/inclusionProof/rootHash"),
            format!("{e}/inclusionProof/hashes"),
            format!("{e}/inclusionProof/checkpoint/envelope"),
            "/messageSignature/messageDigest/digest".to_owned(),
            format!("{e}/kindVersion/version"),
            "/verificationMaterial/timestampVerificationData/rfc3161Timestamps/0/signedTimestamp"
                .to_owned(),
            "/dsseEnvelope/payload".to_owned(),
            "/dsseEnvelope/payloadType".to_owned(),
            "/dsseEnvelope/signatures/0/sig".to_owned(),
            "/dsseEnvelope/signatures/0/keyid".to_owned(),
        ][field].clone();
        if let Some(slot) = v.pointer_mut(&pointer) {
            *slot = value;
        }
        judged(v.to_string().as_bytes())?;
    }

    #[test]
    fn a_real_rfc3161_timestamp_spoiled_by_one_byte_never_panics_the_verifier(
        at in any::<usize>(), byte in any::<u8>(), cut in any::<bool>()
    ) {
        let mut ev = Evidence::from_bundle(BUNDLES[3].as_bytes()).unwrap();
        let token = &mut ev.timestamps[0];
        let at = at % token.len();
        match cut {
            true => token.truncate(at),
            false => token[at] = byte,
        }
        let root = TrustedRoot::from_json(REKOR_V2_ROOT).unwrap();
        let rule = Rule::exact("**", BEACON, "https://token.actions.githubusercontent.com");
        let digest: [u8; 32] = Sha256::digest(ARTIFACT).into();
        let now = i64::MAX / 2;
        if let Err(f) = rekor::verify_digest(&root, &rule, &digest, &ev, now) {
            prop_assert!(!f.reason.is_empty());
        }
    }

    #[test]
    fn a_real_dsse_statement_spoiled_by_one_byte_never_panics_the_verifier(
        at in any::<usize>(), byte in any::<u8>(), cut in any::<bool>()
    ) {
        let mut ev = Evidence::from_bundle(BUNDLES[4].as_bytes()).unwrap();
        let payload = &mut ev.envelope.as_mut().expect("a DSSE bundle").payload;
        let at = at % payload.len();
        match cut {
            true => payload.truncate(at),
            false => payload[at] = byte,
        }
        let rule = Rule::exact("**", BEACON, "https://token.actions.githubusercontent.com");
        let digest: [u8; 32] = Sha256::digest(ARTIFACT).into();
        let verdict = rekor::verify_digest(&public_good(), &rule, &digest, &ev, i64::MAX / 2);
        // Only the very statement logged verifies.
        match verdict {
            Ok(_) => prop_assert_eq!(ev.envelope, Evidence::from_bundle(BUNDLES[4].as_bytes()).unwrap().envelope),
            Err(f) => prop_assert!(!f.reason.is_empty()),
        }
    }

    #[test]
    fn trusted_roots_of_any_text_never_panic(text in "\\PC{0,400}") {
        if let Err(why) = TrustedRoot::from_json(&text) {
            prop_assert!(!why.to_string().is_empty());
        }
    }

    #[test]
    fn the_real_trusted_root_spoiled_by_one_byte_never_panics(
        at in any::<usize>(), byte in any::<u8>(), cut in any::<bool>()
    ) {
        let bytes = spoiled(PUBLIC_GOOD_ROOT, at, byte, cut);
        if let Ok(text) = std::str::from_utf8(&bytes)
            && let Err(why) = TrustedRoot::from_json(text)
        {
            prop_assert!(!why.to_string().is_empty());
        }
    }

    #[test]
    fn checkpoints_of_any_text_never_panic(text in "\\PC{0,300}", lines in "([a-z0-9 -]{0,20}\n){0,4}\n(\u{2014} [a-z.]{0,12} [A-Za-z0-9+/=]{0,120}\n){0,3}") {
        let root = public_good();
        let log = hex::decode(REKOR_V1).unwrap();
        for envelope in [&text, &lines] {
            if let Err(why) = rekor::checkpoint(&root, &log, envelope) {
                prop_assert!(!why.to_string().is_empty());
            }
        }
        // A log id of any length.
        let _ = rekor::checkpoint(&root, &log[..(text.len() % 33)], &lines);
    }

    #[test]
    fn the_real_checkpoint_spoiled_by_one_byte_never_panics(
        at in any::<usize>(), byte in any::<u8>(), cut in any::<bool>()
    ) {
        let bytes = spoiled(&real_checkpoint(), at, byte, cut);
        let root = public_good();
        let log = hex::decode(REKOR_V1).unwrap();
        if let Ok(text) = std::str::from_utf8(&bytes)
            && let Err(why) = rekor::checkpoint(&root, &log, text)
        {
            prop_assert!(!why.to_string().is_empty());
        }
    }

    #[test]
    fn inclusion_proofs_of_any_shape_never_panic(
        index in any::<i64>(), size in any::<i64>(),
        path in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..70),
        root in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        if let Err(why) = rekor::inclusion(index, size, [7; 32], &path, &root) {
            prop_assert!(!why.reason().is_empty());
        }
    }
}
