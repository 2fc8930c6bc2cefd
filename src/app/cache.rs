//! `cks-iso cache export|import|ls|verify|prune`: the blob cache as something an operator can
//! carry across an air gap, inspect, check and trim. The work is [`crate::carry`]'s; these
//! functions read the arguments and the locks, call it, and print: data on stdout, logs on
//! stderr, errors naming the blob and what to do.

use super::{AppError, net};
use crate::carry::{self, CarryError, Finding, human, read_locks};
use crate::cli::{
    CacheCommand, CacheExportArgs, CacheImportArgs, CacheLsArgs, CachePruneArgs, CacheVerifyArgs,
};
use crate::ui::Ui;
use crate::upstream::admit;

/// Runs one `cache` subcommand.
pub fn run(command: CacheCommand, ui: &Ui) -> Result<(), AppError> {
    match command {
        CacheCommand::Export(args) => export(args, ui),
        CacheCommand::Import(args) => import(args, ui),
        CacheCommand::Ls(args) => ls(args),
        CacheCommand::Verify(args) => verify(args, ui),
        CacheCommand::Prune(args) => prune(args),
    }
}

impl From<CarryError> for AppError {
    fn from(err: CarryError) -> Self {
        let hint = err.hint();
        match err.is_usage() {
            true => Self::usage(err, hint),
            false => Self::failure(err, hint),
        }
    }
}

/// Writes what the locks need into `--output`, laid out as a cache.
fn export(args: CacheExportArgs, ui: &Ui) -> Result<(), AppError> {
    let cache = net::cache(args.cache.cache_dir)?;
    let locks = read_locks(&args.locked)?;
    // A delta: what the far side already holds is left out, and said in delta.json.
    let held = carry::held(&cache, &args.minus)?;
    let done = carry::export(&cache, &locks, &held, &args.output, ui)?;
    let Some(delta) = done.delta else {
        crate::outln!(
            "exported {} blob(s), {} ({} copied), and {} index entries to {}",
            done.blobs,
            human(done.bytes),
            done.copied,
            done.keys,
            args.output.display()
        );
        return Ok(());
    };
    let full = delta.full.bytes;
    crate::outln!(
        "exported a delta to {}: {} blob(s), {} ({:.1}% of the {} a full export carries); it \
         assumes the far side holds {} blob(s), {}, of {} (listed in {})",
        args.output.display(),
        done.blobs,
        human(done.bytes),
        match full {
            0 => 0.0,
            w => done.bytes as f64 * 100.0 / w as f64,
        },
        human(full),
        delta.assumes.len(),
        human(full.saturating_sub(done.bytes)),
        (delta.minus.iter().map(|m| m.file.as_str()))
            .collect::<Vec<_>>()
            .join(", "),
        crate::cache::DELTA_FILE
    );
    Ok(())
}

/// Adds every blob of `DIR` and the index entries evidence from outside it admits (see
/// [`carry::import`]); exit 1 when an entry was refused or a blob is corrupt.
fn import(args: CacheImportArgs, ui: &Ui) -> Result<(), AppError> {
    let carry = carry::Carry::open(&args.dir)?;
    let cache = net::cache(args.cache.cache_dir)?;
    let trust = admit::Trust {
        root: crate::trust::trusted_root(args.trusted_root.as_deref(), None)?.0,
        policy: crate::trust::policy(args.signature_policy.as_deref())?,
        now: crate::trust::now(),
    };
    let locks = read_locks(&args.locked)?;
    let done = carry::import(&carry, &cache, &locks, &trust, &args.from_iso, ui)?;
    warn_unverifiable(&carry, &trust, args.trusted_root.as_deref());
    crate::outln!(
        "imported {} blob(s), {} ({} new), and {} index entries into {}{}",
        done.blobs,
        human(done.bytes),
        done.added,
        done.entries,
        cache.root().display(),
        match done.skipped {
            0 => String::new(),
            n => format!("; {n} index entries skipped (named above)"),
        }
    );
    match done.failure {
        None => Ok(()),
        Some(err) => Err(err.into()),
    }
}

/// Warns when signed downloads of the carry do not verify against the trusted root this side
/// uses: the import takes them (a lock vouches for their bytes), but a `build` here verifies
/// their signatures again and would fail one step later, after an import that said nothing.
fn warn_unverifiable(carry: &carry::Carry, trust: &admit::Trust, root: Option<&std::path::Path>) {
    let failing = admit::unverifiable(carry.cache(), trust);
    let Some((url, why)) = failing.first() else {
        return;
    };
    let origin = match root {
        Some(path) => path.display().to_string(),
        None => "Sigstore's public-good root (embedded)".to_owned(),
    };
    tracing::warn!(
        "{} signed download(s) imported from {} do not verify against the trusted root this side \
         uses ({origin}): {url}: {why}; a `build` here checks them again and fails: pass the \
         trusted root they were signed under with --trusted-root, to import and build",
        failing.len(),
        carry.dir().display()
    );
}

/// Prints the blobs' count and size, the index, and what each lock needs.
fn ls(args: CacheLsArgs) -> Result<(), AppError> {
    let cache = net::cache(args.cache.cache_dir)?;
    let locks = read_locks(&args.locked)?;
    let inventory = carry::inventory(&cache, &locks).map_err(CarryError::from)?;
    match args.json {
        true => crate::outln!(
            "{}",
            serde_json::to_string_pretty(&inventory.to_json()).expect("JSON of plain values")
        ),
        false => inventory.lines().iter().for_each(|l| crate::outln!("{l}")),
    }
    Ok(())
}

/// Rehashes every blob and checks every index entry; names each problem; with `--fix` removes
/// what is broken.
fn verify(args: CacheVerifyArgs, ui: &Ui) -> Result<(), AppError> {
    let cache = net::cache(args.cache.cache_dir)?;
    let print = &mut |finding: Finding| crate::outln!("{finding}");
    let done = carry::verify(&cache, args.fix, ui, print)?;
    match done.problems {
        0 => crate::outln!(
            "ok: {} blob(s) and {} index entries in {}",
            done.blobs,
            done.entries,
            cache.root().display()
        ),
        n => crate::outln!("fixed {n} problem(s): removed {} file(s)", done.removed),
    }
    Ok(())
}

/// Removes every blob and index entry that none of the locks needs.
fn prune(args: CachePruneArgs) -> Result<(), AppError> {
    let cache = net::cache(args.cache.cache_dir)?;
    let locks = read_locks(&args.keep_locked)?;
    let print = &mut |finding: Finding| crate::outln!("{finding}");
    let done = carry::prune(&cache, &locks, print)?;
    crate::outln!(
        "freed {}: {} blob(s) and {} index entries removed, {} blob(s) kept",
        human(done.freed),
        done.blobs,
        done.entries,
        done.kept
    );
    Ok(())
}
