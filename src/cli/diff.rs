//! `cks-iso diff`'s arguments, and the signature flags it shares with `upgrade-check`.

use std::path::PathBuf;

use clap::Args;

/// `cks-iso diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The old side: an ISO or a `cks-iso.lock`.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The new side: an ISO or a `cks-iso.lock`.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Print the differences as JSON on stdout (also when identical).
    #[arg(long)]
    pub json: bool,
    /// What each ISO's own signature is checked with.
    #[command(flatten)]
    pub signer: ShowSignerArgs,
}

/// What `diff` and `upgrade-check` check the signature beside each ISO (ISO.sigstore.json, else
/// ISO.sig) with, to say who signed it; an ISO is never refused for it.
#[derive(Debug, Clone, Default, Args)]
pub struct ShowSignerArgs {
    /// A PEM public key (PUBLIC KEY, ECDSA) to check an ISO's key signature with, naming its
    /// signer; repeatable [default: none: a key signature is named by the fingerprint its bundle
    /// gives, not checked].
    #[arg(long = "key", value_name = "FILE", help_heading = "ISO signature")]
    pub keys: Vec<PathBuf>,
    /// Sigstore trusted_root.json keyless ISO signatures are checked against [default:
    /// Sigstore's public-good root embedded in cks-iso].
    #[arg(long, value_name = "FILE", help_heading = "ISO signature")]
    pub signer_trusted_root: Option<PathBuf>,
}
