//! A Sigstore bundle as `verify-bundle` or an ISO's `signatures/` hands it over; what reads
//! writes back to the same evidence.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(evidence) = cks_iso_sigstore::rekor::Evidence::from_bundle(bytes) {
        let again = cks_iso_sigstore::rekor::Evidence::from_bundle(&evidence.bundle())
            .expect("writes back");
        assert_eq!(again, evidence);
    }
});
