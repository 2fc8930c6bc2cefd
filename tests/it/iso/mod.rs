//! The ISO 9660 writer and reader (crates/cks-iso-iso9660) and signing the ISOs cks-iso writes:
//! what isoinfo, xorriso, bsdtar and 7z read, byte-identical output, files of 4 GiB and more, bad
//! input that leaves nothing behind, and ISO signatures. A new test of `cks-iso iso`, of the
//! ISO's bytes or of `sign` goes here; one of what the ISO must hold goes in `verify/`.

mod errors;
mod key_tlog;
mod keyless;
mod large;
mod password;
mod readers;
mod reproducible;
pub(crate) mod signing;
