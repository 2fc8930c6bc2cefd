//! ISO names as `--name`, `BUILD_NAME` or an untrusted lock's `request.name` give them: a name
//! taken is one plain path component, so every file named after it stays in the output dir.
#![no_main]
use std::path::{Component, Path};

use libfuzzer_sys::fuzz_target;

fuzz_target!(|name: &str| {
    let problem = cks_iso::lock::name::problem(name);
    assert_eq!(
        cks_iso::lock::name::check(name, "--name").is_ok(),
        problem.is_none()
    );
    let Some(reason) = problem else {
        assert!(!name.is_empty() && name != "." && name != "..");
        assert!(!name.contains('/') && !name.chars().any(char::is_control));
        let out = Path::new("/out");
        for file in [
            format!("{name}-x86_64.iso"),
            format!("{name}-x86_64.iso.sha256"),
            format!("{name}-x86_64.cdx.json"),
        ] {
            let path = out.join(&file);
            assert_eq!(path.parent(), Some(out), "{name:?} leaves the output dir");
            let last = path.components().next_back();
            assert!(matches!(last, Some(Component::Normal(_))), "{name:?}");
        }
        return;
    };
    // Refused names say why, and would have been unsafe or unprintable.
    assert!(!reason.is_empty());
    assert!(
        name.is_empty()
            || name == "."
            || name == ".."
            || name.contains('/')
            || name.chars().any(char::is_control),
        "{name:?} refused: {reason}"
    );
});
