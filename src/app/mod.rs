//! One function per subcommand: the only place that wires the library modules together.
//!
//! Each function turns parsed arguments into calls on `iso`, `fetch`, `registry` and friends, and
//! turns their errors into an [`AppError`] that says how bad it is (usage or failure) and what the
//! user can do. `main` only prints it and picks the exit code.

mod build;
mod docs;
mod doctor;
mod error;
mod iso;
mod locks;
mod net;
mod pull;
mod resolve;
mod verify;

pub use error::{AppError, ExitKind};

use crate::cli::{Cli, Command};
use crate::ui::Ui;

/// Runs the parsed command line.
pub fn run(cli: Cli, ui: &Ui) -> Result<(), AppError> {
    match cli.command {
        Command::Iso(args) => iso::run(args, ui),
        Command::Verify(args) => verify::run(args),
        Command::Resolve(args) => resolve::run(*args, ui),
        Command::Pull(args) => pull::run(*args, ui),
        Command::Build(args) => build::run(*args, ui),
        Command::Doctor(args) => doctor::run(*args, ui),
        Command::Completions(args) => docs::completions(args),
        Command::Man(args) => docs::man(args),
    }
}
