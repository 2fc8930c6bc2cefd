//! Archives judged by the real readers a CKS node and its operators use: skopeo (both the
//! docker-archive and the oci-archive reading of the same file) and a private containerd 1.6,
//! whose `ctr images import` must keep the full name and the registry's digest.
//!
//! A missing tool fails the test with a message naming `make deps`; the containerd test needs
//! root and fails without it (naming `sudo make test`) unless `CKS_ISO_TESTS_WITHOUT_ROOT` is set.

use std::path::{Path, PathBuf};

use crate::support::containerd::Containerd;
use crate::support::world::{Fixture, World, world};
use crate::support::{require, run_tool};
use cks_iso::archive;
use cks_iso::image::{Arch, Image};
use serde_json::Value;

/// Every image of the world published for `arch`, written as archives under `out` with the
/// names the ISO would give them.
fn write_archives<'w>(
    world: &'w World,
    arch: Arch,
    out: &Path,
) -> Vec<(&'w Fixture, Image, PathBuf)> {
    let fixtures: Vec<&Fixture> = world
        .images
        .iter()
        .filter(|f| f.per_arch.contains_key(&arch))
        .collect();
    let naming = archive::assign_names(fixtures.iter().map(|f| &f.reference));
    assert!(naming.renamed.is_empty());
    fixtures
        .into_iter()
        .map(|fixture| {
            let image =
                Image::load(fixture.reference.clone(), &fixture.top, arch, &world.cache).unwrap();
            let path = out.join(&naming.files[&fixture.reference]);
            archive::write(&image, &world.cache, &path, 0).unwrap();
            (fixture, image, path)
        })
        .collect()
}

fn json(output: std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).expect("skopeo prints JSON")
}

#[test]
fn skopeo_reads_every_archive_as_docker_and_oci_archive_for_each_arch() {
    require("skopeo");
    let world = world();
    for arch in [Arch::Amd64, Arch::Arm64] {
        let out = tempfile::tempdir().unwrap();
        for (i, (fixture, image, path)) in
            write_archives(&world, arch, out.path()).iter().enumerate()
        {
            // skopeo splits `transport:path:ref` at the first colon; archive names contain one.
            let plain = out.path().join(format!("judge-{i}.tar"));
            std::fs::hard_link(path, &plain).unwrap();
            let plain = plain.to_str().unwrap();
            let what = format!("{} for {arch}", fixture.text);
            let (_, diff_ids) = &fixture.per_arch[&arch];

            let docker = json(run_tool(
                "skopeo",
                &["inspect", &format!("docker-archive:{plain}")],
            ));
            assert_eq!(docker["Architecture"], arch.as_str(), "{what}");
            assert_eq!(docker["Os"], "linux", "{what}");
            let ids: Vec<String> = diff_ids.iter().map(ToString::to_string).collect();
            assert_eq!(
                docker["Layers"],
                serde_json::json!(ids),
                "{what}: docker-archive layers"
            );

            // Only the target platform is in the archive, so skopeo must be told which one.
            let oci = json(run_tool(
                "skopeo",
                &[
                    "--override-os",
                    "linux",
                    "--override-arch",
                    arch.as_str(),
                    "inspect",
                    &format!("oci-archive:{plain}"),
                ],
            ));
            assert_eq!(
                oci["Digest"],
                fixture.top.to_string(),
                "{what}: the registry's digest"
            );
            assert_eq!(oci["Architecture"], arch.as_str(), "{what}");
            let layers: Vec<String> = image.layers.iter().map(|l| l.digest.to_string()).collect();
            assert_eq!(
                oci["Layers"],
                serde_json::json!(layers),
                "{what}: compressed layers"
            );
        }
    }
}

#[test]
fn private_containerd_imports_every_archive_with_full_name_and_registry_digest() {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    let world = world();
    for arch in [Arch::Amd64, Arch::Arm64] {
        let out = tempfile::tempdir().unwrap();
        for (fixture, _, path) in write_archives(&world, arch, out.path()) {
            let platform = format!("linux/{arch}");
            let path = path.to_str().unwrap();
            // The native snapshotter unpacks anywhere, and unpacking checks every layer against
            // the config's diff_ids.
            containerd.ctr(&[
                "images",
                "import",
                "--platform",
                &platform,
                "--snapshotter",
                "native",
                path,
            ]);
            let listing = containerd.ctr(&["images", "ls"]);
            let listing = String::from_utf8_lossy(&listing.stdout);
            let name = fixture.reference.to_string();
            let row = listing
                .lines()
                .map(|line| line.split_whitespace().collect::<Vec<_>>())
                .find(|cols| cols.first() == Some(&name.as_str()))
                .unwrap_or_else(|| panic!("{name} ({arch}) not listed after import:\n{listing}"));
            assert_eq!(
                row[2],
                fixture.top.to_string(),
                "{name} ({arch}) keeps the registry's digest"
            );
        }
    }
}
