//! `cks-iso build` end to end against the whole local world (git, the upstream stand-in and a
//! docker-registry, through the mirror configuration), for amd64 and arm64, judged by real readers
//! and by replaying what CKS nodes do with the ISO: the globs, the units, the autoscaler template,
//! `ctr import` of every archive, and air-gap completeness; the SBOMs by the formats' own
//! validators and against `versions.txt`. Also: upstream's positional form, an
//! unprivileged user, Headlamp, a release from before registry.k8s.io (k8s.gcr.io images), and
//! bad input that must fail clearly and leave nothing behind.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::containerd::Containerd;
use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// `cks-iso build` inside `world`, with `tmp` as TMPDIR (to prove the work dir goes away).
fn build(world: &World, tmp: &Path, args: &[&str]) -> Command {
    let mut cmd = build_in(world.config_path(), tmp);
    cmd.args(args);
    cmd
}

fn flags<'a>(world: &'a World, out: &'a str, cache: &'a str) -> Vec<&'a str> {
    vec![
        "--kubernetes",
        world.kubernetes(),
        "--network",
        world.network_url(),
        "--dashboard",
        world.dashboard_url(),
        "--headlamp",
        world.headlamp_url(),
        "--output",
        out,
        "--cache-dir",
        cache,
    ]
}

/// `out`, `cache` and `tmp` (the build's `TMPDIR`, created) under `dir`.
fn work_dirs(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    (dir.join("out"), dir.join("cache"), tmp)
}

/// How many files are under `dir` (0 when it does not exist).
/// Image tags the cache's index recorded: one per image resolved at a registry. (Downloaded files
/// are kept in the cache too, verified, so counting blobs would not tell.)
fn images_resolved_into(cache: &Path) -> usize {
    let Ok(entries) = fs::read_dir(cache.join("index")) else {
        return 0;
    };
    entries
        .map(|e| fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .filter(|text| {
            text.lines()
                .nth(1)
                .is_some_and(|key| key.starts_with("tag:"))
        })
        .count()
}

/// Extracts an ISO with bsdtar, as an operator inspecting it would.
fn extract(iso: &Path, into: &Path) {
    fs::create_dir_all(into).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(into)]);
}

fn glob_one(dir: &Path, prefix: &str, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(prefix) && n.ends_with(suffix)
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{prefix}*{suffix} in {} must match exactly one file: {found:?}",
        dir.display()
    );
    found[0].clone()
}

/// Everything a node does with the extracted tree, apart from containerd.
fn replay_node_side(root: &Path, arch: &str, world: &World) {
    // tar -xzf cni/cni-plugins-*64.tgz and cri-tools/crictl-linux-*64.tar.gz
    for (dir, prefix, suffix) in [
        ("cni", "cni-plugins-", "64.tgz"),
        ("cri-tools", "crictl-linux-", "64.tar.gz"),
    ] {
        let file = glob_one(&root.join(dir), prefix, suffix);
        assert!(file.to_string_lossy().contains(arch), "{}", file.display());
        tool("tar", ["-tzf", p(&file)]);
    }
    for unit in ["kubelet.service", "10-kubeadm.conf"] {
        let text = fs::read_to_string(root.join(unit)).unwrap();
        assert!(
            text.contains("/opt/bin/kubelet") && !text.contains("/usr/bin"),
            "{unit}:\n{text}"
        );
    }
    let autoscaler = fs::read_to_string(root.join("autoscaler.yaml")).unwrap();
    for placeholder in ["<min>", "<max>", "<cluster-id>"] {
        assert!(
            autoscaler.contains(placeholder),
            "autoscaler.yaml lost {placeholder}"
        );
    }
    let docs: Vec<serde_json::Value> = serde_saphyr::from_str_multiple(&autoscaler).unwrap();
    let docs: Vec<&serde_json::Value> = docs.iter().filter(|d| !d.is_null()).collect();
    assert_eq!(
        docs.len(),
        8,
        "the six objects of the example plus the two extra ones"
    );
    let extra: Vec<_> = docs
        .iter()
        .filter(|d| d["metadata"]["name"] == "cluster-autoscaler-extra")
        .collect();
    assert_eq!(extra.len(), 2);
    let pinned = format!(
        "registry.k8s.io/autoscaling/cluster-autoscaler:v{}",
        world.autoscaler_version().unwrap()
    );
    assert!(
        autoscaler.contains(&format!("image: {pinned}")),
        "autoscaler.yaml must name {pinned}"
    );
    let headlamp = fs::read_to_string(root.join("headlamp.yaml")).unwrap();
    assert!(
        headlamp.contains("image: ghcr.io/headlamp-k8s/headlamp:v0.30.1"),
        "{headlamp}"
    );
    let provider = fs::read_to_string(root.join("provider.yaml")).unwrap();
    assert!(
        provider.contains("image: apache/cloudstack-kubernetes-provider:v1.2.0"),
        "{provider}"
    );
    for entry in fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = fs::read_to_string(&path).unwrap();
            for line in text.lines().filter(|l| l.contains("imagePullPolicy:")) {
                assert!(
                    line.trim_end()
                        .trim_end_matches('"')
                        .ends_with("IfNotPresent"),
                    "{}: {line}",
                    path.display()
                );
            }
        }
    }
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    assert!(versions.contains(&format!("\narch {arch}\n")), "{versions}");
    let images = versions.lines().filter(|l| l.starts_with("image ")).count();
    let archives = fs::read_dir(root.join("docker")).unwrap().count();
    assert_eq!(images, archives, "one versions.txt line per archive");
    for line in versions.lines().filter(|l| l.starts_with("file ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (out, _) = tool("sha256sum", [p(&root.join(f[1]))]);
        assert_eq!(format!("sha256:{}", &out[..64]), f[2], "{line}");
    }
}

/// The four SBOMs of `iso` (extracted into `root`) pass the formats' own validators and list what
/// `versions.txt` lists: every image as a `pkg:oci` component with its registry digest and a
/// platform manifest that is in its archive, every file with its sha256; the copies beside the
/// ISO also carry the ISO's sha256.
fn check_sboms(iso: &Path, root: &Path, arch: &str) {
    let beside = |suffix: &str| PathBuf::from(format!("{}{suffix}", p(iso)));
    let (cdx_beside, spdx_beside) = (beside(".cdx.json"), beside(".spdx.json"));
    let (cdx_inside, spdx_inside) = (root.join("sbom.cdx.json"), root.join("sbom.spdx.json"));
    validate_sboms(&[&cdx_inside, &cdx_beside], &[&spdx_inside, &spdx_beside]);
    let json = |path: &Path| -> serde_json::Value {
        serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
    };
    let (iso_sha, _) = tool("sha256sum", [p(iso)]);
    let iso_sha = &iso_sha[..64];
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    for (cdx, spdx, outside) in [
        (json(&cdx_inside), json(&spdx_inside), false),
        (json(&cdx_beside), json(&spdx_beside), true),
    ] {
        let main = &cdx["metadata"]["component"];
        let props = |c: &serde_json::Value, name: &str| -> Option<String> {
            c["properties"]
                .as_array()?
                .iter()
                .find(|p| p["name"] == name)?["value"]
                .as_str()
                .map(str::to_owned)
        };
        assert_eq!(props(main, "cks-iso:arch").as_deref(), Some(arch));
        let iso_hash = main["hashes"][0]["content"].as_str();
        let spdx_iso = &spdx["packages"][0];
        assert_eq!(spdx_iso["SPDXID"], "SPDXRef-ISO");
        let spdx_iso_hash = spdx_iso["checksums"][0]["checksumValue"].as_str();
        match outside {
            true => {
                assert_eq!(
                    iso_hash,
                    Some(iso_sha),
                    "{} names the ISO's sha256",
                    cdx_beside.display()
                );
                assert_eq!(spdx_iso_hash, Some(iso_sha), "{}", spdx_beside.display());
            }
            false => assert_eq!((iso_hash, spdx_iso_hash), (None, None)),
        }
        let components = cdx["components"].as_array().unwrap();
        let packages = spdx["packages"].as_array().unwrap();
        let lines: Vec<&str> = versions
            .lines()
            .filter(|l| l.starts_with("file ") || l.starts_with("image "))
            .collect();
        assert_eq!(
            components.len(),
            lines.len(),
            "one component per versions.txt record"
        );
        assert_eq!(
            packages.len(),
            lines.len() + 1,
            "one package per record, and the ISO"
        );
        for line in lines {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (path, hash) = match f[0] {
                "image" => (f[3], None),
                _ => (f[1], Some(f[2].trim_start_matches("sha256:"))),
            };
            let c = components
                .iter()
                .find(|c| props(c, "cks-iso:path").as_deref() == Some(path))
                .unwrap_or_else(|| panic!("no component for {line}"));
            let package = packages
                .iter()
                .find(|p| p["packageFileName"] == path)
                .unwrap_or_else(|| panic!("no SPDX package for {line}"));
            let c_hash = c["hashes"][0]["content"].as_str().unwrap();
            assert_eq!(package["checksums"][0]["checksumValue"], c_hash, "{line}");
            match hash {
                Some(hash) => assert_eq!(c_hash, hash, "{line}"),
                None => {
                    assert_eq!(c["type"], "container", "{line}");
                    assert_eq!(
                        props(c, "cks-iso:index-digest").as_deref(),
                        Some(f[2]),
                        "{line}"
                    );
                    let purl = c["purl"].as_str().unwrap();
                    assert!(
                        purl.starts_with("pkg:oci/")
                            && purl.contains(&format!("@sha256%3A{c_hash}?arch={arch}&")),
                        "{line}: {purl}"
                    );
                    assert_eq!(package["externalRefs"][0]["referenceLocator"], purl);
                    // The platform manifest the SBOM names is in the archive.
                    let (listing, _) = tool("bsdtar", ["-tf", p(&root.join(path))]);
                    assert!(
                        listing
                            .lines()
                            .any(|l| l == format!("blobs/sha256/{c_hash}")),
                        "{path} holds no blob {c_hash}:\n{listing}"
                    );
                }
            }
        }
    }
}

/// Tampers with the extracted ISO's SBOMs, authors it again with `cks-iso iso`, and expects
/// `verify` to name what no longer agrees.
fn tampered_sboms_fail_verify(root: &Path, dir: &Path, iso_name: &str) {
    let edit = |rel: &str, change: &dyn Fn(&mut serde_json::Value)| {
        let path = root.join(rel);
        let mut doc: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        change(&mut doc);
        fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    };
    edit("sbom.cdx.json", &|bom| {
        for c in bom["components"].as_array_mut().unwrap() {
            if c["bom-ref"] == "k8s/kubelet" {
                c["hashes"][0]["content"] = "0".repeat(64).into();
            }
        }
    });
    edit("sbom.spdx.json", &|doc| {
        doc["packages"]
            .as_array_mut()
            .unwrap()
            .retain(|p| p["packageFileName"] != "docker/pause:3.10.tar");
    });
    let tampered = dir.join("tampered");
    fs::create_dir_all(&tampered).unwrap();
    let iso = tampered.join(iso_name);
    build_iso(root, &iso);
    let out = cks_iso().args(["verify", p(&iso)]).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    for named in [
        format!(
            "sbom.cdx.json: k8s/kubelet: sha256 is {} here",
            "0".repeat(64)
        ),
        "sbom.spdx.json: docker/pause:3.10.tar is in the ISO but not listed".to_owned(),
    ] {
        assert!(report.contains(&named), "{named:?} not in:\n{report}");
    }
}

/// `ctr -n k8s.io images import` of every archive, as the node scripts do, keeping the registry
/// digests; then every image named in a root manifest is in containerd (air-gap completeness).
fn replay_containerd(root: &Path, arch: &str) {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    for entry in fs::read_dir(root.join("docker")).unwrap() {
        let tar = entry.unwrap().path();
        containerd.ctr(&[
            "images",
            "import",
            "--platform",
            &format!("linux/{arch}"),
            "--snapshotter",
            "native",
            p(&tar),
        ]);
    }
    let listing = String::from_utf8_lossy(&containerd.ctr(&["images", "ls"]).stdout).into_owned();
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    for line in versions.lines().filter(|l| l.starts_with("image ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let row = listing
            .lines()
            .find(|l| l.split_whitespace().next() == Some(f[1]))
            .unwrap_or_else(|| panic!("{} not imported:\n{listing}", f[1]));
        assert!(
            row.contains(f[2]),
            "{} imported with another digest than {}:\n{row}",
            f[1],
            f[2]
        );
    }
    for entry in fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            for image in
                cks_iso_testworld::world::manifest_images(&fs::read_to_string(&path).unwrap())
            {
                let name = cks_iso_testworld::world::normalise(&image);
                assert!(
                    listing
                        .lines()
                        .any(|l| l.split_whitespace().next() == Some(name.as_str())),
                    "{} names {name}, which containerd does not have after the imports",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn both_arches_build_verify_and_replay_on_the_node_side() {
    let world = World::start(Options::default());
    let dir = open_tempdir();
    let (out, cache, tmp) = (
        dir.path().join("out"),
        dir.path().join("cache"),
        dir.path().join("tmp"),
    );
    for d in [&out, &cache, &tmp] {
        fs::create_dir_all(d).unwrap();
        fs::set_permissions(d, fs::Permissions::from_mode(0o777)).unwrap();
    }
    // The cache is nobody's own: a cache others can write is refused.
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o755)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&cache, Some(65534), Some(65534)).unwrap();
    }
    let mut args = flags(&world, p(&out), p(&cache));
    args.extend(["--arch", "amd64", "--arch", "arm64"]);
    let mut cmd = build(&world, &tmp, &args);
    // As nobody, with HOME in a temp dir: no root, no daemon.
    cmd.env("HOME", p(&tmp));
    let built = ok(as_nobody(cmd).output().unwrap());
    let stdout = String::from_utf8_lossy(&built.stdout);
    // A default build in the world that mirrors upstream warns about nothing: upstream's joined
    // `---` in the CSI manifest, which cks-iso splits, is one information line, said once.
    let log = String::from_utf8_lossy(&built.stderr);
    assert!(!log.contains("warning"), "a default build warns:\n{log}");
    let repaired: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("split the `---`"))
        .collect();
    assert_eq!(repaired.len(), 1, "one line per repair:\n{log}");
    assert!(repaired[0].starts_with("manifest.yaml: "), "{log}");
    let k = world.kubernetes().trim_start_matches('v').to_owned();
    for (arch, uname) in [("amd64", "x86_64"), ("arm64", "aarch64")] {
        let iso = out.join(format!("setup-v{k}-{uname}.iso"));
        assert!(
            stdout.contains(p(&iso)),
            "summary names {}:\n{stdout}",
            iso.display()
        );
        let (info, _) = tool("isoinfo", ["-d", "-i", p(&iso)]);
        assert!(info.contains("Volume id: CDROM"), "{info}");
        let sums = fs::read_to_string(format!("{}.sha256", p(&iso))).unwrap();
        let (actual, _) = tool("sha256sum", [p(&iso)]);
        assert_eq!(
            sums[..64],
            actual[..64],
            "the .sha256 beside the ISO is right"
        );
        let root = dir.path().join(format!("x-{arch}"));
        extract(&iso, &root);
        check_sboms(&iso, &root, arch);
        replay_node_side(&root, arch, &world);
        replay_containerd(&root, arch);
        let (code, report) = {
            let o = cks_iso().args(["verify", p(&iso)]).output().unwrap();
            (
                o.status.code(),
                String::from_utf8_lossy(&o.stdout).into_owned(),
            )
        };
        assert_eq!(code, Some(0), "{report}");
        if arch == "amd64" {
            tampered_sboms_fail_verify(&root, dir.path(), &format!("setup-v{k}-{uname}.iso"));
        }
    }
    assert_eq!(
        names(&tmp)
            .iter()
            .filter(|n| n.starts_with("cks-iso-build"))
            .count(),
        0,
        "work dir removed"
    );

    // Upstream's positional form builds the same ISO, byte for byte.
    let positional = dir.path().join("positional");
    fs::create_dir_all(&positional).unwrap();
    let crictl = format!("1.{}.0", k.split('.').nth(1).unwrap());
    let name = format!("setup-v{k}");
    // The next build runs as root: the cache becomes root's, as a cache is its user's alone.
    if is_root() {
        run_tool("chown", &["-R", "0:0", p(&cache)]);
    }
    ok(build(
        &world,
        &tmp,
        &[
            p(&positional),
            &k,
            "1.6.2",
            &crictl,
            world.network_url(),
            world.dashboard_url(),
            &name,
            "x86_64",
            "--headlamp",
            world.headlamp_url(),
            "--cache-dir",
            p(&cache),
        ],
    )
    .output()
    .unwrap());
    let a = out.join(format!("setup-v{k}-x86_64.iso"));
    let b = positional.join(format!("setup-v{k}-x86_64.iso"));
    assert!(
        crate::support::same_bytes(&a, &b),
        "positional and flag forms differ"
    );
    // So are the SBOMs beside them: the same inputs and epoch, the same bytes.
    for suffix in [".cdx.json", ".spdx.json"] {
        let (a, b) = (format!("{}{suffix}", p(&a)), format!("{}{suffix}", p(&b)));
        assert_eq!(
            fs::read(&a).unwrap(),
            fs::read(&b).unwrap(),
            "{a} and {b} differ"
        );
    }
}

/// Before 1.25 (and its late patches) kubeadm names its images on k8s.gcr.io. With a mirror for
/// registry.k8s.io only (as most corporate mirrors are set up today), a 1.21 build fetches them
/// from registry.k8s.io's mirror, which serves the same content, and keeps the k8s.gcr.io names;
/// the ISO passes the contract.
#[test]
fn kubernetes_before_1_25_bundles_its_images_from_k8s_gcr_io() {
    let world = World::start(Options {
        kubernetes: "1.21.14".into(),
        ..Options::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (out, cache, tmp) = work_dirs(dir.path());
    let config = dir.path().join("no-gcr-mirror.yaml");
    let yaml: String = world
        .config_yaml()
        .lines()
        .filter(|l| !l.trim_start().starts_with("k8s.gcr.io:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        yaml.contains("registry.k8s.io:") && !yaml.contains("k8s.gcr.io"),
        "{yaml}"
    );
    fs::write(&config, yaml).unwrap();
    // The configuration names the world's Sigstore root beside itself.
    fs::copy(
        world.trusted_root_path(),
        dir.path().join("trusted_root.json"),
    )
    .unwrap();
    let mut args = flags(&world, p(&out), p(&cache));
    args.extend(["--arch", "arm64"]);
    let mut cmd = build(&world, &tmp, &args);
    cmd.env("CKS_ISO_CONFIG", &config);
    ok(cmd.output().unwrap());
    let iso = out.join("setup-v1.21.14-aarch64.iso");
    let root = dir.path().join("x");
    extract(&iso, &root);
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    for component in [
        "kube-apiserver",
        "kube-proxy",
        "pause",
        "etcd",
        "coredns/coredns",
    ] {
        assert!(
            versions.contains(&format!("image k8s.gcr.io/{component}:")),
            "{component} is not from k8s.gcr.io:\n{versions}"
        );
    }
    assert!(
        !versions.contains("image registry.k8s.io/kube-"),
        "{versions}"
    );
    replay_containerd(&root, "arm64");
    let verify = cks_iso().args(["verify", p(&iso)]).output().unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn bad_input_fails_clearly_and_leaves_no_iso_and_no_work_dir() {
    // A CCM tag whose deployment.yaml names two images where the pin rule expects one.
    let two_images = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cloud-controller-manager\n  namespace: kube-system\nspec:\n  template:\n    spec:\n      containers:\n      - name: ccm\n        image: apache/cloudstack-kubernetes-provider:v1.2.0\n      - name: sidecar\n        image: apache/cloudstack-kubernetes-provider:v1.1.0\n";
    let snapshot = cks_iso_testworld::world::default_snapshot("1.33.1")
        .ccm("v1.3.0-rc1")
        .replace(
            "raw.githubusercontent.com/apache/cloudstack-kubernetes-provider/v1.3.0-rc1/deployment.yaml",
            two_images,
            "text/plain",
        );
    let world = World::start(Options {
        without_arm64: Some("registry.k8s.io/pause:3.10".into()),
        snapshot: Some(snapshot),
        ..Options::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (out, cache, tmp) = work_dirs(dir.path());
    let base = flags(&world, p(&out), p(&cache));
    let missing_dashboard = world
        .dashboard_url()
        .replace("recommended.yaml", "missing.yaml");
    // A CNI manifest naming another pause tag than kubeadm's 3.10; 3.9 sorts after 3.10, so nodes
    // would run it. The world has no pause:3.9: only stopping before the pull gives our message.
    let other_pause = dir.path().join("pause-3.9 network.yaml");
    fs::write(
        &other_pause,
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: cni\nspec:\n  template:\n    spec:\n      containers:\n      - name: cni\n        image: registry.k8s.io/pause:3.9\n",
    )
    .unwrap();
    let cases: Vec<(Vec<&str>, i32, Vec<&str>)> = vec![
        (
            vec!["--arch", "s390x"],
            2,
            vec!["--arch \"s390x\" is not an architecture", "hint: use amd64"],
        ),
        (vec!["--kubernetes", "1.33.x"], 2, vec!["1.33.x"]),
        (
            vec!["--dashboard", &missing_dashboard],
            1,
            vec!["missing.yaml", "404"],
        ),
        (
            vec!["--dashboard", "/nonexistent/dashboard.yaml"],
            1,
            vec!["/nonexistent/dashboard.yaml"],
        ),
        (vec!["--ccm-version", "v9.9.9"], 1, vec!["v9.9.9", "404"]),
        (
            vec!["--ccm-version", "v1.3.0-rc1"],
            1,
            vec![
                "provider.yaml",
                "v1.3.0-rc1/deployment.yaml",
                "2 `image:` lines",
                "lines 11, 13",
                "hint:",
            ],
        ),
        (
            vec!["--network", p(&other_pause)],
            1,
            vec![
                "network.yaml (file:pause-3.9 network.yaml)",
                "line 10 names registry.k8s.io/pause:3.9, a second pause image",
                "none but kubeadm's, registry.k8s.io/pause:3.10",
                "grep pause | sort | tail -n 1",
                "nodes would run registry.k8s.io/pause:3.9",
                "hint: leave registry.k8s.io/pause:3.9 out of network.yaml, or make it name \
                 registry.k8s.io/pause:3.10",
            ],
        ),
        (
            vec!["--kubernetes", "1.34.0"],
            1,
            vec![
                "Kubernetes v1.34.0 is not a published release",
                "no cluster-autoscaler release for Kubernetes 1.34",
            ],
        ),
        (
            vec!["--arch", "arm64"],
            1,
            vec!["registry.k8s.io/pause:3.10", "linux/arm64"],
        ),
    ];
    for (extra, code, words) in cases {
        let mut args = base.clone();
        // Later flags override earlier ones only for repeatable ones; replace instead.
        for pair in extra.chunks(2) {
            if let Some(i) = args.iter().position(|a| *a == pair[0]) {
                args[i + 1] = pair[1];
            } else {
                args.extend(pair);
            }
        }
        let o = build(&world, &tmp, &args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{extra:?}:\n{err}");
        for w in words {
            assert!(err.contains(w), "{extra:?}: {w:?} not in:\n{err}");
        }
        assert!(
            !out.exists() || names(&out).is_empty(),
            "{extra:?} left {:?}",
            names(&out)
        );
        assert!(
            names(&tmp).is_empty(),
            "{extra:?} left a work dir: {:?}",
            names(&tmp)
        );
        // None of these cases gets as far as pulling (the arm64 one is last).
        if extra != ["--arch", "arm64"] {
            assert_eq!(
                images_resolved_into(&cache),
                0,
                "{extra:?} pulled images into the cache"
            );
        }
    }
    // Another minor's autoscaler is a warning, and the build goes on.
    let mut cmd = build(&world, &tmp, &base);
    cmd.env("AUTOSCALER_VERSION", "1.32.2");
    let o = ok(cmd.output().unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning:") && err.contains("1.32.2"), "{err}");
}

/// Paths no other test takes (the audit's leftovers): `--etcd` on an arm64 ISO (the arm64
/// release's tarball under the one name etcd nodes read, `etcd/etcd-linux-amd64.tar.gz`, with its
/// real upstream URL in `versions.txt`, the lock and the SBOMs, and one line saying why),
/// `CCM_VERSION` from the environment, a pinned autoscaler while git is unreachable, a local
/// Headlamp manifest whose path holds a space and a `#` (it must round-trip through
/// `versions.txt`), and the joined-`---` repair as a warning at the default level. `verify`
/// accepts the ISO.
#[test]
fn etcd_ccm_from_the_environment_a_pinned_autoscaler_without_git_and_a_spaced_path() {
    let world = World::start(Options {
        ccm_tag: "v1.3.0-rc1".into(),
        ..Options::default()
    });
    let autoscaler = world.autoscaler_version().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let (out, cache, tmp) = work_dirs(dir.path());
    // git on a closed port: a pinned autoscaler must not need the tag listing.
    let config = dir.path().join("no-git.yaml");
    let yaml: String = world
        .config_yaml()
        .lines()
        .map(|l| match l.trim_start().starts_with("https://github.com/kubernetes/autoscaler:") {
            true => "  https://github.com/kubernetes/autoscaler: http://127.0.0.1:9/autoscaler.git\n"
                .to_owned(),
            false => format!("{l}\n"),
        })
        .collect();
    assert!(yaml.contains("127.0.0.1:9/autoscaler.git"), "{yaml}");
    fs::write(&config, yaml).unwrap();
    // The configuration names the world's Sigstore root beside itself.
    fs::copy(
        world.trusted_root_path(),
        dir.path().join("trusted_root.json"),
    )
    .unwrap();
    // The world's Headlamp manifest, as a local file in a directory with a space and a `#`.
    let files = cks_iso_testworld::world::default_snapshot(world.kubernetes()).files();
    let headlamp_url = world.headlamp_url().trim_start_matches("https://");
    let local = dir.path().join("my manifests #2");
    fs::create_dir_all(&local).unwrap();
    let headlamp = local.join("head lamp.yaml");
    fs::write(&headlamp, &files[headlamp_url].body).unwrap();

    let mut args = flags(&world, p(&out), p(&cache));
    let at = args.iter().position(|a| *a == "--headlamp").unwrap();
    args[at + 1] = p(&headlamp);
    args.extend(["--arch", "arm64", "--etcd", "3.5.21"]);
    let mut cmd = build(&world, &tmp, &args);
    cmd.env("CKS_ISO_CONFIG", &config)
        .env("CCM_VERSION", "1.3.0-rc1")
        .env("AUTOSCALER_VERSION", &autoscaler);
    let o = ok(cmd.output().unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    let why: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("etcd nodes extract only etcd/etcd-linux-amd64.tar.gz"))
        .collect();
    assert_eq!(why.len(), 1, "one line says why:\n{err}");
    assert!(
        why[0].contains("etcd-v3.5.21-linux-arm64.tar.gz goes under that name")
            && !why[0].contains("warning"),
        "{err}"
    );
    assert!(
        err.contains("manifest.yaml: split the `---` joined to the end of line(s)")
            && !err.contains("joins two documents"),
        "the joined separator is repaired, said once as information:\n{err}"
    );

    let k = world.kubernetes();
    let iso = out.join(format!("setup-v{k}-aarch64.iso"));
    let root = dir.path().join("x");
    extract(&iso, &root);
    // The name etcd nodes extract, holding the arm64 release (aarch64 executables).
    let etcd = root.join("etcd/etcd-linux-amd64.tar.gz");
    let (listing, _) = tool("tar", ["-tzf", p(&etcd)]);
    assert!(
        listing.contains("etcd-v3.5.21-linux-arm64/etcd"),
        "{listing}"
    );
    let unpacked = dir.path().join("etcd-unpacked");
    fs::create_dir_all(&unpacked).unwrap();
    tool("tar", ["-xzf", p(&etcd), "-C", p(&unpacked)]);
    let binary = fs::read(unpacked.join("etcd-v3.5.21-linux-arm64/etcd")).unwrap();
    assert_eq!(
        (&binary[..4], u16::from_le_bytes([binary[18], binary[19]])),
        (&b"\x7fELF"[..], 183),
        "an aarch64 ELF executable"
    );
    assert_eq!(names(&root.join("etcd")), ["etcd-linux-amd64.tar.gz"]);
    let url =
        "https://github.com/etcd-io/etcd/releases/download/v3.5.21/etcd-v3.5.21-linux-arm64.tar.gz";
    // The real upstream name and URL, in the lock and both SBOMs as in versions.txt.
    for record in ["cks-iso.lock", "sbom.cdx.json", "sbom.spdx.json"] {
        let text = fs::read_to_string(root.join(record)).unwrap();
        assert!(text.contains(url), "{record} lacks {url}");
    }
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    for want in [
        "\netcd v3.5.21\n".to_owned(),
        "\nccm v1.3.0-rc1\n".to_owned(),
        format!("\nautoscaler {autoscaler}\n"),
        "/releases/download/v3.5.21/etcd-v3.5.21-linux-arm64.tar.gz\n".to_owned(),
        "\nimage docker.io/apache/cloudstack-kubernetes-provider:v1.3.0-rc1 sha256:".to_owned(),
        // A local file is recorded by its name (percent-encoded), never by its host path.
        " file:head%20lamp.yaml\n".to_owned(),
    ] {
        assert!(versions.contains(&want), "{want:?} not in:\n{versions}");
    }
    assert!(
        versions.lines().any(|l| {
            l.starts_with("file etcd/etcd-linux-amd64.tar.gz sha256:") && l.ends_with(url)
        }),
        "{versions}"
    );
    let provider = fs::read_to_string(root.join("provider.yaml")).unwrap();
    assert!(
        provider.contains("image: apache/cloudstack-kubernetes-provider:v1.3.0-rc1"),
        "{provider}"
    );
    let verify = cks_iso().args(["verify", p(&iso)]).output().unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

/// The layers of `arch`'s images, by the platform manifests the lock names (read from the cache).
fn layers_of(lock: &serde_json::Value, arch: &str, cache: &Path) -> Vec<(String, String)> {
    let mut layers = Vec::new();
    for image in lock["arches"][arch]["images"].as_array().unwrap() {
        let manifest = image["manifest"].as_str().unwrap();
        let hex = manifest.strip_prefix("sha256:").unwrap();
        let text = fs::read(cache.join("blobs/sha256").join(hex)).unwrap();
        let manifest: serde_json::Value = serde_json::from_slice(&text).unwrap();
        for layer in manifest["layers"].as_array().unwrap() {
            let digest = layer["digest"].as_str().unwrap().to_owned();
            layers.push((image["reference"].as_str().unwrap().to_owned(), digest));
        }
    }
    layers
}

/// Both ISOs are written at once; when a cached blob only the arm64 ISO holds turns out damaged
/// on disk, the run fails with that blob's mismatch (not with the amd64 writer it stopped), and
/// leaves neither ISO, nor anything beside them.
#[test]
fn a_damaged_blob_of_one_arch_fails_the_run_with_its_own_error_and_removes_both_isos() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (out, cache, tmp) = work_dirs(dir.path());
    let lock_path = dir.path().join("run.lock");
    let mut args = flags(&world, p(&out), p(&cache));
    args.extend([
        "--arch",
        "amd64",
        "--arch",
        "arm64",
        "--lock-file",
        p(&lock_path),
    ]);
    ok(build(&world, &tmp, &args).output().unwrap());
    let lock: serde_json::Value = serde_json::from_slice(&fs::read(&lock_path).unwrap()).unwrap();
    let amd64: Vec<String> = layers_of(&lock, "amd64", &cache)
        .into_iter()
        .map(|(_, digest)| digest)
        .collect();
    let arm64 = layers_of(&lock, "arm64", &cache);
    let (_, digest) = arm64
        .iter()
        .find(|(_, digest)| !amd64.contains(digest))
        .cloned()
        .expect("an arm64 layer no amd64 image has");
    // The images holding it (arm64 images may share it): the error names the first written.
    let holders: Vec<&str> = arm64
        .iter()
        .filter(|(_, d)| *d == digest)
        .map(|(image, _)| image.as_str())
        .collect();
    let blob = cache
        .join("blobs/sha256")
        .join(digest.strip_prefix("sha256:").unwrap());
    let mut bytes = fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&blob, &bytes).unwrap();
    fs::remove_dir_all(&out).unwrap();

    let failed = build(&world, &tmp, &args).output().unwrap();
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    for part in [digest.as_str(), "does not match", "cache verify --fix"] {
        assert!(stderr.contains(part), "{part:?} missing from:\n{stderr}");
    }
    assert!(
        holders.iter().any(|image| stderr.contains(image)),
        "none of {holders:?} named in:\n{stderr}"
    );
    assert!(
        !stderr.contains("another architecture failed"),
        "the error of the stopped writer was reported:\n{stderr}"
    );
    let left: Vec<_> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left in the output dir: {left:?}");
    assert_eq!(
        fs::read_dir(&tmp).unwrap().count(),
        0,
        "a work dir was left"
    );
}
