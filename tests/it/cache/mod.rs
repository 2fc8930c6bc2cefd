//! The blob cache and the `cache` commands (src/cache, src/carry): export and import across an
//! air gap, deltas, ls, verify and prune on a real cache. A new test of a `cache` subcommand or
//! of what the cache keeps goes here; a planted cache goes in `hostile/`.

/// A build's cache carried across an air gap and rebuilt offline, byte for byte.
mod air_gap;
mod commands;
/// The `cache` command and readers of a cache's contents, shared by the suites.
mod common;
mod delta;
