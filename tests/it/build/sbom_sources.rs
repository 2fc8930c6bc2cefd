//! SBOMs valid whatever the manifests came from: a manifest fetched from an IP-address URL with a
//! port (a corporate mirror named by address) must not make the SPDX document invalid, and the URL
//! must still be in both documents.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// Builds the world's release for amd64 with `network` as the network manifest; the ISO.
fn build_with_network(world: &World, dir: &Path, network: &str) -> PathBuf {
    let (out, cache, tmp) = (dir.join("out"), dir.join("cache"), dir.join("tmp"));
    fs::create_dir_all(&tmp).unwrap();
    let o = cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .env("TMPDIR", &tmp)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .arg("build")
        .args(["--kubernetes", world.kubernetes(), "--network", network])
        .args(["--dashboard", world.dashboard_url()])
        .args(["--headlamp", world.headlamp_url()])
        .args([
            "--arch",
            "amd64",
            "--output",
            p(&out),
            "--cache-dir",
            p(&cache),
        ])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "build failed ({}):\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    out.join(format!("setup-v{}-x86_64.iso", world.kubernetes()))
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// The SPDX package of the manifest from `network` asserts no download location and says where it
/// came from; a file from a host name keeps its URL as the download location.
fn assert_spdx_keeps_the_source(spdx: &Path, network: &str, dashboard_url: &str) {
    let spdx = read_json(spdx);
    let package = spdx["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["packageFileName"] == "network.yaml")
        .expect("a package for network.yaml");
    assert_eq!(package["downloadLocation"], "NOASSERTION", "{package}");
    assert_eq!(
        package["sourceInfo"],
        format!("downloaded from {network}"),
        "{package}"
    );
    let dashboard = spdx["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["downloadLocation"] == dashboard_url)
        .is_some();
    assert!(dashboard, "the dashboard keeps its downloadLocation");
}

/// The CycloneDX component of the manifest keeps `network` as its one external reference.
fn assert_cyclonedx_keeps_the_url(cdx: &Path, network: &str) {
    let cdx = read_json(cdx);
    let component = cdx["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "network.yaml")
        .expect("a component for network.yaml");
    let urls: Vec<&str> = component["externalReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["url"].as_str())
        .collect();
    assert_eq!(urls, [network], "CycloneDX keeps the URL: {component}");
}

#[test]
fn manifest_from_an_ip_address_url_gives_valid_sboms_that_keep_the_url() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    // The network manifest straight from the world's server, `http://127.0.0.1:<port>/…`.
    let network =
        world
            .network_url()
            .replacen("https://", &format!("{}/", world.upstream().url()), 1);
    assert!(network.starts_with("http://127.0.0.1:"), "{network}");
    let iso = build_with_network(&world, dir.path(), &network);
    let (cdx, spdx) = (
        PathBuf::from(format!("{}.cdx.json", p(&iso))),
        PathBuf::from(format!("{}.spdx.json", p(&iso))),
    );
    validate_sboms(&[&cdx], &[&spdx]);
    assert_spdx_keeps_the_source(&spdx, &network, world.dashboard_url());
    assert_cyclonedx_keeps_the_url(&cdx, &network);
}
