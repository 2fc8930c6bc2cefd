//! What signatures are judged against, and the material they are judged on: the policy and the
//! trusted root read from the files a user names; (in [`checker`]) how a run judges signatures
//! and one image's verdict; (in [`image`]) an image's cosign `.sig` tags and referrers fetched
//! through the registry and judged; (in [`rekor`]) a file's Rekor entry looked up; (in
//! [`binaries`]) a downloaded file's signature found beside it and judged; (in [`sign`]) the ISOs
//! cks-iso writes, signed with the operator's key (read in [`key`]; keyless and `--tlog` through
//! Fulcio and Rekor in [`keyless`]) and judged against the signers trusted (and, in [`signer`],
//! who signed one, as `diff` and `upgrade-check` show it).
//! `build`, `pull`, `verify`, `verify-bundle` and `verify-image` share these, so that each judges
//! a signature the same way.

pub mod binaries;
pub mod checker;
pub mod image;
pub mod key;
pub mod keyless;
pub mod material;
pub mod rekor;
pub mod sign;
pub mod signer;
pub mod standalone;

use std::path::{Path, PathBuf};

use cks_iso_sigstore::{PUBLIC_GOOD_ROOT, Policy, TrustedRoot};

/// A policy or trusted root that cannot be used: a usage error, the user named the file.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The policy file cannot be read.
    #[error("cannot read the signature policy {}", path.display())]
    PolicyUnreadable {
        /// The file named.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The policy file is not a valid policy.
    #[error("signature policy {}: {reason}", path.display())]
    Policy {
        /// The file named.
        path: PathBuf,
        /// What is wrong, and where.
        reason: String,
    },
    /// The trusted root file cannot be read.
    #[error("cannot read the trusted root {}", path.display())]
    RootUnreadable {
        /// The file named.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The trusted root is not one cks-iso accepts.
    #[error("the trusted root {origin}: {reason}")]
    Root {
        /// The file, or the embedded root.
        origin: String,
        /// What is wrong.
        reason: cks_iso_sigstore::RootError,
    },
}

impl TrustError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::PolicyUnreadable { path, source } => {
                crate::input::hint(source, path, "a signature policy")
            }
            Self::Policy { .. } => Some(
                "each rule has one of match, prefix, one of issuer, issuer-regex and one of \
                 identity, identity-regex (see docs/guide/signatures.md)"
                    .into(),
            ),
            Self::RootUnreadable { path, source } => {
                crate::input::hint(source, path, "a Sigstore trusted_root.json").or_else(|| {
                    Some("pass a readable Sigstore trusted_root.json with --trusted-root".into())
                })
            }
            Self::Root { .. } => {
                Some("pass a Sigstore trusted_root.json with --trusted-root".into())
            }
        }
    }
}

/// The largest signature policy read: a list of signer rules, a few KiB at most.
const MAX_POLICY_SIZE: u64 = 1 << 20;

/// The largest trusted root read: Sigstore's public-good `trusted_root.json` is about 10 KiB
/// after years of key rotations; 4 MiB leaves room for private roots with many CAs and logs.
const MAX_ROOT_SIZE: u64 = 4 << 20;

/// The built-in policy, after the rules of `file` when given (files as `crate::input` reads
/// those that decide what is trusted: regular, capped, written by no one else).
pub fn policy(file: Option<&Path>) -> Result<Policy, TrustError> {
    let Some(path) = file else {
        return Ok(Policy::builtin());
    };
    let text = crate::input::read_private_text(path, MAX_POLICY_SIZE).map_err(|source| {
        TrustError::PolicyUnreadable {
            path: path.to_owned(),
            source,
        }
    })?;
    Policy::with_file(&text).map_err(|reason| TrustError::Policy {
        path: path.to_owned(),
        reason: reason.into(),
    })
}

/// The trusted root: `flag`, else `file` (the configuration's), else the embedded public-good
/// root; with its text. Says which on stderr: see [`read_trusted_root`] for a root read quietly.
pub fn trusted_root(
    flag: Option<&Path>,
    file: Option<&Path>,
) -> Result<(TrustedRoot, String), TrustError> {
    let (root, text, origin) = read_trusted_root(flag, file)?;
    tracing::info!("trusted root for signatures: {origin}");
    Ok((root, text))
}

/// [`trusted_root`] without a word on stderr, and where it came from: for a second reader of
/// the root a run already named (signing after the build's checks), or a check that only needs
/// it when a signature turns out to carry a log entry.
pub fn read_trusted_root(
    flag: Option<&Path>,
    file: Option<&Path>,
) -> Result<(TrustedRoot, String, String), TrustError> {
    let (text, origin) = match flag.or(file) {
        Some(path) => {
            let text = crate::input::read_private_text(path, MAX_ROOT_SIZE).map_err(|source| {
                TrustError::RootUnreadable {
                    path: path.to_owned(),
                    source,
                }
            })?;
            (text, path.display().to_string())
        }
        None => (
            PUBLIC_GOOD_ROOT.to_owned(),
            "Sigstore's public-good root (embedded)".to_owned(),
        ),
    };
    let root = TrustedRoot::from_json(&text).map_err(|reason| TrustError::Root {
        origin: origin.clone(),
        reason,
    })?;
    Ok((root, text, origin))
}

/// Seconds since 1970, the time signatures are judged at.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
