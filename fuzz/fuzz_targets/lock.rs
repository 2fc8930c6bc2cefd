//! cks-iso.lock as read from an untrusted ISO or file; what parses renders and parses back.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(lock) = cks_iso::lock::Lock::parse(text, "fuzz") {
        let again = cks_iso::lock::Lock::parse(&lock.render(), "fuzz").expect("renders back");
        assert_eq!(again, lock);
    }
});
