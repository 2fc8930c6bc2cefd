//! Writing the ISOs of a realized build: per architecture, the image archives, `signatures/`,
//! `versions.txt`, the SBOMs, the ISO and its `.sha256` and SBOMs beside it, from what
//! [`crate::realize`] staged; and the run's lock beside them. No network.

mod error;
mod sboms;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub use error::AuthorError;

use crate::archive;
use crate::atomic::AtomicFile;
use crate::contract;
use crate::image::Arch;
use crate::lock::{self, Lock};
use crate::plan::{self, Request};
use crate::realize::{ArchRealized, ArchSignatures, Realized, signatures};
use crate::reporter::Reporter;
use crate::sbom::{Inventory, IsoFacts};
use crate::versions::{FileRecord, ImageRecord, Versions};
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

/// Writes every ISO, all at once (one thread each: a single ISO keeps about one core and a half
/// busy, so a second one fills the machine instead of waiting for the first). The first failure
/// stops the other writers at their next archive chunk; every ISO of the run is then removed and
/// that first failure returned.
pub fn all(
    request: &Request,
    fetched: &Realized,
    lock: &Lock,
    volume_id: &VolumeId,
    epoch: i64,
    reporter: &dyn Reporter,
) -> Result<Vec<BuiltIso>, AuthorError> {
    let outputs: Vec<String> = fetched
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
        .collect();
    let labels: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let progress = reporter.bytes_group(&labels);
    let run = Run {
        request,
        fetched,
        lock,
        volume_id,
        epoch,
    };
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
                scope.spawn(move || {
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

/// What every ISO of the run is written from.
#[derive(Clone, Copy)]
struct Run<'a> {
    request: &'a Request,
    fetched: &'a Realized,
    lock: &'a Lock,
    volume_id: &'a VolumeId,
    epoch: i64,
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
    let Run {
        request,
        fetched,
        lock,
        volume_id,
        epoch,
    } = run;
    let arch = a.arch.k8s();
    let references: Vec<_> = a.images.iter().map(|i| i.reference.clone()).collect();
    let naming = archive::assign_names(&references);
    for renamed in &naming.renamed {
        tracing::warn!(
            "{} and another image share the archive name {}; {} is written as {}",
            renamed.reference,
            renamed.plain,
            renamed.reference,
            renamed.file
        );
    }
    let mtime = u64::try_from(epoch).unwrap_or(0);
    let extras = extras_of(lock, arch);
    let mut images = Vec::new();
    // Each archive is described now (its exact size is known without reading a blob) and its bytes
    // go from the cache straight into the ISO: no `docker/*.tar` in the work dir.
    let mut archives = Vec::new();
    for image in &a.images {
        let file = &naming.files[&image.reference];
        archives.push((
            contract::image_archive(file),
            archive::Archive::describe(image, mtime)?,
        ));
        images.push(ImageRecord {
            name: image.reference.to_string(),
            digest: image.top.digest.to_string(),
            archive: contract::image_archive(file),
        });
    }
    if let Some(sigs) = &a.signatures {
        write_signatures(&a.staging, sigs)?;
    }
    // The versions are the lock's: versions.txt renders the lock and what was staged.
    let r = &lock.request;
    let versions = Versions {
        kubernetes: format!("v{}", r.kubernetes),
        arch: arch.to_owned(),
        cni_plugins: format!("v{}", r.cni),
        crictl: format!("v{}", r.crictl),
        etcd: r.etcd.as_ref().map(|e| format!("v{e}")),
        autoscaler: r.autoscaler.clone(),
        ccm: r.ccm.clone(),
        csi_driver: r.csi.clone(),
        cloudstack: r.cloudstack.clone(),
        files: a
            .files
            .iter()
            .map(|f| FileRecord {
                path: f.dest.clone(),
                sha256: f.sha256.clone(),
                source: f.source.clone(),
            })
            .collect(),
        images,
    };
    let mut text = versions.render();
    // Comments, so that readers of versions.txt (older cks-iso verify too) skip them.
    for (path, edit) in &fetched.edits {
        text.push_str(&format!("# edit {path}: {edit}\n"));
    }
    // The add-on images, told apart from the core ones (their `image` lines stay alike, so that
    // every reader counts one line per archive).
    for (name, why) in &extras {
        text.push_str(&format!("# extra {name} {}\n", lock::extra_words(why)));
    }
    // A comment: readers of versions.txt (older cks-iso verify too) skip it.
    match &a.signatures {
        Some(sigs) => text.push_str(&signatures::summary(sigs)),
        None => text.push_str(signatures::OFF_SUMMARY),
    }
    std::fs::write(a.staging.join(contract::VERSIONS), text)
        .map_err(AuthorError::io("cannot write versions.txt"))?;
    let mut own = lock
        .only(&[arch], "the run's lock")
        .expect("the run's lock holds every arch it built");
    // The ISO is the one its release builds, whatever label named the release.
    own.request.kubernetes_label = None;
    std::fs::write(a.staging.join(lock::FILE_NAME), own.render())
        .map_err(AuthorError::io(format!("cannot write {}", lock::FILE_NAME)))?;
    let inventory = Inventory {
        iso: plan::iso_name(request, a.arch),
        versions: &versions,
        manifests: a
            .images
            .iter()
            .map(|i| {
                let archive = contract::image_archive(&naming.files[&i.reference]);
                (archive, i.manifest.digest.to_string())
            })
            .collect(),
        signatures: match &a.signatures {
            Some(s) => signatures::sbom_notes(s, &naming.files),
            None => signatures::off_notes(&a.images, &a.files, &naming.files),
        },
        extras: sbom_sources(&extras, &naming.files),
        epoch,
    };
    sboms::write_into(&a.staging, &inventory)?;

    let output = request.output.join(&inventory.iso);
    let cache = fetched.registry.cache();
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
    let written = cks_iso_iso9660::author_spliced(
        &a.staging,
        spliced,
        &output,
        &IsoSpec {
            volume_id: volume_id.clone(),
            epoch,
        },
        progress,
    )
    .map_err(iso_error)?;
    let sha256 = match &written.sha256 {
        Some(sha) => sha.clone(),
        None => hash_file(&written.path)?,
    };
    let name = output
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
        sha256: sha256.clone(),
    };
    if let Err(e) = sboms::write_beside(&written.path, &inventory, &facts) {
        let _ = std::fs::remove_file(&written.path);
        let _ = std::fs::remove_file(&sums);
        return Err(e);
    }
    let _ = std::fs::remove_dir_all(&a.staging);
    Ok(BuiltIso {
        path: written.path,
        size: written.size,
        sha256,
        arch: a.arch,
        kubernetes: lock.request.kubernetes.clone(),
        images: a.images.len(),
        files: a.files.len(),
    })
}

/// The add-on images of `arch` by name, with why each is there (the lock's word).
fn extras_of(lock: &Lock, arch: &str) -> BTreeMap<String, String> {
    (lock.arches.get(arch).into_iter())
        .flat_map(|entry| &entry.images)
        .filter_map(|i| Some((i.reference.clone(), i.extra.clone()?)))
        .collect()
}

/// Per add-on image archive path (`files` names each image's archive), where it came from, as
/// the SBOMs say it.
fn sbom_sources(
    extras: &BTreeMap<String, String>,
    files: &BTreeMap<crate::image::Reference, String>,
) -> BTreeMap<String, String> {
    files
        .iter()
        .filter_map(|(reference, file)| {
            let why = lock::extra_words(extras.get(&reference.to_string())?);
            let source = format!("add-on image {reference}, {why}");
            Some((contract::image_archive(file), source))
        })
        .collect()
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

fn hash_file(path: &Path) -> Result<String, AuthorError> {
    let fail = |e| AuthorError::io(format!("cannot read {}", path.display()))(e);
    let mut reader = crate::image::Hashing::new(std::fs::File::open(path).map_err(fail)?);
    std::io::copy(&mut reader, &mut std::io::sink()).map_err(fail)?;
    Ok(reader.digest().hex().to_owned())
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
