//! `cks-iso verify-bundle`'s arguments.

use std::path::PathBuf;

use clap::Args;

use super::Net;
use crate::env;

/// `cks-iso verify-bundle`: the command line of the Sigstore conformance suite's clients.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    cks-iso verify-bundle --bundle a.txt.sigstore.json --certificate-identity me@example.com \
    --certificate-oidc-issuer https://accounts.google.com a.txt\n  \
    cks-iso verify-bundle --kubernetes-binary --signature kubeadm.sig --certificate kubeadm.cert \
    kubeadm")]
pub struct VerifyBundleArgs {
    /// The signed file, or its digest as sha256:HEX (when no such file exists).
    #[arg(value_name = "FILE|sha256:HEX")]
    pub artifact: String,
    /// Sigstore bundle (v0.1 to v0.3, JSON) to verify, e.g. FILE.sigstore.json.
    #[arg(long, value_name = "FILE", required_unless_present = "signature")]
    pub bundle: Option<PathBuf>,
    /// Base64 signature file, as dl.k8s.io publishes beside each binary (FILE.sig); its Rekor
    /// entry is looked up at --rekor-url.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "bundle",
        requires = "certificate"
    )]
    pub signature: Option<PathBuf>,
    /// Base64 of the PEM signing certificate (FILE.cert), with --signature.
    #[arg(long, value_name = "FILE", requires = "signature")]
    pub certificate: Option<PathBuf>,
    /// The identity the certificate's SAN must be (an e-mail address or URI), exactly.
    #[arg(long, value_name = "ID", required_unless_present = "kubernetes_binary")]
    pub certificate_identity: Option<String>,
    /// The OIDC issuer the certificate must name, exactly.
    #[arg(
        long,
        value_name = "URL",
        required_unless_present = "kubernetes_binary"
    )]
    pub certificate_oidc_issuer: Option<String>,
    /// Judge by cks-iso's built-in rule for Kubernetes binaries from dl.k8s.io (signed by
    /// krel-staging@k8s-releng-prod.iam.gserviceaccount.com via https://accounts.google.com).
    #[arg(long, conflicts_with_all = ["certificate_identity", "certificate_oidc_issuer"])]
    pub kubernetes_binary: bool,
    /// Sigstore trusted_root.json to verify against [default: config file, else Sigstore's
    /// public-good root embedded in cks-iso].
    #[arg(long, value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,
    /// Rekor server where a --signature's entry is looked up, through the mirrors
    /// [default: config file, else https://rekor.sigstore.dev].
    #[arg(long, value_name = "URL", env = env::CKS_ISO_REKOR_URL.name, hide_env_values = true)]
    pub rekor_url: Option<String>,
    /// Make no network connection: a bundle is verified as always, offline; a --signature's
    /// Rekor entry is the one the cache last saw.
    #[arg(long)]
    pub offline: bool,
    /// Blob cache for Rekor entries [default: $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Network settings (for the Rekor lookup of --signature).
    #[command(flatten)]
    pub net: Net,
}
