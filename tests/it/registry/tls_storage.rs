//! A TLS registry that answers blob `GET`s with a redirect to a storage host over TLS, as real
//! registries do (registry.k8s.io to its buckets, an S3-backed registry to S3): the storage host
//! is trusted through the same `--ca-file`, never receives the registry's credentials, and its
//! connections are kept alive across blobs, new ones resuming the TLS session.
//!
//! The registry is a real `docker-registry` over TLS (offering HTTP/2) with its `redirect` storage
//! middleware, which answers every blob `GET` with `307` to `<baseurl><storage path>`, and its
//! `silly` access control, which answers requests without `Authorization` with a `Bearer`
//! challenge (and lets any credential in). The token service and the storage host are the
//! world's [`TlsServer`]s, the storage host serving the files of the registry's own storage.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cks_iso_testworld::bench::{self, Content};
use cks_iso_testworld::registry::{DockerRegistry, Tls};
use cks_iso_testworld::server::{Incoming, Outgoing};
use cks_iso_testworld::tls_server::TlsServer;

use crate::support::registry::{assert_cache_verified, pull, succeeded};

/// The bearer token the token service hands out: it must reach the registry, never the storage.
const TOKEN: &str = "testworld-token-for-the-registry-only";

/// Serves the files under `root` (the registry's storage) by path; notes any `Authorization`.
fn storage(root: PathBuf, saw_credentials: Arc<AtomicBool>) -> impl Fn(Incoming) -> Outgoing {
    move |request| {
        let carried = request.header("authorization").is_some()
            || request.headers.iter().any(|(_, v)| v.contains(TOKEN));
        if carried {
            saw_credentials.store(true, Ordering::SeqCst);
        }
        let path = request.target.split('?').next().unwrap_or_default();
        match std::fs::read(root.join(path.trim_start_matches('/'))) {
            Ok(bytes) => Outgoing::new(200, bytes).with("Content-Type", "application/octet-stream"),
            Err(_) => Outgoing::new(404, Vec::new()),
        }
    }
}

/// The registry's configuration beyond storage and TLS: blobs redirected to `storage`, and
/// `silly` auth sending clients to `realm` for a token.
fn redirecting(storage: &str, realm: &str) -> String {
    format!(
        "auth:\n  silly:\n    realm: {realm}/token\n    service: cks-iso-testworld\n\
         middleware:\n  storage:\n    - name: redirect\n      options:\n        baseurl: {storage}\n"
    )
}

#[test]
fn blobs_redirected_to_a_tls_storage_host_keep_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("registry");
    let plain = DockerRegistry::start(&root, None);
    let set = bench::push_set(&plain.host(), 2, 1, 1, Content::Noise).unwrap();
    let blobs = set
        .blobs
        .iter()
        .filter(|(arch, ..)| *arch == "amd64")
        .count() as u64;
    let tls = Tls::generate();
    let saw_credentials = Arc::new(AtomicBool::new(false));
    let store = TlsServer::start(&tls, storage(root.clone(), saw_credentials.clone()));
    let tokens = TlsServer::start(&tls, |_| {
        Outgoing::new(200, format!("{{\"token\":\"{TOKEN}\",\"expires_in\":300}}"))
            .with("Content-Type", "application/json")
    });
    // The storage host under another name than the registry's, as a bucket has: `localhost`
    // (the test certificate covers it), so its TLS sessions are its own.
    let store_url = store.url().replace("127.0.0.1", "localhost");
    let registry =
        DockerRegistry::start_with(&root, Some(&tls), &redirecting(&store_url, &tokens.url()));
    let tmp = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = set
        .refs
        .iter()
        .map(|r| format!("{}/{r}", registry.host()))
        .collect();
    args.extend(["--arch", "amd64", "--jobs", "2", "--ca-file"].map(String::from));
    args.push(tls.ca().display().to_string());
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let lines = succeeded(&pull(&args, &cache, &out));
    assert_eq!(lines.len(), set.refs.len());
    assert_cache_verified(&cache);

    assert!(
        tokens.requests() > 0,
        "the registry's challenge was answered"
    );
    assert_eq!(
        store.requests(),
        blobs,
        "every blob came from the storage host once, through the registry's redirect"
    );
    assert!(
        !saw_credentials.load(Ordering::SeqCst),
        "the registry's token reached the storage host"
    );
    let (opened, resumed) = (store.connections(), store.resumed());
    assert!(
        opened < blobs,
        "{opened} connections for {blobs} blobs: the storage host's connections are kept alive"
    );
    assert!(
        opened - resumed <= 2,
        "{opened} connections, {resumed} resumed: at most one full handshake per transfer at once"
    );
    for (reference, _, archive) in &lines {
        assert!(
            Path::new(archive).is_file(),
            "{reference}: no archive at {archive}"
        );
    }
}

/// GETs `url` with a fresh connection of `client`'s (its pool keeps none between calls, or it is
/// a new client); the body must be `ok`.
async fn get_ok(client: &reqwest::Client, url: &str) {
    let response = client
        .get(url)
        .send()
        .await
        .expect("the TLS server answers");
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "ok");
}

/// TLS session resumption, as a rustls server counts it. reqwest 0.13 on rustls resumes by
/// default, within one client (rustls' default in-memory cache of 256 sessions, one per client);
/// two default clients each pay a full handshake. cks-iso's clients (manifests and tokens, blob
/// bodies, the token exchange) share one cache, so each one's first connection to a host resumes
/// the session an earlier one began.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_of_a_run_resumes_the_tls_session_of_the_first() {
    use cks_iso::fetch::{HttpConfig, build_bulk_client, build_client};
    let tls = Tls::generate();
    let server = TlsServer::start(&tls, |_| Outgoing::new(200, "ok"));
    let url = format!("{}/v2/", server.url());

    cks_iso::fetch::install_crypto_provider();
    let pem = std::fs::read(tls.ca()).unwrap();
    let plain = || {
        reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
            .pool_max_idle_per_host(0)
            .build()
            .unwrap()
    };
    let one = plain();
    get_ok(&one, &url).await;
    get_ok(&one, &url).await;
    assert_eq!(
        (server.connections(), server.resumed()),
        (2, 1),
        "reqwest: within one client"
    );
    get_ok(&plain(), &url).await;
    assert_eq!(
        (server.connections(), server.resumed()),
        (3, 1),
        "reqwest: a second client"
    );

    let config = HttpConfig {
        ca_files: vec![tls.ca()],
        ..HttpConfig::default()
    };
    let clients = [
        build_client(&config).unwrap(),
        build_bulk_client(&config).unwrap(),
        build_bulk_client(&config).unwrap(),
    ];
    // Under a name of its own (the certificate covers it): the process's cache is keyed by
    // server name, and other tests in this binary talk to other servers at 127.0.0.1.
    let url = url.replace("127.0.0.1", "localhost");
    for client in &clients {
        get_ok(client, &url).await;
    }
    assert_eq!(
        (server.connections() - 3, server.resumed() - 1),
        (3, 2),
        "cks-iso: three clients with one session cache, one full handshake"
    );
}
