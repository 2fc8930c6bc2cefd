//! What `cks-iso push --image/--images-file` pushes: each image named resolved through the same
//! registry client and cache as `build` and `pull` (mirrors, credentials, the retry budget),
//! pinned to the digest its name resolves to for the first architecture asked and resolved at
//! that digest for the others, so one push never mixes two versions of a moving tag. Its
//! signatures are judged as `build` judges an add-on image ([`Checker::check_extra_from`]): a
//! rule that covers it must pass, and under `--signatures enforce` an image no rule covers is
//! refused; the signature manifest accepted travels with it, as a lock's does.
//!
//! A library module so that the command only turns its flags into references and prints; the
//! lock and ISO sources are read in the command itself (their images are already pinned).

use futures_util::{StreamExt, stream};

use crate::image::{Arch, Reference};
use crate::registry::{PushImage, Registry, RegistryError};
use crate::trust::checker::{Checker, CheckerError};

/// Why one image of the list cannot be pushed.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// It could not be resolved.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// Its signature does not pass.
    #[error(transparent)]
    Signature(#[from] CheckerError),
}

/// Each of `references` resolved for every one of `arches` (at least one) and its accepted
/// signatures, in the order named. `vouched`: the registry is asked, not only the cache (see
/// [`Checker::check_image_from`]).
pub async fn resolve_list(
    registry: &Registry,
    references: &[Reference],
    arches: &[Arch],
    checker: Option<&Checker>,
    vouched: bool,
) -> Vec<Result<PushImage, ListError>> {
    stream::iter(references)
        .map(|reference| resolve_one(registry, reference, arches, checker, vouched))
        .buffered(registry.jobs().min(4))
        .collect()
        .await
}

async fn resolve_one(
    registry: &Registry,
    reference: &Reference,
    arches: &[Arch],
    checker: Option<&Checker>,
    vouched: bool,
) -> Result<PushImage, ListError> {
    let mut pushed: Option<PushImage> = None;
    for &arch in arches {
        let image = match &pushed {
            None => registry.resolve(reference, arch).await?,
            Some(p) => registry.resolve_at(reference, &p.top, arch).await?,
        };
        let entry = pushed.get_or_insert_with(|| PushImage {
            reference: reference.clone(),
            top: image.top.digest.clone(),
            platforms: Vec::new(),
            signatures: Vec::new(),
        });
        if !entry.platforms.contains(&image.manifest.digest) {
            entry.platforms.push(image.manifest.digest.clone());
        }
        let Some(checker) = checker else { continue };
        let (_, accepted) = checker
            .check_extra_from(registry, &image, None, vouched)
            .await?;
        if let Some(manifest) = accepted {
            let signature = (manifest.tag(), manifest.digest.clone());
            if !entry.signatures.contains(&signature) {
                entry.signatures.push(signature);
            }
        }
    }
    Ok(pushed.expect("at least one architecture is asked for"))
}
