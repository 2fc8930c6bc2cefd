//! Locked builds held to their lock, judged on the [`BuildError`] variant and its fields rather
//! than on stderr: a flag that says something else than the lock is a usage error naming the
//! flag (or variable), its value and the lock's; a local manifest must be given again, unchanged;
//! a binary upstream republished since fails the realize step naming the locked and the served
//! sha256. In-process ports of `build::lock_offline`'s drift test, which keeps the exit codes.

use super::*;
use cks_iso::pipeline::realize::RealizeError;
use cks_iso::plan::PlanError;
use cks_iso::upstream::UpstreamError;
use cks_iso_testworld::upstream::{elf, sha256_hex};
use cks_iso_testworld::world::{Options, default_snapshot};

/// A locked build of `lock` into `out`, with `change` made to its request.
fn locked(lock: &Path, out: &Path, change: &dyn Fn(&mut RequestOptions)) -> BuildOptions {
    let mut request = RequestOptions {
        output: Some(out.to_owned()),
        ..RequestOptions::default()
    };
    change(&mut request);
    BuildOptions {
        request,
        locked: Some(lock.to_owned()),
        ..BuildOptions::default()
    }
}

/// A flag, or a variable (the request's origin of a pin), that contradicts the lock: `Contradicts`
/// naming it, what it says and what the lock says; an arch the lock does not hold names both.
/// Each is a usage error found before anything is fetched or written.
#[test]
fn flags_that_contradict_the_lock_are_usage_errors_naming_both_values() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let (lock, again) = (dir.path().join("run.lock"), dir.path().join("again"));
    let tools = Tools::open(&world, &dir.path().join("cache"));
    let first = BuildOptions {
        request: request(&world, &["amd64"], &dir.path().join("out")),
        lock_file: Some(lock.clone()),
        ..BuildOptions::default()
    };
    let first = build(&tools, &first).0.unwrap().lock;
    let refused = |change: &dyn Fn(&mut RequestOptions)| {
        let (built, events) = build(&tools, &locked(&lock, &again, change));
        let e = built.expect_err("the lock says otherwise");
        assert!(e.is_usage() && events.is_empty(), "{e:?} {events:?}");
        e
    };
    let contradicts = |e: BuildError| match e {
        BuildError::Plan(plan) => match *plan {
            PlanError::Contradicts {
                flag,
                given,
                locked,
            } => (flag, given, locked),
            other => panic!("not Contradicts: {other:?}"),
        },
        other => panic!("not the plan's error: {other:?}"),
    };
    let e = refused(&|r| r.cni = Some("9.9.9".into()));
    let cni = first.request.cni.clone();
    assert_eq!(contradicts(e), ("--cni", "9.9.9".into(), cni));
    let e = refused(&|r| r.ccm = Some(("v9.9.9".into(), "CCM_VERSION")));
    let ccm = first.request.ccm.clone();
    assert_eq!(contradicts(e), ("CCM_VERSION", "v9.9.9".into(), ccm));
    let e = refused(&|r| r.arches = vec!["arm64".into()]);
    assert!(matches!(e, BuildError::Plan(_)), "{e:?}");
    assert!(
        causes(&e).contains("locks amd64, not arm64"),
        "{}",
        causes(&e)
    );
    assert!(files_in(&again).is_empty(), "{:?}", files_in(&again));
}

/// A manifest read from a local file is locked as `file:NAME` with the sha256 taken: a locked
/// build without the file is `LocalManifest` (usage, naming the flag that takes it), and with
/// the file changed since, the realize step's `Drift` with both sha256s and no ISO.
#[test]
fn a_local_manifest_must_be_given_again_and_unchanged() {
    let world = World::start(Default::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let served = world
        .network_url()
        .trim_start_matches("https://")
        .to_owned();
    let original = world
        .upstream()
        .take(&served)
        .expect("the network manifest");
    let body = original.body.clone();
    world.upstream().put(&served, body, original.content_type);
    let local = d.join("my network.yaml");
    std::fs::write(&local, &original.body).unwrap();
    let tools = Tools::open(&world, &d.join("cache"));
    let mut first = request(&world, &["amd64"], &d.join("out"));
    first.network = Some(local.to_str().unwrap().to_owned());
    let lock = d.join("run.lock");
    let first = BuildOptions {
        request: first,
        lock_file: Some(lock.clone()),
        ..BuildOptions::default()
    };
    let first = build(&tools, &first).0.unwrap().lock;
    let network = (first.manifests.iter())
        .find(|m| m.path == "network.yaml")
        .unwrap();
    assert_eq!(network.source, "file:my network.yaml", "no host path");
    assert_eq!(network.sha256_taken, sha256_hex(&original.body));
    let out = d.join("again");
    let (built, _) = build(&tools, &locked(&lock, &out, &|_| {}));
    let e = built.expect_err("the local file is not given");
    assert!(e.is_usage(), "{e:?}");
    let BuildError::Plan(plan) = e else {
        panic!("not the plan's error: {e:?}")
    };
    let PlanError::LocalManifest { flag, path, name } = *plan else {
        panic!("not LocalManifest: {plan:?}")
    };
    assert_eq!(
        (flag, path.as_str(), name.as_str()),
        ("--network", "network.yaml", "my network.yaml")
    );
    let mut changed = original.body.clone();
    changed.extend_from_slice(b"# edited after locking\n");
    std::fs::write(&local, &changed).unwrap();
    let given = |r: &mut RequestOptions| r.network = Some(local.to_str().unwrap().to_owned());
    let (built, events) = build(&tools, &locked(&lock, &out, &given));
    let e = built.expect_err("the local file changed");
    assert!(
        !e.is_usage() && e.hint().unwrap().contains("restore the locked file"),
        "{e:?}"
    );
    let BuildError::Realize(realize) = e else {
        panic!("not the realize step's error: {e:?}")
    };
    let RealizeError::Drift {
        what,
        expected,
        actual,
        ..
    } = *realize
    else {
        panic!("not Drift: {realize:?}")
    };
    assert_eq!(what, "network.yaml");
    assert_eq!(
        (expected, actual),
        (network.sha256_taken.clone(), sha256_hex(&changed))
    );
    assert!(
        events.iter().all(|e| !e.starts_with("written")),
        "{events:?}"
    );
    assert!(files_in(&out).is_empty(), "{:?}", files_in(&out));
}

/// Upstream republished kubeadm since the lock was written, with a checksum that matches the
/// new bytes: a locked build on an empty cache downloads it and refuses it in the realize step,
/// `Drift` naming kubeadm, the locked sha256 and the one served; no ISO.
#[test]
fn a_binary_republished_since_locking_fails_realize_naming_both_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lock = d.join("run.lock");
    let first = {
        let world = World::start(Default::default());
        let tools = Tools::open(&world, &d.join("cache"));
        let first = BuildOptions {
            request: request(&world, &["amd64"], &d.join("out")),
            lock_file: Some(lock.clone()),
            ..BuildOptions::default()
        };
        build(&tools, &first).0.unwrap().lock
    };
    let kube = first.request.kubernetes.clone();
    let kubeadm = format!("dl.k8s.io/release/v{kube}/bin/linux/amd64/kubeadm");
    let mut other = elf("amd64", 99, "kubeadm", 4096);
    other.extend_from_slice(b"republished");
    let snapshot = default_snapshot(&kube)
        .replace(&kubeadm, other.clone(), "application/octet-stream")
        .replace(
            &format!("{kubeadm}.sha256"),
            sha256_hex(&other),
            "text/plain",
        );
    let world = World::start(Options {
        snapshot: Some(snapshot),
        ..Options::default()
    });
    let tools = Tools::open(&world, &d.join("fresh"));
    let out = d.join("again");
    let (built, events) = build(&tools, &locked(&lock, &out, &|_| {}));
    let e = built.expect_err("kubeadm is not the locked one");
    let text = causes(&e);
    assert!(!e.is_usage() && e.hint().is_some(), "{text}");
    let BuildError::Realize(realize) = e else {
        panic!("not the realize step's error: {text}")
    };
    let RealizeError::Upstream(upstream) = *realize else {
        panic!("not the upstream file's error: {text}")
    };
    let UpstreamError::Drift {
        name,
        expected,
        actual,
        ..
    } = *upstream
    else {
        panic!("not Drift: {text}")
    };
    let locked_kubeadm = (first.arches["amd64"].files.iter())
        .find(|f| f.path == "k8s/kubeadm")
        .unwrap();
    assert_eq!(name, "kubeadm", "{text}");
    assert_eq!(
        (expected, actual),
        (locked_kubeadm.sha256.clone(), sha256_hex(&other))
    );
    assert!(
        events.iter().all(|e| !e.starts_with("written")),
        "{events:?}"
    );
    assert!(files_in(&out).is_empty(), "{:?}", files_in(&out));
}
