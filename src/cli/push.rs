//! `cks-iso push`'s arguments.

use std::path::PathBuf;

use clap::Args;

use super::{Net, SignatureArgs};

/// `cks-iso push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// An ISO built by cks-iso (its `docker/*` archives, read without mounting it) or a
    /// cks-iso.lock (its images from the cache, pulled where missing).
    #[arg(
        value_name = "ISO|LOCK",
        required_unless_present_any = ["locked", "images", "images_files"],
        conflicts_with = "locked"
    )]
    pub source: Option<PathBuf>,
    /// The lock whose images to push (the same as giving it as SOURCE).
    #[arg(long, value_name = "LOCK")]
    pub locked: Option<PathBuf>,
    /// An image to push instead of a lock's or an ISO's, repeatable: a reference as build's
    /// --image takes it, pinned to the digest it resolves to.
    #[arg(long = "image", value_name = "REF", conflicts_with_all = ["source", "locked"])]
    pub images: Vec<String>,
    /// A file of images to push, one reference a line (# comments and blank lines allowed), as
    /// build's --images-file. Repeatable.
    #[arg(long = "images-file", value_name = "FILE", conflicts_with_all = ["source", "locked"])]
    pub images_files: Vec<PathBuf>,
    /// With --image/--images-file: the architecture whose manifest is resolved and whose
    /// signature is judged, repeatable: amd64 (x86_64) or arm64 (aarch64) [default: amd64]. The
    /// index goes up whole either way.
    #[arg(long = "arch", value_name = "ARCH", conflicts_with_all = ["source", "locked"])]
    pub arches: Vec<String>,
    /// Where to: `HOST[:PORT][/PREFIX]`; each image goes under PREFIX as --map says, with its
    /// tag. Plain HTTP only with `--insecure-registry HOST[:PORT]`.
    #[arg(long, value_name = "REGISTRY[/PREFIX]")]
    pub to: String,
    /// How names map under the prefix: nested (`PREFIX/<its registry>/<its path>`) or flat
    /// (`PREFIX/<last component of its path>`, for registries whose projects hold one level,
    /// such as Harbor; two images mapped to one name are refused).
    #[arg(long = "map", value_name = "MAPPING", default_value = "nested", value_parser = ["nested", "flat"])]
    pub mapping: String,
    /// Credentials for the target (a Docker config.json or auth.json) [default: as for pulls].
    #[arg(long, value_name = "FILE")]
    pub to_authfile: Option<PathBuf>,
    /// Write `<source name> <pushed name>@<digest>` per image to FILE.
    #[arg(long, value_name = "FILE")]
    pub mapping_file: Option<PathBuf>,
    /// List the blobs the target lacks and their sizes; upload nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Leave the cosign signatures out (by default the `.sig` manifests accepted for each image
    /// go along).
    #[arg(long)]
    pub without_signatures: bool,
    /// Take nothing from the network for the source: what the cache (or the ISO) holds only.
    #[arg(long)]
    pub offline: bool,
    /// Blobs larger than this go up in PATCH chunks of this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = crate::registry::DEFAULT_CHUNK)]
    pub chunk_size: u64,
    /// Blob cache [default: $XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The signature flags, as for build; with --image/--images-file only (a lock's and an
    /// ISO's images were judged when their lock was written).
    #[command(flatten)]
    pub signing: SignatureArgs,
    /// Network settings (mirrors, registries, CA files, credentials, jobs, retries, timeouts).
    #[command(flatten)]
    pub net: Net,
}
