//! How the library's long-running pipeline (realizing a lock, writing the ISOs) reports progress
//! and its steps without knowing where they go: the command gives a [`Reporter`]
//! ([`crate::ui::Ui`] is one), and the pipeline asks it for one [`Progress`] per task and tells it
//! each step done ([`Event`]). Logs stay on `tracing`.

use std::path::Path;

use crate::image::Arch;
use crate::lock::Lock;
use crate::progress::Progress;

/// A step of a build, done: what a progress display, a test or a summary of several builds
/// records. The command's own summary is rendered from the build's result, which holds the same.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// The request was resolved into this lock (not said for a lock given with `--locked`).
    LockResolved {
        /// The lock, as it will be realized.
        lock: &'a Lock,
    },
    /// Everything of one architecture is fetched, verified and staged.
    ArchRealized {
        /// The architecture.
        arch: Arch,
        /// How many files were staged.
        files: usize,
        /// How many images were pulled.
        images: usize,
    },
    /// An ISO, its `.sha256` and SBOMs are written.
    IsoWritten {
        /// Where.
        path: &'a Path,
        /// Its architecture.
        arch: Arch,
        /// Its size in bytes.
        size: u64,
        /// Its sha256, lowercase hex.
        sha256: &'a str,
    },
}

/// Where the pipeline's progress goes.
pub trait Reporter {
    /// Progress of work whose size is not known up front (files fetched one by one).
    fn items(&self, what: &str) -> Box<dyn Progress>;

    /// Progress in bytes for tasks that run at the same time, one per label.
    fn bytes_group(&self, whats: &[&str]) -> Vec<Box<dyn Progress>>;

    /// Progress in bytes for one task, labelled `what`.
    fn bytes(&self, what: &str) -> Box<dyn Progress> {
        self.bytes_group(&[what])
            .pop()
            .expect("one progress per task")
    }

    /// A step done; by default nothing is shown (the logs already say it).
    fn event(&self, event: &Event<'_>) {
        let _ = event;
    }
}
