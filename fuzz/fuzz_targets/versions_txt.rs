//! versions.txt as read from an untrusted ISO; what parses renders to a canonical text (records
//! sorted, absent ones left out) that parses back and renders to the same text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(versions) = cks_iso::versions::Versions::parse(text) {
        let rendered = versions.render();
        let again = cks_iso::versions::Versions::parse(&rendered).expect("renders back");
        assert_eq!(again.render(), rendered);
    }
});
