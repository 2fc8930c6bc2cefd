//! versions.txt as read from an untrusted ISO; what parses renders and parses back the same.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(versions) = cks_iso::versions::Versions::parse(text) {
        let again = cks_iso::versions::Versions::parse(&versions.render()).expect("renders back");
        assert_eq!(again, versions);
    }
});
