//! An RFC 3161 time-stamp response in place of the real one of a Rekor v2 bundle (from the
//! Sigstore conformance suite's data), judged by the whole verifier against that bundle's
//! staging trusted root: it must refuse with a reason, or verify, never panic.
#![no_main]
use std::sync::LazyLock;

use cks_iso_sigstore::rekor::{Evidence, verify_digest};
use cks_iso_sigstore::{Rule, TrustedRoot};
use libfuzzer_sys::fuzz_target;

static ROOT: LazyLock<TrustedRoot> = LazyLock::new(|| {
    TrustedRoot::from_json(include_str!(
        "../../tests/sigstore-conformance/bundle-verify/rekor2-happy-path/trusted_root.json"
    ))
    .expect("its root")
});
static EVIDENCE: LazyLock<Evidence> = LazyLock::new(|| {
    Evidence::from_bundle(include_bytes!(
        "../../tests/sigstore-conformance/bundle-verify/rekor2-happy-path/bundle.sigstore.json"
    ))
    .expect("its bundle")
});

fuzz_target!(|bytes: &[u8]| {
    let mut evidence = EVIDENCE.clone();
    evidence.timestamps = vec![bytes.to_vec()];
    let rule = Rule::exact(
        "**",
        "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main",
        "https://token.actions.githubusercontent.com",
    );
    if let Err(f) = verify_digest(
        &ROOT,
        &rule,
        &evidence_digest(&evidence),
        &evidence,
        i64::MAX / 2,
    ) {
        assert!(!f.reason.is_empty());
    }
});

/// The digest the evidence is for (the suite's `a.txt`), so that the timestamp is what decides.
fn evidence_digest(evidence: &Evidence) -> [u8; 32] {
    evidence.digest.as_slice().try_into().expect("a SHA-256")
}
