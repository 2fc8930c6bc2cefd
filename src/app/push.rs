//! `cks-iso push ISO|LOCK --to REGISTRY[/PREFIX]`: seeds a registry the operator runs with what
//! cks-iso verified, digests and signatures intact. The images come from the cache (a lock's,
//! pulled where missing unless `--offline`), from an ISO's archives, read without mounting it
//! and taken into the cache through its hashing (an altered ISO makes a blob missing, never
//! wrong), or from an image list (`--image`, `--images-file`, resolved and judged by
//! [`crate::push`]). The upload itself is [`crate::registry`]'s (`upload`, `push`). Prints
//! `<source name> <pushed name>@<digest>` per image pushed, or with `--dry-run` the blobs the
//! target lacks.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use futures_util::{StreamExt, stream};

use super::{AppError, net};
use crate::cache::{Cache, IsoSource, Members};
use crate::cli::PushArgs;
use crate::image::{Arch, Digest, Reference};
use crate::lock::Lock;
use crate::registry::{Mapping, PushImage, PushOutcome, Registry, Tally, Target};
use crate::ui::Ui;

/// Pushes, prints a line per image, writes the mapping file; exit 1 naming each image that failed.
pub fn run(args: PushArgs, ui: &Ui) -> Result<(), AppError> {
    let mut settings = net::settings(args.net)?;
    let mapping = Mapping::parse(&args.mapping).expect("clap takes nested or flat");
    let target = Target::parse(&args.to, &settings.insecure_registries)
        .map_err(|e| {
            AppError::usage(
                anyhow::anyhow!(e),
                Some("--to names the registry and an optional prefix: HOST[:PORT][/PREFIX]".into()),
            )
        })?
        .with_mapping(mapping);
    if args.chunk_size < 1024 {
        return Err(AppError::usage(
            anyhow::anyhow!("--chunk-size {}: less than 1024 bytes", args.chunk_size),
            Some("leave it out for 16 MiB chunks".into()),
        ));
    }
    let cache = net::writable_cache(args.cache_dir)?;
    let runtime = net::transfer_runtime()?;
    let list = List {
        images: &args.images,
        files: &args.images_files,
        arches: &args.arches,
        signing: &args.signing,
    };
    let path = args.locked.clone().or(args.source.clone());
    let (mut images, offline) = match path {
        Some(path) => {
            let (images, is_iso) = lock_images(&path, &cache, args.without_signatures)?;
            (images, args.offline || is_iso)
        }
        None => {
            settings.http.offline = args.offline;
            let images = list_images(list, &target, &settings, &cache, &runtime, ui)?;
            (images, args.offline)
        }
    };
    if args.without_signatures {
        images.iter_mut().for_each(|i| i.signatures.clear());
    }
    check_names(&target, images.iter().map(|i| &i.reference))?;
    settings.http.offline = offline;
    let source = net::registry(&settings, cache.clone())?;
    let mut target_settings = settings.clone();
    target_settings.http.offline = false;
    if let Some(file) = args.to_authfile {
        target_settings.authfile = Some(file);
    }
    let pusher = net::registry(&target_settings, cache)?.for_push();
    if !offline {
        let fetched = runtime.block_on(complete_all(&source, &images));
        let fetched = fetched.into_iter().map(|r| r.map_err(AppError::from));
        report_failures(
            &names(&images),
            fetched.collect(),
            "fetched from its source",
            ui,
        )?;
    }
    if args.dry_run {
        return runtime.block_on(dry_run(&pusher, &target, &images));
    }
    let tally = Tally::default();
    let results: Vec<Result<PushOutcome, crate::registry::RegistryError>> =
        runtime.block_on(async {
            stream::iter(&images)
                .map(|image| pusher.push_image(&target, image, args.chunk_size, &tally))
                .buffered(pusher.jobs().min(4))
                .collect()
                .await
        });
    let (mapping, outcomes) = outcomes(&images, results);
    if let Some(file) = &args.mapping_file {
        write_mapping(file, &mapping)?;
    }
    summary(&tally, &target);
    report_failures(&names(&images), outcomes, "pushed", ui)
}

/// Prints a line per image pushed, with the warnings of its outcome; the mapping file's text
/// and each image's result.
fn outcomes(
    images: &[PushImage],
    results: Vec<Result<PushOutcome, crate::registry::RegistryError>>,
) -> (String, Vec<Result<(), AppError>>) {
    let mut mapping = String::new();
    let mut outcomes = Vec::new();
    for (image, result) in images.iter().zip(results) {
        let done = match result {
            Ok(done) => done,
            Err(err) => {
                outcomes.push(Err(AppError::from(err)));
                continue;
            }
        };
        let line = format!("{} {}@{}", image.reference, shown(&done), done.digest);
        if let Some(note) = &done.note {
            tracing::warn!("{}: {note}", image.reference);
        }
        if !done.unsigned.is_empty() {
            tracing::warn!(
                "{}: the accepted signature(s) {} are not in the source (an ISO carries \
                 none, an offline cache may lack their config): not pushed; push from \
                 the lock with the network to carry them",
                image.reference,
                done.unsigned.join(", ")
            );
        }
        crate::outln!("{line}");
        mapping.push_str(&line);
        mapping.push('\n');
        outcomes.push(Ok(()));
    }
    (mapping, outcomes)
}

/// Refuses, before anything is fetched, two images that would land on one name of the target.
fn check_names<'a>(
    target: &Target,
    references: impl IntoIterator<Item = &'a Reference>,
) -> Result<(), AppError> {
    target.check_names(references).map_err(|e| {
        let hint = match target.mapping {
            Mapping::Flat => "push them with --map nested, or in two pushes to different prefixes",
            Mapping::Nested => "push them in two pushes to different prefixes",
        };
        AppError::usage(anyhow::anyhow!(e), Some(hint.into()))
    })
}

fn names(images: &[PushImage]) -> Vec<String> {
    images.iter().map(|i| i.reference.to_string()).collect()
}

/// The images of the lock (or ISO) at `path`, and whether it is an ISO; an ISO's images are
/// taken into the cache first.
fn lock_images(
    path: &Path,
    cache: &Cache,
    without_signatures: bool,
) -> Result<(Vec<PushImage>, bool), AppError> {
    let (lock, origin) = crate::lock::source::read(path)?;
    let is_iso = origin != path.display().to_string();
    let lock = match is_iso {
        true => seed_from_iso(path, lock, &origin, cache)?,
        false => lock,
    };
    Ok((plan(&lock, without_signatures)?, is_iso))
}

/// `--image`, `--images-file`, `--arch` and the signature flags of a push of an image list.
struct List<'a> {
    images: &'a [String],
    files: &'a [std::path::PathBuf],
    arches: &'a [String],
    signing: &'a crate::cli::SignatureArgs,
}

/// The images of `--image` and `--images-file`, read as build reads them, resolved and judged
/// by [`crate::push::resolve_list`]; exit 1 naming each that failed.
fn list_images(
    list: List<'_>,
    target: &Target,
    settings: &crate::config::Settings,
    cache: &Cache,
    runtime: &tokio::runtime::Runtime,
    ui: &Ui,
) -> Result<Vec<PushImage>, AppError> {
    let addons = crate::pipeline::addons(list.images, list.files, &[])?;
    let references = (addons.images.iter())
        .map(|text| Reference::parse(text))
        .collect::<Result<Vec<_>, _>>()?;
    check_names(target, &references)?;
    let mut arches = Vec::new();
    for text in list.arches {
        let arch = Arch::parse(text).map_err(|_| AppError::unknown_arch(text))?;
        if !arches.contains(&arch) {
            arches.push(arch);
        }
    }
    if arches.is_empty() {
        arches.push(Arch::Amd64);
    }
    let flags = crate::trust::checker::Flags {
        mode: list.signing.signatures.as_deref(),
        trusted_root: list.signing.trust.trusted_root.as_deref(),
        policy: list.signing.trust.signature_policy.as_deref(),
        rekor_url: None,
    };
    let checker = crate::trust::checker::select(flags, settings)?;
    let source = net::registry(settings, cache.clone())?;
    let vouched = !settings.http.offline;
    let resolving =
        crate::push::resolve_list(&source, &references, &arches, checker.as_ref(), vouched);
    let results = runtime.block_on(resolving);
    let names: Vec<String> = references.iter().map(ToString::to_string).collect();
    let mut images = Vec::new();
    let mut outcomes = Vec::new();
    for result in results {
        match result {
            Ok(image) => {
                images.push(image);
                outcomes.push(Ok(()));
            }
            Err(crate::push::ListError::Registry(e)) => outcomes.push(Err(e.into())),
            Err(crate::push::ListError::Signature(e)) => outcomes.push(Err(e.into())),
        }
    }
    report_failures(&names, outcomes, "resolved", ui)?;
    Ok(images)
}

/// `name:tag`, or the name alone for an image pinned by digest.
fn shown(done: &PushOutcome) -> String {
    match &done.tag {
        Some(tag) => format!("{}:{tag}", done.name),
        None => done.name.clone(),
    }
}

/// Takes into the cache what the ISO holds of its own lock, for the arches whose images it
/// holds; the lock narrowed to those arches.
fn seed_from_iso(path: &Path, lock: Lock, origin: &str, cache: &Cache) -> Result<Lock, AppError> {
    // By name: each blob goes into the cache only through its writer, which hashes it.
    let iso = IsoSource::open(path, Members::Named)?;
    let held = iso.digests();
    let arches: Vec<&str> = (lock.arches.iter())
        .filter(|(_, a)| {
            !a.images.is_empty()
                && a.images
                    .iter()
                    .all(|i| Digest::parse(&i.manifest).is_ok_and(|d| held.contains(&d)))
        })
        .map(|(name, _)| name.as_str())
        .collect();
    if arches.is_empty() {
        return Err(AppError::failure(
            anyhow::anyhow!(
                "{}: its docker/ archives hold the images of none of its lock's arches ({})",
                path.display(),
                lock.arch_list()
            ),
            Some("pass an ISO built by cks-iso with its images, or its lock with --locked".into()),
        ));
    }
    let lock = lock.only(&arches, origin).map_err(|e| {
        let hint = e.hint();
        AppError::usage(e, hint)
    })?;
    let seeded = iso.seed(cache, &lock).map_err(|e| {
        let hint = e.hint();
        AppError::failure(e, hint)
    })?;
    tracing::debug!(
        "{}: {} blobs ({} bytes) taken into the cache",
        path.display(),
        seeded.blobs,
        seeded.bytes
    );
    Ok(lock)
}

/// The images of every arch of `lock`, each once, with their platform manifests and (unless
/// left out) the signature manifests the lock accepted for them.
fn plan(lock: &Lock, without_signatures: bool) -> Result<Vec<PushImage>, AppError> {
    let mut images: BTreeMap<(String, Digest), PushImage> = BTreeMap::new();
    for arch in lock.arches.values() {
        for entry in &arch.images {
            let reference = Reference::parse(&entry.reference)?;
            let bad = |field: &str, value: &str| {
                AppError::usage(
                    anyhow::anyhow!(
                        "the lock's {field} of {} is not a digest: {value:?}",
                        entry.reference
                    ),
                    Some("the lock was edited or damaged: write it again with `cks-iso resolve --lock`".into()),
                )
            };
            let top = Digest::parse(&entry.digest).map_err(|_| bad("digest", &entry.digest))?;
            let platform =
                Digest::parse(&entry.manifest).map_err(|_| bad("manifest", &entry.manifest))?;
            let image = images
                .entry((reference.to_string(), top.clone()))
                .or_insert_with(|| PushImage {
                    reference,
                    top,
                    platforms: Vec::new(),
                    signatures: Vec::new(),
                });
            if !image.platforms.contains(&platform) {
                image.platforms.push(platform);
            }
            if let Some(sig) = entry.signature.as_ref().filter(|_| !without_signatures) {
                let digest =
                    Digest::parse(&sig.manifest).map_err(|_| bad("signature", &sig.manifest))?;
                if !image.signatures.iter().any(|(_, d)| *d == digest) {
                    image.signatures.push((sig.tag.clone(), digest));
                }
            }
        }
    }
    Ok(images.into_values().collect())
}

/// Fetches what each image's index lists and its signatures' blobs into the cache.
async fn complete_all(
    source: &Registry,
    images: &[PushImage],
) -> Vec<Result<(), crate::registry::RegistryError>> {
    stream::iter(images)
        .map(|image| source.complete(image))
        .buffered(source.jobs().min(4))
        .collect()
        .await
}

/// `--dry-run`: each blob the target lacks, then the total.
async fn dry_run(pusher: &Registry, target: &Target, images: &[PushImage]) -> Result<(), AppError> {
    let mut total: BTreeMap<Digest, u64> = BTreeMap::new();
    for image in images {
        let name = target.name(&image.reference);
        for (what, digest, size) in pusher.missing_at(target, image).await? {
            crate::outln!("{name} {what} {digest} {}", indicatif::HumanBytes(size));
            total.insert(digest, size);
        }
    }
    crate::outln!(
        "would upload {} ({}) to {}; nothing was uploaded",
        crate::ui::count(total.len() as u64, "blob", "blobs"),
        indicatif::HumanBytes(total.values().sum()),
        target.host
    );
    Ok(())
}

fn summary(tally: &Tally, target: &Target) {
    let by_api = Tally::get(&tally.by_referrers_api);
    tracing::info!(
        "{}: uploaded {} ({}), {} already there, {} mounted, {} put, {} resumed, {} started \
         again{}",
        target.host,
        crate::ui::count(Tally::get(&tally.uploaded), "blob", "blobs"),
        indicatif::HumanBytes(Tally::get(&tally.uploaded_bytes)),
        Tally::get(&tally.present),
        Tally::get(&tally.mounted),
        crate::ui::count(Tally::get(&tally.manifests), "manifest", "manifests"),
        crate::ui::count(
            Tally::get(&tally.resumed),
            "chunked upload",
            "chunked uploads"
        ),
        Tally::get(&tally.restarted),
        match by_api {
            0 => String::new(),
            n => format!(", {n} referrer(s) listed by its Referrers API"),
        }
    );
}

/// Prints each failure and fails naming the images, or `Ok` when there were none.
fn report_failures(
    names: &[String],
    results: Vec<Result<(), AppError>>,
    done: &str,
    ui: &Ui,
) -> Result<(), AppError> {
    let mut failed = Vec::new();
    for (name, result) in names.iter().zip(results) {
        if let Err(err) = result {
            let (top, causes) = err.lines();
            ui.error(&top, &causes, err.advice().as_deref());
            failed.push(name.clone());
        }
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(AppError::failure(
            anyhow::anyhow!(
                "{} of {} image(s) could not be {done}: {}",
                failed.len(),
                names.len(),
                failed.join(", ")
            ),
            Some(
                "each error above names its image, its cause and what to do; a push after the \
                 fix uploads only what the target lacks"
                    .into(),
            ),
        )),
    }
}

/// Writes the mapping file whole or not at all.
fn write_mapping(file: &Path, text: &str) -> Result<(), AppError> {
    let fail = |e: std::io::Error| {
        AppError::failure(
            anyhow::Error::new(e)
                .context(format!("cannot write --mapping-file {}", file.display())),
            Some("pass --mapping-file a path in a directory you can write to".into()),
        )
    };
    let mut out = crate::atomic::AtomicFile::create(file).map_err(fail)?;
    out.file().write_all(text.as_bytes()).map_err(fail)?;
    out.commit().map_err(fail)?;
    Ok(())
}
