//! `cks-iso verify-image`'s command line, beside the others in [`crate::cli`].

use std::path::PathBuf;

use clap::Args;

use super::{Net, TrustArgs};

/// `cks-iso verify-image`.
#[derive(Debug, Args)]
#[command(
    group(clap::ArgGroup::new("identity").args(["certificate_identity", "certificate_identity_regexp"])),
    group(clap::ArgGroup::new("issuer").args(["certificate_oidc_issuer", "certificate_oidc_issuer_regexp"])),
    after_help = "Examples:\n  \
    cks-iso verify-image registry.k8s.io/pause:3.10 registry.k8s.io/etcd:3.5.21-0\n  \
    cks-iso verify-image --arch arm64 --enforce registry.k8s.io/coredns/coredns:v1.12.0\n  \
    cks-iso verify-image --certificate-identity-regexp '^https://github.com/acme/.+$' \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com ghcr.io/acme/app:v1"
)]
pub struct VerifyImageArgs {
    /// Images as Docker writes them: `[HOST[:PORT]/]PATH[:TAG][@sha256:HEX]`. By digest, only
    /// the signature is fetched; by tag, also the tag's digest (a HEAD request).
    #[arg(required = true, value_name = "IMAGE")]
    pub images: Vec<String>,
    /// Judge as build for linux/ARCH does: the signature of the platform manifest the index lists
    /// for ARCH, else the index's (the index is fetched) [default: the digest the reference
    /// names, the one `cosign sign` signs].
    #[arg(long, value_name = "ARCH")]
    pub arch: Option<String>,
    /// The identity the certificate's SAN must be (an e-mail address or URI), exactly, for every
    /// image named, instead of the signature policy; with --certificate-oidc-issuer[-regexp].
    #[arg(long, value_name = "ID", requires = "issuer")]
    pub certificate_identity: Option<String>,
    /// A regular expression the whole SAN must match, instead of --certificate-identity.
    #[arg(long, value_name = "REGEX", requires = "issuer")]
    pub certificate_identity_regexp: Option<String>,
    /// The OIDC issuer the certificate must name, exactly; with --certificate-identity or
    /// --certificate-identity-regexp.
    #[arg(
        long,
        value_name = "URL",
        requires = "identity",
        conflicts_with = "signature_policy"
    )]
    pub certificate_oidc_issuer: Option<String>,
    /// A regular expression the whole OIDC issuer must match, instead of
    /// --certificate-oidc-issuer.
    #[arg(
        long,
        value_name = "REGEX",
        requires = "identity",
        conflicts_with = "signature_policy"
    )]
    pub certificate_oidc_issuer_regexp: Option<String>,
    /// What signatures are judged against, as for build.
    #[command(flatten)]
    pub trust: TrustArgs,
    /// An unsigned image fails too (exit 1) [default: reported UNSIGNED, exit 0].
    #[arg(long)]
    pub enforce: bool,
    /// Make no network connection: tags and signatures are the ones the cache last saw (an
    /// image whose signature it never saw is reported unsigned).
    #[arg(long)]
    pub offline: bool,
    /// Blob cache [default: $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Print one JSON object on stdout instead of a line per image (format:
    /// docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
    /// Network settings (mirrors, registries, CA files, credentials, jobs, retries, timeouts).
    #[command(flatten)]
    pub net: Net,
}
