//! The build pipeline, the README's sentence as modules: a request is [`resolve`]d into a lock,
//! the lock is [`realize`]d (everything it names fetched and verified into a work directory) and
//! the ISOs are [`author`]ed from what was realized. `build --locked` starts at the second step.
//!
//! Several builds in one process (`build --kubernetes A --kubernetes B`) share what they borrow
//! and run at once ([`matrix`]).
//!
//! The modules depend one way: `resolve` takes manifests and files as `realize` does (through
//! its taking functions), `author` writes what `realize` staged; `realize` knows neither.

pub mod author;
pub mod realize;
pub mod resolve;

pub mod matrix;

mod build;
mod error;
mod prepare;

/// The settings a build borrows ([`Shared::settings`]): the configuration file and the flags.
pub use crate::config::Settings;
pub use build::{Build, Built, Shared, keyless_defaults, release_of_label, settings};
pub use error::BuildError;
pub use matrix::{Matrix, Outcome};
pub use prepare::{
    BuildOptions, Input, Prepared, RequestOptions, Setup, addons, configured, work_dir,
};
