//! Manifests: the YAML image listing and the pull-policy edit, which touches only its lines.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(docs) = cks_iso::manifest::check_yaml("fuzz.yaml", text) {
        let _ = cks_iso::manifest::images(&docs);
    }
    let (edited, changed) = cks_iso::manifest::pull_if_not_present(text);
    let before: Vec<&str> = text.split_inclusive('\n').collect();
    let after: Vec<&str> = edited.split_inclusive('\n').collect();
    assert_eq!(before.len(), after.len());
    let differing = before.iter().zip(&after).filter(|(b, a)| b != a).count();
    assert_eq!(differing, changed);
    for (b, a) in before.iter().zip(&after) {
        if b != a {
            assert!(b.contains("imagePullPolicy"), "edited {b:?}");
        }
    }
});
