//! Input from someone else (docs/concepts/security.md): handed-over locks and ISOs, lying
//! registries, endless bodies, planted caches, files others can write, ISOs built to exhaust a
//! reader, add-ons that would become the pod sandbox, and every parser of untrusted bytes under
//! property tests. A new test of what must not happen with hostile input goes here.

/// Bodies without end, lying sizes, trickles, FIFOs and devices stop within their bounds.
mod bounds;
/// A planted or shared cache ships nothing unverified; caches others can write are refused.
mod cache;
/// The scene most suites start from: a world, its configuration, `build` of its request.
mod common;
/// Configuration, trusted root, policy, CA and auth files held to the cache directory's rule.
mod files;
/// Hostile ISOs: shared records and extents stay bounded, wrong bytes are not taken as held.
mod iso;
/// A handed-over lock naming another URL or an entry twice is refused with a warm cache.
mod lock;
/// Every parser of untrusted bytes under property tests: no panic, round trips hold.
mod parser_properties;
/// A second pause image, by any way in, is refused before it could become the pod sandbox.
mod pause;
/// Handed-over locks and ISOs, lying registries: nothing outside `--output`, no password kept.
mod world;
