//! The crate's checks through its public API, as the `cks-iso` crate calls them: one test binary
//! (its modules share the build, as the root crate's `tests/it/` does). Signatures of the test
//! world's Sigstore (`cks-iso-testworld`), good and spoiled one way at a time, real public-good
//! material (`../testdata/`, and the Sigstore conformance suite's data under the repository's
//! `tests/sigstore-conformance/`), and hostile inputs sized to cost. Unit tests of parts below the
//! public API stay beside them in `src/`.

mod binaries;
mod cost;
mod der;
mod dsse;
mod layers;
mod rekor_v2;
mod strict;
mod timestamps;

/// Now, in seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}
