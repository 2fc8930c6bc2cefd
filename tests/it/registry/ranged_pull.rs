//! Large blobs fetched as several `Range` requests at once: the archive is byte for byte the one
//! a single GET gives, a registry that ignores or refuses ranges still serves the pull, and one
//! that speaks HTTP/2 over TLS still gets the parts on connections of their own.

use std::path::{Path, PathBuf};

use crate::support::registry::{assert_cache_verified, pull, succeeded};
use cks_iso_testworld::bench;
use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
use cks_iso_testworld::registry::{DockerRegistry, Tls};
use cks_iso_testworld::relay::TcpRelay;

/// 40 MiB: over the 16 MiB from which a blob is fetched in parts (eight of 5 MiB).
const BIG_MIB: u64 = 40;

struct Big {
    _storage: tempfile::TempDir,
    _registry: DockerRegistry,
    proxy: FaultProxy,
    /// `bench/big:v1` under the proxy's host.
    reference: String,
}

fn big() -> Big {
    let storage = tempfile::tempdir().unwrap();
    let registry = DockerRegistry::start(storage.path(), None);
    let reference = bench::push_big(&registry.host(), BIG_MIB).unwrap();
    let proxy = FaultProxy::start(&registry.url());
    let host = proxy.url().trim_start_matches("http://").to_owned();
    Big {
        reference: format!("{host}/{reference}"),
        _storage: storage,
        _registry: registry,
        proxy,
    }
}

/// Pulls the big image through the proxy into a fresh cache; its archive's path.
fn pull_big(big: &Big, dir: &Path, extra: &[&str]) -> PathBuf {
    let host = big.reference.split('/').next().unwrap();
    let mut args: Vec<String> = vec![
        big.reference.clone(),
        "--arch".into(),
        "amd64".into(),
        "--insecure-registry".into(),
        host.into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let (cache, out) = (dir.join("cache"), dir.join("out"));
    let lines = succeeded(&pull(&args, &cache, &out));
    assert_cache_verified(&cache);
    PathBuf::from(&lines[0].2)
}

/// The ranged requests the proxy saw for the big layer (the only blob over 16 MiB).
fn ranged_blob_requests(proxy: &FaultProxy) -> Vec<String> {
    proxy
        .requests_to("/blobs/")
        .iter()
        .filter_map(|r| r.range().map(str::to_owned))
        .collect()
}

#[test]
fn a_large_blob_in_parts_gives_the_archive_a_single_get_gives() {
    let big = big();
    let tmp = tempfile::tempdir().unwrap();
    // The reference: every blob request answered whole, so every blob arrives by one GET.
    big.proxy
        .add(Rule::path_contains("/blobs/").fault(Fault::IgnoreRange));
    let whole = pull_big(&big, &tmp.path().join("whole"), &[]);
    big.proxy.clear_rules();
    big.proxy.clear_log();

    let parts = pull_big(&big, &tmp.path().join("parts"), &[]);
    let ranges = ranged_blob_requests(&big.proxy);
    assert!(
        ranges.len() >= 4,
        "the 40 MiB layer comes in parts: {ranges:?}"
    );
    assert!(
        ranges.iter().any(|r| r.starts_with("bytes=0-")),
        "{ranges:?}"
    );
    assert!(
        std::fs::read(&whole).unwrap() == std::fs::read(&parts).unwrap(),
        "the archive of a blob in parts differs from the one of a single GET"
    );
    // A chosen --jobs fixes the number of blob transfers, not whether a blob comes in parts.
    big.proxy.clear_log();
    let fixed = pull_big(&big, &tmp.path().join("fixed"), &["--jobs", "1"]);
    assert!(ranged_blob_requests(&big.proxy).len() >= 4);
    assert!(std::fs::read(&whole).unwrap() == std::fs::read(&fixed).unwrap());
}

#[test]
fn registries_that_ignore_or_refuse_ranges_still_serve_the_pull() {
    let big = big();
    let tmp = tempfile::tempdir().unwrap();
    let reference = pull_big(&big, &tmp.path().join("reference"), &[]);
    let faults = [
        ("ignored", Fault::IgnoreRange),
        ("rejected", Fault::RangeRejected),
        ("wrong range", Fault::WrongContentRange),
    ];
    for (name, fault) in faults {
        big.proxy.clear_rules();
        big.proxy.clear_log();
        // These faults bend only requests with a `Range`: the single GET the pull falls back
        // to passes.
        big.proxy.add(Rule::path_contains("/blobs/").fault(fault));
        let got = pull_big(&big, &tmp.path().join(name), &[]);
        assert!(
            std::fs::read(&reference).unwrap() == std::fs::read(&got).unwrap(),
            "{name}: the archive differs"
        );
        let log = big.proxy.requests_to("/blobs/");
        assert!(
            log.iter().any(|r| r.fault.is_some() && r.range().is_some()),
            "{name}: the fault was applied: {log:#?}"
        );
    }
}

#[test]
fn a_part_cut_short_resumes_within_its_range() {
    let big = big();
    let tmp = tempfile::tempdir().unwrap();
    let reference = pull_big(&big, &tmp.path().join("reference"), &[]);
    let start = |r: &String| {
        r.trim_start_matches("bytes=")
            .split('-')
            .next()
            .unwrap()
            .to_owned()
    };
    let part_starts: Vec<String> = ranged_blob_requests(&big.proxy).iter().map(start).collect();
    big.proxy.clear_log();
    big.proxy.add(
        Rule::path_contains("/blobs/")
            .times(3)
            .fault(Fault::ResetAfter { after: 1 << 20 }),
    );
    let got = pull_big(&big, &tmp.path().join("cut"), &[]);
    assert!(std::fs::read(&reference).unwrap() == std::fs::read(&got).unwrap());
    let ranges = ranged_blob_requests(&big.proxy);
    assert!(
        ranges.iter().any(|r| !part_starts.contains(&start(r))),
        "a cut part is asked again for its rest only: {ranges:?} (parts start at {part_starts:?})"
    );
}

/// The ALPN protocol `host`'s TLS server picks from `h2,http/1.1`, asked by a real TLS client
/// (`openssl s_client`) trusting `ca`.
fn negotiated_alpn(host: &str, ca: &Path) -> String {
    let out = std::process::Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            host,
            "-alpn",
            "h2,http/1.1",
            "-CAfile",
        ])
        .arg(ca)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run openssl s_client (make deps installs openssl)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Verify return code: 0"),
        "openssl s_client does not trust {host} with the test CA:\n{text}"
    );
    text.lines()
        .find_map(|l| l.strip_prefix("ALPN protocol: "))
        .unwrap_or("none")
        .trim()
        .to_owned()
}

/// Real registries speak HTTP/2 over TLS, where every request to a host could share one
/// connection and its flow-control windows (before: 1 connection, 3.6x slower on a 50 ms path).
/// The big blob's parts still travel on connections of their own, counted by a TCP relay in front
/// of a TLS `docker-registry`; every blob is verified in the cache.
#[test]
fn an_http2_registry_gets_a_connection_per_part_of_a_large_blob() {
    let storage = tempfile::tempdir().unwrap();
    let plain = DockerRegistry::start(storage.path(), None);
    let repo = bench::push_big(&plain.host(), BIG_MIB).unwrap();
    let tls = Tls::generate();
    let secure = DockerRegistry::start(storage.path(), Some(&tls));
    let relay = TcpRelay::start(&secure.host(), std::time::Duration::ZERO);
    assert_eq!(
        negotiated_alpn(&relay.host(), &tls.ca()),
        "h2",
        "the TLS registry offers HTTP/2"
    );
    let tmp = tempfile::tempdir().unwrap();
    let before = relay.connections();
    let ca = tls.ca().display().to_string();
    let args: Vec<String> = vec![
        format!("{}/{repo}", relay.host()),
        "--arch".into(),
        "amd64".into(),
        "--ca-file".into(),
        ca,
    ];
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let lines = succeeded(&pull(&args, &cache, &out));
    assert_cache_verified(&cache);
    let opened = relay.connections() - before;
    // One for the manifests (HTTP/2), and one per part in flight: eight parts of the 40 MiB layer.
    assert!(
        opened >= 4,
        "the pull opened {opened} TCP connection(s) to the HTTP/2 registry (at most {} at once)",
        relay.peak()
    );
    assert!(
        std::path::Path::new(&lines[0].2).is_file(),
        "{lines:?}: the archive is written"
    );
}
