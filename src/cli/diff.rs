//! `cks-iso diff`'s arguments.

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
}
