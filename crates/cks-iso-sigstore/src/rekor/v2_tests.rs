//! The parts below the public API (the timestamp parser, the Rekor v2 entry binding, the signed-note
//! key id) of Rekor v2 entries and RFC 3161 timestamps, on the real material of the Sigstore conformance
//! suite (a staging signature logged on a Rekor v2 log and dated by the staging timestamp
//! authority): it verifies, and each spoiled part fails at its own step with a typed reason; the
//! timestamp parser never panics on a damaged token.

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::tlog::note_key_id;
use super::v2::logs;
use super::{Evidence, TimestampError, checkpoint, verify_digest};
use crate::tsa::TimeStamp;
use crate::verify::Step;
use crate::x509::der;
use crate::{Rule, TrustedRoot};

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

const BUNDLE: &str = include_str!(
    "../../../../tests/sigstore-conformance/bundle-verify/rekor2-happy-path/bundle.sigstore.json"
);
const ROOT: &str = include_str!(
    "../../../../tests/sigstore-conformance/bundle-verify/rekor2-happy-path/trusted_root.json"
);
const COSIGNED: &str = include_str!(
    "../../../../tests/sigstore-conformance/bundle-verify/rekor2-checkpoint-cosigned/bundle.sigstore.json"
);
const ARTIFACT: &[u8] =
    include_bytes!("../../../../tests/sigstore-conformance/bundle-verify/a.txt");
const IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const ISSUER: &str = "https://token.actions.githubusercontent.com";
/// The staging Rekor v2 log and its origin.
const LOG_ID: &str = "8w1amZ2S5mJIQkQmPxdMuOrL/oJkvFg9MnQXmeOCXck=";
const ORIGIN: &str = "log2025-alpha1.rekor.sigstage.dev";

fn b64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

fn root() -> TrustedRoot {
    TrustedRoot::from_json(ROOT).unwrap()
}

/// The root with its timestamp authorities edited.
fn root_with(edit: impl FnOnce(&mut Vec<Value>)) -> TrustedRoot {
    let mut v: Value = serde_json::from_str(ROOT).unwrap();
    edit(v["timestampAuthorities"].as_array_mut().unwrap());
    TrustedRoot::from_json(&v.to_string()).unwrap()
}

fn evidence() -> Evidence {
    Evidence::from_bundle(BUNDLE.as_bytes()).unwrap()
}

fn judged(root: &TrustedRoot, ev: &Evidence) -> Result<i64, (Step, String)> {
    let rule = Rule::exact("**", IDENTITY, ISSUER);
    let digest: [u8; 32] = Sha256::digest(ARTIFACT).into();
    verify_digest(root, &rule, &digest, ev, now())
        .map(|v| v.integrated_time)
        .map_err(|f| (f.step, f.reason))
}

/// 2025-06-12T12:02:20Z, the timestamp's genTime.
fn gen_time() -> i64 {
    der::rfc3339("2025-06-12T12:02:20Z").unwrap()
}

#[test]
fn the_timestamp_is_read_and_verified_against_the_signature_it_dates() {
    let ev = evidence();
    let ts = TimeStamp::parse(&ev.timestamps[0]).unwrap();
    assert_eq!(ts.gen_time, gen_time());
    assert_eq!(ts.verify(&root(), &ev.signature), Ok(gen_time()));
    // Of other bytes, it is a timestamp of something else.
    let err = ts.verify(&root(), b"another signature").unwrap_err();
    assert_eq!(err, TimestampError::Imprint("SHA-256"));
}

#[test]
fn a_timestamp_from_no_authority_of_the_root_is_refused() {
    let ev = evidence();
    let ts = TimeStamp::parse(&ev.timestamps[0]).unwrap();
    let bare = root_with(Vec::clear);
    assert_eq!(
        ts.verify(&bare, &ev.signature),
        Err(TimestampError::UnknownAuthority)
    );
    let (step, why) = judged(&bare, &ev).unwrap_err();
    assert_eq!(step, Step::Timestamp, "{why}");
    assert!(
        why.contains("no timestamp authority of the trusted root"),
        "{why}"
    );
}

#[test]
fn a_timestamp_outside_its_authoritys_validity_in_the_root_is_refused() {
    let ev = evidence();
    let ts = TimeStamp::parse(&ev.timestamps[0]).unwrap();
    let ended = |end: &str| {
        let end = end.to_owned();
        root_with(move |tsas| tsas[0]["validFor"]["end"] = Value::from(end))
    };
    // The end is inclusive.
    assert_eq!(
        ts.verify(&ended("2025-06-12T12:02:20Z"), &ev.signature),
        Ok(gen_time())
    );
    assert_eq!(
        ts.verify(&ended("2025-06-12T12:02:19Z"), &ev.signature),
        Err(TimestampError::AuthorityValidity(gen_time()))
    );
}

#[test]
fn the_entry_must_log_this_digest_signature_and_certificate() {
    let ev = evidence();
    let digest = Sha256::digest(ARTIFACT);
    assert_eq!(logs(&ev.body, &digest, &ev.signature, &ev.leaf), Ok(()));
    let err = logs(&ev.body, &[7; 32], &ev.signature, &ev.leaf).unwrap_err();
    assert!(err.reason().contains("not this payload"), "{err}");
    let err = logs(&ev.body, &digest, b"other", &ev.leaf).unwrap_err();
    assert_eq!(err.reason(), "the entry logs another signature");
    let err = logs(&ev.body, &digest, &ev.signature, b"other").unwrap_err();
    assert_eq!(err.reason(), "the entry logs another certificate");
    // A Rekor v1 body is not a Rekor v2 entry.
    let v1 = base64::engine::general_purpose::STANDARD
        .encode(br#"{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{}}"#);
    assert!(logs(&v1, &digest, &ev.signature, &ev.leaf).is_err());
    // Through the verifier, at its step.
    let mut spoiled = evidence();
    spoiled.signature[10] ^= 1;
    let (step, why) = judged(&root(), &spoiled).unwrap_err();
    assert_eq!(step, Step::RekorEntry, "{why}");
}

#[test]
fn the_rekor_v2_log_id_is_the_note_key_id_of_its_origin_and_key() {
    let root = root();
    let id = b64(LOG_ID);
    let log = root.tlogs.iter().find(|l| l.id == id).unwrap();
    assert_eq!(note_key_id(ORIGIN, log.key.as_ref().unwrap()), id[..4]);
    // A witness's cosignature beside the log's signature is passed over.
    let v: Value = serde_json::from_str(COSIGNED).unwrap();
    let note =
        v["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["checkpoint"]["envelope"]
            .as_str()
            .unwrap();
    assert!(note.contains("witness.example"));
    let cp = checkpoint(&root, &id, note).unwrap();
    assert_eq!((cp.origin.as_str(), cp.size), (ORIGIN, 736));
    // The same note under another origin and name: the key id no longer matches the name.
    let renamed = note.replace(ORIGIN, "log2025-alpha1.rekor.elsewhere.dev");
    let err = checkpoint(&root, &id, &renamed).unwrap_err().to_string();
    assert!(err.contains("not the note key id"), "{err}");
}

/// The token with the byte at `at` flipped, or cut there.
fn damaged(token: &[u8], at: usize, cut: bool) -> Vec<u8> {
    let mut bytes = token.to_vec();
    match cut {
        true => bytes.truncate(at),
        false => bytes[at] ^= 0xff,
    }
    bytes
}

#[test]
fn a_damaged_timestamp_never_panics_and_verifies_only_if_an_untrusted_part_changed() {
    let ev = evidence();
    let token = &ev.timestamps[0];
    let root = root();
    // The certificate the token embeds: not trusted (the root's chain is), so not checked.
    let embedded = &root.tsas[0].chain[0];
    let start = token
        .windows(embedded.len())
        .position(|w| w == embedded.as_slice())
        .expect("the token embeds its signer's certificate");
    let untrusted = start..start + embedded.len();
    for at in 0..token.len() {
        for cut in [false, true] {
            let bytes = damaged(token, at, cut);
            match TimeStamp::parse(&bytes).and_then(|ts| ts.verify(&root, &ev.signature)) {
                Ok(t) => {
                    assert!(!cut, "a token cut at {at} verified");
                    assert!(
                        untrusted.contains(&at),
                        "byte {at} changed, yet it verified"
                    );
                    assert_eq!(t, gen_time());
                }
                Err(e) => assert!(!e.to_string().is_empty(), "byte {at}: no words"),
            }
        }
    }
}

#[test]
fn a_timestamp_after_its_authoritys_certificate_expired_is_refused_and_one_before_counts() {
    let case = |bundle: &str, root: &str| {
        let ev = Evidence::from_bundle(bundle.as_bytes()).unwrap();
        let root = TrustedRoot::from_json(root).unwrap();
        let ts = TimeStamp::parse(&ev.timestamps[0]).unwrap();
        (ts.gen_time, ts.verify(&root, &ev.signature))
    };
    // A local TSA whose chain was valid for five minutes: asked after, and within, them.
    let (t, after) = case(
        include_str!(
            "../../../../tests/sigstore-conformance/bundle-verify/rekor2-timestamp-outside-tsa-cert-validity_fail/bundle.sigstore.json"
        ),
        include_str!(
            "../../../../tests/sigstore-conformance/bundle-verify/rekor2-timestamp-outside-tsa-cert-validity_fail/trusted_root.json"
        ),
    );
    match after {
        Err(TimestampError::CertValidity {
            time, not_after, ..
        }) => {
            assert_eq!(time, t);
            assert!(not_after < t);
        }
        other => panic!("expected a certificate validity refusal, got {other:?}"),
    }
    let (t, within) = case(
        include_str!(
            "../../../../tests/sigstore-conformance/bundle-verify/rekor2-timestamp-with-expired-cert-chain/bundle.sigstore.json"
        ),
        include_str!(
            "../../../../tests/sigstore-conformance/bundle-verify/rekor2-timestamp-with-expired-cert-chain/trusted_root.json"
        ),
    );
    assert_eq!(within, Ok(t));
}
