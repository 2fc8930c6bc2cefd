//! Registry challenges (`WWW-Authenticate`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|header: &str| {
    let _ = cks_iso::registry::Challenge::parse(header);
});
