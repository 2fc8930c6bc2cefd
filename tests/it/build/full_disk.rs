//! A full disk under each of the three places a build writes — the blob cache, TMPDIR (the work
//! dir) and the output dir — ends in exit 1 naming the path, with nothing partial left and a
//! cache that still verifies. Each case mounts a small tmpfs in a private user and mount namespace
//! (`unshare -r -m`, no root needed where user namespaces work), with the world outside it.

use std::path::Path;
use std::process::Command;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// Runs a build with `which` of cache, tmp and out on a small tmpfs (768 KiB; 96 KiB for TMPDIR,
/// which holds only the downloaded files since archives go from the cache into the ISO); returns (exit code,
/// stderr, what the script reported).
fn build_with_full(world: &World, dir: &Path, which: &str) -> (Option<i32>, String, String) {
    let small = dir.join(format!("small-{which}"));
    std::fs::create_dir_all(&small).unwrap();
    let place = |name: &str| {
        if name == which {
            small.clone()
        } else {
            let p = dir.join(format!("{which}-{name}"));
            std::fs::create_dir_all(&p).unwrap();
            p
        }
    };
    let (cache, tmp, out) = (place("cache"), place("tmp"), place("out"));
    let script = format!(
        "mount -t tmpfs -o size={size} cks-iso-full '{small}' || exit 99
         TMPDIR='{tmp}' '{bin}' build --no-progress --kubernetes 1.33.1 \
           --network '{network}' --dashboard '{dashboard}' \
           --output '{out}' --cache-dir '{cache}'
         rc=$?
         echo \"partial: $(find '{small}' -name '*.partial' -o -name 'cks-iso-build.*' | wc -l)\"
         echo \"isos: $(find '{out}' -name '*.iso' | wc -l)\"
         echo \"work dirs: $(ls -A '{tmp}' | wc -l)\"
         '{bin}' cache verify --cache-dir '{cache}' >/dev/null 2>&1; echo \"cache verify: $?\"
         exit $rc",
        small = p(&small),
        size = if which == "tmp" { "96k" } else { "768k" },
        tmp = p(&tmp),
        out = p(&out),
        cache = p(&cache),
        bin = env!("CARGO_BIN_EXE_cks-iso"),
        network = world.network_url(),
        dashboard = world.dashboard_url(),
    );
    let output = crate::support::no_internet(&mut Command::new("unshare"))
        .args(["-r", "-m", "sh", "-c", &script])
        .env("NO_COLOR", "1")
        .env("CKS_ISO_CONFIG", world.config_path())
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn a_full_cache_tmpdir_or_output_dir_fails_naming_it_and_leaves_nothing_partial() {
    require("unshare");
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    for which in ["cache", "tmp", "out"] {
        let (code, err, report) = build_with_full(&world, dir.path(), which);
        assert_ne!(
            code,
            Some(99),
            "cannot mount a tmpfs in a user namespace here:\n{err}"
        );
        assert_eq!(code, Some(1), "{which} full:\n{err}\n{report}");
        let small = p(&dir.path().join(format!("small-{which}"))).to_owned();
        assert!(
            err.contains(&small),
            "{which} full: the error names no path under {small}:\n{err}"
        );
        assert!(
            err.contains("o space left") || err.contains("needs"),
            "{which} full: the error does not say the disk is full:\n{err}"
        );
        // The same situation, the same advice: free space, or point the flag at a disk with room.
        let hint = err.lines().last().unwrap_or_default();
        assert!(
            hint.starts_with("hint: free space") || hint.starts_with("hint: the disk named above"),
            "{which} full: no full-disk hint:\n{err}"
        );
        assert!(hint.contains("with room"), "{which} full: {hint}");
        for want in ["partial: 0", "isos: 0", "work dirs: 0", "cache verify: 0"] {
            assert!(
                report.contains(want),
                "{which} full: {want:?} not in\n{report}\n{err}"
            );
        }
    }
}
