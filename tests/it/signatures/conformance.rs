//! The Sigstore conformance suite's offline `verify-bundle` cases (real public-good signatures,
//! and spoiled copies of them, written by Sigstore, not here), run through the real `cks-iso
//! verify-bundle` with the suite's own command line, each with the file and with its digest, as
//! the suite's harness does. Each case must get the suite's verdict; a refusal must name the check
//! that refused it. The data and its origin are in `tests/sigstore-conformance/`.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::cks_iso;
use sha2::{Digest as _, Sha256};

/// The suite's default identity and issuer (its test beacon's GitHub workflow).
const IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const ISSUER: &str = "https://token.actions.githubusercontent.com";

/// Each case in scope and what its refusal must name on stderr (`None`: it must verify). A
/// directory name ending in `_fail` is the suite's "must not verify".
const IN_SCOPE: &[(&str, Option<&str>)] = &[
    ("happy-path-v0.1", None),
    ("happy-path-v0.2", None),
    ("happy-path-v0.3", None),
    ("happy-path-v0.3-new-mediaType", None),
    ("trust-root-tlog-validity-end-inclusive", None),
    (
        "bundle-empty-certificate-chain_fail",
        Some("is refused: no certificate"),
    ),
    (
        "bundle-from-wrong-instance_fail",
        Some("fails the Rekor signed entry timestamp check: log d32f30a3"),
    ),
    (
        "bundle-invalid-base64-signature_fail",
        Some("is refused: signature is not base64"),
    ),
    ("bundle-malformed-json_fail", Some("is refused: not JSON")),
    (
        "bundle-negative-log-index_fail",
        Some("is refused: logIndex is negative"),
    ),
    (
        "bundle-unknown-version_fail",
        Some("is refused: media type"),
    ),
    (
        "bundle-with-root-cert_fail",
        Some("holds a root (self-signed) certificate"),
    ),
    (
        "checkpoint-bad-keyhint_fail",
        Some("fails the Rekor checkpoint check: key hint c4d23d6a is not the entry's log"),
    ),
    (
        "checkpoint-wrong-roothash_fail",
        Some("fails the Rekor checkpoint check: the checkpoint commits to tree size"),
    ),
    (
        "inclusion-proof-corrupted-hash_fail",
        Some("fails the Rekor inclusion proof check"),
    ),
    (
        "incorrect-public-key_fail",
        Some("fails the Rekor signed entry timestamp check"),
    ),
    (
        "integrated-time-in-future_fail",
        Some("fails the signing time check"),
    ),
    (
        "invalid-checkpoint-signature_fail",
        Some("fails the Rekor checkpoint check: the signature of log"),
    ),
    (
        "invalid-ct-key_fail",
        Some("fails the signed certificate timestamp check"),
    ),
    (
        "invalid-inclusion-proof_fail",
        Some("fails the Rekor inclusion proof check"),
    ),
    (
        "message-digest-mismatch_fail",
        Some("fails the layer integrity check"),
    ),
    (
        "set-invalid-signature_fail",
        Some("fails the Rekor signed entry timestamp check"),
    ),
    (
        "signature-mismatch_fail",
        Some("fails the Rekor entry check: the entry logs another signature"),
    ),
    (
        "wrong-hashedrekord-artifact_fail",
        Some("fails the Rekor entry check: the entry logs sha256:"),
    ),
    (
        "wrong-hashedrekord-cert-and-sig_fail",
        Some("fails the Rekor entry check: the entry logs another signature"),
    ),
    (
        "wrong-hashedrekord-entry_fail",
        Some("fails the Rekor entry check: the entry logs sha256:"),
    ),
    (
        "wrong-material_fail",
        Some("fails the layer integrity check"),
    ),
    // Rekor v2 entries (hashedrekord 0.0.2: inclusion proof and checkpoint, no SET), dated by
    // RFC 3161 timestamps of a timestamp authority of the (staging) trusted root.
    ("bundle-with-sct-with-extensions", None),
    ("rekor2-happy-path", None),
    ("rekor2-checkpoint-cosigned", None),
    ("rekor2-checkpoint-multiple-cosigs", None),
    ("rekor2-checkpoint-origin-not-first", None),
    ("rekor2-checkpoint-two-sigs-cosigned", None),
    ("rekor2-checkpoint-two-sigs-from-origin", None),
    ("rekor2-timestamp-with-embedded-cert", None),
    ("rekor2-timestamp-without-embedded-cert", None),
    ("rekor2-timestamp-with-expired-cert-chain", None),
    ("trust-root-tsa-validity-end-inclusive", None),
    (
        "rekor2-checkpoint-missing-log-signature_fail",
        Some("fails the Rekor checkpoint check: it has no signature line"),
    ),
    (
        "rekor2-checkpoint-missing-origin_fail",
        Some("fails the Rekor checkpoint check: the checkpoint's second line is not a tree size"),
    ),
    (
        "rekor2-checkpoint-missing-root-hash_fail",
        Some("fails the Rekor checkpoint check: the checkpoint's third line is not a base64 root"),
    ),
    (
        "rekor2-checkpoint-missing-size_fail",
        Some("fails the Rekor checkpoint check: the checkpoint's second line is not a tree size"),
    ),
    (
        "rekor2-checkpoint-no-matching-signature_fail",
        Some(
            "fails the Rekor checkpoint check: key hint f30d5a99 is not the note key id of \
             \"log2025-alpha1.rekor.github.dev\"",
        ),
    ),
    (
        "rekor2-no-inclusion-proof_fail",
        Some("is refused: no inclusionProof"),
    ),
    (
        "rekor2-no-timestamp_fail",
        Some("fails the RFC 3161 timestamp check: the bundle has no RFC 3161 timestamp"),
    ),
    (
        "rekor2-timestamp-outside-trust-root-tsa-validity_fail",
        Some(
            "fails the RFC 3161 timestamp check: timestamp #1: generated at 1749729740, outside the trusted root's validFor",
        ),
    ),
    (
        "rekor2-timestamp-outside-tsa-cert-validity_fail",
        Some(
            "fails the RFC 3161 timestamp check: timestamp #1: generated at 1754581112, outside its timestamp authority's certificate validity",
        ),
    ),
    (
        "rekor2-timestamp-payload-mismatch_fail",
        Some(
            "fails the RFC 3161 timestamp check: timestamp #1: its message imprint is not the SHA-256 of the bundle's signature",
        ),
    ),
    (
        "rekor2-timestamp-untrusted-tsa-with-embedded-cert_fail",
        Some(
            "fails the RFC 3161 timestamp check: timestamp #1: it was signed by no timestamp authority of the trusted root",
        ),
    ),
    (
        "rekor2-timestamp-untrusted-tsa-without-embedded-cert_fail",
        Some(
            "fails the RFC 3161 timestamp check: timestamp #1: it was signed by no timestamp authority of the trusted root",
        ),
    ),
    (
        "rekor2-timestamp-with-incorrect-time_fail",
        Some(
            "fails the signing time check: timestamped at 1752575611, outside the certificate's validity",
        ),
    ),
    (
        "trust-root-tlog-missing-validity-start_fail",
        Some("has a validFor without start"),
    ),
    // DSSE envelopes holding in-toto statements (how cosign 3 signs images), logged as Rekor v1
    // `dsse` 0.0.1 or `intoto` 0.0.2 entries, or as a Rekor v2 `hashedrekord` 0.0.2 of the
    // envelope's PAE; the artifact is bound by the statement's subject digest.
    ("happy-path-intoto-in-dsse-v3", None),
    ("intoto-with-custom-trust-root", None),
    ("rekor2-dsse-happy-path", None),
    (
        "dsse-invalid-sig_fail",
        Some("fails the Rekor entry check: the entry logs another signature"),
    ),
    (
        "dsse-mismatch-envelope_fail",
        Some("fails the Rekor entry check: the entry logs a payload hashing to sha256:d6b209ba"),
    ),
    (
        "dsse-mismatch-sig_fail",
        Some("fails the Rekor entry check: the entry logs another signature"),
    ),
    (
        "intoto-expired-certificate_fail",
        Some(
            "fails the signing time check: integrated at 1675209600, outside the certificate's validity",
        ),
    ),
    (
        "intoto-log-entry-mismatch_fail",
        Some("fails the Rekor entry check: the entry logs another signature"),
    ),
    (
        "intoto-missing-inclusion-proof_fail",
        Some("is refused: no inclusionProof"),
    ),
    (
        "intoto-set-outside-signing-cert-validity_fail",
        Some(
            "fails the signing time check: integrated at 1675296000, outside the certificate's validity",
        ),
    ),
    (
        "intoto-tsa-timestamp-outside-cert-validity_fail",
        Some(
            "fails the signing time check: timestamped at 1675296000, outside the certificate's validity",
        ),
    ),
    (
        "rekor2-dsse-invalid-sig_fail",
        Some("fails the Rekor entry check: the entry logs another signature"),
    ),
    (
        "rekor2-dsse-mismatch-envelope_fail",
        Some("fails the Rekor entry check: the entry logs SHA2_256:57f2135c"),
    ),
    (
        "rekor2-dsse-mismatch-sig_fail",
        Some("fails the Rekor entry check: the entry logs another signature"),
    ),
];

const MANAGED_KEY: &str = "verified with a managed key (--key), not a Fulcio certificate: \
                           cks-iso verifies keyless signatures only";

/// Every other case of the suite at the commit copied, and why it is not run. Their data is not
/// copied; the suite has 70 cases in all.
const OUT_OF_SCOPE: &[(&str, &str)] = &[
    ("managed-key-and-trusted-root", MANAGED_KEY),
    ("managed-key-happy-path", MANAGED_KEY),
    ("managed-key-no-key_fail", MANAGED_KEY),
    ("managed-key-wrong-key_fail", MANAGED_KEY),
];

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sigstore-conformance/bundle-verify")
}

/// A case's file with the suite's default when the case has none.
fn optional_text(dir: &Path, name: &str, default: &str) -> String {
    match fs::read_to_string(dir.join(name)) {
        Ok(text) => text.trim().to_owned(),
        Err(_) => default.to_owned(),
    }
}

/// Runs one case as the suite's harness would, with the artifact given as `input` (a path or
/// `sha256:HEX`): the exit code and stderr.
fn verify_bundle(dir: &Path, input: &str) -> (Option<i32>, String, String) {
    let mut cmd = cks_iso();
    cmd.arg("verify-bundle")
        .arg("--bundle")
        .arg(dir.join("bundle.sigstore.json"))
        .args([
            "--certificate-identity",
            &optional_text(dir, "identity", IDENTITY),
        ])
        .args([
            "--certificate-oidc-issuer",
            &optional_text(dir, "issuer", ISSUER),
        ]);
    if dir.join("trusted_root.json").exists() {
        cmd.arg("--trusted-root").arg(dir.join("trusted_root.json"));
    }
    cmd.arg(input);
    let out = cmd.output().expect("run cks-iso");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn artifact(dir: &Path) -> PathBuf {
    match dir.join("artifact").exists() {
        true => dir.join("artifact"),
        false => cases_dir().join("a.txt"),
    }
}

#[test]
fn every_conformance_case_in_scope_gets_the_suites_verdict() {
    let mut wrong = Vec::new();
    for &(name, refusal) in IN_SCOPE {
        assert_eq!(
            name.ends_with("_fail"),
            refusal.is_some(),
            "{name}: the table disagrees with the suite's naming"
        );
        let dir = cases_dir().join(name);
        let file = artifact(&dir);
        // A Rekor v2 entry is dated by its timestamp, a Rekor v1 entry by its integrated time.
        let bundle: serde_json::Value = fs::read(dir.join("bundle.sigstore.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let kind = &bundle["verificationMaterial"]["tlogEntries"][0]["kindVersion"];
        let dated = match kind["kind"] == "hashedrekord" && kind["version"] == "0.0.2" {
            true => ", timestamped at ",
            false => ", integrated at ",
        };
        let digest = format!(
            "sha256:{}",
            hex::encode(Sha256::digest(fs::read(&file).unwrap()))
        );
        for input in [file.to_str().unwrap(), digest.as_str()] {
            let (code, stdout, stderr) = verify_bundle(&dir, input);
            let form = if input.starts_with("sha256:") {
                "digest"
            } else {
                "file"
            };
            match refusal {
                None if code == Some(0)
                    && stdout.starts_with("verified ")
                    && stdout.contains(dated) => {}
                None => wrong.push(format!(
                    "{name} ({form}): must verify, saying {dated:?}, got exit {code:?}:\n\
                     {stdout}{stderr}"
                )),
                Some(check) if code == Some(1) && stderr.contains(check) => {}
                Some(check) => wrong.push(format!(
                    "{name} ({form}): must be refused with exit 1 naming {check:?}, got exit \
                     {code:?}:\n{stdout}{stderr}"
                )),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong verdicts:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn every_case_of_the_suite_is_run_or_named_out_of_scope_with_its_reason() {
    let mut copied: Vec<String> = fs::read_dir(cases_dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    copied.sort();
    let mut in_scope: Vec<String> = IN_SCOPE.iter().map(|(n, _)| n.to_string()).collect();
    in_scope.sort();
    assert_eq!(
        copied, in_scope,
        "the copied cases are exactly those in scope"
    );
    // 19 that must verify and 47 that must not, as the suite stood at the commit copied: 5 and
    // 22 message signatures on Rekor v1, 11 and 14 on Rekor v2, 3 and 11 DSSE envelopes.
    let passing = IN_SCOPE.iter().filter(|(_, r)| r.is_none()).count();
    assert_eq!((passing, IN_SCOPE.len() - passing), (19, 47));
    assert_eq!(IN_SCOPE.len() + OUT_OF_SCOPE.len(), 70);
    for (name, reason) in OUT_OF_SCOPE {
        assert!(
            !in_scope.iter().any(|n| n == name),
            "{name} is in both lists"
        );
        assert!(!reason.is_empty());
    }
}
