//! A checkpoint (signed note) from a bundle or a Rekor reply, judged against the public-good
//! root for the production Rekor v1 log.
#![no_main]
use std::sync::LazyLock;

use cks_iso_sigstore::{PUBLIC_GOOD_ROOT, TrustedRoot};
use libfuzzer_sys::fuzz_target;

static ROOT: LazyLock<TrustedRoot> =
    LazyLock::new(|| TrustedRoot::from_json(PUBLIC_GOOD_ROOT).expect("the embedded root"));

/// The production Rekor v1 log id (SHA-256 of its key).
const REKOR_V1: [u8; 32] = [
    0xc0, 0xd2, 0x3d, 0x6a, 0xd4, 0x06, 0x97, 0x3f, 0x95, 0x59, 0xf3, 0xba, 0x2d, 0x1c, 0xa0,
    0x1f, 0x84, 0x14, 0x7d, 0x8f, 0xfc, 0x5b, 0x84, 0x45, 0xc2, 0x24, 0xf9, 0x8b, 0x95, 0x91,
    0x80, 0x1d,
];

fuzz_target!(|text: &str| {
    let _ = cks_iso_sigstore::rekor::checkpoint(&ROOT, &REKOR_V1, text);
});
