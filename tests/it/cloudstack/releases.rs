//! What each CloudStack release's nodes read, end to end through the binary against the local
//! world: CloudStack 4.23's positional form (argument 6 a Headlamp version) and
//! `--headlamp-version` build `headlamp.yaml` from Headlamp's release manifest with its `:latest`
//! image pinned and pulled `IfNotPresent`, that image bundled for both arches, no
//! `dashboard.yaml`; `verify --cloudstack` judges the ISO by the release it is for; the summary
//! gives each ISO its `addKubernetesSupportedVersion` parameters, the checksum its sha256. The
//! rules of each release are in `profiles.rs` beside this file.

use std::fs;
use std::path::Path;

use crate::support::containerd::Containerd;
use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// What a 4.23 management server and node read of an extracted ISO built from a Headlamp version:
/// `headlamp.yaml` applied (its pod `headlamp` in kube-system must start offline), no
/// `dashboard.yaml`, the image it names imported from `docker/`.
fn replay_4_23(root: &Path, arch: &str, version: &str) {
    assert!(
        !root.join("dashboard.yaml").exists(),
        "4.23 from a Headlamp version: no dashboard.yaml"
    );
    let headlamp = fs::read_to_string(root.join("headlamp.yaml")).unwrap();
    let pinned = format!("ghcr.io/headlamp-k8s/headlamp:v{version}");
    assert!(
        headlamp.contains(&format!(
            "          image: {pinned}\n          imagePullPolicy: IfNotPresent\n"
        )),
        "the image pinned, its policy inserted beside it:\n{headlamp}"
    );
    assert!(!headlamp.contains(":latest"), "{headlamp}");
    let docs: Vec<serde_json::Value> = serde_saphyr::from_str_multiple(&headlamp).unwrap();
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("a Deployment");
    assert_eq!(deployment["metadata"]["name"], "headlamp");
    assert_eq!(deployment["metadata"]["namespace"], "kube-system");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], pinned.as_str());
    assert_eq!(container["imagePullPolicy"], "IfNotPresent");
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    let archive = format!("docker/headlamp:v{version}.tar");
    assert!(
        versions
            .lines()
            .any(|l| l.starts_with(&format!("image {pinned} sha256:")) && l.ends_with(&archive)),
        "{versions}"
    );
    assert!(root.join(&archive).is_file(), "{archive} in the ISO");
    assert!(
        !versions.contains("headlamp:latest"),
        "the unpinned tag is not bundled:\n{versions}"
    );
    assert!(
        versions.contains(
            "# edit headlamp.yaml: imagePullPolicy: IfNotPresent inserted for 1 container(s)"
        ),
        "{versions}"
    );
    if let Some(containerd) = Containerd::start() {
        containerd.ctr(&[
            "images",
            "import",
            "--platform",
            &format!("linux/{arch}"),
            "--snapshotter",
            "native",
            p(&root.join(&archive)),
        ]);
        let listing = containerd.ctr(&["images", "ls", "-q"]).stdout;
        let listing = String::from_utf8_lossy(&listing);
        assert!(listing.lines().any(|l| l == pinned), "{listing}");
    }
}

/// What the Headlamp builds below share: the world's Kubernetes version, the crictl of its minor,
/// the Headlamp version and the build name.
struct Headlamp<'a> {
    k: String,
    crictl: String,
    version: &'a str,
    name: String,
}

impl<'a> Headlamp<'a> {
    fn of(world: &'a World) -> Self {
        let k = world.kubernetes().to_owned();
        let crictl = format!("1.{}.0", k.split('.').nth(1).unwrap());
        let name = format!("setupheadlamp-v{k}");
        let version = world.headlamp_version();
        Headlamp {
            k,
            crictl,
            version,
            name,
        }
    }
}

/// CloudStack 4.23's script form into `out`, as its reviewer ran it (with a `v`: never doubled):
/// the image pinned and its policy inserted, both logged, the release manifest fetched through
/// the mirror.
fn build_positional(world: &World, dir: &Path, h: &Headlamp, out: &Path) {
    let v = format!("v{}", h.version);
    let args: [&str; 8] = [
        p(out),
        &h.k,
        "1.6.2",
        &h.crictl,
        world.network_url(),
        &v,
        &h.name,
        "amd64",
    ];
    let built = ok(build_in_world(world, dir, &args));
    let stderr = String::from_utf8_lossy(&built.stderr);
    for logged in [
        "headlamp.yaml: imagePullPolicy: IfNotPresent inserted for 1 container(s)",
        &format!(
            "headlamp.yaml: image set to ghcr.io/headlamp-k8s/headlamp:v{}",
            h.version
        ),
    ] {
        assert!(stderr.contains(logged), "{logged:?} not logged:\n{stderr}");
    }
    let served = world.upstream().served();
    let url_path = format!(
        "/raw.githubusercontent.com/kubernetes-sigs/headlamp/v{}/kubernetes-headlamp.yaml",
        h.version
    );
    assert!(
        served.iter().any(|s| s.path == url_path && s.status == 200),
        "the release manifest came through the mirror"
    );
}

/// The same request with flags, `--headlamp-version` and both arches, into `out`.
fn build_with_flags(world: &World, dir: &Path, h: &Headlamp, out: &Path) {
    ok(build_in_world(
        world,
        dir,
        &[
            "--kubernetes",
            &h.k,
            "--cni",
            "1.6.2",
            "--crictl",
            &h.crictl,
            "--network",
            world.network_url(),
            "--headlamp-version",
            h.version,
            "--name",
            &h.name,
            "--arch",
            "amd64",
            "--arch",
            "arm64",
            "--output",
            p(out),
        ],
    ));
}

/// The ISO for `arch` read as a 4.23 node reads it (extracted into `root`), its lock recording
/// the Headlamp version and the release; it verifies for 4.23 and by what it records, and for
/// 4.22, whose servers apply `dashboard.yaml`, it lacks that.
fn assert_for_4_23_only(iso: &Path, root: &Path, arch: &str, version: &str) {
    fs::create_dir_all(root).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(root)]);
    replay_4_23(root, arch, version);
    let lock: serde_json::Value =
        serde_json::from_slice(&fs::read(root.join("cks-iso.lock")).unwrap()).unwrap();
    assert_eq!(lock["request"]["headlamp"], version, "the lock records it");
    let (code, report) = verify_iso(iso, &["--cloudstack", "4.23"]);
    assert_eq!(code, Some(0), "{report}");
    // For 4.22 and before the same ISO lacks what their servers apply.
    let (code, report) = verify_iso(iso, &["--cloudstack", "4.22"]);
    assert_eq!(code, Some(1), "{report}");
    assert!(
        report.contains("dashboard.yaml: missing: CloudStack 4.22 applies it"),
        "{report}"
    );
    // Without --cloudstack, verify takes the release the ISO records: 4.23, implied by a
    // Headlamp version without a dashboard.
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    assert!(versions.contains("\ncloudstack 4.23\n"), "{versions}");
    assert_eq!(lock["request"]["cloudstack"], "4.23");
    let (code, report) = verify_iso(iso, &[]);
    assert_eq!(code, Some(0), "{report}");
}

#[test]
fn the_4_23_positional_form_and_headlamp_version_build_a_pinned_headlamp_for_both_arches() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let h = Headlamp::of(&world);
    let (positional, flags) = (d.join("positional"), d.join("flags"));
    build_positional(&world, d, &h, &positional);
    build_with_flags(&world, d, &h, &flags);
    let a = positional.join(format!("{}-x86_64.iso", h.name));
    let b = flags.join(format!("{}-x86_64.iso", h.name));
    assert!(
        crate::support::same_bytes(&a, &b),
        "the positional and flag forms differ"
    );
    for (arch, uname) in [("amd64", "x86_64"), ("arm64", "aarch64")] {
        let iso = flags.join(format!("{}-{uname}.iso", h.name));
        assert_for_4_23_only(&iso, &d.join(format!("x-{arch}")), arch, h.version);
    }

    // A locked rebuild makes the same bytes: the pin is in the lock.
    let again = d.join("again");
    ok(build_in_world(
        &world,
        d,
        &["--locked", p(&b), "--output", p(&again)],
    ));
    assert!(
        crate::support::same_bytes(&b, &again.join(format!("{}-x86_64.iso", h.name))),
        "--locked rebuilds the Headlamp ISO byte for byte"
    );
}

#[test]
fn a_headlamp_release_manifest_given_as_a_url_gets_its_pull_policy_but_no_pin() {
    // The same manifest through --headlamp: its `:latest` stays, but it is pulled IfNotPresent.
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let url = format!(
        "https://raw.githubusercontent.com/kubernetes-sigs/headlamp/v{}/kubernetes-headlamp.yaml",
        world.headlamp_version()
    );
    ok(build_in_world(
        &world,
        dir.path(),
        &[
            "--kubernetes",
            world.kubernetes(),
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
            "--headlamp",
            &url,
            "--output",
            p(&out),
        ],
    ));
    let iso = out.join(format!("setup-v{}-x86_64.iso", world.kubernetes()));
    let root = dir.path().join("x");
    fs::create_dir_all(&root).unwrap();
    tool("bsdtar", ["-x", "-f", p(&iso), "-C", p(&root)]);
    let headlamp = fs::read_to_string(root.join("headlamp.yaml")).unwrap();
    assert!(
        headlamp.contains(
            "          image: ghcr.io/headlamp-k8s/headlamp:latest\n          imagePullPolicy: IfNotPresent\n"
        ),
        "{headlamp}"
    );
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    assert!(
        versions.contains("image ghcr.io/headlamp-k8s/headlamp:latest sha256:"),
        "{versions}"
    );
    let (code, report) = verify_iso(&iso, &[]);
    assert_eq!(code, Some(0), "{report}");
}

#[test]
fn a_version_in_argument_6_that_is_also_a_file_is_a_usage_error_naming_both_readings() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("0.40.1"), "kind: Namespace\n").unwrap();
    let out = cks_iso()
        .current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .args([
            "build",
            "out",
            "1.33.1",
            "1.6.2",
            "1.33.0",
            "https://example.org/net.yaml",
            "0.40.1",
            "setupheadlamp-v1.33.1",
            "amd64",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for want in [
        "positional argument 6 is \"0.40.1\"",
        "Headlamp version",
        "dashboard manifest file \"0.40.1\"",
        "hint:",
        "--headlamp-version 0.40.1",
        "./0.40.1",
    ] {
        assert!(err.contains(want), "{want:?} not in:\n{err}");
    }
    assert!(!dir.path().join("out").exists());
}

/// `build` of the world's request for both arches into `out`, with `extra`; its stdout.
fn build_both_arches(world: &World, dir: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "--kubernetes",
        world.kubernetes(),
        "--network",
        world.network_url(),
        "--dashboard",
        world.dashboard_url(),
        "--arch",
        "amd64",
        "--arch",
        "arm64",
        "--output",
        p(out),
    ];
    args.extend(extra);
    String::from_utf8(ok(build_in_world(world, dir, &args)).stdout).unwrap()
}

/// The sha256 of the ISO for `uname` in `out`, as sha256sum prints it.
fn sha(out: &Path, k: &str, uname: &str) -> String {
    let iso = out.join(format!("setup-v{k}-{uname}.iso"));
    tool("sha256sum", [p(&iso)]).0[..64].to_owned()
}

/// The `--json` summary's `isos`: two, each with its sha256 and the registration fields
/// CloudStack's `addKubernetesSupportedVersion` takes, the URL under BASE.
fn assert_registrations(doc: &serde_json::Value, out: &Path, k: &str) {
    let isos = doc["isos"].as_array().unwrap();
    assert_eq!(isos.len(), 2);
    for iso in isos {
        let r = &iso["registration"];
        let uname = match iso["arch"].as_str().unwrap() {
            "amd64" => "x86_64",
            _ => "aarch64",
        };
        let actual = sha(out, k, uname);
        assert_eq!(iso["sha256"], actual.as_str());
        assert_eq!(r["checksum"], format!("{{SHA-256}}{actual}").as_str());
        assert_eq!(r["arch"], uname);
        assert_eq!(r["semanticversion"], k);
        assert_eq!(r["name"], format!("setup-v{k}-{uname}").as_str());
        assert_eq!(
            (r["mincpunumber"].as_u64(), r["minmemory"].as_u64()),
            (Some(2), Some(2048))
        );
        let url = format!("https://files.example.org/cks/setup-v{k}-{uname}.iso");
        assert_eq!(r["url"], url.as_str());
        assert!(
            r["cmk"].as_str().unwrap().ends_with(&format!("url={url}")),
            "{r}"
        );
    }
}

/// A URL CloudStack cannot download from is a usage error before anything is fetched.
fn assert_a_publish_url_without_scheme_is_a_usage_error(world: &World, dir: &Path) {
    let bad = build_in_world(
        world,
        dir,
        &[
            "--kubernetes",
            world.kubernetes(),
            "--network",
            "n",
            "--dashboard",
            "d",
            "--publish-url",
            "files.example.org",
        ],
    );
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--publish-url \"files.example.org\"") && err.contains("hint:"),
        "{err}"
    );
}

#[test]
fn the_registration_line_names_each_iso_by_arch_with_its_sha256() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let k = world.kubernetes().to_owned();

    // Without --publish-url: a placeholder where the URL goes.
    let text = build_both_arches(&world, dir.path(), &out, &[]);
    for uname in ["x86_64", "aarch64"] {
        let line = format!(
            "  cmk add kubernetessupportedversion semanticversion={k} name=setup-v{k}-{uname} \
             arch={uname} checksum={{SHA-256}}{} mincpunumber=2 minmemory=2048 \
             url=<URL-of-setup-v{k}-{uname}.iso>\n",
            sha(&out, &k, uname)
        );
        assert!(text.contains(&line), "{line:?} not in:\n{text}");
    }

    // With it, in JSON: the same fields, the URL under BASE.
    let base = ["--json", "--publish-url", "https://files.example.org/cks/"];
    let json = build_both_arches(&world, dir.path(), &out, &base);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    // Versioned, and the versions as fields (README, "cks-iso build").
    assert_eq!(doc["format"], 1, "{doc:#}");
    assert_eq!(doc["versions"]["kubernetes"], k.as_str(), "{doc:#}");
    assert!(doc["versions"]["cni"].is_string(), "{doc:#}");
    assert!(
        doc["summary"].as_str().unwrap().starts_with("kubernetes v"),
        "{doc:#}"
    );
    assert_registrations(&doc, &out, &k);
    assert_a_publish_url_without_scheme_is_a_usage_error(&world, dir.path());
}
