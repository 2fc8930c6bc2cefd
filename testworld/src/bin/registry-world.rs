//! Runs the registry world until stdin closes, for trying cks-iso by hand and for `make bench`.
//! Prints `KEY=VALUE` lines on stdout, then `READY`.
//!
//! - `registry-world [--front]`: the test corpus (behind the token front with `--front`).
//! - `registry-world --bench IMAGES BASE_MB OWN_MB BIG_MB [binary|noise]`: an empty registry
//!   filled with [`cks_iso_testworld::bench`]'s set (`BENCH=` lines; layers of binary-like
//!   content unless `noise`, sizes compressed; `BLOB_<arch>=` the URL of each of its blobs, once)
//!   and a big single-layer image (`BIG=`). With `CKS_WORLD_SHAPE=<ms>,<mbit>` (e.g. `50,200`)
//!   a [`cks_iso_testworld::shaper`] proxy in front of it too (`SHAPED=` its host): +ms per
//!   request, mbit Mbit/s per connection.
//!   With `CKS_WORLD_TLS=<ms>` (e.g. `25`), once the set is pushed: two more registries on the
//!   same storage over TLS from a generated CA (`TLS_CA=` its PEM file), one offering HTTP/2 and
//!   one HTTP/1.1 only, each behind a [`cks_iso_testworld::relay`] holding every byte ms in each
//!   direction (`H2=`, `H1=` their hosts); with `CKS_WORLD_COUNTS=<file>`, the connections each
//!   relay accepted so far are rewritten into that file every 100 ms (`H2 <n>` and `H1 <n>`).

use std::io::{Read, Write};

use cks_iso_testworld::registry::{DockerRegistry, FrontAuth, TokenFront, world};
use cks_iso_testworld::{bench, relay, shaper};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = std::io::stdout();
    if args.first().map(String::as_str) == Some("--bench") {
        let num = |i: usize| -> u64 {
            args.get(i).and_then(|a| a.parse().ok()).unwrap_or_else(|| {
                panic!("usage: registry-world --bench IMAGES BASE_MB OWN_MB BIG_MB [binary|noise]")
            })
        };
        let content = match args.get(5).map(String::as_str) {
            None | Some("binary") => bench::Content::Binary,
            Some("noise") => bench::Content::Noise,
            Some(other) => panic!("layer content must be binary or noise, not {other:?}"),
        };
        let storage = tempfile::tempdir().unwrap();
        let registry = DockerRegistry::start(storage.path(), None);
        let host = registry.host();
        writeln!(out, "REGISTRY={host}").unwrap();
        let _shaper = std::env::var("CKS_WORLD_SHAPE").ok().map(|spec| {
            let shape = shaper::Shape::from_spec(&spec);
            let proxy = shaper::ShapingProxy::start(&host, shape);
            writeln!(out, "SHAPED={}", proxy.host()).unwrap();
            proxy
        });
        out.flush().unwrap();
        let set = bench::push_set(&host, num(1) as usize, num(2), num(3), content).unwrap();
        for reference in &set.refs {
            writeln!(out, "BENCH={host}/{reference}").unwrap();
        }
        for (arch, repo, digest) in &set.blobs {
            writeln!(out, "BLOB_{arch}=http://{host}/v2/{repo}/blobs/{digest}").unwrap();
        }
        let _tls = std::env::var("CKS_WORLD_TLS")
            .ok()
            .map(|ms| tls_world(storage.path(), &ms, &mut out));
        if num(4) > 0 {
            writeln!(
                out,
                "BIG={host}/{}",
                bench::push_big(&host, num(4)).unwrap()
            )
            .unwrap();
        }
        writeln!(out, "READY").unwrap();
        out.flush().unwrap();
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        return;
    }
    let front = args.iter().any(|a| a == "--front");
    let world = world();
    writeln!(out, "REGISTRY={}", world.registry.host()).unwrap();
    let front = front.then(|| TokenFront::start(&world.registry.host(), FrontAuth::Anonymous));
    let base = front.as_ref().map_or(world.registry.url(), TokenFront::url);
    writeln!(out, "MIRRORS={}", world.mirror_args(&base).join(" ")).unwrap();
    for fixture in &world.corpus.fixtures {
        writeln!(out, "IMAGE={}", fixture.reference()).unwrap();
    }
    writeln!(out, "READY").unwrap();
    out.flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// The TLS registries of `CKS_WORLD_TLS` and their relays, kept alive by the caller.
fn tls_world(
    storage: &std::path::Path,
    ms: &str,
    out: &mut impl Write,
) -> (
    cks_iso_testworld::registry::Tls,
    Vec<(DockerRegistry, std::sync::Arc<relay::TcpRelay>)>,
) {
    let delay = std::time::Duration::from_millis(
        ms.parse()
            .unwrap_or_else(|_| panic!("CKS_WORLD_TLS must be milliseconds, not {ms:?}")),
    );
    let tls = cks_iso_testworld::registry::Tls::generate();
    writeln!(out, "TLS_CA={}", tls.ca().display()).unwrap();
    let mut served = Vec::new();
    for (name, registry) in [
        ("H2", DockerRegistry::start(storage, Some(&tls))),
        ("H1", DockerRegistry::start_tls_http1(storage, &tls)),
    ] {
        let relay = std::sync::Arc::new(relay::TcpRelay::start(&registry.host(), delay));
        writeln!(out, "{name}={}", relay.host()).unwrap();
        served.push((registry, relay));
    }
    if let Ok(file) = std::env::var("CKS_WORLD_COUNTS") {
        let relays: Vec<_> = served.iter().map(|(_, r)| r.clone()).collect();
        std::thread::spawn(move || {
            loop {
                let text = format!(
                    "H2 {}\nH1 {}\n",
                    relays[0].connections(),
                    relays[1].connections()
                );
                let temp = format!("{file}.tmp");
                if std::fs::write(&temp, text).is_ok() {
                    let _ = std::fs::rename(&temp, &file);
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
    }
    (tls, served)
}
