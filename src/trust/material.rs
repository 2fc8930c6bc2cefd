//! `cks-iso verify-bundle`'s judgement of one file's Sigstore signature, with the command line of
//! the Sigstore conformance suite's clients, so that the verifier `build` relies on can be run on
//! material the real public-good Sigstore produced (and on any file a user holds).
//!
//! The material is a Sigstore bundle, or dl.k8s.io's `.sig` and `.cert` pair, whose Rekor entry
//! is looked up the way `build` does ([`super::rekor::entry`]: mirrors, cache, offline). Either
//! way it is judged by [`rekor::verify_digest`], the very checks `build` and `verify
//! --signatures` run.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::fetch::FetchError;
use crate::image::Digest;
use crate::upstream::Fetcher;
use cks_iso_io::Sha256Sum;
use cks_iso_sigstore::verify::{Step, Verified};
use cks_iso_sigstore::{Policy, Rule, SignatureError, rekor};

/// The most a bundle, `.sig` or `.cert` file may hold: real ones are a few KiB.
const MATERIAL_LIMIT: u64 = 1 << 20;

/// Why the file's signature is not verified, or could not even be judged.
#[derive(Debug, thiserror::Error)]
pub enum MaterialError {
    /// The artifact given cannot be opened.
    #[error("cannot read the artifact {arg}")]
    Artifact {
        /// As given.
        arg: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The artifact could be opened but not read through.
    #[error("cannot read the artifact {arg}")]
    ArtifactRead {
        /// As given.
        arg: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The file cannot be read, or is too large.
    #[error("cannot read {what} {path}: {reason}")]
    Unreadable {
        /// `the bundle`, `the signature` or `the certificate`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A bundle cks-iso does not read.
    #[error("the bundle {path} is refused: {reason}")]
    Bundle {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// `.sig` or `.cert` are not what dl.k8s.io publishes.
    #[error("the signature material is refused: {reason}")]
    Pair {
        /// Why.
        reason: String,
    },
    /// Rekor could not be asked.
    #[error("cannot look the signature up in Rekor")]
    Lookup(#[source] FetchError),
    /// No Rekor entry logs this file, signature and certificate.
    #[error("{rekor} has no entry that logs sha256:{digest} with this signature and certificate")]
    NoEntry {
        /// The Rekor server, credentials masked.
        rekor: String,
        /// The file's sha256, hex.
        digest: String,
    },
    /// The signature does not verify.
    #[error(transparent)]
    Invalid(SignatureError),
}

impl MaterialError {
    /// Whether the arguments are at fault (exit 2) rather than the material.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Artifact { .. } | Self::Unreadable { .. })
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Artifact { .. } => {
                "pass the signed file, or its digest as sha256:<64 hex digits>".into()
            }
            Self::ArtifactRead { .. } | Self::Unreadable { .. } => return None,
            Self::Bundle { .. } | Self::Pair { .. } | Self::NoEntry { .. } => {
                "the material was altered, or is not a Sigstore signature of a kind cks-iso \
                 verifies (see README, Signatures)"
                    .into()
            }
            Self::Lookup(e) => return e.hint(),
            Self::Invalid(SignatureError::Invalid {
                step: Step::Identity | Step::Issuer,
                ..
            }) => "it is signed, but not by the signer given: check --certificate-identity and \
                   --certificate-oidc-issuer (or --kubernetes-binary)"
                .into(),
            Self::Invalid(_) => "the file or its signature material was altered, or the trusted \
                                 root (--trusted-root) is not the one that signed it"
                .into(),
        })
    }
}

/// The signer the certificate must name: the given one, or with `kubernetes_binary` the built-in
/// dl.k8s.io rule.
pub fn rule(kubernetes_binary: bool, identity: &str, issuer: &str) -> Rule {
    if kubernetes_binary {
        let builtin = Policy::builtin();
        return builtin
            .rule_for_url("https://dl.k8s.io/release/v1.33.0/bin/linux/amd64/kubeadm")
            .cloned()
            .expect("the built-in policy covers dl.k8s.io");
    }
    Rule::exact("**", identity, issuer)
}

/// The artifact's sha256 and how errors name it: `sha256:HEX` when it is a digest's form and no
/// such file exists (the conformance suite's rule), else the file's, hashed as it streams.
pub fn artifact(arg: &str) -> Result<([u8; 32], String), MaterialError> {
    let path = Path::new(arg);
    if let Some(hex_text) = arg.strip_prefix("sha256:")
        && !path.exists()
        && let Ok(sum) = Sha256Sum::parse_hex(&hex_text.to_ascii_lowercase())
    {
        return Ok((sum.into(), arg.to_owned()));
    }
    let arg = arg.to_owned();
    let file = std::fs::File::open(path).map_err(|source| MaterialError::Artifact {
        arg: arg.clone(),
        source,
    })?;
    let digest = crate::image::sha256_of(file).map_err(|source| MaterialError::ArtifactRead {
        arg: arg.clone(),
        source,
    })?;
    Ok((digest, arg))
}

/// A material file's bytes, at most 1 MiB (no real one comes near); `what` names it in errors.
pub fn read(path: &Path, what: &'static str) -> Result<Vec<u8>, MaterialError> {
    let unreadable = |reason: String| MaterialError::Unreadable {
        what,
        path: path.to_owned(),
        reason,
    };
    let file = std::fs::File::open(path).map_err(|e| unreadable(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MATERIAL_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(e.to_string()))?;
    if bytes.len() as u64 > MATERIAL_LIMIT {
        return Err(unreadable(format!(
            "larger than {MATERIAL_LIMIT} bytes, no real one is"
        )));
    }
    Ok(bytes)
}

/// The evidence of a bundle file.
pub fn from_bundle(path: &Path) -> Result<rekor::Evidence, MaterialError> {
    let bytes = read(path, "the bundle")?;
    rekor::Evidence::from_bundle(&bytes).map_err(|e| MaterialError::Bundle {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// The files of a `.sig`/`.cert` pair, read and checked to be what dl.k8s.io publishes.
pub fn read_pair(sig: &Path, cert: &Path) -> Result<(Vec<u8>, Vec<u8>), MaterialError> {
    let sig = read(sig, "the signature")?;
    let cert = read(cert, "the certificate")?;
    rekor::read_pair(&sig, &cert).map_err(|reason| MaterialError::Pair {
        reason: reason.into(),
    })?;
    Ok((sig, cert))
}

/// The evidence of a `.sig`/`.cert` pair: the Rekor entry at `rekor_url` that logs them, looked
/// up as `build` does.
pub async fn looked_up(
    rekor_url: &str,
    fetcher: &Fetcher<'_>,
    digest: &[u8; 32],
    (sig, cert): (&[u8], &[u8]),
) -> Result<rekor::Evidence, MaterialError> {
    let reply = super::rekor::entry(rekor_url, fetcher, digest, sig, cert, None)
        .await
        .map_err(MaterialError::Lookup)?;
    let no_entry = || MaterialError::NoEntry {
        rekor: crate::fetch::redact(rekor_url),
        digest: Sha256Sum::from(*digest).to_string(),
    };
    let reply = reply.ok_or_else(no_entry)?;
    let entries = rekor::entries(&reply).map_err(|_| no_entry())?;
    let entry = entries
        .values()
        .find(|e| rekor::Evidence::logged_by(digest, sig, cert, e))
        .ok_or_else(no_entry)?;
    rekor::Evidence::from_rekor(digest, sig, cert, entry).map_err(|reason| MaterialError::Pair {
        reason: reason.into(),
    })
}

/// Judges `evidence` for the file `shown` (sha256 `digest`) under `rule` against `root`, now.
pub fn verify(
    root: &cks_iso_sigstore::TrustedRoot,
    rule: &Rule,
    (digest, shown): (&[u8; 32], &str),
    evidence: &rekor::Evidence,
) -> Result<Verified, MaterialError> {
    rekor::verify_digest(root, rule, digest, evidence, super::now()).map_err(|f| {
        MaterialError::Invalid(SignatureError::Invalid {
            artifact: shown.to_owned(),
            digest: Digest::sha256(Sha256Sum::from(*digest)).to_string(),
            step: f.step,
            reason: f.reason,
        })
    })
}
