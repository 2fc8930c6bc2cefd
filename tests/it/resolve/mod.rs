//! `cks-iso resolve` (src/pipeline/resolve, src/app/resolve.rs): a request resolved against
//! the local world without building, and `resolve --lock` printing the lock `build` realizes.
//! A new test of what `resolve` prints goes here.

mod cli;
mod lock;
