//! A DSSE envelope's payload as a bundle hands it over: an in-toto statement, read and searched
//! for a digest without a panic, and the PAE built of any payload type.
#![no_main]
use cks_iso_sigstore::dsse::{Statement, pae};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(statement) = Statement::parse(bytes) {
        let _ = statement.names(&[0u8; 32]);
    }
    let text = String::from_utf8_lossy(bytes);
    let encoded = pae(&text, bytes);
    assert!(encoded.starts_with(b"DSSEv1 ") && encoded.ends_with(bytes));
});
