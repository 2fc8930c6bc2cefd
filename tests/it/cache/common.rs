//! Helpers the `cache` suites share: the `cache` command on one cache directory and readers of
//! what a cache holds (its blobs, its index keys, `cache ls --json`).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use crate::support::{cks_iso, ok, p};
use cks_iso::cache::Cache;
use serde_json::Value;

/// `cks-iso cache <args> --cache-dir <cache>`.
pub fn cache_cmd(cache: &Path, args: &[&str]) -> Output {
    cks_iso()
        .arg("cache")
        .args(args)
        .arg("--cache-dir")
        .arg(cache)
        .output()
        .unwrap()
}

/// Bytes a command wrote, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `sha256:<hex>` of every blob under its final name, and every index key, in `cache`.
pub fn contents(cache: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let store = Cache::new(cache);
    let (blobs, _) = store.blob_files().unwrap();
    let keys = store.index().unwrap().into_iter().map(|e| e.key).collect();
    (
        blobs.into_iter().map(|b| b.digest.to_string()).collect(),
        keys,
    )
}

/// `cache ls --json --locked LOCKED` of `cache`, parsed.
pub fn ls_json(cache: &Path, locked: &Path) -> Value {
    let out = ok(cache_cmd(cache, &["ls", "--json", "--locked", p(locked)]));
    serde_json::from_slice(&out.stdout).unwrap()
}
