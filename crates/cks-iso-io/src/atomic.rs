//! Files that appear complete or not at all, even when the process is interrupted.
//!
//! The upstream script left half-written files that the next build picked up. Every output of
//! cks-iso (an ISO, a downloaded file, a cached blob) is first written to a temporary file beside
//! its final name, and renamed over it only when complete and verified. A temporary file is
//! removed when its [`AtomicFile`] is dropped without [`AtomicFile::commit`], and also when the
//! process receives SIGINT, SIGTERM or SIGHUP: [`remove_on_signal`] installs a handler that deletes
//! every pending temporary path before exiting with status 130.
//!
//! Nothing can clean up after SIGKILL or a power loss, so temporary names carry the writer's
//! process ID (`.<name>.<pid>-<random>.partial`, work dirs `cks-iso-build.<pid>-<random>`), and
//! [`sweep_stale`] removes those whose process is gone, on this host and of this user. `build`
//! sweeps its output directory and TMPDIR when it starts; the blob cache, which may be shared
//! between hosts, is left to `cks-iso cache verify --fix` (see `cache::maint`).

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Exit status after an interrupt, as shells report SIGINT.
pub const INTERRUPTED_EXIT: i32 = 130;

fn pending() -> &'static Mutex<BTreeSet<PathBuf>> {
    static PENDING: OnceLock<Mutex<BTreeSet<PathBuf>>> = OnceLock::new();
    PENDING.get_or_init(Default::default)
}

fn lock() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    pending()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Installs the signal handler that removes pending temporary paths. Call once, early in `main`.
pub fn remove_on_signal() -> Result<(), ctrlc::Error> {
    ctrlc::set_handler(|| {
        let removed = remove_pending();
        tracing::warn!("interrupted: removed {removed} temporary path(s)");
        std::process::exit(INTERRUPTED_EXIT);
    })
}

/// Removes every pending temporary path, newest first; returns how many there were.
fn remove_pending() -> usize {
    let paths = std::mem::take(&mut *lock());
    for path in paths.iter().rev() {
        remove_path(path);
    }
    paths.len()
}

/// Ends the process with `code` now, removing every pending temporary path first, as an
/// interrupt does: for a run that cannot go on (stdout closed) but must leave nothing behind.
pub fn exit_removing_pending(code: i32) -> ! {
    remove_pending();
    std::process::exit(code)
}

fn remove_path(path: &Path) {
    let _ = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => Ok(()),
    };
}

/// A path removed on drop and on interrupt, unless released. For temporary directories too.
#[derive(Debug)]
pub struct Pending {
    path: Option<PathBuf>,
}

impl Pending {
    /// Starts tracking `path`, which the caller is about to create.
    pub fn track(path: PathBuf) -> Self {
        lock().insert(path.clone());
        Self { path: Some(path) }
    }

    /// The tracked path.
    pub fn path(&self) -> &Path {
        self.path.as_deref().expect("tracked until released")
    }

    /// Stops tracking, leaving the path where it is.
    pub fn release(mut self) -> PathBuf {
        let path = self.path.take().expect("tracked until released");
        lock().remove(&path);
        path
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            remove_path(&path);
            lock().remove(&path);
        }
    }
}

/// A file being written under a temporary name next to `target`.
#[derive(Debug)]
pub struct AtomicFile {
    file: File,
    temp: Pending,
    target: PathBuf,
}

impl AtomicFile {
    /// Creates `.<name>.<random>.partial` in the directory of `target`, private to this process.
    pub fn create(target: &Path) -> io::Result<Self> {
        let dir = match target.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(format!(".{}-", std::process::id()));
        // Hold the lock while the file comes to exist, so an interrupt cannot fall in between.
        let mut guard = lock();
        let temp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".partial")
            .tempfile_in(dir)?;
        let (file, path) = temp.keep().map_err(|err| err.error)?;
        guard.insert(path.clone());
        drop(guard);
        Ok(Self {
            file,
            temp: Pending { path: Some(path) },
            target: target.to_owned(),
        })
    }

    /// The open temporary file.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// The temporary file's path.
    pub fn temp_path(&self) -> &Path {
        self.temp.path()
    }

    /// Where the file goes on commit.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Sets the mode the file will have once committed.
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        self.file
            .set_permissions(std::fs::Permissions::from_mode(mode))
    }

    /// Flushes the data to disk and renames the file to its target: the file survives a power
    /// loss complete. For what the user keeps (the ISO, downloaded artifacts).
    pub fn commit(self) -> io::Result<PathBuf> {
        self.file.sync_all()?;
        self.commit_unsynced()
    }

    /// Renames the file to its target without waiting for the disk. Every process sees it
    /// complete or not at all (also after an error or Ctrl-C), but a power loss right after may
    /// leave it short. For files whose reader checks them anyway (cached blobs: size on reuse,
    /// content hashed when copied in a later run) and for image archives, which, like
    /// `docker save` and skopeo, leave flushing to the kernel. Waiting for the disk on every blob
    /// cost a third of a cold pull (bench/pull.sh).
    pub fn commit_unsynced(self) -> io::Result<PathBuf> {
        std::fs::rename(self.temp.path(), &self.target)?;
        self.temp.release();
        Ok(self.target)
    }
}

/// The prefix of a private work directory (`<prefix><pid>-<random>`).
pub fn work_dir_prefix(what: &str) -> String {
    format!("cks-iso-{what}.{}-", std::process::id())
}

/// The process that wrote a temporary `name`, if it follows this module's naming:
/// `.<name>.<pid>-<random>.partial` or `cks-iso-<what>.<pid>-<random>`.
fn writer_of(name: &str) -> Option<u32> {
    let stem = match name.strip_suffix(".partial") {
        Some(stem) if stem.starts_with('.') => stem,
        Some(_) => return None,
        None if name.starts_with("cks-iso-") => name,
        None => return None,
    };
    let (_, last) = stem.rsplit_once('.')?;
    let (pid, random) = last.split_once('-')?;
    (!random.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        .then(|| pid.parse().ok())
        .flatten()
}

/// Whether process `pid` exists on this host (one we may not signal still exists).
fn alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e != rustix::io::Errno::SRCH,
    }
}

/// Removes the temporary files and work directories in `dir` left by processes that are gone
/// (SIGKILL, a crash, a power loss), and owned by this user; returns what it removed. Temporary
/// names of live processes, other users' and other naming are never touched.
pub fn sweep_stale(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let me = rustix::process::geteuid().as_raw();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(writer_of) else {
            continue;
        };
        let path = entry.path();
        let mine = std::fs::symlink_metadata(&path).is_ok_and(|m| m.uid() == me);
        if mine && pid != std::process::id() && !alive(pid) {
            remove_path(&path);
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn temporary_names_say_who_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        let out = AtomicFile::create(&dir.path().join("a.iso")).unwrap();
        let name = out.temp_path().file_name().unwrap().to_str().unwrap();
        assert_eq!(writer_of(name), Some(std::process::id()), "{name}");
        assert_eq!(writer_of("cks-iso-build.42-abc"), Some(42));
        for other in [
            "a.iso",
            ".a.iso.partial",
            ".a.iso.xyz.partial",
            "cks-iso-build.x-1",
            "x.1-a",
        ] {
            assert_eq!(writer_of(other), None, "{other}");
        }
    }

    #[test]
    fn sweep_removes_what_dead_processes_left_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        // A process that has exited: its pid is free (reuse within the test is not a concern
        // for correctness: a live pid is only ever left alone).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale_file = dir.path().join(format!(".a.iso.{dead}-xyz.partial"));
        let stale_dir = dir.path().join(format!("cks-iso-build.{dead}-abc"));
        std::fs::write(&stale_file, b"half").unwrap();
        std::fs::create_dir_all(stale_dir.join("sub")).unwrap();
        let live = AtomicFile::create(&dir.path().join("b.iso")).unwrap();
        std::fs::write(dir.path().join("keep.iso"), b"whole").unwrap();
        let removed = sweep_stale(dir.path());
        assert_eq!(removed.len(), 2, "{removed:?}");
        assert!(!stale_file.exists() && !stale_dir.exists());
        assert!(live.temp_path().exists());
        assert!(dir.path().join("keep.iso").exists());
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn dropped_file_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = AtomicFile::create(&dir.path().join("a.iso")).unwrap();
        out.file().write_all(b"half").unwrap();
        assert_eq!(names(dir.path()).len(), 1);
        drop(out);
        assert!(names(dir.path()).is_empty());
        assert!(lock().is_empty() || !lock().iter().any(|p| p.starts_with(dir.path())));
    }

    #[test]
    fn committed_file_has_only_its_final_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = AtomicFile::create(&dir.path().join("a.iso")).unwrap();
        out.file().write_all(b"whole").unwrap();
        out.set_mode(0o644).unwrap();
        let path = out.commit().unwrap();
        assert_eq!(names(dir.path()), ["a.iso"]);
        assert_eq!(std::fs::read(path).unwrap(), b"whole");
    }
}
