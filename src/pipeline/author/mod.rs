//! Writing the ISOs of a realized build: per architecture, the image archives, `signatures/`,
//! `versions.txt`, the SBOMs, the ISO and its `.sha256` and SBOMs beside it, from what
//! [`crate::pipeline::realize`] staged; and the run's lock beside them. No network.
//!
//! Why it only writes: what `versions.txt` and the SBOMs say is rendered by the domain crate from
//! the run's lock and a small value of what was staged ([`crate::staged`]: the archive names, the
//! manifest edits, the signature verdicts), so new content changes the lock and its renderings,
//! not this module; `signatures/report.json` is the verdicts themselves, rendered by
//! [`cks_iso_sigstore::evidence`]. What is left here is the file system and the ISO writer: the
//! archives spliced from the cache, one writer thread per ISO, and leaving nothing behind on
//! failure.

mod error;
mod sboms;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub use error::AuthorError;

use crate::archive;
use crate::atomic::AtomicFile;
use crate::cache::Cache;
use crate::contract;
use crate::image::Arch;
use crate::lock::{self, Lock};
use crate::pipeline::realize::signatures::{self, ArchSignatures};
use crate::pipeline::realize::{ArchRealized, Realized};
use crate::plan::{self, Request};
use crate::reporter::Reporter;
use crate::sbom::{Inventory, IsoFacts};
use crate::staged::Staged;
use crate::versions;
use cks_iso_io::Sha256Sum;
use cks_iso_iso9660::{IsoSpec, VolumeId};

/// One finished ISO: what a summary prints and what CloudStack registers.
#[derive(Debug, Clone)]
pub struct BuiltIso {
    /// Where it was written.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Its sha256, lowercase hex.
    pub sha256: String,
    /// The architecture of its binaries and images.
    pub arch: Arch,
    /// The Kubernetes release it carries (`1.33.1`).
    pub kubernetes: String,
    /// How many image archives it holds.
    pub images: usize,
    /// How many other files it holds.
    pub files: usize,
}

/// What `build` knows of an ISO it wrote ([`BuiltIso`]): the one place the build
/// fills this type in.
impl From<&BuiltIso> for crate::cloudstack::IsoToRegister {
    fn from(b: &BuiltIso) -> Self {
        Self {
            path: b.path.clone(),
            semver: b.kubernetes.trim_start_matches('v').to_owned(),
            name: crate::cloudstack::IsoToRegister::name_of(&b.path),
            arch: b.arch,
            sha256: b.sha256.to_ascii_lowercase(),
            size: b.size,
        }
    }
}

/// Writes every ISO, all at once (one thread each: a single ISO keeps about one core and a half
/// busy, so a second one fills the machine instead of waiting for the first). The first failure
/// stops the other writers at their next archive chunk; every ISO of the run is then removed and
/// that first failure returned.
pub fn all(run: Run<'_>, reporter: &dyn Reporter) -> Result<Vec<BuiltIso>, AuthorError> {
    let fetched = run.fetched;
    let outputs = outputs(run.request, fetched);
    let labels: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let progress = reporter.bytes_group(&labels);
    // Which writer failed first (`usize::MAX`: none yet); the others see it and stop.
    let first_failure = AtomicUsize::new(usize::MAX);
    let results: Vec<Result<BuiltIso, AuthorError>> = std::thread::scope(|scope| {
        let writers: Vec<_> = fetched
            .arches
            .iter()
            .zip(&progress)
            .enumerate()
            .map(|(i, (arch, progress))| {
                let first_failure = &first_failure;
                // The writers log in the build's span (several builds' lines say whose they are).
                let span = tracing::Span::current();
                scope.spawn(move || {
                    let _span = span.entered();
                    let stop = || first_failure.load(Ordering::SeqCst) != usize::MAX;
                    let result = one(run, arch, progress.as_ref(), &stop);
                    if result.is_err() {
                        let _ = first_failure.compare_exchange(
                            usize::MAX,
                            i,
                            Ordering::SeqCst,
                            Ordering::SeqCst,
                        );
                    }
                    result
                })
            })
            .collect();
        writers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let built: Vec<BuiltIso> = results
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .cloned()
        .collect();
    match first_failure.into_inner() {
        usize::MAX => Ok(built),
        first => {
            remove(&built);
            Err(results
                .into_iter()
                .nth(first)
                .and_then(Result::err)
                .expect("the first failure is an error"))
        }
    }
}

/// Each ISO's progress label (`writing <path>`), each said in the log.
fn outputs(request: &Request, fetched: &Realized) -> Vec<String> {
    fetched
        .arches
        .iter()
        .map(|a| {
            let iso = request.output.join(plan::iso_name(request, a.arch));
            tracing::info!(
                "linux/{}: writing {} with {} image archives",
                a.arch.k8s(),
                iso.display(),
                a.images.len()
            );
            format!("writing {}", iso.display())
        })
        .collect()
}

/// What every ISO of the run is written from.
#[derive(Clone, Copy)]
pub struct Run<'a> {
    /// What goes into the ISOs (their names, the output directory).
    pub request: &'a Request,
    /// What was realized.
    pub fetched: &'a Realized,
    /// The run's lock.
    pub lock: &'a Lock,
    /// The ISOs' volume ID.
    pub volume_id: &'a VolumeId,
    /// The ISOs' `SOURCE_DATE_EPOCH`.
    pub epoch: i64,
    /// The cache that holds every image's blobs.
    pub cache: &'a Cache,
}

/// An archive's bytes for the ISO, unless another writer has failed: then the ISO stops at its
/// next chunk instead of being written to the end only to be removed.
struct Stoppable<'a, F> {
    inner: F,
    stop: &'a dyn Fn() -> bool,
}

impl<F: cks_iso_iso9660::Filler> cks_iso_iso9660::Filler for Stoppable<'_, F> {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if (self.stop)() {
            return Err("stopped: the ISO of another architecture failed".into());
        }
        self.inner.fill(buf)
    }
}

/// Removes ISOs this run wrote, and what it wrote beside them.
pub fn remove(built: &[BuiltIso]) {
    for b in built {
        let _ = std::fs::remove_file(&b.path);
        let _ = std::fs::remove_file(sha_path(&b.path));
        for sbom in sboms::beside_paths(&b.path) {
            let _ = std::fs::remove_file(sbom);
        }
    }
}

fn sha_path(iso: &Path) -> PathBuf {
    let mut name = iso.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

fn one(
    run: Run<'_>,
    a: &ArchRealized,
    progress: &dyn crate::progress::Progress,
    stop: &dyn Fn() -> bool,
) -> Result<BuiltIso, AuthorError> {
    let naming = naming(a);
    // Each archive is described now (its exact size is known without reading a blob) and its bytes
    // go from the cache straight into the ISO: no `docker/*.tar` in the work dir.
    let mtime = u64::try_from(run.epoch).unwrap_or(0);
    let mut archives = Vec::new();
    for image in &a.images {
        let file = &naming.files[&image.reference];
        let archive = archive::Archive::describe(image, mtime)?;
        archives.push((contract::image_archive(file), archive));
    }
    if let Some(sigs) = &a.signatures {
        write_signatures(&a.staging, sigs)?;
    }
    let judged = signatures::judged(a.signatures.as_ref(), &a.images, &a.files);
    let staged = Staged::new(&naming, run.fetched.edits.clone(), judged);
    let inventory = write_records(run.lock, a, &staged)?;
    let output = run.request.output.join(&inventory.iso);
    let cache = run.cache;
    let spliced = archives
        .iter()
        .map(|(path, archive)| cks_iso_iso9660::Spliced {
            path: path.clone(),
            len: archive.size(),
            filler: Box::new(Stoppable {
                inner: archive.reader(cache),
                stop,
            }),
        })
        .collect();
    let spec = IsoSpec {
        volume_id: run.volume_id.clone(),
        epoch: run.epoch,
    };
    let written = cks_iso_iso9660::author_spliced(&a.staging, spliced, &output, &spec, progress)
        .map_err(iso_error)?;
    let sha256 = match written.sha256 {
        Some(sha) => sha,
        None => hash_file(&written.path)?,
    };
    write_beside(&written, &sha256, &inventory)?;
    let _ = std::fs::remove_dir_all(&a.staging);
    Ok(BuiltIso {
        path: written.path,
        size: written.size,
        sha256: sha256.to_string(),
        arch: a.arch,
        kubernetes: run.lock.request.kubernetes.clone(),
        images: a.images.len(),
        files: a.files.len(),
    })
}

/// The archive names of `a`'s images, each rename said.
fn naming(a: &ArchRealized) -> archive::Naming {
    let naming = archive::assign_names(a.images.iter().map(|i| &i.reference));
    for renamed in &naming.renamed {
        tracing::warn!(
            "{} and another image share the archive name {}; {} is written as {}",
            renamed.reference,
            renamed.plain,
            renamed.reference,
            renamed.file
        );
    }
    naming
}

/// Writes into `a`'s staging root what renders the run's `lock` and what was `staged`:
/// `versions.txt`, the ISO's own lock and the SBOMs; returns the SBOMs' inventory, which the
/// copies beside the ISO repeat.
fn write_records(lock: &Lock, a: &ArchRealized, staged: &Staged) -> Result<Inventory, AuthorError> {
    let held = "the run's lock holds every arch it built";
    let text = versions::render_for(lock, a.arch, staged).expect(held);
    std::fs::write(a.staging.join(contract::VERSIONS), text)
        .map_err(AuthorError::io("cannot write versions.txt"))?;
    let mut own = lock.only(&[a.arch.k8s()], "the run's lock").expect(held);
    // The ISO is the one its release builds, whatever label named the release.
    own.request.kubernetes_label = None;
    std::fs::write(a.staging.join(lock::FILE_NAME), own.render())
        .map_err(AuthorError::io(format!("cannot write {}", lock::FILE_NAME)))?;
    let inventory = Inventory::of(lock, a.arch, staged).expect(held);
    sboms::write_into(&a.staging, &inventory)?;
    Ok(inventory)
}

/// Writes `<iso>.sha256` and the SBOMs beside the `written` ISO; when the SBOMs fail, the ISO and
/// its `.sha256` are removed too.
fn write_beside(
    written: &cks_iso_iso9660::Written,
    sha256: &Sha256Sum,
    inventory: &Inventory,
) -> Result<(), AuthorError> {
    let name = written
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sums = sha_path(&written.path);
    let fail = |e| AuthorError::io(format!("cannot write {}", sums.display()))(e);
    let mut out = AtomicFile::create(&sums).map_err(fail)?;
    writeln!(out.file(), "{sha256}  {name}").map_err(fail)?;
    out.set_mode(0o644).map_err(fail)?;
    out.commit().map_err(fail)?;
    let facts = IsoFacts {
        size: written.size,
        sha256: sha256.to_string(),
    };
    if let Err(e) = sboms::write_beside(&written.path, inventory, &facts) {
        let _ = std::fs::remove_file(&written.path);
        let _ = std::fs::remove_file(&sums);
        return Err(e);
    }
    Ok(())
}

/// An archive that failed inside the ISO is reported as the archive error it is (naming the image,
/// the blob and both digests, with its hint).
fn iso_error(err: cks_iso_iso9660::IsoError) -> AuthorError {
    match err {
        cks_iso_iso9660::IsoError::Spliced { path, source } => match source
            .downcast::<archive::ArchiveError>()
        {
            Ok(archive) => AuthorError::from(*archive),
            Err(source) => AuthorError::from(cks_iso_iso9660::IsoError::Spliced { path, source }),
        },
        other => AuthorError::from(other),
    }
}

fn hash_file(path: &Path) -> Result<Sha256Sum, AuthorError> {
    let fail = |e| AuthorError::io(format!("cannot read {}", path.display()))(e);
    Sha256Sum::of_reader(std::fs::File::open(path).map_err(fail)?).map_err(fail)
}

/// Writes `signatures/` (see [`cks_iso_sigstore::evidence`]) into the staging directory
/// `staging`.
fn write_signatures(staging: &Path, sigs: &ArchSignatures) -> Result<(), AuthorError> {
    for (rel, bytes) in cks_iso_sigstore::evidence(
        &sigs.report,
        &sigs.manifests,
        &sigs.binaries,
        &sigs.trusted_root,
    ) {
        let path = staging.join(signatures::DIR).join(&rel);
        let fail = |e| AuthorError::io(format!("cannot write {}", path.display()))(e);
        std::fs::create_dir_all(path.parent().expect("under signatures/")).map_err(fail)?;
        std::fs::write(&path, bytes).map_err(fail)?;
    }
    Ok(())
}

/// Writes `lock` to `path` atomically.
pub fn write_lock(path: &Path, lock: &Lock) -> Result<(), AuthorError> {
    let fail = |source| AuthorError::LockFile {
        path: path.to_owned(),
        source,
    };
    let mut out = AtomicFile::create(path).map_err(fail)?;
    out.file()
        .write_all(lock.render().as_bytes())
        .map_err(fail)?;
    out.set_mode(0o644).map_err(fail)?;
    out.commit().map_err(fail)?;
    Ok(())
}
