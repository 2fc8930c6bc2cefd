//! `cks-iso verify`'s arguments.

use std::path::PathBuf;

use clap::Args;

/// `cks-iso verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The ISOs to check.
    #[arg(required = true, value_name = "ISO")]
    pub isos: Vec<PathBuf>,
    /// The volume ID nodes search for.
    #[arg(long, value_name = "ID", default_value = cks_iso_iso9660::DEFAULT_VOLUME_ID)]
    pub volume_id: String,
    /// Also re-verify the image and binary signatures the ISO carries, offline, against
    /// cks-iso's own trusted root (or --trusted-root), and that they sign what it holds.
    #[arg(long)]
    pub signatures: bool,
    /// Sigstore trusted_root.json for --signatures [default: Sigstore's public-good root
    /// embedded in cks-iso; never the ISO's].
    #[arg(long, value_name = "FILE", requires = "signatures")]
    pub trusted_root: Option<PathBuf>,
    /// The policy file the ISO was built with, for --signatures.
    #[arg(long, value_name = "FILE", requires = "signatures")]
    pub signature_policy: Option<PathBuf>,
    /// The CloudStack release the ISO is for (4.20, 4.21, 4.22, 4.23 or 24; a later one with 24's rules): check what its nodes
    /// read [default: what every release from 4.20 on needs].
    #[arg(long, value_name = "RELEASE")]
    pub cloudstack: Option<String>,
    /// Also check the ISO's own signature (ISO.sigstore.json beside it, as `cks-iso sign` and
    /// `build --sign-key` write it) against --key, --certificate-identity[-regexp] with
    /// --certificate-oidc-issuer, or --signer-policy, offline; prints who signed and when.
    #[arg(long)]
    pub iso_signature: bool,
    /// The signers --iso-signature accepts.
    #[command(flatten)]
    pub signer: super::SignerArgs,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
