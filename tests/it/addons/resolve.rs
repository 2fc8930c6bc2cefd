//! `resolve` with add-ons (`--image`, `--images-file`, `--manifest`, and `extras: manifests:` in
//! the configuration): each extra listed with its digest and size, read from its image manifests
//! without downloading a layer, counted in the ISO's estimate, and nothing left behind.

use std::fs;
use std::path::Path;
use std::process::Output;

use super::content::{Pushed, deployment, push, serve_manifest};
use crate::support::{cks_iso, names, ok, p};
use cks_iso_testworld::world::{Options, World};

#[test]
fn resolve_sizes_extras_from_their_manifests_without_downloading_a_layer() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let one = push(&world, "quay.io/acme/agent", "2.1", &["amd64", "arm64"]);
    let two = push(&world, "docker.io/library/toolbox", "1.0", &["amd64"]);
    let file = d.join("images.txt");
    fs::write(&file, "toolbox:1.0 # short\n").unwrap();
    let cache = d.join("xdg-cache");
    let resolve = |json: bool| {
        let mut cmd = cks_iso();
        cmd.env("CKS_ISO_CONFIG", world.config_path())
            .env("XDG_CACHE_HOME", &cache)
            .args(["resolve", "--kubernetes", world.kubernetes()])
            .args(["--image", &format!("quay.io/acme/agent@{}", one.top)])
            .args(["--images-file", p(&file)]);
        if json {
            cmd.arg("--json");
        }
        ok(cmd.output().unwrap())
    };
    let text = String::from_utf8(resolve(false).stdout).unwrap();
    assert!(text.contains("Add-on images"), "{text}");
    for (name, pushed) in [
        (format!("quay.io/acme/agent@{}", one.top), &one),
        ("docker.io/library/toolbox:1.0".to_owned(), &two),
    ] {
        let row = (text.lines())
            .find(|l| l.trim_start().starts_with(&name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{text}"));
        assert!(row.contains(&pushed.top), "{row}");
        assert!(row.contains(" KiB"), "{row}");
    }
    assert!(text.contains("Estimated ISO size: at least"), "{text}");

    let json: serde_json::Value = serde_json::from_slice(&resolve(true).stdout).unwrap();
    let addons = json["addons"].as_array().unwrap();
    let size_of = |name: &str| {
        let entry = addons.iter().find(|a| a["reference"] == name).unwrap();
        entry["size"].as_u64().unwrap()
    };
    assert_eq!(size_of("docker.io/library/toolbox:1.0"), two.size);
    assert_eq!(
        size_of(&format!("quay.io/acme/agent@{}", one.top)),
        one.size
    );
    let estimate = &json["estimate"];
    assert_eq!(estimate["addon_images"].as_u64(), Some(one.size + two.size));
    assert!(estimate["core_images"].as_u64().unwrap() > 0, "{estimate}");

    // The cache holds the manifests it was sized from, and not one layer.
    let kept: Vec<String> = fs::read_dir(cache.join("cks-iso/blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        kept.contains(&one.top.trim_start_matches("sha256:").to_owned()),
        "{kept:?}"
    );
    for layer in one.layers.iter().chain(&two.layers) {
        let hex = layer.trim_start_matches("sha256:");
        assert!(
            !kept.iter().any(|k| k == hex),
            "layer {layer} was downloaded"
        );
    }
}

#[test]
fn resolve_sizes_the_images_of_add_on_manifests_from_the_flag_and_the_configuration() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let agent = push(&world, "quay.io/acme/agent", "2.1", &["amd64", "arm64"]);
    let sidecar = push(&world, "docker.io/acme/sidecar", "latest", &["amd64"]);
    let tool = push(&world, "ghcr.io/two/tool", "1.0", &["amd64", "arm64"]);
    let resolve = AddOnResolve::serve(&world, d);
    let expected = [
        ("ghcr.io/two/tool:1.0", &tool, "manifest:tools.yaml"),
        ("quay.io/acme/agent:2.1", &agent, "manifest:addon.yaml"),
        (
            "docker.io/acme/sidecar:latest",
            &sidecar,
            "manifest:addon.yaml",
        ),
    ];

    let text = String::from_utf8(resolve.run(&world, false).stdout).unwrap();
    for (name, pushed, why) in expected {
        let row = (text.lines())
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{text}"));
        assert!(row.contains(&pushed.top), "{row}");
        assert!(row.ends_with(why), "{row}");
    }
    assert!(text.contains("Estimated ISO size: at least"), "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&resolve.run(&world, true).stdout).unwrap();
    assert_json_lists_each_once_with_its_size(&json, &expected);
    let sum = agent.size + sidecar.size + tool.size;
    assert_eq!(json["estimate"]["addon_images"].as_u64(), Some(sum));

    // The manifests were read; not one layer of their images was downloaded.
    let kept: Vec<String> = fs::read_dir(resolve.cache.join("cks-iso/blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for layer in [&agent, &sidecar, &tool].iter().flat_map(|p| &p.layers) {
        let hex = layer.trim_start_matches("sha256:");
        assert!(
            !kept.iter().any(|k| k == hex),
            "layer {layer} was downloaded"
        );
    }
    // No work directory is left behind.
    let left: Vec<String> = names(d)
        .into_iter()
        .filter(|n| n.starts_with("cks-iso-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A `resolve` of add-on manifests: one served for `--manifest addon.yaml=`, another named by the
/// configuration's `extras: manifests:` (both taken), with a cache and TMPDIR of its own.
struct AddOnResolve {
    config: std::path::PathBuf,
    flagged: String,
    cache: std::path::PathBuf,
    tmp: std::path::PathBuf,
}

impl AddOnResolve {
    /// Serves the two manifests and writes the configuration under `d`.
    fn serve(world: &World, d: &Path) -> Self {
        let flagged = serve_manifest(
            world,
            "acme/addon/v1/deploy/addon.yaml",
            &deployment(&["quay.io/acme/agent:2.1", "acme/sidecar"]),
        );
        let configured = serve_manifest(
            world,
            "two/tool/v1/deploy/tool.yaml",
            &deployment(&["ghcr.io/two/tool:1.0"]),
        );
        let config = d.join("config.yaml");
        let extras_yaml = format!("extras:\n  manifests: [\"tools.yaml={configured}\"]\n");
        fs::write(&config, format!("{}{extras_yaml}", world.config_yaml())).unwrap();
        fs::copy(world.trusted_root_path(), d.join("trusted_root.json")).unwrap();
        Self {
            config,
            flagged,
            cache: d.join("xdg-cache"),
            tmp: d.to_owned(),
        }
    }

    /// `resolve` of the world's release with the flag's manifest, as text or `--json`.
    fn run(&self, world: &World, json: bool) -> Output {
        let mut cmd = cks_iso();
        cmd.env("CKS_ISO_CONFIG", &self.config)
            .env("XDG_CACHE_HOME", &self.cache)
            .env("TMPDIR", &self.tmp)
            .args(["resolve", "--kubernetes", world.kubernetes()])
            .args(["--manifest", &format!("addon.yaml={}", self.flagged)]);
        if json {
            cmd.arg("--json");
        }
        ok(cmd.output().unwrap())
    }
}

/// The configuration's manifest first, then the flag's (its images in the edit's order), each
/// once, with its size, digest and why it is there.
fn assert_json_lists_each_once_with_its_size(
    json: &serde_json::Value,
    expected: &[(&str, &Pushed, &str); 3],
) {
    let addons = json["addons"].as_array().unwrap();
    let listed: Vec<&str> = addons
        .iter()
        .filter_map(|a| a["reference"].as_str())
        .collect();
    let mut from_flag = listed[1..].to_vec();
    from_flag.sort_unstable();
    assert_eq!(listed[0], expected[0].0, "{listed:?}");
    assert_eq!(
        from_flag,
        [expected[2].0, expected[1].0],
        "each once: {listed:?}"
    );
    for (name, pushed, why) in expected {
        let entry = addons.iter().find(|a| a["reference"] == *name).unwrap();
        assert_eq!(entry["size"].as_u64(), Some(pushed.size), "{entry}");
        assert_eq!(entry["digest"], pushed.top.as_str(), "{entry}");
        assert_eq!(entry["extra"], *why, "{entry}");
    }
}
