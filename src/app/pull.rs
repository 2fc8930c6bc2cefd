//! `cks-iso pull IMAGE... --arch ARCH --out DIR`: pull images from registries into the blob cache
//! and write one image archive per image; with `--signatures verify|enforce`, only images whose
//! signatures pass, judged as `build` judges them (see [`trust::checker::Checker::check_image`]).

use super::{AppError, net};
use futures_util::{StreamExt, stream};

use crate::archive::{self, Written};
use crate::cli::PullArgs;
use crate::env;
use crate::image::{Arch, Image, Reference};
use crate::trust;
use crate::ui::Ui;

/// Pulls, writes the archives, prints `<full name> <digest> <file>` per image on stdout.
pub fn run(args: PullArgs, ui: &Ui) -> Result<(), AppError> {
    let arch = Arch::parse(&args.arch).map_err(|_| AppError::unknown_arch(&args.arch))?;
    let mut references: Vec<Reference> = Vec::new();
    for text in &args.images {
        let reference = Reference::parse(text)?;
        // The same image named twice is pulled and written once.
        if !references.contains(&reference) {
            references.push(reference);
        }
    }
    let cache = net::writable_cache(args.cache_dir)?;
    net::writable(&args.out).map_err(|e| AppError::output_dir(&args.out, "--out", e))?;
    let settings = net::settings(args.net)?;
    // pull checks signatures only when asked: it is the low-level building block.
    let mode = args.signing.signatures.as_deref().unwrap_or("off");
    let checker = match mode {
        "off" => None,
        _ => {
            let flags = trust::checker::Flags {
                mode: Some(mode),
                trusted_root: args.signing.trust.trusted_root.as_deref(),
                policy: args.signing.trust.signature_policy.as_deref(),
                rekor_url: None,
            };
            trust::checker::select(flags, &settings)?
        }
    };
    let checker = checker.as_ref();
    let registry = net::registry(&settings, cache)?;
    let runtime = net::transfer_runtime()?;
    let naming = archive::assign_names(&references);
    for renamed in &naming.renamed {
        tracing::warn!(
            "{} shares the archive name {} with another image; written as {}",
            renamed.reference,
            renamed.plain,
            renamed.file
        );
    }
    let mtime = epoch()?;
    let progress = ui.bytes(&format!(
        "pulling {} image(s) for linux/{arch}",
        references.len()
    ));
    let progress = progress.as_ref();
    // Each image's archive is written (on a blocking thread) as soon as its blobs are in, while
    // other images still download: disk writing overlaps network waiting.
    let results: Vec<Result<(Image, Written), AppError>> = runtime.block_on(async {
        let resolved = registry.resolve_all(&references, arch).await;
        progress.start(registry.missing_bytes(resolved.iter().flatten()));
        let results = stream::iter(references.iter().zip(resolved))
            .map(|(reference, image)| {
                let (registry, path) = (&registry, args.out.join(&naming.files[reference]));
                async move {
                    let image = image?;
                    registry.fetch_blobs(&image, progress).await?;
                    // A bad signature (or, enforced, none) and the archive is not written.
                    if let Some(checker) = checker {
                        checker.check_image(registry, &image, None).await?;
                    }
                    let cache = registry.cache().clone();
                    tokio::task::spawn_blocking(move || {
                        let written = archive::write(&image, &cache, &path, mtime)?;
                        Ok((image, written))
                    })
                    .await
                    .map_err(|e| {
                        AppError::failure(
                            anyhow::anyhow!("{reference}: the archive writer stopped: {e}"),
                            None,
                        )
                    })?
                }
            })
            .buffered(registry.jobs())
            .collect()
            .await;
        progress.finish();
        results
    });

    // One image asked for, and it failed: its own error is the report, once, with its own hint.
    // The exit code stays the one a failed image gives among several (1), whatever the cause.
    let mut results = results;
    if references.len() == 1
        && !args.json
        && results.first().is_some_and(Result::is_err)
        && let Some(Err(err)) = results.pop()
    {
        return Err(AppError {
            kind: super::error::ExitKind::Failure,
            ..err
        });
    }
    let mut failed = Vec::new();
    let mut report = Report {
        format: FORMAT,
        arch: format!("linux/{arch}"),
        images: Vec::new(),
        failed: Vec::new(),
    };
    for (reference, outcome) in references.iter().zip(results) {
        match outcome {
            Ok((image, done)) if args.json => report.images.push(Pulled {
                reference: image.reference.to_string(),
                digest: image.top.digest.to_string(),
                archive: done.path.display().to_string(),
                size: done.size,
            }),
            Ok((image, done)) => {
                crate::outln!(
                    "{} {} {}",
                    image.reference,
                    image.top.digest,
                    done.path.display()
                );
            }
            Err(err) => {
                let (top, causes) = err.lines();
                // advice(): the given hint, else the full-disk one every subcommand gives.
                ui.error(&top, &causes, err.advice().as_deref());
                failed.push(reference.to_string());
                report.failed.push(Failed {
                    reference: reference.to_string(),
                    error: std::iter::once(top)
                        .chain(causes)
                        .collect::<Vec<_>>()
                        .join(": "),
                });
            }
        }
    }
    if args.json {
        let text = serde_json::to_string_pretty(&report).expect("the report serialises");
        crate::outln!("{text}");
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(AppError::failure(
            anyhow::anyhow!(
                "{} of {} image(s) could not be pulled: {}",
                failed.len(),
                references.len(),
                failed.join(", ")
            ),
            Some(match failed.len() == references.len() {
                true => "each error above names its image, its cause and what to do".into(),
                false => "each error above names its image, its cause and what to do; the other \
                          archives were written, and a pull after the fix downloads only what is \
                          missing"
                    .into(),
            }),
        )),
    }
}

/// The version of `pull --json`'s object, bumped on any change that breaks a reader.
pub const FORMAT: u32 = 1;

/// `pull --json`: what was written and what failed, in the order the images were named.
#[derive(serde::Serialize)]
struct Report {
    format: u32,
    /// `linux/<arch>`.
    arch: String,
    images: Vec<Pulled>,
    failed: Vec<Failed>,
}

/// One archive written.
#[derive(serde::Serialize)]
struct Pulled {
    reference: String,
    digest: String,
    archive: String,
    size: u64,
}

/// One image not written, with the error stderr reports for it.
#[derive(serde::Serialize)]
struct Failed {
    reference: String,
    error: String,
}

/// Archive entries are dated `SOURCE_DATE_EPOCH`, else 0, so the same image gives the same bytes.
fn epoch() -> Result<u64, AppError> {
    match env::source_date_epoch()? {
        None => Ok(0),
        Some(epoch) => u64::try_from(epoch).map_err(|_| {
            AppError::from(env::BadEpoch(
                env::SOURCE_DATE_EPOCH.get().unwrap_or_default(),
            ))
        }),
    }
}
