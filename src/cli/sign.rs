//! `cks-iso sign`'s arguments, and the signer flags `verify` and `register` share.

use std::path::PathBuf;

use clap::Args;

use crate::env;

/// `cks-iso sign`.
#[derive(Debug, Args)]
#[command(
    group(clap::ArgGroup::new("signer").args(["key", "identity_token"]).required(true)),
    after_help = "Examples:\n  \
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out iso.key\n  \
    openssl pkey -in iso.key -pubout -out iso.pub\n  \
    cks-iso sign out/*.iso --key iso.key\n  \
    cks-iso sign out/*.iso --key iso.key --tlog\n  \
    openssl dgst -sha256 -verify iso.pub -signature <(base64 -d < x.iso.sig) x.iso\n  \
    SIGSTORE_ID_TOKEN=\"$TOKEN\" cks-iso sign out/*.iso"
)]
pub struct SignArgs {
    /// The ISOs to sign: each gets ISO.sigstore.json (a Sigstore bundle v0.3) beside it, and
    /// with --key ISO.sig (cosign's base64 signature) too.
    #[arg(required = true, value_name = "ISO")]
    pub isos: Vec<PathBuf>,
    /// PEM ECDSA P-256 private key to sign with (PKCS #8 PRIVATE KEY, SEC 1 EC PRIVATE KEY, or
    /// cosign's ENCRYPTED SIGSTORE PRIVATE KEY with its password in COSIGN_PASSWORD).
    #[arg(long, value_name = "FILE", conflicts_with = "identity_token")]
    pub key: Option<PathBuf>,
    /// Enter each --key signature in Rekor (--rekor-url) and put the entry in ISO.sigstore.json,
    /// so that the log vouches for when it was made [default: off: a key signature stays offline].
    #[arg(long, requires = "key")]
    pub tlog: bool,
    /// Keyless signing's services and token.
    #[command(flatten)]
    pub keyless: KeylessArgs,
    /// Rekor v1 log keyless signatures (and --key signatures with --tlog) are entered in
    /// [default: --signing-config's, else the config file's rekor-url, else
    /// https://rekor.sigstore.dev].
    #[arg(long, value_name = "URL", env = env::CKS_ISO_REKOR_URL.name, hide_env_values = true)]
    pub rekor_url: Option<String>,
    /// Sigstore trusted_root.json a keyless bundle is checked against before it is written
    /// [default: config file, else Sigstore's public-good root embedded in cks-iso].
    #[arg(long, value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,
    /// Network settings.
    #[command(flatten)]
    pub net: super::Net,
}

/// Keyless signing (`build --sign`, `sign --identity-token`): the OIDC token and where Fulcio
/// and Rekor are.
#[derive(Debug, Clone, Default, Args)]
pub struct KeylessArgs {
    /// OIDC identity token (a JWT, audience sigstore) Fulcio certifies a short-lived key for;
    /// prefer SIGSTORE_ID_TOKEN, which no process listing shows. Ambient CI tokens are not
    /// fetched: pass the CI's token here.
    #[arg(long, value_name = "TOKEN", env = env::SIGSTORE_ID_TOKEN.name, hide_env_values = true, help_heading = "Keyless signing")]
    pub identity_token: Option<String>,
    /// Sigstore signing config (v0.2 JSON) naming the Fulcio and Rekor to sign with [default:
    /// Sigstore's public-good instances].
    #[arg(long, value_name = "FILE", help_heading = "Keyless signing")]
    pub signing_config: Option<PathBuf>,
    /// Fulcio to ask for the certificate, over --signing-config's [default:
    /// https://fulcio.sigstore.dev].
    #[arg(long, value_name = "URL", help_heading = "Keyless signing")]
    pub fulcio_url: Option<String>,
}

impl KeylessArgs {
    /// The options of `trust::keyless`, with the Rekor and trusted root the command names.
    pub fn options(
        &self,
        rekor_url: Option<&str>,
        trusted_root: Option<&std::path::Path>,
    ) -> crate::trust::keyless::KeylessOptions {
        crate::trust::keyless::KeylessOptions {
            token: self.identity_token.clone(),
            token_file: None,
            signing_config: self.signing_config.clone(),
            fulcio_url: self.fulcio_url.clone(),
            rekor_url: rekor_url.map(str::to_owned),
            trusted_root: trusted_root.map(std::path::Path::to_path_buf),
        }
    }
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
    #[arg(
        long,
        value_name = "URL",
        help_heading = "ISO signature",
        conflicts_with = "certificate_oidc_issuer_regexp"
    )]
    pub certificate_oidc_issuer: Option<String>,
    /// A regexp the whole OIDC issuer of a keyless signature's certificate must match.
    #[arg(long, value_name = "REGEXP", help_heading = "ISO signature")]
    pub certificate_oidc_issuer_regexp: Option<String>,
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
            issuer_regexp: self.certificate_oidc_issuer_regexp.as_deref(),
            policy: self.signer_policy.as_deref(),
        }
    }
}
