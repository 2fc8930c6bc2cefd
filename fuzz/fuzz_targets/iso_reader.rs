//! The ISO reader `verify` and `diff` run on untrusted ISOs: no panic, bounded work.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("fuzz.iso");
    std::fs::write(&path, bytes).expect("write");
    if let Ok(reader) = cks_iso_iso9660::read::IsoReader::open(&path)
        && let Ok(entries) = reader.entries()
    {
        for entry in entries.iter().take(32) {
            let _ = reader.read_small(&entry.path, 1 << 20);
        }
    }
});
