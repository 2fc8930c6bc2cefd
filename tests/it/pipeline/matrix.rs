//! Several releases built at once on one set of tools ([`Matrix`]): each release's ISOs, lock,
//! `.sha256` and SBOMs are its single build's byte for byte, a blob the releases share is fetched
//! once, and a release that fails stops no other.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use super::*;
use cks_iso::pipeline::Setup;
use cks_iso::pipeline::matrix::{self, Matrix, Outcome};
use cks_iso_testworld::faults::FaultProxy;
use cks_iso_testworld::world::Options;

/// The second release the world serves beside its 1.33.1.
const OTHER: &str = "1.32.4";

/// A world serving 1.33.1 and [`OTHER`].
fn two_releases() -> World {
    World::start(Options {
        also_kubernetes: vec![OTHER.into()],
        ..Options::default()
    })
}

/// `base` for each of `kubernetes`, set up and settled as `build` does, built by a [`Matrix`] on
/// `tools`; the outcomes and the events recorded.
fn build_all(
    tools: &Tools,
    base: &BuildOptions,
    kubernetes: &[&str],
) -> (Vec<Outcome>, Vec<String>) {
    let kubernetes: Vec<String> = kubernetes.iter().map(|k| (*k).to_owned()).collect();
    let setups = matrix::options_for(base, &kubernetes, &[])
        .unwrap()
        .into_iter()
        .map(|(asked, options)| {
            let mut setup = Setup::new(&options).unwrap();
            setup.settle(&tools.settings).unwrap();
            (asked, setup)
        })
        .collect();
    let recording = Recording::default();
    let outcomes = Matrix::new(tools.shared(), &recording).build(setups);
    (outcomes, recording.events())
}

/// The GET requests for each blob digest the proxy saw, whatever repository asked.
fn blob_gets(proxy: &FaultProxy) -> BTreeMap<String, usize> {
    let mut gets = BTreeMap::new();
    for r in proxy.requests_to("/blobs/sha256:") {
        if r.method == "GET" {
            let digest = r.path.rsplit("/blobs/").next().unwrap().to_owned();
            *gets.entry(digest).or_default() += 1;
        }
    }
    gets
}

/// Blob GETs per release, as the proxy saw them.
type GetsPerRelease<'a> = BTreeMap<&'a str, BTreeMap<String, usize>>;

/// The single builds of `releases`, one after another, each on its own cold cache, into
/// `dir/single`; the blob GETs each made.
fn single_builds<'a>(
    world: &World,
    dir: &Path,
    proxy: &FaultProxy,
    releases: [&'a str; 2],
) -> GetsPerRelease<'a> {
    let mut single = BTreeMap::new();
    for release in releases {
        let tools = Tools::through(world, &dir.join(format!("cache-{release}")), &proxy.url());
        let mut request = request(world, &["amd64", "arm64"], &dir.join("single"));
        request.kubernetes = Some(release.into());
        let options = BuildOptions {
            request,
            lock_file: Some(dir.join(format!("single/{release}.lock"))),
            ..BuildOptions::default()
        };
        proxy.clear_log();
        let (built, _) = build(&tools, &options);
        assert_eq!(built.unwrap().isos.len(), 2);
        single.insert(release, blob_gets(proxy));
    }
    single
}

/// Each outcome is its release's, built with two ISOs; each release said its lock once, whatever
/// the interleaving, and the four ISOs were written.
fn assert_each_release_built_and_said_once(
    outcomes: &[Outcome],
    events: &[String],
    releases: [&str; 2],
) {
    for (o, release) in outcomes.iter().zip(releases) {
        assert_eq!(o.asked, release);
        let built = o.result.as_ref().unwrap();
        assert_eq!(built.lock.request.kubernetes, release);
        assert_eq!(built.isos.len(), 2, "{built:?}");
    }
    for release in releases {
        let locks = events
            .iter()
            .filter(|e| e.starts_with(&format!("lock {release} ")));
        assert_eq!(locks.count(), 1, "{events:?}");
    }
    assert_eq!(
        events.iter().filter(|e| e.starts_with("written ")).count(),
        4
    );
}

/// Every file the single builds wrote, the matrix wrote the same, and nothing else.
fn assert_matrix_wrote_what_the_singles_wrote(dir: &Path) {
    let names = |d: &str| -> Vec<String> {
        let files = files_in(&dir.join(d));
        files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(names("single"), names("matrix"));
    assert!(names("matrix").len() >= 4 * 2 + 2, "{:?}", names("matrix"));
    for name in names("single") {
        let (a, b) = (
            dir.join("single").join(&name),
            dir.join("matrix").join(&name),
        );
        assert!(
            crate::support::same_bytes(&a, &b),
            "{name} differs from its single build"
        );
    }
}

/// One fetch per blob; the blobs both releases use were among them, fetched once too.
fn assert_each_blob_fetched_once(
    gets: &BTreeMap<String, usize>,
    single: &GetsPerRelease,
    releases: [&str; 2],
) {
    assert!(
        gets.values().all(|&n| n == 1),
        "fetched more than once: {gets:?}"
    );
    let (a, b) = (&single[releases[0]], &single[releases[1]]);
    let shared: Vec<&String> = a.keys().filter(|d| b.contains_key(*d)).collect();
    assert!(!shared.is_empty(), "the two releases share no blob");
    let union = a
        .keys()
        .chain(b.keys())
        .collect::<std::collections::BTreeSet<_>>();
    assert_eq!(
        gets.len(),
        union.len(),
        "the matrix fetched other blobs than the singles"
    );
}

/// Two releases × two arches in one run: four ISOs, each with its `.sha256`, SBOMs and the
/// release's lock, every file the same bytes as the single build of that release (each on a cold
/// cache); every blob fetched once, blobs the two releases share among them.
#[test]
fn two_releases_build_at_once_as_their_single_builds_do_and_share_blobs() {
    let world = two_releases();
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let releases = [world.kubernetes(), OTHER];
    let started = Instant::now();
    let single = single_builds(&world, dir.path(), &proxy, releases);
    let singles = started.elapsed();
    proxy.clear_log();
    let tools = Tools::through(&world, &dir.path().join("cache"), &proxy.url());
    let base = BuildOptions {
        request: request(&world, &["amd64", "arm64"], &dir.path().join("matrix")),
        lock_file: Some(dir.path().join("matrix/{kubernetes}.lock")),
        ..BuildOptions::default()
    };
    let started = Instant::now();
    let (outcomes, events) = build_all(&tools, &base, &releases);
    let at_once = started.elapsed();
    eprintln!(
        "two releases × two arches: at once {:.1}s, one after another {:.1}s (ratio {:.2})",
        at_once.as_secs_f64(),
        singles.as_secs_f64(),
        at_once.as_secs_f64() / singles.as_secs_f64()
    );
    assert_each_release_built_and_said_once(&outcomes, &events, releases);
    assert_matrix_wrote_what_the_singles_wrote(dir.path());
    assert_each_blob_fetched_once(&blob_gets(&proxy), &single, releases);
}

/// A release the world does not publish fails alone: the other release is built and its files
/// written, the failure is a failure of the work (exit 1), not a usage error; a release asked
/// twice (with and without `v`) fails before anything is fetched, naming the build that writes
/// its ISOs already.
#[test]
fn a_release_that_fails_leaves_the_others_built() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let tools = Tools::open(&world, &dir.path().join("cache"));
    let base = BuildOptions {
        request: request(&world, &["amd64"], &out),
        ..BuildOptions::default()
    };
    let kube = world.kubernetes();
    let twice = format!("v{kube}");
    let (outcomes, events) = build_all(&tools, &base, &[kube, "1.32.9", &twice]);
    let asked: Vec<&str> = outcomes.iter().map(|o| o.asked.as_str()).collect();
    assert_eq!(asked, [kube, "1.32.9", twice.as_str()]);
    let built = outcomes[0].result.as_ref().unwrap();
    assert_eq!(built.isos.len(), 1);
    assert!(built.isos[0].path.exists());
    let e = outcomes[1].result.as_ref().unwrap_err();
    assert!(!e.is_usage(), "{e:?}");
    assert!(matches!(e, BuildError::Resolve(_)), "{e:?}");
    let said: Vec<String> =
        std::iter::successors(Some(e as &dyn std::error::Error), |e| e.source())
            .map(ToString::to_string)
            .collect();
    // Whichever of its downloads failed first (kubeadm, crictl…): the world has none of 1.32.
    assert!(said.iter().any(|s| s.contains("404")), "{said:?}");
    let e = outcomes[2].result.as_ref().unwrap_err();
    assert!(
        matches!(e, BuildError::SameIsos { other, .. } if other == kube),
        "{e:?}"
    );
    assert!(e.is_usage() && e.hint().unwrap().contains("once"));
    assert!(events.iter().all(|e| !e.contains("1.32.9")), "{events:?}");
    // Only the release built left files: its ISO, `.sha256` and SBOMs.
    let left: Vec<PathBuf> = files_in(&out);
    assert!(
        left.iter().all(|f| f.to_string_lossy().contains(kube)),
        "{left:?}"
    );
}

/// What cannot serve several builds is refused before anything: `--name`, a `--lock-file`
/// without `{kubernetes}`, `--kubernetes` beside several locks; one build keeps them all, and
/// `{kubernetes}` names each release's lock file.
#[test]
fn flags_for_one_build_are_refused_for_several() {
    let two = ["1.33.1".to_owned(), "1.32.4".to_owned()];
    let base = BuildOptions::default();
    let named = BuildOptions {
        request: RequestOptions {
            name: Some("mine".into()),
            ..RequestOptions::default()
        },
        ..base.clone()
    };
    let e = matrix::options_for(&named, &two, &[]).unwrap_err();
    assert!(
        matches!(
            e,
            BuildError::Several {
                flag: "--name",
                count: 2,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.is_usage() && e.hint().unwrap().contains("leave --name out"));
    assert_eq!(
        matrix::options_for(&named, &two[..1], &[]).unwrap().len(),
        1
    );
    let one_file = BuildOptions {
        lock_file: Some("run.lock".into()),
        ..base.clone()
    };
    let e = matrix::options_for(&one_file, &two, &[]).unwrap_err();
    assert!(e.hint().unwrap().contains("{kubernetes}"), "{e:?}");
    let locks = [PathBuf::from("a.lock"), PathBuf::from("b.lock")];
    let e = matrix::options_for(&base, &two[..1], &locks).unwrap_err();
    assert!(
        matches!(e, BuildError::Several { .. }) && e.is_usage(),
        "{e:?}"
    );
    let each = matrix::options_for(&base, &[], &locks).unwrap();
    assert_eq!(each[1].0, "b.lock");
    assert_eq!(each[1].1.locked.as_deref(), Some(Path::new("b.lock")));
    let template = Path::new("locks/{kubernetes}.lock");
    assert_eq!(
        matrix::lock_file_for(template, "v1.32.4"),
        Path::new("locks/1.32.4.lock")
    );
}
