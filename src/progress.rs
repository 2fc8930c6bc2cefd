//! How long-running work reports progress without knowing who watches.
//!
//! Library modules (`iso`, later `fetch` and `registry`) take a `&dyn Progress`; the terminal
//! rendering lives in [`crate::ui`], so no library module depends on a terminal.

/// Receives progress in bytes.
pub trait Progress: Sync {
    /// The amount of work is known; nothing is done yet.
    fn start(&self, total: u64);
    /// `bytes` more are done.
    fn advance(&self, bytes: u64);
    /// All is done.
    fn finish(&self) {}
}

/// Progress nobody watches.
impl Progress for () {
    fn start(&self, _: u64) {}
    fn advance(&self, _: u64) {}
}
