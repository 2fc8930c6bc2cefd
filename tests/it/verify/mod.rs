//! The commands that read finished ISOs (src/verify, src/upgrade, the domain's diff/): `verify`
//! against the contract, ISOs cks-iso did not build, `diff` and `upgrade-check`. A new test of
//! what a finished ISO must hold or how two compare goes here; a hostile ISO goes in `hostile/`.

pub(crate) mod contract;
mod diff;
mod diff_e2e;
pub(crate) mod foreign_iso;
mod signers;
mod upgrade_check;
