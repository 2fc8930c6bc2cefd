//! `cks-iso build` through the binary, as a user runs it (src/app/build, src/pipeline): whole
//! builds judged by real readers, reproducible dates, several releases at once, locks and
//! `--offline`, killed and concurrent runs, a full disk, a rootless container, SBOMs. A new test
//! of what the `build` command prints or exits with goes here; one of what a build makes or how
//! it fails, judged on the `Built` value or `BuildError`, goes in `pipeline/`.

/// Bad input fails clearly and leaves nothing behind.
mod bad_input;
/// Helpers of the suites that build in a whole world: the command, its flags, its directories.
mod common;
mod crash_and_concurrency;
mod dates;
mod e2e;
mod full_disk;
mod lock_offline;
/// Locks refused: drift, contradictions, files that are no lock.
mod lock_refusals;
mod matrix;
/// What a node does with a built ISO, and its SBOMs, replayed on the extracted tree.
mod node_checks;
/// Paths of `build` no other test takes: `--etcd` on arm64, settings from the environment.
mod rare_paths;
mod rootless;
mod sbom_sources;
