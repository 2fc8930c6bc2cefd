//! Rekor v2 entries and RFC 3161 timestamps on the real material of the Sigstore conformance
//! suite (a staging signature logged on a Rekor v2 log and dated by the staging timestamp
//! authority): it verifies, and each spoiled part fails at its own step with a typed reason; the
//! timestamp parser never panics on a damaged token (that and the parts below the public API:
//! `rekor/v2_tests.rs` in src).

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::now;
use cks_iso_sigstore::rekor::{EntryVersion, Evidence, verify_digest};
use cks_iso_sigstore::verify::Step;
use cks_iso_sigstore::{Rule, TrustedRoot};

const BUNDLE: &str = include_str!(
    "../../../../tests/sigstore-conformance/bundle-verify/rekor2-happy-path/bundle.sigstore.json"
);
const ROOT: &str = include_str!(
    "../../../../tests/sigstore-conformance/bundle-verify/rekor2-happy-path/trusted_root.json"
);
const ARTIFACT: &[u8] =
    include_bytes!("../../../../tests/sigstore-conformance/bundle-verify/a.txt");
const IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const ISSUER: &str = "https://token.actions.githubusercontent.com";
/// The staging Rekor v2 log.
const LOG_ID: &str = "8w1amZ2S5mJIQkQmPxdMuOrL/oJkvFg9MnQXmeOCXck=";

fn root() -> TrustedRoot {
    TrustedRoot::from_json(ROOT).unwrap()
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
    1749729740
}

#[test]
fn the_real_rekor_v2_bundle_verifies_at_its_timestamps_time() {
    let ev = evidence();
    assert_eq!(ev.version, EntryVersion::V002);
    assert_eq!(
        (ev.integrated_time, ev.set.len(), ev.timestamps.len()),
        (0, 0, 1)
    );
    assert_eq!(judged(&root(), &ev), Ok(gen_time()));
    // It writes back to the same evidence, still a Rekor v2 entry with its timestamp.
    assert_eq!(Evidence::from_bundle(&ev.bundle()), Ok(ev));
}

#[test]
fn a_rekor_v2_bundle_without_a_timestamp_has_no_signing_time() {
    let mut ev = evidence();
    ev.timestamps.clear();
    let (step, why) = judged(&root(), &ev).unwrap_err();
    assert_eq!(step, Step::Timestamp, "{why}");
    assert!(why.contains("no RFC 3161 timestamp"), "{why}");
    // A second, spoiled timestamp beside the good one is passed over.
    let mut ev = evidence();
    ev.timestamps.push(vec![0x30, 0x00]);
    assert_eq!(judged(&root(), &ev), Ok(gen_time()));
}

#[test]
fn the_same_timestamp_twice_is_refused_as_sigstore_go_refuses_it() {
    // Two copies of one token would count twice toward a threshold of authorities.
    let mut ev = evidence();
    ev.timestamps.push(ev.timestamps[0].clone());
    let (step, why) = judged(&root(), &ev).unwrap_err();
    assert_eq!(step, Step::Timestamp, "{why}");
    assert!(why.contains("timestamps #1 and #2 are the same"), "{why}");
}

#[test]
fn a_rekor_v2_log_not_yet_valid_at_the_signing_time_proves_nothing() {
    let mut v: Value = serde_json::from_str(ROOT).unwrap();
    for log in v["tlogs"].as_array_mut().unwrap() {
        if log["logId"]["keyId"] == LOG_ID {
            log["publicKey"]["validFor"]["start"] = Value::from("2025-07-01T00:00:00Z");
        }
    }
    let root = TrustedRoot::from_json(&v.to_string()).unwrap();
    let (step, why) = judged(&root, &evidence()).unwrap_err();
    assert_eq!(step, Step::Checkpoint, "{why}");
    assert!(why.contains("not valid at the signing time"), "{why}");
}
