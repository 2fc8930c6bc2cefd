//! kubeadm's constants.go, as downloaded from any mirror.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u8, &str)| {
    let _ = cks_iso::release::kubeadm::Extras::from_constants(input.1, u64::from(input.0 % 64));
});
