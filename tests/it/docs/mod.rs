//! The documentation held to the code: every link and anchor of README.md, STYLE.md, CHANGELOG.md
//! and docs/ resolves, every repository path they write in backticks exists, docs/README.md lists
//! every page, and every fenced command runs or parses as its info string says. A new rule about
//! the docs goes here.

mod commands;
mod links;
mod paths;
