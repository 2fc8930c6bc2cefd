//! An ISO's own signature as `diff` and `upgrade-check` show it: who signed it and when, once
//! the signature beside the ISO was checked, or why it does not verify, or that there is none.
//!
//! Operators compare last month's ISO with this month's before a rollout; whether both were
//! signed, and by whom, is part of what changed (a new key, an unsigned rebuild). Data only: the
//! `cks-iso` crate reads and checks the files (`trust::signer`, with the verifier that `verify
//! --iso-signature` uses); here a signature is compared and put into words.

use serde::Serialize;

/// How far the signature beside an ISO could be checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignatureStatus {
    /// No `<iso>.sigstore.json` and no `<iso>.sig` beside it.
    Unsigned,
    /// It verifies: a key signature under a public key given (`--key`), a certificate bundle
    /// against the trusted root for the identity its certificate names.
    Verified,
    /// A key signature whose public key was not given: the signer is the key the bundle names,
    /// the bundle signs this ISO's SHA-256, but the signature itself is not checked.
    Unverified,
    /// It does not verify (another ISO's, a bad signature, a certificate the root does not
    /// vouch for, an unreadable file): `reason` says why.
    Invalid,
}

/// What kind of signer a signature names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignerKind {
    /// A key the operator holds (`cks-iso sign --key`, `build --sign-key`, cosign's `.sig`).
    Key,
    /// A Fulcio certificate for an OIDC identity (keyless signing).
    Certificate,
}

/// The signature beside one ISO, as checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Signature {
    /// Verified, unverified, invalid or unsigned.
    pub status: SignatureStatus,
    /// The file read (`<iso>.sigstore.json`, else `<iso>.sig`); `null` when unsigned.
    pub file: Option<String>,
    /// `key` or `certificate`; `null` when unsigned or not known.
    pub kind: Option<SignerKind>,
    /// Who signed, in words: `the key sha256:… (iso.pub)`, `the key sha256:…` (as the bundle
    /// names it), `me@example.org via https://issuer`; `null` when nothing names one.
    pub signer: Option<String>,
    /// The signing key's fingerprint (`sha256:` and the hex SHA-256 of its DER public key), for
    /// a key signature that names or was verified under one.
    pub key: Option<String>,
    /// The certificate's identity (SAN), for a keyless signature.
    pub identity: Option<String>,
    /// The certificate's OIDC issuer, for a keyless signature.
    pub issuer: Option<String>,
    /// When it was signed (RFC 3339 UTC), when a log entry the trusted root vouches for says so.
    pub time: Option<String>,
    /// Why it is not verified, or does not verify.
    pub reason: Option<String>,
}

impl Signature {
    /// No signature beside the ISO.
    pub fn unsigned() -> Self {
        Self {
            status: SignatureStatus::Unsigned,
            file: None,
            kind: None,
            signer: None,
            key: None,
            identity: None,
            issuer: None,
            time: None,
            reason: None,
        }
    }

    /// Whether `other` is the same signer in the same state: the time and the file aside, so
    /// that the same ISO signed again by the same key or identity is the same.
    pub fn same_signer(&self, other: &Self) -> bool {
        (
            self.status,
            self.kind,
            &self.key,
            &self.identity,
            &self.issuer,
        ) == (
            other.status,
            other.kind,
            &other.key,
            &other.identity,
            &other.issuer,
        ) && (self.status != SignatureStatus::Invalid || self.reason == other.reason)
    }

    /// One line: `signed by X at T`, `signed by X per FILE, not checked: …`, `FILE does not
    /// verify: …`, `unsigned (…)`.
    pub fn words(&self) -> String {
        let signer = self.signer.as_deref().unwrap_or("an unknown signer");
        let file = self.file.as_deref().unwrap_or("its signature");
        let reason = self.reason.as_deref().unwrap_or("no reason given");
        match self.status {
            SignatureStatus::Unsigned => {
                "unsigned (no .sigstore.json or .sig beside it)".to_owned()
            }
            SignatureStatus::Verified => match &self.time {
                Some(t) => format!("signed by {signer} at {t}"),
                None => format!(
                    "signed by {signer}, at a time nothing vouches for (a key signature without \
                     a log entry)"
                ),
            },
            SignatureStatus::Unverified => {
                format!("signed by {signer} as {file} says, not checked: {reason}")
            }
            SignatureStatus::Invalid => {
                format!("{file} does not verify: {reason}; signer found: {signer}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_key(status: SignatureStatus, key: &str, time: Option<&str>) -> Signature {
        Signature {
            status,
            file: Some("x.iso.sigstore.json".into()),
            kind: Some(SignerKind::Key),
            signer: Some(format!("the key {key}")),
            key: Some(key.into()),
            time: time.map(str::to_owned),
            reason: (status != SignatureStatus::Verified).then(|| "why".to_owned()),
            ..Signature::unsigned()
        }
    }

    #[test]
    fn the_same_signer_at_another_time_is_the_same_and_another_key_is_not() {
        let a = by_key(
            SignatureStatus::Verified,
            "sha256:aa",
            Some("2026-01-01T00:00:00Z"),
        );
        let again = by_key(
            SignatureStatus::Verified,
            "sha256:aa",
            Some("2026-02-01T00:00:00Z"),
        );
        assert!(a.same_signer(&again));
        assert!(!a.same_signer(&by_key(SignatureStatus::Verified, "sha256:bb", None)));
        assert!(!a.same_signer(&by_key(SignatureStatus::Invalid, "sha256:aa", None)));
        assert!(!a.same_signer(&Signature::unsigned()));
        assert!(Signature::unsigned().same_signer(&Signature::unsigned()));
    }

    #[test]
    fn each_status_reads_as_a_line_naming_the_signer() {
        let verified = by_key(
            SignatureStatus::Verified,
            "sha256:aa",
            Some("2026-01-01T00:00:00Z"),
        );
        assert_eq!(
            verified.words(),
            "signed by the key sha256:aa at 2026-01-01T00:00:00Z"
        );
        let untimed = by_key(SignatureStatus::Verified, "sha256:aa", None);
        assert!(
            untimed.words().contains("nothing vouches"),
            "{}",
            untimed.words()
        );
        let unchecked = by_key(SignatureStatus::Unverified, "sha256:aa", None).words();
        assert!(unchecked.contains("not checked: why"), "{unchecked}");
        let bad = by_key(SignatureStatus::Invalid, "sha256:aa", None).words();
        assert!(
            bad.starts_with("x.iso.sigstore.json does not verify: why; signer found: the key"),
            "{bad}"
        );
        assert!(Signature::unsigned().words().starts_with("unsigned"));
    }
}
