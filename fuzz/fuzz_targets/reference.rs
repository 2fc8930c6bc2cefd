//! Image references: parse or refuse, and what parses prints back to itself.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(reference) = cks_iso::image::Reference::parse(text) {
        let again = cks_iso::image::Reference::parse(&reference.to_string()).expect("prints back");
        assert_eq!(again, reference);
    }
});
