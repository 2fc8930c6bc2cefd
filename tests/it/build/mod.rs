//! `cks-iso build` through the binary, as a user runs it (src/app/build, src/pipeline): whole
//! builds judged by real readers, reproducible dates, several releases at once, locks and
//! `--offline`, killed and concurrent runs, a full disk, a rootless container, SBOMs. A new test
//! of what the `build` command prints or exits with goes here; one of what a build makes or how
//! it fails, judged on the `Built` value or `BuildError`, goes in `pipeline/`.

mod crash_and_concurrency;
mod dates;
mod e2e;
mod full_disk;
mod lock_offline;
mod matrix;
mod rootless;
mod sbom_sources;
