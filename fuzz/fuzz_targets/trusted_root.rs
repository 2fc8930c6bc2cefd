//! A `trusted_root.json` as `--trusted-root` hands it over (its CA certificates are parsed too).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = cks_iso_sigstore::TrustedRoot::from_json(text);
});
