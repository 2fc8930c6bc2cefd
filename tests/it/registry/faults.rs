//! `cks-iso pull` through the fault-injecting proxy in front of a real registry: transient
//! failures end in success with verified digests, a persistently corrupt blob in an error naming
//! image, blob and both digests, and no failure leaves an archive or an unverified blob behind.

use std::time::{Duration, Instant};

use crate::support::registry::{assert_cache_verified, pull, stderr, succeeded};
use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
use cks_iso_testworld::http::sha256;
use cks_iso_testworld::registry::{RegistryWorld, world};

const APISERVER: &str = "registry.k8s.io/kube-apiserver:v1.33.1";

/// The world, a proxy in front of its registry, and the amd64 base layer of kube-apiserver (24 KiB
/// of noise, so faults can strike mid-body).
fn setup() -> (RegistryWorld, FaultProxy, String) {
    let world = world();
    let proxy = FaultProxy::start(&world.registry.url());
    let layer = world.corpus.get(APISERVER).per_arch["amd64"].layers[0].clone();
    (world, proxy, layer)
}

/// Pulls kube-apiserver for amd64 through the proxy with `extra` flags; returns the outcome and
/// the temporary directory holding `cache/` and `out/`.
fn pull_through(
    world: &RegistryWorld,
    proxy: &FaultProxy,
    extra: &[&str],
) -> (std::process::Output, tempfile::TempDir) {
    pull_images(world, proxy, &[APISERVER], extra)
}

/// Pulls `images` for amd64 through the proxy with `extra` flags, as [`pull_through`].
fn pull_images(
    world: &RegistryWorld,
    proxy: &FaultProxy,
    images: &[&str],
    extra: &[&str],
) -> (std::process::Output, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = images.iter().map(|s| s.to_string()).collect();
    args.extend(["--arch".into(), "amd64".into()]);
    args.extend(world.mirror_args(&proxy.url()));
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = pull(&args, &tmp.path().join("cache"), &tmp.path().join("out"));
    (out, tmp)
}

/// The pull succeeded with the registry's digest, and every blob the archive needs is in the
/// cache under its verified name.
fn assert_verified_success(
    world: &RegistryWorld,
    out: &std::process::Output,
    tmp: &tempfile::TempDir,
) {
    let lines = succeeded(out);
    let fixture = world.corpus.get(APISERVER);
    assert_eq!(lines[0].1, fixture.top);
    let cache = tmp.path().join("cache");
    assert_cache_verified(&cache);
    let image = &fixture.per_arch["amd64"];
    for blob in std::iter::once(&image.config).chain(&image.layers) {
        let hex = blob.strip_prefix("sha256:").unwrap();
        assert!(
            cache.join("blobs/sha256").join(hex).is_file(),
            "{blob} not cached"
        );
    }
}

#[test]
fn server_errors_then_success_are_retried_to_a_verified_pull() {
    let (world, proxy, layer) = setup();
    proxy.add(
        Rule::path_contains("/manifests/")
            .times(1)
            .fault(Fault::Status(502)),
    );
    proxy.add(
        Rule::path_contains(&layer)
            .times(1)
            .fault(Fault::Status(500)),
    );
    proxy.add(
        Rule::path_contains(&layer)
            .times(1)
            .fault(Fault::Status(503)),
    );
    let (out, tmp) = pull_through(&world, &proxy, &[]);
    assert_verified_success(&world, &out, &tmp);
    assert_eq!(
        proxy.requests_to(&layer).len(),
        3,
        "two failures, then the blob"
    );
}

/// Retries are bounded, and the error says which request gave up: here the tag's HEAD.
#[test]
fn persistent_server_error_on_head_names_the_head_request() {
    let (world, proxy, _) = setup();
    proxy.add(
        Rule::path_contains("/manifests/v1.33.1")
            .method("HEAD")
            .fault(Fault::Status(503)),
    );
    let (out, tmp) = pull_through(&world, &proxy, &["--retries", "2"]);
    assert!(!out.status.success());
    let text = stderr(&out);
    assert!(
        text.contains("HEAD http://") && text.contains("/manifests/v1.33.1 answered HTTP 503"),
        "{text}"
    );
    assert!(!text.contains("GET http://"), "{text}");
    assert_eq!(
        proxy.requests_to("/manifests/v1.33.1").len(),
        2,
        "2 attempts"
    );
    crate::support::registry::assert_empty(&tmp.path().join("out"));
}

#[test]
fn too_many_requests_waits_for_retry_after() {
    let (world, proxy, _) = setup();
    proxy.add(
        Rule::path_contains("/manifests/")
            .times(1)
            .fault(Fault::TooManyRequests { retry_after: 2 }),
    );
    let start = Instant::now();
    let (out, tmp) = pull_through(&world, &proxy, &[]);
    assert_verified_success(&world, &out, &tmp);
    assert!(
        start.elapsed() >= Duration::from_secs(2),
        "Retry-After: 2 was not honoured"
    );
}

#[test]
fn connection_reset_mid_blob_resumes_with_range() {
    let (world, proxy, layer) = setup();
    proxy.add(
        Rule::path_contains(&layer)
            .times(1)
            .fault(Fault::ResetAfter { after: 8192 }),
    );
    let (out, tmp) = pull_through(&world, &proxy, &[]);
    assert_verified_success(&world, &out, &tmp);
    let requests = proxy.requests_to(&layer);
    assert_eq!(requests.len(), 2, "{requests:?}");
}

#[test]
fn truncated_body_resumes_with_range() {
    let (world, proxy, layer) = setup();
    proxy.add(
        Rule::path_contains(&layer)
            .times(1)
            .fault(Fault::Truncate { after: 8192 }),
    );
    let (out, tmp) = pull_through(&world, &proxy, &[]);
    assert_verified_success(&world, &out, &tmp);
    let requests = proxy.requests_to(&layer);
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(
        requests[1].range(),
        Some("bytes=8192-"),
        "the rest, not all again"
    );
}

#[test]
fn stalled_transfer_times_out_and_is_retried() {
    let (world, proxy, layer) = setup();
    proxy.add(Rule::path_contains(&layer).times(1).fault(Fault::Stall {
        after: 4096,
        pause: Duration::from_secs(20),
    }));
    let start = Instant::now();
    let (out, tmp) = pull_through(&world, &proxy, &["--idle-timeout", "1"]);
    assert_verified_success(&world, &out, &tmp);
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "the stall was waited out, not cut"
    );
    assert_eq!(proxy.requests_to(&layer).len(), 2);
}

#[test]
fn persistently_corrupt_blob_names_image_blob_and_digests_and_leaves_nothing() {
    let (world, proxy, layer) = setup();
    proxy.add(Rule::path_contains(&layer).fault(Fault::FlipByte { offset: 100 }));
    let (out, tmp) = pull_through(&world, &proxy, &["--retries", "3"]);
    assert!(!out.status.success());
    let mut corrupt = world.corpus.repos["registry.k8s.io/kube-apiserver"].blobs[&layer].clone();
    corrupt[100] ^= 0xff;
    let actual = sha256(&corrupt);
    let text = stderr(&out);
    for part in [APISERVER, "layer 1 of 2", &layer, &actual] {
        assert!(text.contains(part), "{part:?} missing from:\n{text}");
    }
    assert_eq!(
        proxy.requests_to(&layer).len(),
        3,
        "a mismatch is fetched again within the retry budget, like a 5xx"
    );
    crate::support::registry::assert_empty(&tmp.path().join("out"));
    let cache = tmp.path().join("cache");
    assert_cache_verified(&cache);
    let hex = layer.strip_prefix("sha256:").unwrap();
    assert!(!cache.join("blobs/sha256").join(hex).exists());
}

/// Transport retries and the re-fetch of damaged bytes draw on one budget: a blob whose every
/// fetch needs two retries and then arrives damaged is asked for `--retries` times and once more
/// (the one re-fetch damage always earns), not `--retries` squared.
#[test]
fn server_errors_and_damage_share_one_retry_budget() {
    let (world, proxy, layer) = setup();
    for _ in 0..4 {
        proxy.add(
            Rule::path_contains(&layer)
                .times(2)
                .fault(Fault::Status(503)),
        );
        proxy.add(
            Rule::path_contains(&layer)
                .times(1)
                .fault(Fault::FlipByte { offset: 100 }),
        );
    }
    let (out, tmp) = pull_through(&world, &proxy, &["--retries", "3"]);
    assert!(!out.status.success(), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(text.contains(&layer), "the blob is named:\n{text}");
    assert_eq!(
        proxy.requests_to(&layer).len(),
        4,
        "3 attempts, then one re-fetch of the damaged bytes, which meets a 503 and stops:\n{text}"
    );
    crate::support::registry::assert_empty(&tmp.path().join("out"));
    assert_cache_verified(&tmp.path().join("cache"));
}

/// A corrupt blob shared by two images of one repository (pause by tag and by `tag@digest`) is
/// downloaded (and retried) once: the image that fetched it reports the mismatch, the other fails
/// at once naming the blob and that first failure.
#[test]
fn corrupt_blob_shared_by_two_images_is_fetched_once_and_fails_both() {
    let (world, proxy, _) = setup();
    let pause = world
        .corpus
        .fixtures
        .iter()
        .find(|f| f.name == "registry.k8s.io/pause" && !f.pinned)
        .unwrap();
    let (tagged, other) = (
        pause.reference(),
        format!("{}@{}", pause.reference(), pause.top),
    );
    let layer = pause.per_arch["amd64"].layers[0].clone();
    proxy.add(Rule::path_contains(&layer).fault(Fault::FlipByte { offset: 100 }));
    let (out, tmp) = pull_images(&world, &proxy, &[&tagged, &other], &["--retries", "3"]);
    assert!(!out.status.success());
    let text = stderr(&out);
    assert_eq!(
        proxy.requests_to(&layer).len(),
        3,
        "one download and the retry budget's attempts after the mismatch, for both images:\n{text}"
    );
    assert!(
        text.contains("failed for another image of this run"),
        "{text}"
    );
    for image in [tagged.as_str(), other.as_str()] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("error: {image}: ")) && l.contains(&layer))
            .unwrap_or_else(|| panic!("no error names {image} and {layer}:\n{text}"));
        assert!(line.contains(" does not match: expected "), "{line}");
    }
    crate::support::registry::assert_empty(&tmp.path().join("out"));
    assert_cache_verified(&tmp.path().join("cache"));
}

#[test]
fn tags_resolve_with_head_and_cached_manifests_are_not_fetched_again() {
    let (world, proxy, _) = setup();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let mut args = vec![APISERVER.to_owned(), "--arch".into(), "amd64".into()];
    args.extend(world.mirror_args(&proxy.url()));
    succeeded(&pull(&args, &cache, &out));
    let manifests = |method: &str| {
        proxy
            .requests_to("/manifests/")
            .into_iter()
            .filter(|r| r.method == method)
            .map(|r| r.path)
            .collect::<Vec<_>>()
    };
    // The tag by HEAD; the index and the platform's manifest by digest, never by tag.
    assert_eq!(manifests("HEAD").len(), 1);
    let gets = manifests("GET");
    assert_eq!(gets.len(), 2, "{gets:?}");
    assert!(
        gets.iter().all(|p| p.contains("/manifests/sha256:")),
        "{gets:?}"
    );
    // Again with the same cache: only the HEAD, no manifest GET, no blob.
    proxy.clear_log();
    succeeded(&pull(&args, &cache, &tmp.path().join("out2")));
    assert_eq!(manifests("HEAD").len(), 1);
    assert!(manifests("GET").is_empty(), "{:?}", manifests("GET"));
    assert!(proxy.requests_to("/blobs/").is_empty());
}

/// What a power loss can leave in the cache since blobs are not flushed one by one: a manifest
/// cut short and a layer cut short. The next pull fetches exactly those again and succeeds.
#[test]
fn blobs_cut_short_in_the_cache_are_fetched_again() {
    let (world, proxy, layer) = setup();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let mut args = vec![APISERVER.to_owned(), "--arch".into(), "amd64".into()];
    args.extend(world.mirror_args(&proxy.url()));
    succeeded(&pull(&args, &cache, &out));
    let fixture = world.corpus.get(APISERVER);
    let manifest = &fixture.per_arch["amd64"].manifest;
    for digest in [manifest, &layer] {
        let path = cache
            .join("blobs/sha256")
            .join(digest.strip_prefix("sha256:").unwrap());
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    }
    proxy.clear_log();
    let again = pull(&args, &cache, &tmp.path().join("out2"));
    succeeded(&again);
    assert_cache_verified(&cache);
    let gets: Vec<String> = proxy
        .log()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path != "/v2/")
        .map(|r| r.path)
        .collect();
    assert_eq!(gets.len(), 2, "the manifest and the layer only: {gets:?}");
    for digest in [manifest, &layer] {
        assert!(
            gets.iter().any(|p| p.ends_with(digest.as_str())),
            "{gets:?}"
        );
    }
}

/// A layer one repository cannot serve does not fail another image that gets the same layer from
/// its own repository: the failure is shared only within a repository.
#[test]
fn blob_failing_in_one_repository_is_still_fetched_from_another() {
    let (world, proxy, layer) = setup();
    let other = world
        .corpus
        .fixtures
        .iter()
        .find(|f| {
            !f.name.ends_with("kube-apiserver")
                && f.per_arch
                    .get("amd64")
                    .is_some_and(|a| a.layers[0] == layer)
        })
        .expect("the corpus shares base layers across repositories")
        .reference();
    proxy.add(
        Rule::path_contains(&format!("kube-apiserver/blobs/{layer}")).fault(Fault::Status(404)),
    );
    // One job: kube-apiserver asks (and fails) first.
    let (out, tmp) = pull_images(&world, &proxy, &[APISERVER, &other], &["--jobs", "1"]);
    assert!(!out.status.success());
    let text = stderr(&out);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains(&other),
        "{other} was pulled:\n{printed}\n{text}"
    );
    assert!(!printed.contains(APISERVER), "{printed}");
    assert!(text.contains(APISERVER) && text.contains("404"), "{text}");
    assert_cache_verified(&tmp.path().join("cache"));
}

/// A manifest whose bytes do not hash to the digest that named it was damaged on the way: it is
/// fetched again within the retry budget, and the pull succeeds.
#[test]
fn a_manifest_damaged_once_is_fetched_again() {
    let (world, proxy, _) = setup();
    proxy.add(
        Rule::path_contains("/manifests/sha256:")
            .method("GET")
            .times(1)
            .fault(Fault::FlipByte { offset: 20 }),
    );
    let (out, tmp) = pull_through(&world, &proxy, &[]);
    assert_verified_success(&world, &out, &tmp);
    let faulted: Vec<_> = proxy
        .log()
        .into_iter()
        .filter(|r| r.fault.is_some())
        .collect();
    assert_eq!(faulted.len(), 1, "{faulted:?}");
    let again = proxy.requests_to(&faulted[0].path);
    assert_eq!(again.len(), 2, "fetched once more: {again:?}");
    assert!(
        stderr(&out).contains("fetching it again"),
        "{}",
        stderr(&out)
    );
}
