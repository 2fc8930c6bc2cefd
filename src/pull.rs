//! `cks-iso pull`'s pipeline, as `crane pull` is "remote image, then tarball": each image
//! resolved for one arch, its blobs fetched into the cache, its signatures judged when asked (as
//! `build` judges them, [`Checker::check_image`]), and written as one image archive. A library
//! module so that the command only turns its flags into a [`Request`] and prints the outcome.
//!
//! Each image's archive is written on a blocking thread as soon as its blobs are in, while other
//! images still download: disk writing overlaps network waiting. One image failing does not stop
//! the others; each gets its own outcome.

use std::path::Path;

use futures_util::{StreamExt, stream};

use crate::archive::{self, ArchiveError, Written};
use crate::image::{Arch, Image, Reference};
use crate::registry::{Registry, RegistryError};
use crate::reporter::Reporter;
use crate::trust::checker::{Checker, CheckerError};

/// What to pull and where to write it.
pub struct Request<'a> {
    /// The images, each named once.
    pub references: &'a [Reference],
    /// The platform pulled.
    pub arch: Arch,
    /// The directory the archives go to.
    pub out: &'a Path,
    /// The archives' entries' modification time.
    pub mtime: u64,
    /// With `--signatures verify|enforce`: who judges the signatures (a bad one, or under
    /// enforce none, and the archive is not written).
    pub checker: Option<&'a Checker>,
}

/// Why one image was not written.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// It could not be resolved or its blobs fetched.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// Its signature does not pass.
    #[error(transparent)]
    Signature(#[from] CheckerError),
    /// Its archive could not be written.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// The thread writing its archive stopped.
    #[error("{reference}: the archive writer stopped: {reason}")]
    Writer {
        /// The image.
        reference: String,
        /// Why.
        reason: String,
    },
}

/// Pulls every image of `request` through `registry`, in the order named: each one's image and
/// archive, or why it was not written.
pub async fn pull(
    registry: &Registry,
    request: Request<'_>,
    reporter: &dyn Reporter,
) -> Vec<Result<(Image, Written), PullError>> {
    let references = request.references;
    let naming = archive::assign_names(references);
    for renamed in &naming.renamed {
        tracing::warn!(
            "{} shares the archive name {} with another image; written as {}",
            renamed.reference,
            renamed.plain,
            renamed.file
        );
    }
    let progress = reporter.bytes(&format!(
        "pulling {} image(s) for linux/{}",
        references.len(),
        request.arch
    ));
    let progress = progress.as_ref();
    let resolved = registry.resolve_all(references, request.arch).await;
    progress.start(registry.missing_bytes(resolved.iter().flatten()));
    let results = stream::iter(references.iter().zip(resolved))
        .map(|(reference, image)| {
            let path = request.out.join(&naming.files[reference]);
            async move {
                let image = image?;
                registry.fetch_blobs(&image, progress).await?;
                if let Some(checker) = request.checker {
                    checker.check_image(registry, &image, None).await?;
                }
                let cache = registry.cache().clone();
                let mtime = request.mtime;
                tokio::task::spawn_blocking(move || {
                    let written = archive::write(&image, &cache, &path, mtime)?;
                    Ok((image, written))
                })
                .await
                .map_err(|e| PullError::Writer {
                    reference: reference.to_string(),
                    reason: e.to_string(),
                })?
            }
        })
        .buffered(registry.jobs())
        .collect()
        .await;
    progress.finish();
    results
}
