//! The `cks-iso` binary: parse, dispatch, and pick the exit code, in one place.

use std::process::ExitCode;

use cks_iso::{app, atomic, cli::Cli, ui, ui::Ui};
use clap::Parser;

fn main() -> ExitCode {
    keep_large_buffers_out_of_the_heap();
    let args: Vec<_> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => {
            ui::print_parse_error(&err, &args);
            return ExitCode::from(if err.use_stderr() { 2 } else { 0 });
        }
    };
    let g = &cli.global;
    let ui = Ui::new(g.quiet, g.verbose, g.color, g.no_progress, g.log_format);
    ui.init_logging();
    if let Err(err) = atomic::remove_on_signal() {
        tracing::warn!(
            "cannot install the Ctrl-C handler: {err}; an interrupt may leave temp files"
        );
    }
    match app::run(cli, &ui) {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        Err(err) => {
            let (top, causes) = err.lines();
            ui.error(&top, &causes, err.advice().as_deref());
            ExitCode::from(err.exit_code())
        }
    }
}

/// glibc serves a block of 128 KiB or more with its own mmap, returned to the system when freed,
/// but raises that threshold to the size of each such block freed (up to 32 MiB): after the
/// first few HTTP read buffers and blob chunks, every later one comes from the heap arenas of
/// the worker threads, which keep the memory. Held at its default, a cold build's peak RSS went
/// from 54 to 35 MiB (medians of 4, 26 MiB layers, the test world; docs/development/benchmarks.md).
/// musl (the portable release) has no such threshold.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_large_buffers_out_of_the_heap() {
    // SAFETY: mallopt only sets an allocator parameter; it is called before any other thread
    // exists, and a refusal (0) leaves glibc's default behaviour, which is correct too.
    let _ = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024) };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_large_buffers_out_of_the_heap() {}
