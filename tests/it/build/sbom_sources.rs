//! SBOMs valid whatever the manifests came from: a manifest fetched from an IP-address URL with a
//! port (a corporate mirror named by address) must not make the SPDX document invalid, and the URL
//! must still be in both documents.

use std::fs;
use std::path::Path;

use crate::support::*;
use cks_iso_testworld::world::{Options, World};

#[test]
fn manifest_from_an_ip_address_url_gives_valid_sboms_that_keep_the_url() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (out, cache, tmp) = (
        dir.path().join("out"),
        dir.path().join("cache"),
        dir.path().join("tmp"),
    );
    fs::create_dir_all(&tmp).unwrap();
    // The network manifest straight from the world's server, `http://127.0.0.1:<port>/…`.
    let network =
        world
            .network_url()
            .replacen("https://", &format!("{}/", world.upstream().url()), 1);
    assert!(network.starts_with("http://127.0.0.1:"), "{network}");
    let o = cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .env("TMPDIR", &tmp)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .arg("build")
        .args(["--kubernetes", world.kubernetes(), "--network", &network])
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
    let iso = out.join(format!("setup-v{}-x86_64.iso", world.kubernetes()));
    let (cdx, spdx) = (
        Path::new(&format!("{}.cdx.json", p(&iso))).to_owned(),
        Path::new(&format!("{}.spdx.json", p(&iso))).to_owned(),
    );
    validate_sboms(&[&cdx], &[&spdx]);

    let json = |path: &Path| -> serde_json::Value {
        serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
    };
    let spdx = json(&spdx);
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
    // Files from host names keep their URL as the download location.
    let dashboard = spdx["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["downloadLocation"] == world.dashboard_url())
        .is_some();
    assert!(dashboard, "the dashboard keeps its downloadLocation");
    let cdx = json(&cdx);
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
    assert_eq!(
        urls,
        [network.as_str()],
        "CycloneDX keeps the URL: {component}"
    );
}
