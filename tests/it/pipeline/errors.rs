//! A build that cannot be made fails with the [`BuildError`] variant of its cause, its hint, and
//! whether it is a usage error (the command's exit 2) or a failure of the work (exit 1), and
//! leaves no ISO behind.

use super::*;

/// Each bad option in turn, on one world and one set of tools: its variant and exit kind.
#[test]
fn each_bad_option_is_its_own_variant_and_usage_error() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let tools = Tools::open(&world, &dir.path().join("cache"));
    let with = |change: &dyn Fn(&mut BuildOptions)| {
        let mut options = BuildOptions {
            request: request(&world, &["amd64"], &out),
            ..BuildOptions::default()
        };
        change(&mut options);
        let (built, events) = build(&tools, &options);
        assert!(events.is_empty(), "{events:?}");
        built.expect_err("a bad option fails the build")
    };
    let e = with(&|o| o.request.kubernetes = Some("1.33.x".into()));
    assert!(matches!(e, BuildError::Version(_)), "{e:?}");
    assert!(e.is_usage());
    let e = with(&|o| o.request.cloudstack = Some("4.99".into()));
    assert!(matches!(e, BuildError::CloudStack(_)), "{e:?}");
    assert!(e.is_usage() && e.hint().unwrap().contains("leave --cloudstack out"));
    let e = with(&|o| o.request.images_files = vec![dir.path().join("absent.txt")]);
    assert!(matches!(&e, BuildError::ImagesFile { path, .. } if path.ends_with("absent.txt")));
    assert!(e.is_usage());
    let not_a_lock = dir.path().join("not.lock");
    std::fs::write(&not_a_lock, "{ not json").unwrap();
    let e = with(&|o| o.locked = Some(not_a_lock.clone()));
    assert!(matches!(e, BuildError::Lock(_)), "{e:?}");
    assert!(e.is_usage());
    let e = with(&|o| o.request.volume_id = Some("lower case".into()));
    assert!(matches!(e, BuildError::Iso(_)), "{e:?}");
    assert!(e.is_usage());
    // A file where the output directory should be: the work cannot be done, not a usage error.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let e = with(&|o| o.request.output = Some(file.join("out")));
    assert!(matches!(e, BuildError::OutputDir { .. }), "{e:?}");
    assert!(!e.is_usage() && e.hint().unwrap().contains("--output"));
    assert!(files_in(&out).is_empty(), "{:?}", files_in(&out));
}

/// The run's lock cannot be written where `--lock-file` says: the author step's error naming
/// the lock file, and the ISOs already written are removed with what was beside them.
#[test]
fn a_lock_file_that_cannot_be_written_leaves_no_iso() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let tools = Tools::open(&world, &dir.path().join("cache"));
    let options = BuildOptions {
        request: request(&world, &["amd64"], &out),
        lock_file: Some(dir.path().join("absent-dir").join("run.lock")),
        ..BuildOptions::default()
    };
    let (built, events) = build(&tools, &options);
    let e = built.expect_err("the lock file's directory does not exist");
    assert!(matches!(e, BuildError::Author(_)), "{e:?}");
    assert!(
        !e.is_usage() && e.hint().unwrap().contains("--lock-file"),
        "{e:?}"
    );
    assert!(e.to_string().contains("run.lock"), "{e}");
    // The ISO was written, then removed: its event came, nothing is left.
    assert_eq!(events.last().map(String::as_str), Some("written amd64"));
    assert!(files_in(&out).is_empty(), "{:?}", files_in(&out));
}

/// An unsigned image: recorded and built under `--signatures verify`, the realize step's error
/// under `enforce`, before any ISO is written.
#[test]
fn an_unsigned_image_builds_under_verify_and_fails_realize_under_enforce() {
    let pause = "registry.k8s.io/pause:3.10";
    let world = World::start(cks_iso_testworld::world::Options {
        unsigned: vec![pause.into()],
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let options = |out: &str| BuildOptions {
        request: request(&world, &["amd64"], &dir.path().join(out)),
        ..BuildOptions::default()
    };
    let verify = Tools::with(&world, &cache, Some("verify"), false);
    let (built, _) = build(&verify, &options("verify"));
    assert_eq!(built.unwrap().isos.len(), 1);
    let enforce = Tools::with(&world, &cache, Some("enforce"), false);
    let (built, events) = build(&enforce, &options("enforce"));
    let e = built.expect_err("enforce refuses an unsigned image");
    assert!(matches!(e, BuildError::Realize(_)), "{e:?}");
    assert!(format!("{e:?}").contains("pause"), "{e:?}");
    assert!(
        events.iter().all(|e| !e.starts_with("written")),
        "{events:?}"
    );
    assert!(files_in(&dir.path().join("enforce")).is_empty());
}

/// An image published without arm64: resolving the lock fails (nothing is pulled), as the
/// resolve step's error with the registry's own cause, a failure of the work; no ISO is written
/// for either arch.
#[test]
fn an_image_missing_for_one_arch_fails_the_resolve_step_and_writes_no_iso() {
    let pause = "registry.k8s.io/pause:3.10";
    let world = World::start(cks_iso_testworld::world::Options {
        without_arm64: Some(pause.into()),
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let tools = Tools::open(&world, &dir.path().join("cache"));
    let options = BuildOptions {
        request: request(&world, &["amd64", "arm64"], &out),
        ..BuildOptions::default()
    };
    let (built, events) = build(&tools, &options);
    let e = built.expect_err("pause has no arm64");
    assert!(matches!(e, BuildError::Resolve(_)), "{e:?}");
    assert!(!e.is_usage());
    // The message and its causes name the image and the arch it lacks.
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    assert!(text.contains("pause") && text.contains("arm64"), "{text}");
    assert!(events.is_empty(), "{events:?}");
    assert!(files_in(&out).is_empty(), "{:?}", files_in(&out));
}
