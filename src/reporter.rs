//! How the library's long-running pipeline (realizing a lock, writing the ISOs) reports progress
//! without knowing where it goes: the command gives a [`Reporter`] ([`crate::ui::Ui`] is one),
//! and the pipeline asks it for one [`Progress`] per task. Logs stay on `tracing`.

use crate::progress::Progress;

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
}
