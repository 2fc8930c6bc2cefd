//! How long-running work reports progress without knowing who watches.
//!
//! Library modules (`iso`, later `fetch` and `registry`) take a `&dyn Progress`; the terminal
//! rendering lives in `cks_iso::ui`, so no library module depends on a terminal.

/// Receives progress in bytes.
pub trait Progress: Sync {
    /// The amount of work is known; nothing is done yet.
    fn start(&self, total: u64);
    /// `bytes` more are done.
    fn advance(&self, bytes: u64);
    /// All is done.
    fn finish(&self) {}
    /// One item (an image blob, a downloaded file) of `bytes` is in place, taken from `source`.
    fn item(&self, _item: &str, _bytes: u64, _source: Source) {}
}

/// Where an item came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Already in the local cache: nothing was transferred.
    Cache,
    /// Downloaded in this run.
    Network,
}

impl Source {
    /// `cache` or `network`, as the JSON progress events say.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Cache => "cache",
            Source::Network => "network",
        }
    }
}

/// Progress nobody watches.
impl Progress for () {
    fn start(&self, _: u64) {}
    fn advance(&self, _: u64) {}
}
