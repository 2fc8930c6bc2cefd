//! Whole builds in this process: a request through resolve → realize → author, the same build
//! from its lock, two builds on one registry client and cache, and the steps called one by one.

use super::*;
use cks_iso::pipeline::{Input, Setup};

/// A request for both arches: two ISOs, each with its `.sha256`, the run's lock naming both, and
/// the steps reported in order (the lock once, then each arch realized, then each ISO written).
#[test]
fn a_request_builds_each_arch_and_reports_each_step_once() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let (out, lock_file) = (dir.path().join("out"), dir.path().join("run.lock"));
    let tools = Tools::open(&world, &dir.path().join("cache"));
    let options = BuildOptions {
        request: request(&world, &["amd64", "arm64"], &out),
        lock_file: Some(lock_file.clone()),
        ..BuildOptions::default()
    };
    let (built, events) = build(&tools, &options);
    let built = built.unwrap();
    let kube = world.kubernetes();
    assert_eq!(
        events[0],
        format!("lock {kube} amd64 and arm64"),
        "events: {events:?}"
    );
    assert!(events[1].starts_with("realized amd64 "), "{events:?}");
    assert!(events[2].starts_with("realized arm64 "), "{events:?}");
    assert_eq!(events[3..], ["written amd64", "written arm64"]);
    let arches: Vec<&str> = built.isos.iter().map(|b| b.arch.k8s()).collect();
    assert_eq!(arches, ["amd64", "arm64"]);
    for iso in &built.isos {
        assert_eq!(iso.kubernetes, kube);
        assert!(iso.images > 0 && iso.files > 0, "{iso:?}");
        let sums = std::fs::read_to_string(format!("{}.sha256", iso.path.display())).unwrap();
        assert!(
            sums.starts_with(&iso.sha256),
            "{sums} against {}",
            iso.sha256
        );
        assert_eq!(iso.path.parent(), Some(out.as_path()));
    }
    assert_eq!(built.lock.arch_list(), "amd64 and arm64");
    // The lock file is the run's lock, the one the result holds.
    assert_eq!(
        std::fs::read_to_string(&lock_file).unwrap(),
        built.lock.render()
    );
    let (line, fields) = built.versions();
    assert!(line.contains(kube), "{line}");
    assert_eq!(fields["kubernetes"], kube);
}

/// The lock of a build, built again with `Input::Locked` on the same registry client and cache:
/// nothing is resolved (no lock event), and every ISO is the first one byte for byte.
#[test]
fn a_locked_build_on_the_same_tools_resolves_nothing_and_gives_the_same_bytes() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let lock_file = dir.path().join("run.lock");
    let tools = Tools::open(&world, &dir.path().join("cache"));
    let first = BuildOptions {
        request: request(&world, &["amd64"], &dir.path().join("first")),
        lock_file: Some(lock_file.clone()),
        ..BuildOptions::default()
    };
    let (first, _) = build(&tools, &first);
    let first = first.unwrap();
    let again = BuildOptions {
        request: RequestOptions {
            output: Some(dir.path().join("again")),
            ..RequestOptions::default()
        },
        locked: Some(lock_file),
        ..BuildOptions::default()
    };
    let (again, events) = build(&tools, &again);
    let again = again.unwrap();
    assert!(events.iter().all(|e| !e.starts_with("lock ")), "{events:?}");
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(first.isos.len(), again.isos.len());
    for (a, b) in first.isos.iter().zip(&again.isos) {
        assert_eq!(a.sha256, b.sha256);
        assert!(crate::support::same_bytes(&a.path, &b.path));
    }
    assert_eq!(first.lock.render(), again.lock.render());
}

/// A build `--offline` on another registry client over the cache an online build warmed: with
/// nothing to choose the autoscaler release from, the resolve step's `OfflineUnpinned` (a failure,
/// with its hint); with the release pinned, the same lock and bytes as online with that pin.
#[test]
fn an_offline_build_from_the_warm_cache_gives_the_online_bytes() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let online = Tools::open(&world, &cache);
    let options = |out: &str, pin: Option<&str>| {
        let mut request = request(&world, &["amd64"], &dir.path().join(out));
        request.autoscaler = pin.map(|v| (v.to_owned(), "--autoscaler-version"));
        BuildOptions {
            request,
            ..BuildOptions::default()
        }
    };
    let (unpinned, _) = build(&online, &options("unpinned", None));
    let autoscaler = unpinned.unwrap().lock.autoscaler.version;
    let (first, _) = build(&online, &options("online", Some(&autoscaler)));
    let first = first.unwrap();
    drop(online);
    let offline = Tools::with(&world, &cache, None, true);
    let (refused, _) = build(&offline, &options("refused", None));
    let e = refused.expect_err("offline, the autoscaler release cannot be listed");
    assert!(matches!(&e, BuildError::Resolve(_)), "{e:?}");
    assert!(format!("{e:?}").contains("OfflineUnpinned"), "{e:?}");
    assert!(!e.is_usage() && e.hint().unwrap().contains("--autoscaler-version"));
    let (again, events) = build(&offline, &options("offline", Some(&autoscaler)));
    let again = again.unwrap();
    assert_eq!(events[0], format!("lock {} amd64", world.kubernetes()));
    assert_eq!(first.lock.render(), again.lock.render());
    assert!(crate::support::same_bytes(
        &first.isos[0].path,
        &again.isos[0].path
    ));
}

/// The steps called one by one, as a caller that builds several versions would: the request set
/// up and settled, resolved into a lock, and that lock run as `Input::Locked` — the lock the run
/// records is the one resolved, with what realizing it judged.
#[test]
fn the_steps_alone_resolve_the_lock_that_the_run_realizes() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools::open(&world, &dir.path().join("cache"));
    let recording = Recording::default();
    let build = Build::new(tools.shared(), &recording);
    let options = BuildOptions {
        request: request(&world, &["arm64"], &dir.path().join("out")),
        ..BuildOptions::default()
    };
    let mut setup = Setup::new(&options).unwrap();
    setup.settle(&tools.settings).unwrap();
    let Input::Request(prepared) = build.prepare_setup(setup).unwrap() else {
        panic!("a request without --locked is a request");
    };
    let work = tempfile::tempdir().unwrap();
    let lock = build.resolve(&prepared, work.path()).unwrap();
    assert_eq!(lock.arch_list(), "arm64");
    let built = build
        .run(Input::Locked(prepared, Box::new(lock.clone())))
        .unwrap();
    assert_eq!(built.lock.request.kubernetes, lock.request.kubernetes);
    assert_eq!(built.lock.manifests, lock.manifests);
    let locked: Vec<_> = lock.arches["arm64"]
        .images
        .iter()
        .map(|i| &i.digest)
        .collect();
    let run: Vec<_> = built.lock.arches["arm64"]
        .images
        .iter()
        .map(|i| &i.digest)
        .collect();
    assert_eq!(locked, run);
    assert_eq!(
        recording.events()[0],
        format!("lock {} arm64", world.kubernetes())
    );
}
