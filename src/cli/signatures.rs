//! The signature flags, declared once and flattened into each command that judges image
//! signatures as `build` does: [`TrustArgs`] (what signatures are judged against) into `build`,
//! `pull` and `verify-image`, [`SignatureArgs`] (the mode, with those) into `build` and `pull`.
//! The help text is the same for every command; where a default differs, it says so per command.

use std::path::PathBuf;

use clap::Args;

use crate::env;

/// `--trusted-root` and `--signature-policy`.
#[derive(Debug, Clone, Default, Args)]
pub struct TrustArgs {
    /// Sigstore trusted_root.json to verify against [default: config file, else Sigstore's
    /// public-good root embedded in cks-iso].
    #[arg(long, value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,
    /// YAML rules (match, identity or identity-regex, issuer) for more signers, tried before
    /// the built-in rules (registry.k8s.io images; for build, dl.k8s.io binaries too) [default:
    /// config file].
    #[arg(long, value_name = "FILE")]
    pub signature_policy: Option<PathBuf>,
}

/// `--signatures`, with [`TrustArgs`].
#[derive(Debug, Clone, Default, Args)]
pub struct SignatureArgs {
    /// Sigstore signatures of registry.k8s.io images: off, verify (bad ones fail, unsigned ones
    /// warn, but a control-plane image of Kubernetes 1.26 or later without one fails: upstream
    /// signs them all), warn (as verify, every unsigned one a warning) or enforce (unsigned ones
    /// fail too); build also checks dl.k8s.io binaries (.sig/.cert and their Rekor entry), where
    /// one of Kubernetes 1.26 or later without a signature fails under verify too; pull writes no
    /// archive of an image that fails [default: build: config file, else verify; pull: off].
    #[arg(long, value_name = "MODE", env = env::CKS_ISO_SIGNATURES.name, hide_env_values = true, value_parser = ["off", "verify", "warn", "enforce"])]
    pub signatures: Option<String>,
    /// What signatures are judged against.
    #[command(flatten)]
    pub trust: TrustArgs,
}
