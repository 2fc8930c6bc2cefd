//! RFC 3161 timestamps beside a Rekor v1 entry, for message signatures (`hashedrekord` 0.0.1)
//! and DSSE envelopes (`dsse` 0.0.1) alike. The SET dates the entry; a timestamp the bundle
//! carries as well is verified, and the certificate checked at its time too: sigstore-go
//! (`pkg/verify/signed_entity.go`, `VerifyObserverTimestamps`, with `WithSignedTimestamps(1)`
//! whenever a bundle carries timestamps, as its conformance client and cosign configure it)
//! needs one that verifies and checks the leaf at every verified time, and sigstore-python
//! (`Verifier._establish_time`) does the same for `verify_artifact` and `verify_dsse`.

use base64::Engine as _;
use cks_iso_testworld::referrers::DsseOptions;
use cks_iso_testworld::rekor_v2::Authority;
use cks_iso_testworld::sigstore::{GOOGLE_ISSUER, K8S_IDENTITY, Sigstore};
use sha2::{Digest as _, Sha256};

use crate::now;
use crate::strict::{one_entry, signer};
use cks_iso_sigstore::Rule;
use cks_iso_sigstore::TrustedRoot;
use cks_iso_sigstore::rekor::{Evidence, verify_digest};
use cks_iso_sigstore::verify::{Failure, Step, Verified};

#[derive(Debug, Clone, Copy)]
enum Kind {
    Message,
    Envelope,
}

/// The world's Rekor v1 evidence of one signature of `kind`, the digest it is judged against
/// and the rule its signer passes.
fn signed(store: &Sigstore, kind: Kind) -> (Evidence, [u8; 32], Rule) {
    match kind {
        Kind::Message => {
            let file = b"kubeadm";
            let ev = one_entry(store, file, &signer(), |r| store.checkpoint(1, r));
            let rule = Rule::exact("**", &signer().identity, GOOGLE_ISSUER);
            (ev, Sha256::digest(file).into(), rule)
        }
        Kind::Envelope => {
            let digest = [5u8; 32];
            let bundle = store.sign_dsse(
                &format!("sha256:{}", hex::encode(digest)),
                &DsseOptions::default(),
            );
            let ev = Evidence::from_bundle(&bundle).unwrap();
            (ev, digest, Rule::exact("**", K8S_IDENTITY, GOOGLE_ISSUER))
        }
    }
}

/// A timestamp by `authority` of `signature` at `t`, DER.
fn stamp(store: &Sigstore, authority: Authority, signature: &[u8], t: i64) -> Vec<u8> {
    let data = store.rekor_v2().timestamp(authority, signature, t, 0);
    let text = data["rfc3161Timestamps"][0]["signedTimestamp"]
        .as_str()
        .unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

fn judged(kind: Kind, timestamp: Option<(Authority, i64)>) -> Result<Verified, Failure> {
    let store = Sigstore::generate();
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let (mut ev, digest, rule) = signed(&store, kind);
    if let Some((authority, after)) = timestamp {
        let t = ev.integrated_time + after;
        ev.timestamps = vec![stamp(&store, authority, &ev.signature, t)];
    }
    verify_digest(&root, &rule, &digest, &ev, now())
}

#[test]
fn a_timestamp_beside_a_rekor_v1_entry_is_checked_for_message_signatures_and_envelopes_alike() {
    for kind in [Kind::Message, Kind::Envelope] {
        // The SET alone, and with a good timestamp: dated by the log either way.
        let alone = judged(kind, None).unwrap();
        let both = judged(kind, Some((Authority::World, 1))).unwrap();
        assert!(!alone.timestamped && !both.timestamped, "{kind:?}");
        // A timestamp an authority of the root signed, at a time outside the leaf's ten
        // minutes: the certificate is checked at that time too.
        let late = judged(kind, Some((Authority::World, 3600))).unwrap_err();
        assert_eq!(late.step, Step::Time, "{kind:?}: {late:?}");
        assert!(late.reason.contains("timestamped at"), "{kind:?}: {late:?}");
        // A timestamp of an authority the root does not name: the bundle claims a time no one
        // the root trusts vouches for.
        let rogue = judged(kind, Some((Authority::Rogue, 1))).unwrap_err();
        assert_eq!(rogue.step, Step::Timestamp, "{kind:?}: {rogue:?}");
        assert!(
            rogue
                .reason
                .contains("no timestamp authority of the trusted root"),
            "{kind:?}: {rogue:?}"
        );
    }
}
