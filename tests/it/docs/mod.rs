//! The documentation held to the code: every link and anchor of README.md and docs/ resolves, and
//! every fenced command runs or parses as its info string says. A new rule about the docs goes
//! here.

mod commands;
mod links;
