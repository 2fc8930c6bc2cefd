//! `cks-iso sign`'s arguments, and the signer flags `verify` and `register` share.

use std::path::PathBuf;

use clap::Args;

/// `cks-iso sign`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out iso.key\n  \
    openssl pkey -in iso.key -pubout -out iso.pub\n  \
    cks-iso sign out/*.iso --key iso.key\n  \
    openssl dgst -sha256 -verify iso.pub -signature <(base64 -d < x.iso.sig) x.iso")]
pub struct SignArgs {
    /// The ISOs to sign: each gets ISO.sig (cosign's base64 signature) and ISO.sigstore.json (a
    /// Sigstore bundle v0.3) beside it.
    #[arg(required = true, value_name = "ISO")]
    pub isos: Vec<PathBuf>,
    /// PEM ECDSA P-256 private key to sign with (PKCS #8 PRIVATE KEY, SEC 1 EC PRIVATE KEY, or
    /// cosign's ENCRYPTED SIGSTORE PRIVATE KEY with its password in COSIGN_PASSWORD).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
}

/// Who must have signed an ISO (`ISO.sigstore.json` beside it): `verify --iso-signature` and
/// `register`.
#[derive(Debug, Clone, Default, Args)]
pub struct SignerArgs {
    /// A PEM public key (PUBLIC KEY, ECDSA) whose signature is accepted; repeatable.
    #[arg(long = "key", value_name = "FILE", help_heading = "ISO signature")]
    pub keys: Vec<PathBuf>,
    /// The identity (SAN: e-mail or URI) a keyless signature's certificate must name, exactly.
    #[arg(
        long,
        value_name = "ID",
        help_heading = "ISO signature",
        conflicts_with = "certificate_identity_regexp"
    )]
    pub certificate_identity: Option<String>,
    /// A regexp the whole identity of a keyless signature's certificate must match.
    #[arg(long, value_name = "REGEXP", help_heading = "ISO signature")]
    pub certificate_identity_regexp: Option<String>,
    /// The OIDC issuer a keyless signature's certificate must name, exactly.
    #[arg(long, value_name = "URL", help_heading = "ISO signature")]
    pub certificate_oidc_issuer: Option<String>,
    /// Signer policy file: keys: (public key files) and rules: (the image signature policy's,
    /// matched against the ISO's file name) [default: config file's iso-signer-policy].
    #[arg(long, value_name = "FILE", help_heading = "ISO signature")]
    pub signer_policy: Option<PathBuf>,
    /// Sigstore trusted_root.json for keyless ISO signatures [default: config file, else
    /// Sigstore's public-good root embedded in cks-iso].
    #[arg(long, value_name = "FILE", help_heading = "ISO signature")]
    pub signer_trusted_root: Option<PathBuf>,
}

impl SignerArgs {
    /// The flags, for `trust::sign::signers`.
    pub fn flags(&self) -> crate::trust::sign::SignerFlags<'_> {
        crate::trust::sign::SignerFlags {
            keys: &self.keys,
            identity: self.certificate_identity.as_deref(),
            identity_regexp: self.certificate_identity_regexp.as_deref(),
            issuer: self.certificate_oidc_issuer.as_deref(),
            policy: self.signer_policy.as_deref(),
        }
    }
}
