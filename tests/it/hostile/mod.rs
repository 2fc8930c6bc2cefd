//! Input from someone else (docs/concepts/security.md): handed-over locks and ISOs, lying
//! registries, endless bodies, planted caches, files others can write, ISOs built to exhaust a
//! reader, add-ons that would become the pod sandbox, and every parser of untrusted bytes under
//! property tests. A new test of what must not happen with hostile input goes here.

mod bounds;
mod cache;
mod common;
mod files;
mod iso;
mod lock;
mod parser_properties;
mod pause;
mod world;
