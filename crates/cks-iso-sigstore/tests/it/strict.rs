//! The refusals that make the verifier as strict as Sigstore's own clients (sigstore-python,
//! sigstore-go, cosign) where a lax reader would accept: malformed or unusual certificates (DER
//! that is not minimal, trailing bytes, duplicate extensions, a version other than v3, an unknown
//! critical extension, a leaf whose key usage forbids signing), a trusted root whose validity has
//! no start, a checkpoint signed by another log or with a foreign origin, bundle media types of
//! versions nobody defined, and proof hashes of the wrong length. Each test spoils exactly one
//! thing of material that otherwise verifies.

use base64::Engine as _;
use cks_iso_testworld::sigstore::{K8S_BINARY_IDENTITY, SignOptions, Sigstore};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::der::{self, Reader};
use cks_iso_sigstore::RootError;
use cks_iso_sigstore::rekor::{
    self, BundleError, CheckpointError, Evidence, Proof, leaf_hash, verify_digest,
};
use cks_iso_sigstore::verify::Step;
use cks_iso_sigstore::{PUBLIC_GOOD_ROOT, Policy, TrustedRoot};

const BUNDLE: &str = include_str!("../testdata/cosign-v3-blob.sigstore.json");
const URL: &str = "https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm";

fn b64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

fn b64e(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A real public-good Fulcio leaf.
fn leaf() -> Vec<u8> {
    let v: Value = serde_json::from_str(BUNDLE).unwrap();
    b64(v["verificationMaterial"]["certificate"]["rawBytes"]
        .as_str()
        .unwrap())
}

fn elements(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut r = Reader::new(bytes);
    let mut out = Vec::new();
    while !r.is_empty() {
        out.push(r.any().unwrap().raw.to_vec());
    }
    out
}

/// The certificate `cert` with its TBS fields, and the elements after the TBS, edited.
fn edited(
    cert: &[u8],
    tbs_edit: impl FnOnce(&mut Vec<Vec<u8>>),
    outer_edit: impl FnOnce(&mut Vec<Vec<u8>>),
) -> Vec<u8> {
    let outer = der::one(cert, der::SEQUENCE).unwrap();
    let mut parts = elements(outer.value);
    let tbs = der::one(&parts[0], der::SEQUENCE).unwrap();
    let mut fields = elements(tbs.value);
    tbs_edit(&mut fields);
    parts[0] = der::encode(der::SEQUENCE, &fields.concat());
    outer_edit(&mut parts);
    der::encode(der::SEQUENCE, &parts.concat())
}

/// The certificate with its extension list edited.
fn with_extensions(cert: &[u8], edit: impl FnOnce(&mut Vec<Vec<u8>>)) -> Vec<u8> {
    edited(
        cert,
        |fields| {
            let last = fields.last_mut().unwrap();
            let wrapper = der::one(last, 0xa3).unwrap();
            let list = der::one(wrapper.value, der::SEQUENCE).unwrap();
            let mut exts = elements(list.value);
            edit(&mut exts);
            *last = der::encode(0xa3, &der::encode(der::SEQUENCE, &exts.concat()));
        },
        |_| {},
    )
}

/// The public-good trusted root with its first CA certificate replaced by `cert`: how a
/// certificate reaches the reader through the public API (a trusted root is parsed whole).
fn root_with_ca(cert: &[u8]) -> Result<TrustedRoot, RootError> {
    let mut root: Value = serde_json::from_str(PUBLIC_GOOD_ROOT).unwrap();
    root["certificateAuthorities"][0]["certChain"]["certificates"][0]["rawBytes"] =
        Value::from(b64e(cert));
    TrustedRoot::from_json(&root.to_string())
}

fn refused(cert: &[u8], why: &str) {
    match root_with_ca(cert) {
        Ok(_) => panic!("a certificate with {why} was accepted"),
        Err(RootError::Certificate { reason, .. }) => {
            assert!(!reason.is_empty(), "{why}: an error without words")
        }
        Err(other) => panic!("{why}: refused for another reason: {other}"),
    }
}

#[test]
fn the_real_leaf_rebuilt_unchanged_parses() {
    let leaf = leaf();
    assert_eq!(with_extensions(&leaf, |_| {}), leaf);
    root_with_ca(&leaf).unwrap();
}

#[test]
fn a_certificate_with_a_duplicate_extension_is_refused() {
    let cert = with_extensions(&leaf(), |exts| {
        let first = exts[0].clone();
        exts.push(first);
    });
    refused(&cert, "a duplicate extension");
}

#[test]
fn a_certificate_other_than_v3_is_refused() {
    let v2 = edited(
        &leaf(),
        |f| f[0] = der::encode(0xa0, &der::encode(der::INTEGER, &[1])),
        |_| {},
    );
    refused(&v2, "version v2");
    let v1 = edited(&leaf(), |f| drop(f.remove(0)), |_| {});
    refused(&v1, "no version (v1)");
}

#[test]
fn bytes_after_or_inside_a_certificate_are_refused() {
    let mut after = leaf();
    after.push(0);
    refused(&after, "a byte after it");
    let inside = edited(&leaf(), |_| {}, |parts| parts.push(vec![0x05, 0x00]));
    refused(&inside, "an element after its signature");
}

#[test]
fn non_minimal_der_lengths_are_refused() {
    // The reader alone: `x509/der.rs`. In a certificate: its serial number with a long-form
    // length.
    let cert = edited(
        &leaf(),
        |f| {
            let serial = der::one(&f[1], der::INTEGER).unwrap().value.to_vec();
            let mut long = vec![der::INTEGER, 0x81, serial.len() as u8];
            long.extend(serial);
            f[1] = long;
        },
        |_| {},
    );
    refused(&cert, "a non-minimal length");
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A file signed by `store` as the only entry of its log: evidence that verifies, with the
/// checkpoint `checkpoint` makes of the tree (size 1, the entry's leaf hash as root).
pub fn one_entry(
    store: &Sigstore,
    file: &[u8],
    opts: &SignOptions,
    checkpoint: impl FnOnce(&[u8]) -> String,
) -> Evidence {
    let blob = store.sign_blob(file, 0, None, opts);
    let (signature, leaf) = rekor::read_pair(&blob.sig, &blob.cert).unwrap();
    let root_hash = leaf_hash(&blob.body).to_vec();
    Evidence {
        version: rekor::EntryVersion::V001,
        timestamps: Vec::new(),
        envelope: None,
        digest: Sha256::digest(file).to_vec(),
        signature,
        leaf,
        body: b64e(&blob.body),
        integrated_time: blob.integrated_time,
        log_id: hex::decode(&blob.log_id).unwrap(),
        log_index: 0,
        set: blob.set,
        proof: Proof {
            log_index: 0,
            checkpoint: checkpoint(&root_hash),
            root_hash,
            tree_size: 1,
            hashes: Vec::new(),
        },
    }
}

pub fn signer() -> SignOptions {
    SignOptions {
        identity: K8S_BINARY_IDENTITY.into(),
        ..SignOptions::default()
    }
}

fn judged(root: &TrustedRoot, file: &[u8], ev: &Evidence) -> Result<(), (Step, String)> {
    let policy = Policy::builtin();
    let rule = policy.rule_for_url(URL).unwrap();
    let digest: [u8; 32] = Sha256::digest(file).into();
    verify_digest(root, rule, &digest, ev, now())
        .map(|_| ())
        .map_err(|f| (f.step, f.reason))
}

const FILE: &[u8] = b"kubeadm";

#[test]
fn a_one_entry_log_verifies() {
    let store = Sigstore::generate();
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let ev = one_entry(&store, FILE, &signer(), |r| store.checkpoint(1, r));
    assert_eq!(judged(&root, FILE, &ev), Ok(()));
}

#[test]
fn a_leaf_with_an_unknown_critical_extension_is_refused() {
    let store = Sigstore::generate();
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let opts = SignOptions {
        unknown_critical_extension: true,
        ..signer()
    };
    let ev = one_entry(&store, FILE, &opts, |r| store.checkpoint(1, r));
    let (step, why) = judged(&root, FILE, &ev).unwrap_err();
    assert_eq!(step, Step::CertificateChain, "{why}");
    assert!(why.contains("critical"), "{why}");
}

#[test]
fn a_leaf_whose_key_usage_lacks_digital_signature_is_refused() {
    let store = Sigstore::generate();
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let opts = SignOptions {
        no_digital_signature: true,
        ..signer()
    };
    let ev = one_entry(&store, FILE, &opts, |r| store.checkpoint(1, r));
    let (step, why) = judged(&root, FILE, &ev).unwrap_err();
    assert_eq!(step, Step::CertificateChain, "{why}");
    assert!(why.contains("digitalSignature"), "{why}");
}

/// `a`'s trusted root with `b`'s transparency logs added.
fn merged_root(a: &Sigstore, b: &Sigstore) -> TrustedRoot {
    let mut root: Value = serde_json::from_str(a.trusted_root()).unwrap();
    let theirs: Value = serde_json::from_str(b.trusted_root()).unwrap();
    let tlogs = root["tlogs"].as_array_mut().unwrap();
    tlogs.extend(theirs["tlogs"].as_array().unwrap().iter().cloned());
    TrustedRoot::from_json(&root.to_string()).unwrap()
}

#[test]
fn a_checkpoint_signed_by_another_log_of_the_root_is_refused() {
    let (ours, other) = (Sigstore::generate(), Sigstore::generate());
    let root = merged_root(&ours, &other);
    let good = one_entry(&ours, FILE, &signer(), |r| ours.checkpoint(1, r));
    assert_eq!(judged(&root, FILE, &good), Ok(()));
    // The same tree, its checkpoint signed by the other log (trusted, but not the entry's).
    let foreign = one_entry(&ours, FILE, &signer(), |r| other.checkpoint(1, r));
    let (step, why) = judged(&root, FILE, &foreign).unwrap_err();
    assert_eq!(step, Step::Checkpoint, "{why}");
}

#[test]
fn a_checkpoint_with_an_empty_or_foreign_origin_is_refused() {
    let store = Sigstore::generate();
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let name = "rekor.world.invalid";
    for origin in ["", "rekor.elsewhere.invalid - 1234567890"] {
        let ev = one_entry(&store, FILE, &signer(), |r| {
            store.checkpoint_as(origin, name, 1, r)
        });
        let (step, why) = judged(&root, FILE, &ev).unwrap_err();
        assert_eq!(step, Step::Checkpoint, "origin {origin:?}: {why}");
        assert!(why.contains("origin"), "origin {origin:?}: {why}");
        let typed = rekor::checkpoint(&root, &ev.log_id, &ev.proof.checkpoint).unwrap_err();
        let expected = match origin.is_empty() {
            true => CheckpointError::EmptyOrigin,
            false => CheckpointError::ForeignOrigin {
                name: name.into(),
                origin: origin.into(),
            },
        };
        assert_eq!(typed, expected);
    }
}

#[test]
fn proof_hashes_of_the_wrong_length_are_refused() {
    let store = Sigstore::generate();
    let ev = one_entry(&store, FILE, &signer(), |r| store.checkpoint(1, r));
    let bundle: Value = serde_json::from_slice(&ev.bundle()).unwrap();
    for (field, value) in [
        ("hashes", Value::from(vec![b64e(&[7u8; 31])])),
        ("rootHash", Value::from(b64e(&[7u8; 33]))),
    ] {
        let mut spoiled = bundle.clone();
        spoiled["verificationMaterial"]["tlogEntries"][0]["inclusionProof"][field] = value;
        let err = Evidence::from_bundle(spoiled.to_string().as_bytes()).unwrap_err();
        assert!(err.to_string().contains("32"), "{field}: {err}");
        let named = if field == "hashes" {
            "a proof hash"
        } else {
            field
        };
        assert_eq!(err.field(), Some(named), "{err}");
    }
}

#[test]
fn only_the_bundle_media_types_of_known_versions_are_accepted() {
    let store = Sigstore::generate();
    let ev = one_entry(&store, FILE, &signer(), |r| store.checkpoint(1, r));
    let bundle: Value = serde_json::from_slice(&ev.bundle()).unwrap();
    let with = |media: &str| {
        let mut b = bundle.clone();
        b["mediaType"] = Value::from(media);
        Evidence::from_bundle(b.to_string().as_bytes())
    };
    for known in [
        "application/vnd.dev.sigstore.bundle+json;version=0.1",
        "application/vnd.dev.sigstore.bundle+json;version=0.2",
        "application/vnd.dev.sigstore.bundle+json;version=0.3",
        "application/vnd.dev.sigstore.bundle.v0.3+json",
    ] {
        assert_eq!(with(known).as_ref(), Ok(&ev), "{known}");
    }
    for unknown in [
        "application/vnd.dev.sigstore.bundle+json;version=0.4",
        "application/vnd.dev.sigstore.bundle.v0.4+json",
        "application/vnd.dev.sigstore.bundle+json;version=99.9",
        "application/vnd.dev.sigstore.bundle",
        "application/vnd.dev.sigstore.bundlefoo",
    ] {
        let err = with(unknown).unwrap_err();
        assert_eq!(err, BundleError::MediaType(unknown.into()), "{unknown}");
        assert!(err.to_string().contains("media type"), "{unknown}: {err}");
    }
}

#[test]
fn a_trusted_root_validity_without_start_is_refused() {
    let mut root: Value = serde_json::from_str(PUBLIC_GOOD_ROOT).unwrap();
    TrustedRoot::from_json(&root.to_string()).unwrap();
    let valid_for = &mut root["tlogs"][0]["publicKey"]["validFor"];
    valid_for.as_object_mut().unwrap().remove("start");
    let err = TrustedRoot::from_json(&root.to_string()).unwrap_err();
    assert!(err.to_string().contains("start"), "{err}");
    let tlog = "the transparency log wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=";
    assert_eq!(err, RootError::NoStart { entry: tlog.into() });
    // Also for a certificate authority.
    let mut root: Value = serde_json::from_str(PUBLIC_GOOD_ROOT).unwrap();
    let valid_for = &mut root["certificateAuthorities"][0]["validFor"];
    valid_for.as_object_mut().unwrap().remove("start");
    let err = TrustedRoot::from_json(&root.to_string()).unwrap_err();
    assert!(err.to_string().contains("start"), "{err}");
}

#[test]
fn a_trusted_root_key_whose_key_details_name_another_algorithm_is_refused() {
    let mut root: Value = serde_json::from_str(PUBLIC_GOOD_ROOT).unwrap();
    // The public-good Rekor v1 key is ECDSA P-256, and says so.
    let details = &mut root["tlogs"][0]["publicKey"]["keyDetails"];
    assert_eq!(details, "PKIX_ECDSA_P256_SHA_256");
    *details = "PKIX_ED25519".into();
    let err = TrustedRoot::from_json(&root.to_string()).unwrap_err();
    let tlog = "the transparency log wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=";
    assert_eq!(
        err,
        RootError::KeyDetails {
            entry: tlog.into(),
            details: "PKIX_ED25519".into(),
            actual: "an ECDSA P-256 key",
        }
    );
    assert!(
        err.to_string().contains("keyDetails says PKIX_ED25519"),
        "{err}"
    );
    // A value this reader has no kind for is left for other clients, as an unreadable key is.
    root["tlogs"][0]["publicKey"]["keyDetails"] = "PKIX_SOMETHING_NEW".into();
    TrustedRoot::from_json(&root.to_string()).unwrap();
}
