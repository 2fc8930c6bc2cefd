//! A sync across an air gap. The connected side cannot see the far zone's CloudStack, and the far
//! side cannot see upstream, so the one run is cut in two where a lock can carry it: on the
//! connected side `sync --plan --write-locks DIR` resolves each minor as a run would and writes
//! the run's lock of each version's build ([`write()`]; everything the lock names is fetched into
//! the cache on the way, so `cache export --locked DIR/*.lock --minus …` can carry it); on the
//! far side `sync --locks DIR --offline` takes each minor's version from its lock instead of its
//! label ([`wanted`]) and builds exactly that lock, from the imported cache and the ISOs already
//! published ([`from_isos`]), then decides, gates, registers and retires as a connected run.
//! A lock is the run's lock, the one inside the ISO a connected run builds, so the far side's ISO
//! is the connected side's byte for byte.

use std::path::{Path, PathBuf};

use super::decide::{Fingerprint, Wanted};
use super::desired::{Desired, Minor};
use super::failure::ItemError;
use super::report::{FORMAT, Item, Report};
use super::run::{from_of, options, resolve};
use crate::lock::Lock;
use crate::pipeline::{Build, BuildOptions};

/// What a lock file of `--write-locks` is named: `<version>.lock`.
pub const SUFFIX: &str = ".lock";

/// `sync --plan --write-locks DIR`: every minor resolved (its label read, or its pin), the run's
/// lock of its build (every arch of the desired state) written to `DIR/<version>.lock`, what it
/// names fetched and verified into the cache. Nothing of the zone or the publish directory is
/// read or changed: they are the far side's.
pub fn write(build: &Build<'_>, desired: &Desired, dir: &Path) -> Report {
    let mut report = Report {
        format: FORMAT,
        plan: true,
        ..Report::default()
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        report.errors.push(format!(
            "cannot create the lock directory {}: {e}",
            dir.display()
        ));
        return report;
    }
    for minor in desired.minors() {
        let outcome = resolve(build, desired, &minor).and_then(|wanted| {
            let path = write_one(build, desired, &minor, &wanted, dir)?;
            Ok((wanted, path))
        });
        match outcome {
            Ok((wanted, path)) => report.items.extend(wanted.iter().map(|w| Item {
                minor: w.minor.clone(),
                arch: w.arch.uname().to_owned(),
                kubernetes: Some(w.version.clone()),
                from: from_of(&minor),
                name: w.name().to_owned(),
                done: vec![format!("locked {}", path.display())],
                state: "would act".into(),
                ..Item::default()
            })),
            Err(e) => report.items.push(failed(&minor, &e)),
        }
    }
    report.acted = report.items.iter().any(|i| i.state != "failed");
    report.ok = report.failed() == 0;
    report.notes.push(format!(
        "the locks are in {}: carry them, with `cks-iso cache export --locked {}/*{SUFFIX} --minus \
         <each ISO the far side published> -o DELTA`, to the far side's `sync --locks DIR --offline`",
        dir.display(),
        dir.display()
    ));
    report
}

/// The run's lock of `minor`'s build (its version `wanted[0].version`, every arch), written to
/// `dir`; its path.
fn write_one(
    build: &Build<'_>,
    desired: &Desired,
    minor: &Minor,
    wanted: &[Wanted],
    dir: &Path,
) -> Result<PathBuf, ItemError> {
    let first = wanted
        .first()
        .expect("a desired state has at least one arch");
    let label = minor
        .pin
        .is_none()
        .then(|| format!("stable-{}", minor.minor));
    let scratch = tempfile::tempdir().map_err(ItemError::Scratch)?;
    let mut request = options(desired, first.version.clone(), label);
    request.output = Some(scratch.path().to_owned());
    let options = BuildOptions {
        request,
        ..BuildOptions::default()
    };
    let lock = (build.prepare(&options)).and_then(|input| build.lock_only(input))?;
    let path = dir.join(format!("{}{SUFFIX}", first.version));
    crate::pipeline::author::write_lock(&path, &lock)?;
    tracing::info!("wrote {} (Kubernetes v{})", path.display(), first.version);
    Ok(path)
}

/// A minor that could not be had, as one item with no arch.
pub(super) fn failed(minor: &Minor, why: &ItemError) -> Item {
    Item {
        minor: minor.minor.clone(),
        from: from_of(minor),
        state: "failed".into(),
        done: vec!["failed".into()],
        why: vec![why.text()],
        ..Item::default()
    }
}

/// `sync --locks DIR`: what each arch of `minor` wants, from its lock in `dir` — the lock of its
/// pin, or for a tracked minor the newest patch among its locks — after checking that the lock
/// is of the desired state's request (the same fingerprint as the request the desired state
/// makes of that version) and names every arch it carries.
pub fn wanted(
    build: &Build<'_>,
    desired: &Desired,
    minor: &Minor,
    dir: &Path,
) -> Result<Vec<Wanted>, ItemError> {
    let (path, lock) = lock_of(minor, dir)?;
    let version = lock.request.kubernetes.trim_start_matches('v').to_owned();
    let prepared = build.request(&options(desired, version.clone(), None))?;
    let request = &prepared.request;
    let asked = Fingerprint::of_request(request);
    let mut out = Vec::new();
    for arch in desired.arches() {
        if !lock.arches.contains_key(arch.k8s()) {
            return Err(ItemError::LockArch {
                path,
                locked: lock.arch_list(),
                arch: arch.k8s().to_owned(),
            });
        }
        let locked = Fingerprint::of_lock(&lock, arch);
        if locked != asked {
            return Err(ItemError::LockRequest {
                path,
                differences: differences(&locked, &asked),
            });
        }
        out.push(Wanted {
            minor: minor.minor.clone(),
            arch,
            version: version.clone(),
            file: crate::plan::iso_name(request, arch),
            fingerprint: asked.clone(),
            locked: Some(path.clone()),
        });
    }
    Ok(out)
}

/// The lock for `minor` among `dir`'s `*.lock` files: its pin's, else its newest patch's.
fn lock_of(minor: &Minor, dir: &Path) -> Result<(PathBuf, Lock), ItemError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ItemError::LockDir {
        dir: dir.to_owned(),
        source,
    })?;
    let mut found: Vec<((u64, u64, u64), PathBuf, Lock)> = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if !path.to_string_lossy().ends_with(SUFFIX) {
            continue;
        }
        let (lock, _) = crate::lock::source::read(&path).map_err(|source| ItemError::LockFile {
            path: path.clone(),
            source,
        })?;
        let version = lock.request.kubernetes.trim_start_matches('v').to_owned();
        let Some((major, m, patch)) = crate::cloudstack::retire::semver(&version) else {
            continue;
        };
        let pinned = minor.pin.as_deref().map(|p| p.trim_start_matches('v'));
        let fits = match pinned {
            Some(pin) => version == pin,
            None => format!("{major}.{m}") == minor.minor,
        };
        if fits {
            found.push(((major, m, patch), path, lock));
        }
    }
    found.sort_by_key(|f| f.0);
    let (_, path, lock) = found.pop().ok_or_else(|| ItemError::NoLock {
        kubernetes: minor.kubernetes(),
        dir: dir.to_owned(),
    })?;
    Ok((path, lock))
}

/// What differs between two fingerprints, field by field.
fn differences(locked: &Fingerprint, asked: &Fingerprint) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = |name: &str, l: String, a: String| {
        if l != a {
            out.push(format!("{name}: the lock has {l}, the desired state {a}"));
        }
    };
    field(
        "kubernetes",
        locked.kubernetes.clone(),
        asked.kubernetes.clone(),
    );
    field(
        "cloudstack",
        format!("{:?}", locked.cloudstack),
        format!("{:?}", asked.cloudstack),
    );
    field("name", locked.name.clone(), asked.name.clone());
    field(
        "manifests",
        format!("{:?}", locked.manifests),
        format!("{:?}", asked.manifests),
    );
    field(
        "headlamp",
        format!("{:?}", locked.headlamp),
        format!("{:?}", asked.headlamp),
    );
    field(
        "images",
        format!("{:?}", locked.images),
        format!("{:?}", asked.images),
    );
    out
}

/// The ISOs the publish directory holds (`*.iso`, not a staging directory's): what a build from
/// a lock takes its content from first, as `build --from-iso` does, so that a delta exported
/// `--minus` them is enough.
pub fn from_isos(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = (entries.flatten())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            name.is_some_and(|n| n.ends_with(".iso") && !n.starts_with('.')) && p.is_file()
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn what_differs_is_named_field_by_field() {
        let locked = Fingerprint {
            kubernetes: "1.33.1".into(),
            cloudstack: Some("4.22".into()),
            name: "setup-v1.33.1".into(),
            manifests: BTreeSet::new(),
            headlamp: None,
            images: BTreeSet::new(),
        };
        assert!(differences(&locked, &locked).is_empty());
        let mut asked = locked.clone();
        asked.images.insert("docker.io/library/busybox:1.36".into());
        asked.cloudstack = Some("4.23".into());
        let named = differences(&locked, &asked);
        assert_eq!(named.len(), 2, "{named:?}");
        assert!(named[0].starts_with("cloudstack: the lock has Some(\"4.22\")"));
        assert!(named[1].starts_with("images: the lock has {}, the desired state {\""));
    }

    #[test]
    fn only_published_isos_are_taken_from() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.iso", "a.iso", "a.iso.sha256", ".a.iso.1234.partial"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        std::fs::create_dir(dir.path().join(".sync-staging-x")).unwrap();
        std::fs::write(dir.path().join(".sync-staging-x/c.iso"), b"").unwrap();
        let names: Vec<_> = (from_isos(dir.path()).iter())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.iso", "b.iso"]);
    }
}
