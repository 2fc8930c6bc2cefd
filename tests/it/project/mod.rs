//! The repository's own rules: the main crate's layers without cycles, and the tool as operators
//! get it (the published crate, completions, the man page, the licence notices). A new rule about
//! the source tree or the packaged tool goes here.

/// The Debian package, judged by lintian, dpkg-deb and man (run by `make test-deb`).
mod debian_package;
mod file_rules;
mod layers;
/// The lexer and path readers the source-tree rules share.
mod lexer;
/// The main crate's module tree, walked as rustc finds its files.
mod modules;
mod packaging;
mod sizes;
mod typed_errors;
