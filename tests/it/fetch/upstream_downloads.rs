//! Verified downloads against the upstream stand-in (302 to a CDN host, `.sha256` files,
//! `SHA256SUMS`), through `--mirror`-style rules, and through the fault proxy.

use std::path::Path;
use std::time::Duration;

use cks_iso::fetch::{HttpConfig, Mirrors, RetryPolicy, build_client};
use cks_iso::image::Arch;
use cks_iso::release::{AutoscalerVersion, KubeVersion};
use cks_iso::upstream::{Artifact, Fetcher, Pins, UpstreamError, catalog};
use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
use cks_iso_testworld::upstream::{self as world, KubeRelease, Snapshot, UpstreamServer};

fn pins(k8s: &str) -> Pins {
    Pins {
        kubernetes: k8s.parse::<KubeVersion>().unwrap(),
        cni: "1.6.2".into(),
        crictl: "1.33.0".into(),
        etcd: Some("3.5.21".into()),
        etcd_own_name: false,
        autoscaler: AutoscalerVersion {
            major: 1,
            minor: 33,
            patch: 1,
        },
        ccm_tag: "v1.2.0".into(),
        csi: Some("v3.0.0".into()),
    }
}

fn config(idle: Duration) -> HttpConfig {
    HttpConfig {
        idle_timeout: idle,
        connect_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            attempts: 5,
            base: Duration::from_millis(20),
            max: Duration::from_secs(2),
        },
        ..HttpConfig::default()
    }
}

fn mirrors(rules: &[String]) -> Mirrors {
    Mirrors::new(rules.iter().map(|r| r.parse().unwrap()).collect())
}

/// Downloads `artifact` into `dir` with the given mirror rules.
async fn get(
    artifact: &Artifact,
    dir: &Path,
    rules: &[String],
    http: &HttpConfig,
) -> Result<cks_iso::upstream::Got, UpstreamError> {
    let client = build_client(http).unwrap();
    let mirrors = mirrors(rules);
    let fetcher = Fetcher::new(&client, http, &mirrors, None, &());
    let dest = dir.join(artifact.dest.replace('/', "_"));
    fetcher.get(artifact, &dest).await
}

fn artifact(arch: Arch, name: &str) -> Artifact {
    catalog(&pins("1.33.1"), arch)
        .into_iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no artifact {name}"))
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn every_artifact_downloads_and_verifies_across_the_cdn_redirect() {
    let server = UpstreamServer::start(&Snapshot::typical());
    let dir = tempfile::tempdir().unwrap();
    let http = config(Duration::from_secs(10));
    for arch in [Arch::Amd64, Arch::Arm64] {
        for a in catalog(&pins("1.33.1"), arch) {
            let got = get(&a, dir.path(), &server.mirror_rules(), &http)
                .await
                .unwrap_or_else(|e| panic!("{}: {e:#}", a.name));
            assert_eq!(got.url, a.url, "records the upstream URL, not the mirror");
            assert!(got.fetched_from.starts_with(&server.url()));
            assert_eq!(got.checksum_verified, a.checksum.is_some(), "{}", a.name);
            let bytes = std::fs::read(&got.path).unwrap();
            assert_eq!(world::sha256_hex(&bytes), got.sha256.to_string());
            if a.name == "CSI manifest" {
                assert!(
                    got.notes.iter().any(|n| n.contains("joined")),
                    "{:?}",
                    got.notes
                );
            }
        }
    }
    let served = server.served();
    assert!(
        served
            .iter()
            .any(|s| s.server == "origin" && s.status == 302 && s.path.contains("/kubeadm")),
        "kubeadm went through a 302"
    );
    assert!(
        served
            .iter()
            .any(|s| s.server == "cdn" && s.path.contains("objects.githubusercontent.com")),
        "GitHub release assets came from the CDN host"
    );
    assert!(!entries(dir.path()).iter().any(|n| n.ends_with(".partial")));
}

#[tokio::test]
async fn a_missing_release_is_an_error_naming_the_url_and_status() {
    let server = UpstreamServer::start(&Snapshot::typical());
    let dir = tempfile::tempdir().unwrap();
    let a = catalog(&pins("1.33.99"), Arch::Arm64).remove(0);
    let err = get(
        &a,
        dir.path(),
        &server.mirror_rules(),
        &config(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    let text = format!("{:#}", anyhow::Error::from(err));
    assert!(
        text.contains("/dl.k8s.io/release/v1.33.99/bin/linux/arm64/kubeadm"),
        "{text}"
    );
    assert!(text.contains("404"), "{text}");
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[tokio::test]
async fn html_served_with_200_as_a_manifest_is_an_error() {
    let server = UpstreamServer::start(&Snapshot::typical());
    let proxy = FaultProxy::start(&server.url());
    proxy.add(Rule::path_contains("cluster-autoscaler-standard.yaml").fault(Fault::HtmlOk));
    let dir = tempfile::tempdir().unwrap();
    let a = artifact(Arch::Amd64, "autoscaler manifest");
    let err = get(
        &a,
        dir.path(),
        &UpstreamServer::mirror_rules_via(&proxy.url()),
        &config(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, UpstreamError::Content { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("HTML"), "{text}");
    assert!(text.contains("cluster-autoscaler-standard.yaml"), "{text}");
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn checksum_mismatch_names_file_expected_and_actual() {
    let wrong = "0".repeat(64);
    let snapshot = Snapshot::typical().replace(
        "dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubelet.sha256",
        wrong.clone(),
        "text/plain",
    );
    let good = world::sha256_hex(
        &snapshot.files()["dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubelet"].body,
    );
    let server = UpstreamServer::start(&snapshot);
    let dir = tempfile::tempdir().unwrap();
    let err = get(
        &artifact(Arch::Arm64, "kubelet"),
        dir.path(),
        &server.mirror_rules(),
        &config(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("kubelet"), "{text}");
    assert!(text.contains(&format!("expected sha256:{wrong}")), "{text}");
    assert!(text.contains(&format!("got sha256:{good}")), "{text}");
    assert!(
        text.contains("does not match the checksum published in"),
        "{text}"
    );
    assert!(err.hint().is_some());
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn a_flipped_byte_fails_the_checksum_and_leaves_nothing() {
    let server = UpstreamServer::start(&Snapshot::typical());
    let cdn_proxy = FaultProxy::start(&server.cdn_url());
    server.redirect_cdn_to(&cdn_proxy.url());
    cdn_proxy.add(Rule::path_contains("/kubectl").fault(Fault::FlipByte { offset: 5000 }));
    let dir = tempfile::tempdir().unwrap();
    let err = get(
        &artifact(Arch::Amd64, "kubectl"),
        dir.path(),
        &server.mirror_rules(),
        &config(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, UpstreamError::Mismatch { .. }), "{err:?}");
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn an_elf_for_the_wrong_arch_is_an_error_even_with_a_matching_checksum() {
    let path = "dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubeadm";
    let amd64 = world::elf("amd64", 3, "wrong", 8192);
    let sum = world::sha256_hex(&amd64);
    let snapshot = Snapshot::typical()
        .replace(path, amd64, "application/octet-stream")
        .replace(&format!("{path}.sha256"), sum, "text/plain");
    let server = UpstreamServer::start(&snapshot);
    let dir = tempfile::tempdir().unwrap();
    let err = get(
        &artifact(Arch::Arm64, "kubeadm"),
        dir.path(),
        &server.mirror_rules(),
        &config(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("is not an ELF executable for arm64"),
        "{text}"
    );
    assert!(text.contains("x86-64"), "{text}");
    assert!(entries(dir.path()).is_empty());
}

/// The arm64 etcd goes under the amd64 name etcd nodes read, so only its members say what it is:
/// an arm64 release asset holding amd64 executables (a mis-published asset, a mirror serving the
/// wrong file) fails the download naming the member, even with a matching `SHA256SUMS`.
#[tokio::test]
async fn an_arm64_etcd_holding_amd64_executables_is_an_error_naming_the_member() {
    let dir_url = "github.com/etcd-io/etcd/releases/download/v3.5.21";
    let top = "etcd-v3.5.21-linux-arm64";
    let wrong = world::tgz(&[(
        format!("{top}/etcd"),
        world::elf("amd64", 3, "etcd", 8192),
        0o755,
    )]);
    let sums = format!("{}  {top}.tar.gz\n", world::sha256_hex(&wrong));
    let snapshot = Snapshot::typical()
        .replace(
            &format!("{dir_url}/{top}.tar.gz"),
            wrong,
            "application/gzip",
        )
        .replace(&format!("{dir_url}/SHA256SUMS"), sums, "text/plain");
    let server = UpstreamServer::start(&snapshot);
    let dir = tempfile::tempdir().unwrap();
    let etcd = artifact(Arch::Arm64, "etcd");
    assert_eq!(etcd.dest, "etcd/etcd-linux-amd64.tar.gz");
    assert!(
        etcd.url.ends_with("/etcd-v3.5.21-linux-arm64.tar.gz"),
        "{}",
        etcd.url
    );
    let err = get(
        &etcd,
        dir.path(),
        &server.mirror_rules(),
        &config(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("is not a gzip-compressed tar archive of executables for arm64 (aarch64)")
            && text.contains(&format!(
                "member \"{top}/etcd\" is not for that architecture"
            ))
            && text.contains("x86-64"),
        "{text}"
    );
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn cni_legacy_name_is_tried_only_after_a_404() {
    let server = UpstreamServer::start(&Snapshot::typical());
    let dir = tempfile::tempdir().unwrap();
    let http = config(Duration::from_secs(5));
    let mut old = pins("1.33.1");
    old.cni = "0.7.5".into();
    let cni = |p: &Pins| {
        catalog(p, Arch::Arm64)
            .into_iter()
            .find(|a| a.name == "cni-plugins")
            .unwrap()
    };
    let got = get(&cni(&old), dir.path(), &server.mirror_rules(), &http)
        .await
        .unwrap();
    assert!(
        got.url.ends_with("/cni-plugins-arm64-v0.7.5.tgz"),
        "{}",
        got.url
    );
    assert!(got.checksum_verified);
    assert!(got.notes.iter().any(|n| n.contains("legacy")));
    let current = get(
        &cni(&pins("1.33.1")),
        dir.path(),
        &server.mirror_rules(),
        &http,
    )
    .await
    .unwrap();
    assert!(current.url.ends_with("/cni-plugins-linux-arm64-v1.6.2.tgz"));
    let asked_legacy_for_current = server
        .served()
        .iter()
        .any(|s| s.path.contains("/cni-plugins-arm64-v1.6.2"));
    assert!(!asked_legacy_for_current);
}

/// Each transient fault, injected in front of the CDN, is retried to a verified file.
#[tokio::test]
async fn transient_faults_are_retried_to_success() {
    let server = UpstreamServer::start(&Snapshot::typical());
    let cdn_proxy = FaultProxy::start(&server.cdn_url());
    server.redirect_cdn_to(&cdn_proxy.url());
    let dir = tempfile::tempdir().unwrap();
    let http = config(Duration::from_secs(5));
    let cases: Vec<(&str, Fault)> = vec![
        ("status 500", Fault::Status(500)),
        ("status 502", Fault::Status(502)),
        ("status 503", Fault::Status(503)),
        ("429 retry-after", Fault::TooManyRequests { retry_after: 1 }),
        ("reset", Fault::ResetAfter { after: 40_000 }),
        ("truncate", Fault::Truncate { after: 30_000 }),
    ];
    for (what, fault) in cases {
        cdn_proxy.clear_rules();
        cdn_proxy.clear_log();
        cdn_proxy.add(Rule::path_contains("/kubelet").times(2).fault(fault));
        let started = std::time::Instant::now();
        let got = get(
            &artifact(Arch::Arm64, "kubelet"),
            dir.path(),
            &server.mirror_rules(),
            &http,
        )
        .await
        .unwrap_or_else(|e| panic!("{what}: {e:#}"));
        assert!(got.checksum_verified, "{what}");
        std::fs::remove_file(&got.path).unwrap();
        let log: Vec<_> = cdn_proxy
            .requests_to("/kubelet")
            .into_iter()
            .filter(|r| !r.path.contains(".sha256"))
            .collect();
        assert_eq!(
            log.len(),
            3,
            "{what}: two faulty answers, then success: {log:?}"
        );
        assert_eq!(
            log.iter().filter(|r| r.fault.is_some()).count(),
            2,
            "{what}"
        );
        match what {
            "reset" | "truncate" => assert!(
                log[1..]
                    .iter()
                    .all(|r| r.range().is_some_and(|r| r.starts_with("bytes="))),
                "{what}: resumed with Range: {log:?}"
            ),
            "429 retry-after" => assert!(
                started.elapsed() >= Duration::from_secs(2),
                "{what}: waited Retry-After twice ({:?})",
                started.elapsed()
            ),
            _ => assert!(log.iter().all(|r| r.range().is_none()), "{what}"),
        }
    }
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn a_stalled_transfer_times_out_and_resumes() {
    let server = UpstreamServer::start(&Snapshot::typical());
    let cdn_proxy = FaultProxy::start(&server.cdn_url());
    server.redirect_cdn_to(&cdn_proxy.url());
    cdn_proxy.add(
        Rule::path_regex(r"/kubeadm\?")
            .times(1)
            .fault(Fault::Stall {
                after: 20_000,
                pause: Duration::from_secs(3),
            }),
    );
    let dir = tempfile::tempdir().unwrap();
    let got = get(
        &artifact(Arch::Amd64, "kubeadm"),
        dir.path(),
        &server.mirror_rules(),
        &config(Duration::from_millis(700)),
    )
    .await
    .unwrap();
    assert!(got.checksum_verified);
    let log = cdn_proxy.requests_to("/kubeadm?");
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[1].range(), Some("bytes=20000-"));
}

#[tokio::test]
async fn a_redirect_loop_ends_in_a_clear_error() {
    let server = UpstreamServer::start(&Snapshot::typical());
    let proxy = FaultProxy::start(&server.url());
    proxy.add(Rule::path_contains("deployment.yaml").fault(Fault::RedirectLoop));
    let dir = tempfile::tempdir().unwrap();
    let err = get(
        &artifact(Arch::Amd64, "CCM manifest"),
        dir.path(),
        &UpstreamServer::mirror_rules_via(&proxy.url()),
        &config(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    let text = format!("{:#}", anyhow::Error::from(err));
    assert!(text.contains("redirect"), "{text}");
    assert!(text.contains("deployment.yaml"), "{text}");
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn a_release_newer_than_the_tool_serves_its_own_kubeadm_constants() {
    // Guards the stand-in itself: constants.go is served per release with the given extras.
    let snapshot =
        Snapshot::new(5).kubernetes(KubeRelease::new("1.40.2", "v9.9.9", "4.0.1-0", "9.1"));
    let server = UpstreamServer::start(&snapshot);
    let body = reqwest::get(format!(
        "{}/raw.githubusercontent.com/kubernetes/kubernetes/v1.40.2/cmd/kubeadm/app/constants/constants.go",
        server.url()
    ))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    let extras = cks_iso::release::Extras::from_constants(&body, 40).unwrap();
    assert_eq!(extras.etcd, "4.0.1-0");
    assert_eq!(extras.coredns, "v9.9.9");
    assert_eq!(extras.pause, "9.1");
}

#[tokio::test]
async fn a_cni_release_missing_under_both_names_names_both() {
    let server = UpstreamServer::start(&Snapshot::typical());
    let dir = tempfile::tempdir().unwrap();
    let mut p = pins("1.33.1");
    p.cni = "1.9.9".into();
    let cni = catalog(&p, Arch::Amd64)
        .into_iter()
        .find(|a| a.name == "cni-plugins")
        .unwrap();
    let err = get(
        &cni,
        dir.path(),
        &server.mirror_rules(),
        &config(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    let text = format!("{:#}", anyhow::Error::from(err));
    assert!(
        text.contains("cni-plugins-linux-amd64-v1.9.9.tgz answered 404"),
        "{text}"
    );
    assert!(
        text.contains("/cni-plugins-amd64-v1.9.9.tgz answered HTTP 404"),
        "{text}"
    );
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn a_redirect_to_another_scheme_is_refused_and_mirror_credentials_are_never_shown() {
    let server = UpstreamServer::start(&Snapshot::typical());
    let proxy = FaultProxy::start(&server.url());
    proxy.add(
        Rule::path_contains("deployment.yaml").fault(Fault::Redirect("file:///etc/passwd".into())),
    );
    let dir = tempfile::tempdir().unwrap();
    // The mirror URL carries credentials, as some corporate mirrors require.
    let rules: Vec<String> = UpstreamServer::mirror_rules_via(&proxy.url())
        .into_iter()
        .map(|r| r.replace("http://127.0.0.1", "http://builder:s3cr3t@127.0.0.1"))
        .collect();
    let err = get(
        &artifact(Arch::Amd64, "CCM manifest"),
        dir.path(),
        &rules,
        &config(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    let text = format!("{:#}", anyhow::Error::from(err));
    assert!(text.contains("file:///etc/passwd"), "{text}");
    assert!(text.contains("only http and https"), "{text}");
    assert!(
        text.contains("hint") || text.contains("redirects to"),
        "{text}"
    );
    assert!(!text.contains("s3cr3t"), "credentials shown: {text}");
    assert!(text.contains("***@127.0.0.1"), "{text}");
    let log = proxy.requests_to("deployment.yaml");
    assert!(
        log[0].has_authorization(),
        "the credentials are still sent to the mirror"
    );
    assert!(entries(dir.path()).is_empty());
}

/// A cold build reads each published checksum once: resolving the lock fetches it (and keeps it),
/// and realizing the lock takes the kept copy while it names the locked digest, instead of asking
/// the server a second time for every file (it did: 2 GETs per checksum file).
#[test]
fn a_cold_build_fetches_each_checksum_file_once() {
    use crate::support::hostile::{build, world_args, world_in};
    use crate::support::p;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    let base = world.upstream().url();
    let proxy = FaultProxy::start(&base);
    let yaml = std::fs::read_to_string(&config)
        .unwrap()
        .replace(base.as_str(), &proxy.url());
    std::fs::write(&config, yaml).unwrap();
    let mut args = world_args(&world, world.dashboard_url());
    let (out, cache) = (d.join("out"), d.join("cache"));
    args.extend(["--output", p(&out), "--cache-dir", p(&cache)]);
    let built = build(&config, d, &args).output().unwrap();
    assert!(
        built.status.success(),
        "{}",
        crate::support::combined(&built)
    );
    let mut asked: std::collections::BTreeMap<String, usize> = Default::default();
    for r in proxy.log() {
        if r.path.contains(".sha256") || r.path.contains("SHA256SUMS") {
            *asked.entry(r.path.clone()).or_default() += 1;
        }
    }
    assert!(
        asked.len() >= 5,
        "the build checked its files against published checksums, through the proxy: {asked:?}"
    );
    let twice: Vec<_> = asked.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "asked more than once: {twice:?}");
}
