//! The ISO 9660 writer and reader (crates/cks-iso-iso9660) and signing the ISOs cks-iso writes:
//! what isoinfo, xorriso, bsdtar and 7z read, byte-identical output, files of 4 GiB and more, bad
//! input that leaves nothing behind, and ISO signatures. A new test of `cks-iso iso`, of the
//! ISO's bytes or of `sign` goes here; one of what the ISO must hold goes in `verify/`.

/// Bad input: a clear error, the right exit code, nothing left behind.
mod errors;
/// Key signatures entered in Rekor (`--tlog`), proven by sigstore-python's entry verifier.
mod key_tlog;
/// Keyless signing's stand-ins proven against sigstore-python, then `build --sign` judged.
pub(crate) mod keyless;
/// Files of 4 GiB and more, in flat memory.
mod large;
/// A cosign key's password typed on a real terminal.
mod password;
/// What isoinfo, xorriso, bsdtar and 7z read of an ISO.
mod readers;
/// Byte-identical ISOs from the same tree and epoch.
mod reproducible;
/// Signing ISOs with a key or keyless, and judging them in `verify` and `register`.
pub(crate) mod signing;
