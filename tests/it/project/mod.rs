//! The repository's own rules: the main crate's layers without cycles, and the tool as operators
//! get it (the published crate, completions, the man page, the licence notices). A new rule about
//! the source tree or the packaged tool goes here.

mod file_rules;
mod layers;
mod packaging;
mod typed_errors;
