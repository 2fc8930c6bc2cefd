//! The `cks-iso` binary: parse, dispatch, and pick the exit code, in one place.

use std::process::ExitCode;

use cks_iso::{app, atomic, cli::Cli, ui, ui::Ui};
use clap::Parser;

fn main() -> ExitCode {
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
