//! `cks-iso pull IMAGE... --arch ARCH --out DIR`: the images pulled by [`crate::pull`] into the
//! blob cache and written one archive per image; with `--signatures verify|enforce`, only images
//! whose signatures pass. Prints `<full name> <digest> <file>` per image, or one JSON object.

use super::{AppError, error::ExitKind, net};
use crate::archive::Written;
use crate::cli::PullArgs;
use crate::env;
use crate::image::{Arch, Image, Reference};
use crate::pull::{self, PullError, Request};
use crate::trust;
use crate::ui::Ui;

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

impl From<PullError> for AppError {
    fn from(err: PullError) -> Self {
        match err {
            PullError::Registry(e) => e.into(),
            PullError::Signature(e) => e.into(),
            PullError::Archive(e) => e.into(),
            writer @ PullError::Writer { .. } => Self::failure(writer, None),
        }
    }
}

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
    let checker = match args.signing.signatures.as_deref().unwrap_or("off") {
        "off" => None,
        mode => {
            let flags = trust::checker::Flags {
                mode: Some(mode),
                trusted_root: args.signing.trust.trusted_root.as_deref(),
                policy: args.signing.trust.signature_policy.as_deref(),
                rekor_url: None,
            };
            trust::checker::select(flags, &settings)?
        }
    };
    let registry = net::registry(&settings, cache)?;
    let runtime = net::transfer_runtime()?;
    let request = Request {
        references: &references,
        arch,
        out: &args.out,
        mtime: epoch()?,
        checker: checker.as_ref(),
    };
    let results = runtime.block_on(pull::pull(&registry, request, ui));
    let mut results: Vec<Result<(Image, Written), AppError>> = results
        .into_iter()
        .map(|r| r.map_err(AppError::from))
        .collect();
    // One image asked for, and it failed: its own error is the report, once, with its own hint.
    // The exit code stays the one a failed image gives among several (1), whatever the cause.
    if references.len() == 1
        && !args.json
        && results.first().is_some_and(Result::is_err)
        && let Some(Err(err)) = results.pop()
    {
        let kind = ExitKind::Failure;
        return Err(AppError { kind, ..err });
    }
    let failed = print(&references, results, arch, args.json, ui);
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

/// Prints each archive written (a line, or the JSON object) and each error on stderr; the images
/// that failed.
fn print(
    references: &[Reference],
    results: Vec<Result<(Image, Written), AppError>>,
    arch: Arch,
    json: bool,
    ui: &Ui,
) -> Vec<String> {
    let mut report = Report {
        format: FORMAT,
        arch: format!("linux/{arch}"),
        images: Vec::new(),
        failed: Vec::new(),
    };
    for (reference, outcome) in references.iter().zip(results) {
        match outcome {
            Ok((image, done)) if json => report.images.push(Pulled {
                reference: image.reference.to_string(),
                digest: image.top.digest.to_string(),
                archive: done.path.display().to_string(),
                size: done.size,
            }),
            Ok((image, done)) => {
                let (name, digest) = (&image.reference, &image.top.digest);
                crate::outln!("{name} {digest} {}", done.path.display());
            }
            Err(err) => {
                let (top, causes) = err.lines();
                // advice(): the given hint, else the full-disk one every subcommand gives.
                ui.error(&top, &causes, err.advice().as_deref());
                report.failed.push(Failed {
                    reference: reference.to_string(),
                    error: err.one_line(),
                });
            }
        }
    }
    if json {
        let text = serde_json::to_string_pretty(&report).expect("the report serialises");
        crate::outln!("{text}");
    }
    report.failed.into_iter().map(|f| f.reference).collect()
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
