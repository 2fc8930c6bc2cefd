//! Git smart-HTTP replies: the ref advertisement (v0) and ls-refs (v2), as pkt-lines.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = cks_iso::release::git::parse_discovery(bytes);
    let _ = cks_iso::release::git::parse_ls_refs(bytes);
});
