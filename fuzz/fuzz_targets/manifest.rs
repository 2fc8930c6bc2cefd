//! Manifests and indexes as registries (or an attacker in between) send them.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = cks_iso::image::MediaType::sniff(bytes);
    let _ = serde_json::from_slice::<cks_iso::image::Manifest>(bytes);
    let _ = serde_json::from_slice::<cks_iso::image::Index>(bytes);
});
