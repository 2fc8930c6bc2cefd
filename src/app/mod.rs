//! One function per subcommand: the only place that wires the library modules together.
//!
//! Each function turns parsed arguments into calls on `iso`, `fetch`, `registry` and friends, and
//! turns their errors into an [`AppError`] that says how bad it is (usage or failure) and what the
//! user can do. `main` only prints it and picks the exit code.

mod build;
mod cache;
mod diff;
mod docs;
mod doctor;
mod error;
mod iso;
mod net;
mod pull;
mod push;
mod register;
mod request;
mod resolve;
mod sign;
mod sync;
mod upgrade_check;
mod verify;
mod verify_bundle;
mod verify_image;
mod versions;

pub use error::{AppError, ExitKind};

use crate::cli::{Cli, Command};
use crate::ui::Ui;

/// How a run that did its work ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0.
    Done,
    /// `diff` found a difference: exit 1 like diff(1), which is an answer, not an error.
    Differ,
}

impl Outcome {
    /// The process exit code.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Done => 0,
            Self::Differ => 1,
        }
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli, ui: &Ui) -> Result<Outcome, AppError> {
    let done = |result: Result<(), AppError>| result.map(|()| Outcome::Done);
    match cli.command {
        Command::Iso(args) => done(iso::run(args, ui)),
        Command::Verify(args) => done(verify::run(args)),
        Command::VerifyBundle(args) => done(verify_bundle::run(*args)),
        Command::VerifyImage(args) => done(verify_image::run(*args, ui)),
        Command::Resolve(args) => done(resolve::run(*args, ui)),
        Command::Pull(args) => done(pull::run(*args, ui)),
        Command::Push(args) => done(push::run(*args, ui)),
        Command::Build(args) => done(build::run(*args, ui)),
        Command::Sign(args) => done(sign::run(*args)),
        Command::Register(args) => done(register::run(*args)),
        Command::Sync(args) => done(sync::run(*args, ui)),
        Command::Versions(command) => done(versions::run(*command)),
        Command::Diff(args) => diff::run(args),
        Command::UpgradeCheck(args) => done(upgrade_check::run(args)),
        Command::Cache(command) => done(cache::run(command, ui)),
        Command::Doctor(args) => done(doctor::run(*args, ui)),
        Command::Completions(args) => done(docs::completions(args)),
        Command::Man(args) => done(docs::man(args)),
        Command::Licenses => done(docs::licenses()),
    }
}
