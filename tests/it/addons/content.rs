//! Add-on content (`build --image`, `--images-file`, `--manifest`, `resolve --image`, `--manifest`)
//! against the whole local world, with add-on images pushed into its docker-registry here: every
//! extra lands in `docker/` and imports into containerd with its registry digest, the lock records
//! it so that `--locked --offline` rebuilds the same bytes with the network stopped,
//! `versions.txt`, both SBOMs (judged by the formats' validators) and `diff` name it; names cks-iso
//! or CloudStack own are refused, an image without the ISO's arch fails naming the platforms it
//! has, and `resolve` sizes extras (asked for, or named by an add-on manifest of the flag or the
//! configuration) from their image manifests without downloading a layer.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::containerd::Containerd;
use crate::support::*;
use cks_iso_testworld::images::{
    Plan, Style, index, layer, noise, platform_manifest, push_blob, push_manifest,
};
use cks_iso_testworld::world::{Options, World};

/// What [`push`] published.
pub(crate) struct Pushed {
    /// The index's digest.
    pub(crate) top: String,
    /// Every platform's layer digests.
    pub(crate) layers: Vec<String>,
    /// The first arch's manifest, config and layer, in bytes.
    size: u64,
}

/// Pushes `repository:tag` (`quay.io/acme/agent`, stored under its host as the world stores
/// every image) into the world's registry for `arches`, as an OCI index.
pub(crate) fn push(world: &World, repository: &str, tag: &str, arches: &[&str]) -> Pushed {
    let mut plan = Plan::default();
    let mut entries = Vec::new();
    let mut layers = Vec::new();
    let mut sizes = Vec::new();
    for (i, arch) in arches.iter().enumerate() {
        let seed = repository.len() as u64 * 31 + i as u64;
        let own = layer(&[
            (
                "etc/addon",
                format!("{repository}:{tag} {arch}\n").into_bytes(),
            ),
            ("opt/addon/bin", noise(seed, 8 * 1024)),
        ]);
        layers.push(own.digest.clone());
        let (desc, image) = platform_manifest(&mut plan, Style::Oci, arch, None, &[&own]);
        let config = plan.blobs[&image.config].len();
        sizes.push(desc["size"].as_u64().unwrap() + (config + own.gz.len()) as u64);
        entries.push(desc);
    }
    let top = index(&mut plan, Style::Oci, entries, Some(tag));
    let addr = world.registry_host();
    for (digest, bytes) in &plan.blobs {
        push_blob(&addr, repository, digest, bytes).unwrap();
    }
    for (object, media, bytes) in &plan.manifests {
        push_manifest(&addr, repository, object, media, bytes).unwrap();
    }
    Pushed {
        top,
        layers,
        size: sizes[0],
    }
}

/// Serves `text` as the world's `https://raw.githubusercontent.com/<path>`; returns the URL.
pub(crate) fn serve_manifest(world: &World, path: &str, text: &str) -> String {
    world.upstream().put(
        &format!("raw.githubusercontent.com/{path}"),
        text.as_bytes().to_vec(),
        "text/plain; charset=utf-8",
    );
    format!("https://raw.githubusercontent.com/{path}")
}

/// A Deployment naming `images`, one container each, no pull policy.
pub(crate) fn deployment(images: &[&str]) -> String {
    let mut text = String::from(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: addon\n  namespace: addon\n\
         spec:\n  selector:\n    matchLabels: {app: addon}\n  template:\n    metadata:\n      \
         labels: {app: addon}\n    spec:\n      containers:\n",
    );
    for (i, image) in images.iter().enumerate() {
        text.push_str(&format!("        - name: c{i}\n          image: {image}\n"));
    }
    text
}

/// `cks-iso build` of amd64 in `world` into `out`, with `args` added.
pub(crate) fn build(world: &World, dir: &Path, out: &Path, args: &[&str]) -> Command {
    build_with(world.config_path(), world, dir, out, args)
}

/// [`build`] with the configuration file `config`.
pub(crate) fn build_with(
    config: &Path,
    world: &World,
    dir: &Path,
    out: &Path,
    args: &[&str],
) -> Command {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = build_in(config, &tmp);
    cmd.args(["--no-progress", "--kubernetes", world.kubernetes()])
        .args(["--network", world.network_url()])
        .args(["--dashboard", world.dashboard_url()])
        .args(["--output", p(out)])
        .args(["--cache-dir", p(&dir.join("cache"))])
        .args(args);
    cmd
}

/// `versions.txt`'s image lines: name → (digest, archive).
fn image_lines(versions: &str) -> BTreeMap<String, (String, String)> {
    versions
        .lines()
        .filter(|l| l.starts_with("image "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[1].to_owned(), (f[2].to_owned(), f[3].to_owned()))
        })
        .collect()
}

/// `ctr -n k8s.io images import` of every archive, as the node scripts do; every `image` line
/// of `versions.txt` must then be in containerd under its name with its registry digest.
fn import_all(root: &Path, versions: &str) {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    for entry in fs::read_dir(root.join("docker")).unwrap() {
        let tar = entry.unwrap().path();
        let args = ["images", "import", "--platform", "linux/amd64"];
        containerd.ctr(&[&args[..], &["--snapshotter", "native", p(&tar)]].concat());
    }
    let listing = String::from_utf8_lossy(&containerd.ctr(&["images", "ls"]).stdout).into_owned();
    for (name, (digest, _)) in image_lines(versions) {
        let row = listing
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name.as_str()))
            .unwrap_or_else(|| panic!("{name} not imported:\n{listing}"));
        assert!(row.contains(&digest), "{name} not at {digest}:\n{row}");
    }
}

/// The add-on images of the main test: (reference as given, normalised name).
struct Extras {
    short: String,
    by_digest: String,
    from_file: String,
    from_manifest: [String; 2],
}

/// Pushes the add-on images and serves the add-on manifest; returns them and its URL.
fn publish_extras(world: &World) -> (Extras, String) {
    push(
        world,
        "docker.io/library/toolbox",
        "1.0",
        &["amd64", "arm64"],
    );
    let agent = push(world, "quay.io/acme/agent", "2.1", &["amd64", "arm64"]).top;
    push(world, "quay.io/one/tool", "1.0", &["amd64", "arm64"]);
    // The same last path component and tag as quay.io/one/tool:1.0: both must survive.
    push(world, "ghcr.io/two/tool", "1.0", &["amd64", "arm64"]);
    push(world, "docker.io/acme/sidecar", "latest", &["amd64"]);
    let url = serve_manifest(
        world,
        "acme/addon/v1/deploy/addon.yaml",
        &deployment(&["ghcr.io/two/tool:1.0", "acme/sidecar"]),
    );
    let extras = Extras {
        short: "docker.io/library/toolbox:1.0".into(),
        by_digest: format!("quay.io/acme/agent@{agent}"),
        from_file: "quay.io/one/tool:1.0".into(),
        from_manifest: [
            "ghcr.io/two/tool:1.0".into(),
            "docker.io/acme/sidecar:latest".into(),
        ],
    };
    (extras, url)
}

fn extract(iso: &Path, into: &Path) {
    fs::create_dir_all(into).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(into)]);
}

#[test]
fn extras_are_bundled_imported_locked_rebuilt_offline_listed_and_diffed() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (extras, url) = publish_extras(&world);
    let images_file = d.join("images.txt");
    fs::write(
        &images_file,
        format!("# add-ons\n\n{}   # the first tool\n", extras.from_file),
    )
    .unwrap();
    // The configuration's extras add to the flags (and a locked build takes the lock's).
    let configured = "docker.io/acme/fromconfig:0.1";
    push(&world, "docker.io/acme/fromconfig", "0.1", &["amd64"]);
    let config = d.join("config.yaml");
    let extras_yaml = format!("extras:\n  images: [{configured}]\n");
    fs::write(&config, format!("{}{extras_yaml}", world.config_yaml())).unwrap();
    fs::copy(world.trusted_root_path(), d.join("trusted_root.json")).unwrap();
    let (out, lock) = (d.join("out"), d.join("run.lock"));
    let manifest = format!("addon.yaml={url}");
    let o = ok(
        build_with(&config, &world, d, &out, &["--lock-file", p(&lock)])
            .args(["--image", "toolbox:1.0", "--image", &extras.by_digest])
            .args(["--images-file", p(&images_file), "--manifest", &manifest])
            .output()
            .unwrap(),
    );
    let iso = out.join(format!("setup-v{}-x86_64.iso", world.kubernetes()));
    let root = d.join("root");
    extract(&iso, &root);

    // versions.txt: one image line per archive, the add-ons told apart.
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    let lines = image_lines(&versions);
    let all = [
        configured,
        &extras.short,
        &extras.by_digest,
        &extras.from_file,
        &extras.from_manifest[0],
        &extras.from_manifest[1],
    ];
    for name in all {
        let (_, archive) = lines
            .get(name)
            .unwrap_or_else(|| panic!("no image line for {name}:\n{versions}"));
        assert!(root.join(archive).is_file(), "{archive} missing");
        assert!(
            versions.contains(&format!("# extra {name} ")),
            "{name} not marked as an add-on:\n{versions}"
        );
    }
    let archives: Vec<&String> = lines.values().map(|(_, a)| a).collect();
    let docker: Vec<String> = names(&root.join("docker"));
    assert_eq!(docker.len(), archives.len(), "{docker:?}");
    let same = [&extras.from_file, &extras.from_manifest[0]].map(|n| &lines[n.as_str()].1);
    assert_ne!(same[0], same[1], "tool:1.0 twice must not overwrite");
    assert!(
        combined(&o).contains("share the archive name"),
        "{}",
        combined(&o)
    );
    assert!(!versions.contains("# extra registry.k8s.io/pause"));

    // The manifest at the root, edited like the bundled ones.
    let text = fs::read_to_string(root.join("addon.yaml")).unwrap();
    assert!(text.contains("imagePullPolicy: IfNotPresent"), "{text}");
    assert!(versions.contains("# edit addon.yaml: imagePullPolicy: IfNotPresent inserted"));

    // The lock says what was asked and what it resolved to.
    let run_lock: serde_json::Value = serde_json::from_slice(&fs::read(&lock).unwrap()).unwrap();
    let locked = run_lock["arches"]["amd64"]["images"].as_array().unwrap();
    let extra_of = |name: &str| {
        let entry = locked.iter().find(|i| i["reference"] == name).unwrap();
        assert_eq!(entry["digest"].as_str(), Some(lines[name].0.as_str()));
        entry["extra"].as_str().map(str::to_owned)
    };
    for name in [
        configured,
        &extras.short,
        &extras.by_digest,
        &extras.from_file,
    ] {
        assert_eq!(extra_of(name).as_deref(), Some("image"), "{name}");
    }
    for name in &extras.from_manifest {
        assert_eq!(extra_of(name).as_deref(), Some("manifest:addon.yaml"));
    }
    assert_eq!(extra_of("registry.k8s.io/pause:3.10"), None);
    let addon = (run_lock["manifests"].as_array().unwrap().iter())
        .find(|m| m["path"] == "addon.yaml")
        .unwrap();
    assert_eq!(addon["role"], "extra");
    assert_eq!(addon["source"], url.as_str());

    // Both SBOMs list the add-ons, with where they came from, and validate.
    let cdx = fs::read_to_string(root.join("sbom.cdx.json")).unwrap();
    let spdx = fs::read_to_string(root.join("sbom.spdx.json")).unwrap();
    for name in all {
        let said = format!("add-on image {name}, ");
        assert!(cdx.contains(&said), "{said} not in the CycloneDX SBOM");
        assert!(spdx.contains(&said), "{said} not in the SPDX SBOM");
    }
    validate_sboms(
        &[&root.join("sbom.cdx.json")],
        &[&root.join("sbom.spdx.json")],
    );

    let (code, report) = verify_iso(&iso, &[]);
    assert_eq!(code, Some(0), "{report}");
    import_all(&root, &versions);

    // One add-on archive removed from an unpacked copy, the ISO re-authored: verify names it.
    let (_, archive) = &lines[extras.from_file.as_str()];
    fs::remove_file(root.join(archive)).unwrap();
    let cut = d.join("cut.iso");
    build_iso(&root, &cut);
    let (code, report) = verify_iso(&cut, &[]);
    assert_eq!(code, Some(1), "{report}");
    assert!(
        report.contains(archive.as_str()),
        "{archive} not named:\n{report}"
    );
    assert!(
        report.contains(&extras.from_file),
        "{} not named:\n{report}",
        extras.from_file
    );

    // diff against the same build without add-ons names each.
    let plain = d.join("plain");
    ok(build(&world, d, &plain, &[]).output().unwrap());
    let o = cks_iso()
        .args(["diff", p(&plain.join(iso.file_name().unwrap())), p(&iso)])
        .output()
        .unwrap();
    let said = combined(&o);
    for name in all {
        assert!(said.contains(name), "{name} not in the diff:\n{said}");
    }
    assert!(said.contains("addon.yaml"), "{said}");
    assert!(said.contains("[add-on, named by addon.yaml]"), "{said}");
    assert!(said.contains("[add-on, asked for]"), "{said}");

    // The network stopped: the lock and the cache rebuild the same bytes.
    drop(world);
    let again = d.join("again");
    let tmp = d.join("tmp-offline");
    fs::create_dir_all(&tmp).unwrap();
    ok(build_in(&config, &tmp)
        .args(["--no-progress", "--locked", p(&lock), "--offline"])
        .args(["--output", p(&again), "--cache-dir", p(&d.join("cache"))])
        .output()
        .unwrap());
    let rebuilt: PathBuf = again.join(iso.file_name().unwrap());
    assert!(same_bytes(&iso, &rebuilt), "the offline rebuild differs");
}

#[test]
fn owned_names_are_refused_and_an_image_without_the_arch_names_its_platforms() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out");
    let url = serve_manifest(
        &world,
        "acme/x/autoscaler.yaml",
        &deployment(&["busybox:1"]),
    );
    for given in [format!("autoscaler.yaml={url}"), url.clone()] {
        let said = fails(
            &mut build(&world, d, &out, &["--manifest", &given]),
            2,
            &[
                "autoscaler.yaml",
                "cks-iso or CloudStack owns that name",
                "hint:",
            ],
        );
        assert!(said.contains("--manifest velero.yaml=URL"), "{said}");
    }
    assert!(!out.exists() || names(&out).is_empty(), "nothing written");

    // A second pause image would be the sandbox nodes pick (`grep pause | sort | tail -n 1`).
    fails(
        &mut build(&world, d, &out, &["--image", "registry.k8s.io/pause:3.9"]),
        1,
        &[
            "registry.k8s.io/pause:3.9",
            "registry.k8s.io/pause:3.10",
            "hint:",
        ],
    );

    push(&world, "quay.io/acme/amd64-only", "3.0", &["amd64"]);
    let said = fails(
        build(&world, d, &out, &["--arch", "arm64"])
            .args(["--image", "quay.io/acme/amd64-only:3.0"]),
        1,
        &["quay.io/acme/amd64-only:3.0", "linux/arm64", "linux/amd64"],
    );
    assert!(!said.contains("panicked"), "{said}");
    assert!(
        !out.exists() || names(&out).is_empty(),
        "no ISO after a failure"
    );
}

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

/// Add-ons across the air gap: `cache export --locked` carries what the lock's extras need (the
/// extra images' blobs and the extra manifest's body) beside the core content, `cache import`
/// takes it into an empty cache, and with every server stopped `build --locked --offline` from
/// that cache makes the same ISO byte for byte.
#[test]
fn extras_cross_the_air_gap_through_cache_export_and_import() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    push(&world, "quay.io/acme/agent", "2.1", &["amd64", "arm64"]);
    push(&world, "ghcr.io/two/tool", "1.0", &["amd64"]);
    let url = serve_manifest(
        &world,
        "acme/addon/v1/deploy/addon.yaml",
        &deployment(&["ghcr.io/two/tool:1.0"]),
    );
    let lock = d.join("cks-iso.lock");
    let online = d.join("online");
    let manifest = format!("addon.yaml={url}");
    ok(
        build(&world, d, &online, &["--image", "quay.io/acme/agent:2.1"])
            .args(["--manifest", &manifest, "--lock-file", p(&lock)])
            .output()
            .unwrap(),
    );
    let cache = |cache: &Path, args: &[&str]| {
        ok(cks_iso()
            .arg("cache")
            .args(args)
            .args(["--cache-dir", p(cache)])
            .output()
            .unwrap())
    };
    let export = d.join("export");
    cache(
        &d.join("cache"),
        &["export", "--locked", p(&lock), "-o", p(&export)],
    );
    let carried = d.join("carried");
    cache(&carried, &["import", p(&export), "--locked", p(&lock)]);
    // The world's Sigstore root, which its signatures chain to, outlives the world.
    let root = d.join("trusted_root.json");
    fs::copy(
        world.config_path().with_file_name("trusted_root.json"),
        &root,
    )
    .unwrap();
    drop(world);

    let offline = d.join("offline");
    let tmp = d.join("tmp-offline");
    fs::create_dir_all(&tmp).unwrap();
    let out = ok(cks_iso()
        .env_remove("CKS_ISO_CONFIG")
        .env("TMPDIR", &tmp)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .args(["build", "--no-progress", "--locked", p(&lock), "--offline"])
        .args(["--trusted-root", p(&root)])
        .args(["--output", p(&offline), "--cache-dir", p(&carried)])
        .output()
        .unwrap());
    let isos: Vec<String> = names(&online)
        .into_iter()
        .filter(|n| n.ends_with(".iso"))
        .collect();
    assert_eq!(isos.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let (first, again) = (online.join(&isos[0]), offline.join(&isos[0]));
    assert!(
        same_bytes(&first, &again),
        "the offline build from the carried cache differs"
    );
    // The add-ons are in it: both extra images' archives and the extra manifest.
    let root_dir = d.join("root");
    extract(&again, &root_dir);
    let versions = fs::read_to_string(root_dir.join("versions.txt")).unwrap();
    let lines = image_lines(&versions);
    for name in ["quay.io/acme/agent:2.1", "ghcr.io/two/tool:1.0"] {
        assert!(lines.contains_key(name), "{name} not bundled:\n{versions}");
    }
    assert!(root_dir.join("addon.yaml").is_file());
    assert!(names(&tmp).is_empty(), "nothing left behind");
}

#[test]
fn resolve_sizes_the_images_of_add_on_manifests_from_the_flag_and_the_configuration() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let agent = push(&world, "quay.io/acme/agent", "2.1", &["amd64", "arm64"]);
    let sidecar = push(&world, "docker.io/acme/sidecar", "latest", &["amd64"]);
    let tool = push(&world, "ghcr.io/two/tool", "1.0", &["amd64", "arm64"]);
    let flagged = serve_manifest(
        &world,
        "acme/addon/v1/deploy/addon.yaml",
        &deployment(&["quay.io/acme/agent:2.1", "acme/sidecar"]),
    );
    let configured = serve_manifest(
        &world,
        "two/tool/v1/deploy/tool.yaml",
        &deployment(&["ghcr.io/two/tool:1.0"]),
    );
    // `extras: manifests:` in the configuration, `--manifest` on the command line: both taken.
    let config = d.join("config.yaml");
    let extras_yaml = format!("extras:\n  manifests: [\"tools.yaml={configured}\"]\n");
    fs::write(&config, format!("{}{extras_yaml}", world.config_yaml())).unwrap();
    fs::copy(world.trusted_root_path(), d.join("trusted_root.json")).unwrap();
    let cache = d.join("xdg-cache");
    let resolve = |json: bool| {
        let mut cmd = cks_iso();
        cmd.env("CKS_ISO_CONFIG", &config)
            .env("XDG_CACHE_HOME", &cache)
            .env("TMPDIR", d)
            .args(["resolve", "--kubernetes", world.kubernetes()])
            .args(["--manifest", &format!("addon.yaml={flagged}")]);
        if json {
            cmd.arg("--json");
        }
        ok(cmd.output().unwrap())
    };
    let expected = [
        ("ghcr.io/two/tool:1.0", &tool, "manifest:tools.yaml"),
        ("quay.io/acme/agent:2.1", &agent, "manifest:addon.yaml"),
        (
            "docker.io/acme/sidecar:latest",
            &sidecar,
            "manifest:addon.yaml",
        ),
    ];

    let text = String::from_utf8(resolve(false).stdout).unwrap();
    for (name, pushed, why) in expected {
        let row = (text.lines())
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{text}"));
        assert!(row.contains(&pushed.top), "{row}");
        assert!(row.ends_with(why), "{row}");
    }
    assert!(text.contains("Estimated ISO size: at least"), "{text}");

    let json: serde_json::Value = serde_json::from_slice(&resolve(true).stdout).unwrap();
    let addons = json["addons"].as_array().unwrap();
    let listed: Vec<&str> = addons
        .iter()
        .filter_map(|a| a["reference"].as_str())
        .collect();
    // The configuration's manifest first, then the flag's (its images in the edit's order).
    let mut from_flag = listed[1..].to_vec();
    from_flag.sort_unstable();
    assert_eq!(listed[0], expected[0].0, "{listed:?}");
    assert_eq!(
        from_flag,
        [expected[2].0, expected[1].0],
        "each once: {listed:?}"
    );
    for (name, pushed, why) in expected {
        let entry = addons.iter().find(|a| a["reference"] == name).unwrap();
        assert_eq!(entry["size"].as_u64(), Some(pushed.size), "{entry}");
        assert_eq!(entry["digest"], pushed.top.as_str(), "{entry}");
        assert_eq!(entry["extra"], why, "{entry}");
    }
    let sum = agent.size + sidecar.size + tool.size;
    assert_eq!(json["estimate"]["addon_images"].as_u64(), Some(sum));

    // The manifests were read; not one layer of their images was downloaded.
    let kept: Vec<String> = fs::read_dir(cache.join("cks-iso/blobs/sha256"))
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
