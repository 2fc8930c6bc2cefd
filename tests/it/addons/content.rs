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
    pub(crate) size: u64,
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
pub(crate) fn image_lines(versions: &str) -> BTreeMap<String, (String, String)> {
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

/// `iso` extracted by bsdtar `into` a directory (created).
pub(crate) fn extract(iso: &Path, into: &Path) {
    fs::create_dir_all(into).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(into)]);
}

/// The add-on image the configuration names (`extras: images:`).
const CONFIGURED: &str = "docker.io/acme/fromconfig:0.1";

impl Extras {
    /// Every add-on of the main test, the configuration's first.
    fn all(&self) -> [&str; 6] {
        [
            CONFIGURED,
            &self.short,
            &self.by_digest,
            &self.from_file,
            &self.from_manifest[0],
            &self.from_manifest[1],
        ]
    }
}

/// The images file naming `extras.from_file`, and a configuration whose extras add
/// [`CONFIGURED`] to the flags' (a locked build takes the lock's), beside the world's trust root.
fn configure_extras(world: &World, d: &Path, extras: &Extras) -> (PathBuf, PathBuf) {
    let images_file = d.join("images.txt");
    fs::write(
        &images_file,
        format!("# add-ons\n\n{}   # the first tool\n", extras.from_file),
    )
    .unwrap();
    push(world, "docker.io/acme/fromconfig", "0.1", &["amd64"]);
    let config = d.join("config.yaml");
    let extras_yaml = format!("extras:\n  images: [{CONFIGURED}]\n");
    fs::write(&config, format!("{}{extras_yaml}", world.config_yaml())).unwrap();
    fs::copy(world.trusted_root_path(), d.join("trusted_root.json")).unwrap();
    (images_file, config)
}

#[test]
fn extras_are_bundled_imported_locked_rebuilt_offline_listed_and_diffed() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (extras, url) = publish_extras(&world);
    let (images_file, config) = configure_extras(&world, d, &extras);
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
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    let lines = image_lines(&versions);
    assert_versions_lists_each_extra_apart(&root, &versions, &extras, &combined(&o));

    // The manifest at the root, edited like the bundled ones.
    let text = fs::read_to_string(root.join("addon.yaml")).unwrap();
    assert!(text.contains("imagePullPolicy: IfNotPresent"), "{text}");
    assert!(versions.contains("# edit addon.yaml: imagePullPolicy: IfNotPresent inserted"));
    assert_the_lock_records_each_extra(&lock, &lines, &extras, &url);
    assert_both_sboms_list_each_extra(&root, &extras);

    let (code, report) = verify_iso(&iso, &[]);
    assert_eq!(code, Some(0), "{report}");
    import_all(&root, &versions);
    assert_verify_names_a_missing_extra(d, &root, &lines, &extras);
    assert_diff_names_each_extra(&world, d, &iso, &extras);

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

/// versions.txt: one image line per archive, the add-ons told apart; two `tool:1.0` of other
/// registries both kept (the build says they share the archive name), pause not an add-on.
fn assert_versions_lists_each_extra_apart(
    root: &Path,
    versions: &str,
    extras: &Extras,
    said: &str,
) {
    let lines = image_lines(versions);
    for name in extras.all() {
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
    assert!(said.contains("share the archive name"), "{said}");
    assert!(!versions.contains("# extra registry.k8s.io/pause"));
}

/// The lock says what was asked and what it resolved to: each extra's digest and why it is
/// there, none for pause, and the extra manifest's source.
fn assert_the_lock_records_each_extra(
    lock: &Path,
    lines: &BTreeMap<String, (String, String)>,
    extras: &Extras,
    url: &str,
) {
    let run_lock: serde_json::Value = serde_json::from_slice(&fs::read(lock).unwrap()).unwrap();
    let locked = run_lock["arches"]["amd64"]["images"].as_array().unwrap();
    let extra_of = |name: &str| {
        let entry = locked.iter().find(|i| i["reference"] == name).unwrap();
        assert_eq!(entry["digest"].as_str(), Some(lines[name].0.as_str()));
        entry["extra"].as_str().map(str::to_owned)
    };
    for name in &extras.all()[..4] {
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
    assert_eq!(addon["source"], url);
}

/// Both SBOMs list the add-ons, with where they came from, and validate.
fn assert_both_sboms_list_each_extra(root: &Path, extras: &Extras) {
    let cdx = fs::read_to_string(root.join("sbom.cdx.json")).unwrap();
    let spdx = fs::read_to_string(root.join("sbom.spdx.json")).unwrap();
    for name in extras.all() {
        let said = format!("add-on image {name}, ");
        assert!(cdx.contains(&said), "{said} not in the CycloneDX SBOM");
        assert!(spdx.contains(&said), "{said} not in the SPDX SBOM");
    }
    validate_sboms(
        &[&root.join("sbom.cdx.json")],
        &[&root.join("sbom.spdx.json")],
    );
}

/// One add-on archive removed from the unpacked `root`, the ISO re-authored: verify names it.
fn assert_verify_names_a_missing_extra(
    d: &Path,
    root: &Path,
    lines: &BTreeMap<String, (String, String)>,
    extras: &Extras,
) {
    let (_, archive) = &lines[extras.from_file.as_str()];
    fs::remove_file(root.join(archive)).unwrap();
    let cut = d.join("cut.iso");
    build_iso(root, &cut);
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
}

/// diff against the same build without add-ons names each, and why it is there.
fn assert_diff_names_each_extra(world: &World, d: &Path, iso: &Path, extras: &Extras) {
    let plain = d.join("plain");
    ok(build(world, d, &plain, &[]).output().unwrap());
    let o = cks_iso()
        .args(["diff", p(&plain.join(iso.file_name().unwrap())), p(iso)])
        .output()
        .unwrap();
    let said = combined(&o);
    for name in extras.all() {
        assert!(said.contains(name), "{name} not in the diff:\n{said}");
    }
    assert!(said.contains("addon.yaml"), "{said}");
    assert!(said.contains("[add-on, named by addon.yaml]"), "{said}");
    assert!(said.contains("[add-on, asked for]"), "{said}");
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
