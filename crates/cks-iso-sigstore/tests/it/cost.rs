//! What a hostile signature costs: every reader and check, handed the largest input its caller
//! lets through (and more), must refuse or judge it in time linear in its size. Each case takes
//! real public-good material (the Sigstore conformance suite's bundles, which verify) and bloats
//! one thing a signer or a man in the middle controls: a certificate's extensions, a bundle's
//! timestamps, its checkpoint's signature lines, its proof, its chain, a statement's subjects.
//! Before these caps and linear checks, a 1 MB certificate in a `.sig` layer cost 57 s and a
//! 4 MB referrer bundle more than 150 s here (debug build; the duplicate-extension and
//! duplicate-timestamp scans were quadratic, and every checkpoint line was verified).
//!
//! The bound is wall time: the time to parse the input as JSON (what any reader must spend on
//! it, and which grows as the test machine is loaded or the build unoptimised), times ten, plus
//! two seconds — far below the seconds-to-minutes of a quadratic reader on these sizes. Each
//! case also says what refused it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use cks_iso_oci::image::{Descriptor, Digest};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::der;
use crate::now;
use cks_iso_sigstore::RootError;
use cks_iso_sigstore::TrustedRoot;
use cks_iso_sigstore::dsse::COSIGN_SIGN_PREDICATE;
use cks_iso_sigstore::referrer::{BUNDLE_ARTIFACT_TYPE, verify_layer};
use cks_iso_sigstore::rekor::{BundleError, Evidence, MAX_BUNDLE_SIZE, verify_digest};
use cks_iso_sigstore::verify::{Failure, layer};
use cks_iso_sigstore::{ANN_BUNDLE, ANN_CERTIFICATE, ANN_SIGNATURE, PUBLIC_GOOD_ROOT, Rule};

/// The least any one case is allowed.
const FLOOR: Duration = Duration::from_secs(2);
/// The sizes the probe that found the quadratic readers used.
const MB: usize = 1 << 20;
/// The most a bundle `verify-bundle` reads may weigh (`MATERIAL_LIMIT`), the largest a bundle
/// reaches the reader at: build and `verify` read at most [`MAX_BUNDLE_SIZE`].
const READ: usize = MB;

const HAPPY: &str = include_str!(
    "../../../../tests/sigstore-conformance/bundle-verify/happy-path-v0.3/bundle.sigstore.json"
);
const DSSE: &str = include_str!(
    "../../../../tests/sigstore-conformance/bundle-verify/happy-path-intoto-in-dsse-v3/bundle.sigstore.json"
);
const ARTIFACT: &[u8] =
    include_bytes!("../../../../tests/sigstore-conformance/bundle-verify/a.txt");
const IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

fn rule() -> Rule {
    Rule::exact(
        "**",
        IDENTITY,
        "https://token.actions.githubusercontent.com",
    )
}

fn root() -> TrustedRoot {
    TrustedRoot::from_json(PUBLIC_GOOD_ROOT).unwrap()
}

fn artifact() -> [u8; 32] {
    Sha256::digest(ARTIFACT).into()
}

/// Runs `work` on `input`, prints how long it took, and fails over [`FLOOR`] plus ten times
/// the time serde_json takes to parse `input` (nothing when it is not JSON).
fn timed<T>(what: &str, input: &[u8], work: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let _ = std::hint::black_box(serde_json::from_slice::<Value>(input));
    let bound = FLOOR + start.elapsed() * 10;
    let start = Instant::now();
    let out = work();
    let took = start.elapsed();
    eprintln!("{what} ({} bytes): {took:?} (bound {bound:?})", input.len());
    assert!(took < bound, "{what} took {took:?}, more than {bound:?}");
    out
}

/// The extension `1.3.6.1.4.1.99999.<i>`, non-critical, empty.
fn extension(i: usize) -> Vec<u8> {
    let mut oid = vec![0x2b, 6, 1, 4, 1, 0x86, 0x8d, 0x1f];
    let mut arc = Vec::new();
    let mut n = i;
    loop {
        arc.push((n & 0x7f) as u8);
        n >>= 7;
        if n == 0 {
            break;
        }
    }
    for (k, b) in arc.iter().enumerate().rev() {
        oid.push(if k == 0 { *b } else { b | 0x80 });
    }
    let body = [
        der::encode(der::OID, &oid),
        der::encode(der::OCTET_STRING, &[]),
    ]
    .concat();
    der::encode(der::SEQUENCE, &body)
}

/// `cert` with distinct extensions added until it weighs at least `size` bytes.
fn bloated(cert: &[u8], size: usize) -> Vec<u8> {
    let outer = der::one(cert, der::SEQUENCE).unwrap();
    let mut r = der::Reader::new(outer.value);
    let tbs = r.any().unwrap();
    let rest = &outer.value[tbs.raw.len()..];
    let mut t = der::Reader::new(tbs.value);
    let mut fields = Vec::new();
    while !t.is_empty() {
        fields.push(t.any().unwrap());
    }
    let last = fields.pop().unwrap();
    assert_eq!(last.tag, 0xa3, "the extensions are the TBS's last field");
    let list = der::one(last.value, der::SEQUENCE).unwrap();
    let mut exts = list.value.to_vec();
    let mut i = 0;
    while exts.len() < size {
        exts.extend(extension(i));
        i += 1;
    }
    let mut tbs_body: Vec<u8> = fields.iter().flat_map(|f| f.raw.to_vec()).collect();
    tbs_body.extend(der::encode(0xa3, &der::encode(der::SEQUENCE, &exts)));
    let body = [der::encode(der::SEQUENCE, &tbs_body), rest.to_vec()].concat();
    der::encode(der::SEQUENCE, &body)
}

fn happy() -> Value {
    serde_json::from_str(HAPPY).unwrap()
}

fn leaf_of(bundle: &Value) -> Vec<u8> {
    unb64(
        bundle["verificationMaterial"]["certificate"]["rawBytes"]
            .as_str()
            .unwrap(),
    )
}

/// Why a bundle was not accepted: refused while it was read, or a step of its verification.
#[derive(Debug)]
enum Refused {
    Read(BundleError),
    Step(Failure),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Read(e) => write!(f, "refused: {e}"),
            Self::Step(Failure { step, reason }) => write!(f, "{}: {reason}", step.name()),
        }
    }
}

fn judged(bundle: &Value) -> Result<(), Refused> {
    let bytes = serde_json::to_vec(bundle).unwrap();
    let ev = Evidence::from_bundle(&bytes).map_err(Refused::Read)?;
    verify_digest(&root(), &rule(), &artifact(), &ev, now())
        .map(|_| ())
        .map_err(Refused::Step)
}

fn pem(der: &[u8]) -> String {
    let text = b64(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in text.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap());
        out.push('\n');
    }
    out + "-----END CERTIFICATE-----\n"
}

#[test]
fn the_real_bundle_verifies() {
    judged(&happy()).unwrap();
}

#[test]
fn a_megabyte_certificate_in_a_signature_annotation_is_refused_in_linear_time() {
    let cert = bloated(&leaf_of(&happy()), MB);
    let payload = br#"{"critical":{}}"#;
    let annotations = BTreeMap::from([
        (ANN_SIGNATURE.to_owned(), b64(b"sig")),
        (ANN_CERTIFICATE.to_owned(), pem(&cert)),
        (ANN_BUNDLE.to_owned(), "{}".to_owned()),
    ]);
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(payload)));
    let err = timed("a 1 MB certificate in a .sig layer", &[], || {
        layer(
            &root(),
            &rule(),
            &digest,
            &digest,
            &annotations,
            payload,
            now(),
        )
        .unwrap_err()
    });
    assert!(err.reason.contains("certificate"), "{err:?}");
}

#[test]
fn a_megabyte_certificate_alone_is_refused_in_linear_time() {
    let cert = bloated(&leaf_of(&happy()), MB);
    // Through the public API: a trusted root whose CA certificate it is.
    let mut text: Value = serde_json::from_str(PUBLIC_GOOD_ROOT).unwrap();
    text["certificateAuthorities"][0]["certChain"]["certificates"][0]["rawBytes"] =
        json!(b64(&cert));
    let text = text.to_string();
    let err = timed(
        "a trusted root with a 1 MB certificate",
        text.as_bytes(),
        || TrustedRoot::from_json(&text).unwrap_err(),
    );
    assert!(matches!(err, RootError::Certificate { .. }), "{err}");
}

/// The real DSSE bundle, its statement made cosign's image signature of `subject` and its leaf
/// bloated to `size`: what a hostile referrer carries.
fn referrer_bundle(subject: &Digest, size: usize) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(DSSE).unwrap();
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"digest": {"sha256": subject.hex()}}],
        "predicateType": COSIGN_SIGN_PREDICATE,
        "predicate": {},
    });
    v["dsseEnvelope"]["payload"] = json!(b64(statement.to_string().as_bytes()));
    let leaf = bloated(&leaf_of(&v), size);
    v["verificationMaterial"]["certificate"]["rawBytes"] = json!(b64(&leaf));
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn a_four_megabyte_referrer_bundle_is_refused_in_linear_time() {
    let subject = Digest::parse(&format!("sha256:{}", "1".repeat(64))).unwrap();
    let bundle = referrer_bundle(&subject, 3 * MB);
    assert!(bundle.len() >= 4 * MB, "{}", bundle.len());
    let desc: Descriptor = serde_json::from_value(json!({
        "mediaType": BUNDLE_ARTIFACT_TYPE,
        "digest": Digest::of(&bundle).to_string(),
        "size": bundle.len(),
    }))
    .unwrap();
    let err = timed("a 4 MB referrer bundle", &bundle, || {
        verify_layer(&root(), &rule(), &subject, &desc, &bundle, now()).unwrap_err()
    });
    eprintln!("  {}: {}", err.step.name(), err.reason);
}

/// The real bundle with `edit` applied, at least [`READ`] bytes, then read and judged within
/// the bound: how it fared.
fn judged_bloated(what: &str, edit: impl FnOnce(&mut Value)) -> Result<(), Refused> {
    let mut v = happy();
    edit(&mut v);
    let bytes = serde_json::to_vec(&v).unwrap();
    assert!(bytes.len() >= READ, "{what}: {} bytes", bytes.len());
    let verdict = timed(what, &bytes, || judged(&v));
    eprintln!("  {verdict:?}");
    verdict
}

/// [`judged_bloated`], which must refuse it.
fn bloated_bundle(what: &str, edit: impl FnOnce(&mut Value)) -> String {
    (judged_bloated(what, edit).expect_err("a bloated bundle is refused")).to_string()
}

#[test]
fn a_bundle_with_a_megabyte_certificate_is_refused_in_linear_time() {
    let err = bloated_bundle("a bundle with a 1 MB certificate", |v| {
        let leaf = bloated(&leaf_of(v), READ);
        v["verificationMaterial"]["certificate"]["rawBytes"] = json!(b64(&leaf));
    });
    assert!(err.contains("more than the 16384"), "{err}");
}

/// Distinct junk timestamps: nothing signs the list, so anyone on the way can grow it.
#[test]
fn a_bundle_with_forty_thousand_timestamps_is_refused_in_linear_time() {
    let err = bloated_bundle("a bundle with 40 000 timestamps", |v| {
        let list: Vec<Value> = (0..40_000u32)
            .map(|i| json!({"signedTimestamp": b64(&i.to_be_bytes())}))
            .collect();
        v["verificationMaterial"]["timestampVerificationData"] = json!({"rfc3161Timestamps": list});
    });
    assert!(err.contains("more than the 32 read"), "{err}");
}

/// Signature lines with the log's key hint and a well-formed ECDSA signature each, before the
/// real one: a checkpoint's lines are covered by no signature of their own.
#[test]
fn a_checkpoint_of_ten_thousand_signature_lines_is_refused_in_linear_time() {
    let err = bloated_bundle("a checkpoint with 10 000 signature lines", |v| {
        let proof = &mut v["verificationMaterial"]["tlogEntries"][0]["inclusionProof"];
        let envelope = proof["checkpoint"]["envelope"].as_str().unwrap().to_owned();
        let (note, sig_line) = envelope.split_once("\n\n").unwrap();
        let real = unb64(sig_line.trim().rsplit_once(' ').unwrap().1);
        let mut junk = real[..4].to_vec();
        let (r, s) = ([0x11u8; 32], [0x22u8; 32]);
        let seq = [der::encode(der::INTEGER, &r), der::encode(der::INTEGER, &s)].concat();
        junk.extend(der::encode(der::SEQUENCE, &seq));
        let line = format!("\u{2014} rekor.sigstore.dev {}\n", b64(&junk));
        let lines = line.repeat(10_000);
        proof["checkpoint"]["envelope"] = json!(format!("{note}\n\n{lines}{sig_line}"));
    });
    assert!(err.contains("more than the 100 read"), "{err}");
}

#[test]
fn an_inclusion_proof_of_twenty_four_thousand_hashes_is_refused_in_linear_time() {
    let err = bloated_bundle("an inclusion proof of 24 000 hashes", |v| {
        let proof = &mut v["verificationMaterial"]["tlogEntries"][0]["inclusionProof"];
        proof["hashes"] = json!(vec![json!(b64(&[7u8; 32])); 24_000]);
    });
    assert!(err.contains("inclusion proof"), "{err}");
}

/// An older bundle's chain: every certificate is parsed (none may be a root), none trusted; the
/// leaf is the real one, so it verifies.
#[test]
fn a_chain_of_five_hundred_certificates_is_read_in_linear_time() {
    let verdict = judged_bloated("a chain of 500 certificates", |v| {
        let leaf = leaf_of(v);
        let junk = bloated(&leaf, 1500);
        let mut chain = vec![json!({"rawBytes": b64(&leaf)})];
        chain.extend(vec![json!({"rawBytes": b64(&junk)}); 500]);
        let vm = &mut v["verificationMaterial"];
        vm.as_object_mut().unwrap().remove("certificate");
        vm["x509CertificateChain"] = json!({"certificates": chain});
    });
    assert!(verdict.is_ok(), "{verdict:?}");
}

#[test]
fn a_megabyte_statement_is_refused_in_linear_time() {
    let mut v: Value = serde_json::from_str(DSSE).unwrap();
    let subjects: Vec<Value> = (0..15_000u32)
        .map(|i| json!({"name": i.to_string(), "digest": {"sha256": hex::encode([i as u8; 32])}}))
        .collect();
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": subjects,
        "predicateType": COSIGN_SIGN_PREDICATE,
        "predicate": {},
    });
    v["dsseEnvelope"]["payload"] = json!(b64(statement.to_string().as_bytes()));
    let bytes = serde_json::to_vec(&v).unwrap();
    assert!(bytes.len() >= READ, "{}", bytes.len());
    let err = timed("a DSSE statement of 15 000 subjects", &bytes, || {
        let ev = Evidence::from_bundle(&bytes).unwrap();
        verify_digest(&root(), &rule(), &artifact(), &ev, now()).unwrap_err()
    });
    assert!(err.reason.contains("more than the 1024 read"), "{err:?}");
}

/// The largest referrer bundle a registry may hand over is judged, and refused at its
/// certificate, within the bound; one byte more is refused before it is read.
#[test]
fn a_maximal_referrer_bundle_is_judged_in_linear_time() {
    let subject = Digest::parse(&format!("sha256:{}", "2".repeat(64))).unwrap();
    let mut bundle = referrer_bundle(&subject, MAX_BUNDLE_SIZE / 2);
    // Padded with JSON whitespace to the cap exactly.
    bundle.resize(MAX_BUNDLE_SIZE, b' ');
    let desc = |bytes: &[u8]| -> Descriptor {
        serde_json::from_value(json!({
            "mediaType": BUNDLE_ARTIFACT_TYPE,
            "digest": Digest::of(bytes).to_string(),
            "size": bytes.len(),
        }))
        .unwrap()
    };
    let err = timed("a referrer bundle at the cap", &bundle, || {
        verify_layer(&root(), &rule(), &subject, &desc(&bundle), &bundle, now()).unwrap_err()
    });
    assert!(
        err.reason.contains("the certificate: a certificate of"),
        "{err:?}"
    );
    bundle.push(b' ');
    let err = verify_layer(&root(), &rule(), &subject, &desc(&bundle), &bundle, now()).unwrap_err();
    assert!(err.reason.contains("more than the 262144"), "{err:?}");
}
