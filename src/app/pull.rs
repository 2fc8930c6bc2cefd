//! `cks-iso pull IMAGE... --arch ARCH --out DIR`: pull images from registries into the blob cache
//! and write one image archive per image.

use std::time::Duration;

use super::AppError;
use crate::archive;
use crate::cache::Cache;
use crate::cli::PullArgs;
use crate::env;
use crate::fetch::{HttpConfig, RetryPolicy};
use crate::image::{Arch, Reference};
use crate::registry::{AuthFiles, Registry, RegistryConfig, RegistryMirror, Routes};
use crate::ui::Ui;

/// Pulls, writes the archives, prints `<full name> <digest> <file>` per image on stdout.
pub fn run(args: PullArgs, ui: &Ui) -> Result<(), AppError> {
    let arch = Arch::parse(&args.arch)?;
    let references = args
        .images
        .iter()
        .map(|text| Reference::parse(text))
        .collect::<Result<Vec<_>, _>>()?;
    let mirrors = args
        .registry_mirrors
        .iter()
        .map(|m| m.parse::<RegistryMirror>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| AppError::usage(anyhow::anyhow!(e), None))?;
    let cache = Cache::new(match args.cache_dir {
        Some(dir) => dir,
        None => Cache::default_root().map_err(|e| {
            let hint = e.hint();
            AppError::usage(e, hint)
        })?,
    });
    std::fs::create_dir_all(&args.out).map_err(|e| {
        AppError::failure(
            anyhow::anyhow!(e).context(format!("cannot create {}", args.out.display())),
            None,
        )
    })?;
    let http = HttpConfig {
        ca_files: args.ca_files,
        idle_timeout: Duration::from_secs(args.idle_timeout.max(1)),
        retry: RetryPolicy {
            attempts: args.attempts.max(1),
            ..RetryPolicy::default()
        },
        ..HttpConfig::default()
    };
    let config = RegistryConfig {
        routes: Routes {
            mirrors,
            insecure: args.insecure_registries,
        },
        auth: AuthFiles::from_env(args.authfile),
        jobs: usize::from(args.jobs),
    };
    let registry = Registry::new(config, &http, cache).map_err(|e| {
        let hint = e.hint();
        AppError::usage(e, hint)
    })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            AppError::failure(anyhow::anyhow!(e).context("cannot start the runtime"), None)
        })?;
    let progress = ui.bytes(&format!(
        "pulling {} image(s) for linux/{arch}",
        references.len()
    ));
    let results = runtime.block_on(registry.pull_all(&references, arch, progress.as_ref()));
    drop(progress);

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
    let mut failed = Vec::new();
    let mut written = std::collections::BTreeSet::new();
    for (reference, result) in references.iter().zip(results) {
        if !written.insert(reference.clone()) {
            continue;
        }
        let outcome = result.map_err(AppError::from).and_then(|image| {
            let path = args.out.join(&naming.files[reference]);
            let done = archive::write(&image, registry.cache(), &path, mtime)?;
            Ok((image, done))
        });
        match outcome {
            Ok((image, done)) => {
                println!(
                    "{} {} {}",
                    image.reference,
                    image.top.digest,
                    done.path.display()
                );
            }
            Err(err) => {
                let (top, causes) = err.lines();
                ui.error(&top, &causes, err.hint.as_deref());
                failed.push(reference.to_string());
            }
        }
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(AppError::failure(
            anyhow::anyhow!(
                "{} of {} image(s) could not be pulled: {}",
                failed.len(),
                written.len(),
                failed.join(", ")
            ),
            None,
        )),
    }
}

/// Archive entries are dated `SOURCE_DATE_EPOCH`, else 0, so the same image gives the same bytes.
fn epoch() -> Result<u64, AppError> {
    match env::SOURCE_DATE_EPOCH.get() {
        None => Ok(0),
        Some(value) => value.trim().parse().map_err(|_| {
            AppError::usage(
                anyhow::anyhow!("SOURCE_DATE_EPOCH={value:?} is not a whole number of seconds"),
                None,
            )
        }),
    }
}
