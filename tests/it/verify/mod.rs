//! The commands that read finished ISOs (src/verify, src/upgrade, the domain's diff/): `verify`
//! against the contract, ISOs cks-iso did not build, `diff` and `upgrade-check`. A new test of
//! what a finished ISO must hold or how two compare goes here; a hostile ISO goes in `hostile/`.

/// `verify` passes a contract-abiding ISO and names each way a broken one breaks the contract.
mod contract;
/// `diff` of two ISOs: what changed, in words and in `--json`.
mod diff;
/// `diff` of two ISOs cks-iso built from the world.
mod diff_e2e;
/// `verify` of ISOs cks-iso did not build.
pub(crate) mod foreign_iso;
/// `diff` naming who signed each ISO, and signatures that do not verify.
mod signers;
/// A contract-abiding tree, the one the contract suites break: helpers, no tests.
pub(crate) mod tree;
/// `upgrade-check` between a running cluster's ISO and a new one.
mod upgrade_check;
