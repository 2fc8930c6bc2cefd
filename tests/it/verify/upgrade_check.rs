//! `cks-iso upgrade-check FROM TO` on ISOs `cks-iso build` made in the local world (Kubernetes
//! 1.32.4, 1.33.0 and 1.33.1 sharing CNI, crictl, CCM, CSI and the add-ons): a patch and a minor
//! upgrade pass; a downgrade, the same version, a skipped minor and mixed architectures are
//! refused naming CloudStack's rule; a TO whose pause archive holds only `blobs/`
//! (apache/cloudstack#13157) is refused naming that archive; an ISO `cks-iso iso` made from a tree
//! without `versions.txt` still gets a verdict, its version read from its kube-apiserver image.
//! The ISOs are built once per test run and the world is stopped before any check runs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use crate::support::*;
use crate::verify::foreign_iso::keep_only;
use cks_iso_testworld::world::{Options, World};

/// The ISOs and locks every test here judges.
struct Isos {
    old: PathBuf,
    new: PathBuf,
    new_arm64: PathBuf,
    minor: PathBuf,
    old_lock: PathBuf,
    new_lock: PathBuf,
    broken_pause: PathBuf,
    pause_archive: String,
    foreign: PathBuf,
    skipped_lock: PathBuf,
}

fn isos() -> &'static Isos {
    static ISOS: OnceLock<Isos> = OnceLock::new();
    ISOS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("upgrade-check");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        build_all(&dir)
    })
}

/// `cks-iso build` of `version` for `arches` in `world`, into `dir/<out>`, its lock beside.
fn build(world: &World, dir: &Path, version: &str, arches: &[&str], out: &str) -> PathBuf {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let lock = dir.join(format!("{out}.lock"));
    let mut cmd = build_in(world.config_path(), &tmp);
    cmd.args(["--kubernetes", version])
        .args(["--network", world.network_url()])
        .args(["--dashboard", world.dashboard_url()])
        .args(["--output", p(&dir.join(out))])
        .args(["--cache-dir", p(&dir.join("cache"))])
        .args(["--lock-file", p(&lock)])
        .arg("--no-progress");
    for arch in arches {
        cmd.args(["--arch", arch]);
    }
    ok(cmd.output().unwrap());
    lock
}

/// Extracts `iso` into `tree` with bsdtar, a reader of its own.
fn extract(iso: &Path, tree: &Path) {
    fs::create_dir_all(tree).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(tree)]);
}

fn build_all(dir: &Path) -> Isos {
    let world = World::start(Options {
        also_kubernetes: vec!["1.33.0".into(), "1.32.4".into()],
        ..Options::default()
    });
    assert_eq!(world.kubernetes(), "1.33.1");
    let old_lock = build(&world, dir, "1.33.0", &["amd64"], "old");
    let new_lock = build(&world, dir, "1.33.1", &["amd64", "arm64"], "new");
    build(&world, dir, "1.32.4", &["amd64"], "minor");
    drop(world);
    let old = dir.join("old/setup-v1.33.0-x86_64.iso");
    let new = dir.join("new/setup-v1.33.1-x86_64.iso");

    // TO with the pause archive of apache/cloudstack#13157: only `blobs/`.
    let tree = dir.join("broken-tree");
    extract(&new, &tree);
    let pause_archive = names(&tree.join("docker"))
        .into_iter()
        .find(|n| n.starts_with("pause"))
        .expect("a pause archive");
    keep_only(&tree.join("docker").join(&pause_archive), |name| {
        name.starts_with("blobs/")
    });
    let broken_pause = dir.join("broken.iso");
    build_iso(&tree, &broken_pause);

    // TO as upstream's script leaves it: nothing of cks-iso's own.
    let tree = dir.join("foreign-tree");
    extract(&new, &tree);
    for own in [
        "versions.txt",
        "cks-iso.lock",
        "sbom.cdx.json",
        "sbom.spdx.json",
    ] {
        fs::remove_file(tree.join(own)).unwrap();
    }
    let _ = fs::remove_dir_all(tree.join("signatures"));
    let foreign = dir.join("foreign-x86_64.iso");
    build_iso(&tree, &foreign);

    // A cluster on 1.31: the world serves no 1.31 release, so the 1.32.4 lock says 1.31.7.
    let text = fs::read_to_string(dir.join("minor.lock")).unwrap();
    assert!(
        text.contains("\"1.32.4\"") || text.contains("\"v1.32.4\""),
        "{text}"
    );
    let skipped_lock = dir.join("skipped.lock");
    fs::write(
        &skipped_lock,
        text.replace("\"v1.32.4\"", "\"v1.31.7\"")
            .replace("\"1.32.4\"", "\"1.31.7\""),
    )
    .unwrap();

    Isos {
        old,
        new,
        new_arm64: dir.join("new/setup-v1.33.1-aarch64.iso"),
        minor: dir.join("minor/setup-v1.32.4-x86_64.iso"),
        old_lock,
        new_lock,
        broken_pause,
        pause_archive,
        foreign,
        skipped_lock,
    }
}

fn check(from: &Path, to: &Path, extra: &[&str]) -> Output {
    cks_iso()
        .arg("upgrade-check")
        .arg(from)
        .arg(to)
        .args(extra)
        .output()
        .unwrap()
}

/// Exit 1, the named check failing with `needle`, the closing error on stderr.
fn refused(out: &Output, check: &str, needle: &str) {
    let (stdout, stderr) = text(out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("FAIL  {check}: ")))
        .unwrap_or_else(|| panic!("no FAIL line for {check}:\n{stdout}"));
    assert!(line.contains(needle), "{needle:?} not in {line:?}");
    assert!(
        stdout.lines().next().unwrap().contains("will fail"),
        "{stdout}"
    );
    assert!(stderr.contains("checks failed"), "{stderr}");
}

#[test]
fn a_patch_upgrade_passes_every_check_and_names_only_kubernetes_as_changed() {
    let i = isos();
    let out = ok(check(&i.old, &i.new, &[]));
    let (stdout, _) = text(&out);
    let first = stdout.lines().next().unwrap();
    assert!(first.ends_with(": should work"), "{stdout}");
    for want in [
        "ok    version rule: 1.33.0 (from its cks-iso.lock) → 1.33.1 (from its cks-iso.lock): a \
         later patch of the same minor, which CloudStack allows",
        "ok    architecture: amd64 on both",
        "ok    archives: all ",
        "ok    kubeadm images: TO holds the 7 images kubeadm v1.33.1 upgrades with",
        "ok    pause: TO holds registry.k8s.io/pause:3.10",
        "ok    cloudstack: TO suits every release from 4.20",
        "  kubernetes:",
        "~ version kubernetes: 1.33.0 → 1.33.1",
        "~ file k8s/kubeadm: sha256:",
        "- image registry.k8s.io/kube-apiserver:v1.33.0: sha256:",
        "+ image registry.k8s.io/kube-apiserver:v1.33.1: sha256:",
    ] {
        assert!(stdout.contains(want), "{want:?} not in:\n{stdout}");
    }
    // Everything else is shared: no CNI, crictl, autoscaler, CCM, CSI or add-on change.
    for group in [
        "cni-crictl:",
        "autoscaler-ccm:",
        "csi:",
        "add-ons:",
        "manifests:",
    ] {
        assert!(!stdout.contains(group), "{group:?} in:\n{stdout}");
    }
}

#[test]
fn json_carries_the_format_the_verdict_each_check_and_the_grouped_changes() {
    let i = isos();
    let out = ok(check(&i.old, &i.new, &["--json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], 1);
    assert_eq!(v["ok"], true);
    assert_eq!(v["step"], "patch");
    assert_eq!(v["from"]["kubernetes"], "1.33.0");
    assert_eq!(v["from"]["version_from"], "lock");
    assert_eq!(v["to"]["kind"], "iso");
    assert_eq!(v["to"]["arches"], serde_json::json!(["amd64"]));
    let checks = v["checks"].as_array().unwrap();
    let names: Vec<&str> = checks
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "version rule",
            "architecture",
            "archives",
            "kubeadm images",
            "pause",
            "cloudstack"
        ]
    );
    for c in checks {
        assert_eq!(c["ok"], true, "{c}");
        assert!(c["detail"].as_str().is_some_and(|d| !d.is_empty()), "{c}");
        assert!(c["hint"].is_null(), "{c}");
    }
    let groups: Vec<&str> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["group"].as_str().unwrap())
        .collect();
    assert_eq!(groups[0], "kubernetes", "{groups:?}");
    let kubernetes = &v["changes"][0]["changes"];
    assert!(
        kubernetes
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["kind"] == "version"
                && c["name"] == "kubernetes"
                && c["change"] == "changed"
                && c["a"] == "1.33.0"
                && c["b"] == "1.33.1"),
        "{kubernetes}"
    );

    // A failing verdict is JSON too, with the hint.
    let out = check(&i.new, &i.old, &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert!(v["step"].is_null());
    assert_eq!(v["checks"][0]["ok"], false);
    assert!(
        v["checks"][0]["hint"]
            .as_str()
            .unwrap()
            .contains("canUpgradeKubernetesVersion")
    );
}

#[test]
fn a_minor_upgrade_passes_and_says_what_else_changes() {
    let i = isos();
    let out = ok(check(&i.minor, &i.new, &["--json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["step"], "minor", "{v}");
    let groups: Vec<&str> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["group"].as_str().unwrap())
        .collect();
    // 1.32 → 1.33: crictl and etcd follow the minor, the autoscaler too (and is redeployed).
    for want in [
        "kubernetes",
        "pause-etcd-coredns",
        "cni-crictl",
        "autoscaler-ccm",
    ] {
        assert!(groups.contains(&want), "{want} not in {groups:?}");
    }
    let autoscaler = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "autoscaler-ccm")
        .unwrap();
    assert!(
        autoscaler["note"]
            .as_str()
            .unwrap()
            .contains("redeploys the autoscaler")
    );
}

#[test]
fn a_downgrade_the_same_version_a_skipped_minor_and_mixed_arches_are_refused_naming_the_rule() {
    let i = isos();
    refused(
        &check(&i.new, &i.old, &[]),
        "version rule",
        "downgrade: CloudStack refuses 1.33.1 → 1.33.0",
    );
    refused(&check(&i.old, &i.old, &[]), "version rule", "same version");
    refused(
        &check(&i.skipped_lock, &i.new, &[]),
        "version rule",
        "skipped minor: CloudStack upgrades only to a later patch or the next minor, 1.31.7 → \
         1.33.1 skips 1 minor(s)",
    );
    let out = check(&i.old, &i.new_arm64, &[]);
    refused(&out, "architecture", "mixed architectures");
    let (stdout, _) = text(&out);
    assert!(stdout.contains("ok    version rule"), "{stdout}");
}

#[test]
fn a_pause_archive_holding_only_blobs_is_refused_naming_that_archive() {
    let i = isos();
    let out = check(&i.old, &i.broken_pause, &[]);
    refused(
        &out,
        "archives",
        &format!("docker/{}: nodes cannot import it", i.pause_archive),
    );
    let (stdout, _) = text(&out);
    assert!(stdout.contains("unrecognized image format"), "{stdout}");
    // Its image is missing to kubeadm too: the node could not run its pods.
    assert!(
        stdout.contains("FAIL  kubeadm images: TO lacks 1 of the images"),
        "{stdout}"
    );
}

#[test]
fn an_iso_without_versions_txt_gets_a_verdict_with_its_version_from_its_images() {
    let i = isos();
    let out = check(&i.old, &i.foreign, &["--json"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["to"]["kubernetes"], "1.33.1");
    assert_eq!(v["to"]["version_from"], "image-names");
    assert_eq!(v["to"]["arches"], serde_json::json!(["amd64"]));
    assert!(
        stderr
            .contains("its Kubernetes version 1.33.1 is read from its kube-apiserver image's tag"),
        "{stderr}"
    );
    let out = check(&i.old, &i.foreign, &[]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains(
            "→ 1.33.1 (from its kube-apiserver image's tag: it has no cks-iso.lock or versions.txt)"
        ),
        "{stdout}"
    );
}

#[test]
fn two_locks_are_judged_on_what_a_lock_says_and_the_archives_are_named_as_unchecked() {
    let i = isos();
    let out = ok(check(&i.old_lock, &i.new_lock, &[]));
    let (stdout, _) = text(&out);
    assert!(stdout.contains("ok    version rule: 1.33.0"), "{stdout}");
    assert!(
        stdout.contains("ok    architecture: amd64 on both"),
        "{stdout}"
    );
    assert!(!stdout.contains("archives:"), "{stdout}");
    assert!(stdout.contains("note: "), "{stdout}");
    assert!(
        stdout.contains("is a lock: its archives were not imported"),
        "{stdout}"
    );
}

/// Issue 44, H1: TO holding an add-on image named `…/pause-sandbox:1` beside kubeadm's pause.
/// Nodes pick their sandbox with `grep pause | sort | tail -n 1`, a substring match: the pause
/// check fails naming both and the one nodes would really run.
#[test]
fn a_second_image_named_like_pause_fails_the_pause_check_naming_what_nodes_would_run() {
    use cks_iso::image::{Arch, Image, Reference};
    let i = isos();
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    extract(&i.new, &tree);
    // The world's busybox, under the probe's name, as an add-on archive is written.
    let world = crate::support::world::world();
    let busybox = world.image("busybox:1.36");
    let evil = Reference::parse("zz.example.org/evil/pause-sandbox:1").unwrap();
    let image = Image::load(evil, &busybox.top, Arch::Amd64, &world.cache).unwrap();
    let archive = tree.join("docker/pause-sandbox:1.tar");
    cks_iso::archive::write(&image, &world.cache, &archive, 0).unwrap();
    let to = dir.path().join("sandbox-x86_64.iso");
    build_iso(&tree, &to);

    let out = check(&i.old, &to, &[]);
    for needle in [
        "TO holds 2 pause image(s) (registry.k8s.io/pause:3.10, zz.example.org/evil/pause-sandbox:1)",
        "`ctr -n k8s.io images ls -q | grep pause | sort | tail -n 1`",
        "nodes would run zz.example.org/evil/pause-sandbox:1",
    ] {
        refused(&out, "pause", needle);
    }
    // The archive itself imports: only the pause rule stops it.
    let (stdout, _) = text(&out);
    assert!(stdout.contains("ok    archives: all "), "{stdout}");
}

/// Who signed each side is shown (the signature beside the ISO, checked as `diff` checks it),
/// and a signature that does not verify says so without changing the verdict; a lock has none.
#[test]
fn each_side_names_its_signer_and_a_bad_signature_is_reported_as_not_verifying() {
    let i = isos();
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = crate::iso::signing::openssl_keys(dir.path(), "iso");
    let from = dir.path().join("from.iso");
    let to = dir.path().join("to.iso");
    fs::copy(&i.old, &from).unwrap();
    fs::copy(&i.new, &to).unwrap();
    ok(cks_iso()
        .args(["sign", p(&to), "--key", p(&key)])
        .output()
        .unwrap());
    let out = ok(check(&from, &to, &["--key", p(&public)]));
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("\nfrom: unsigned (no .sigstore.json or .sig beside it)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\nto: signed by the key sha256:")
            && stdout.contains(&format!("({}), at a time", p(&public))),
        "{stdout}"
    );
    let out = ok(check(&from, &to, &["--json", "--key", p(&public)]));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["from"]["signature"]["status"], "unsigned");
    assert_eq!(json["to"]["signature"]["status"], "verified", "{json:#}");
    assert_eq!(json["to"]["signature"]["kind"], "key");

    // FROM's bundle beside TO: it signs another ISO; the upgrade verdict stands.
    ok(cks_iso()
        .args(["sign", p(&from), "--key", p(&key)])
        .output()
        .unwrap());
    fs::copy(
        format!("{}.sigstore.json", from.display()),
        format!("{}.sigstore.json", to.display()),
    )
    .unwrap();
    let out = ok(check(&from, &to, &[]));
    let (stdout, _) = text(&out);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("to: "))
        .unwrap_or_else(|| panic!("no to: line in\n{stdout}"));
    assert!(
        line.contains(".sigstore.json does not verify: it signs sha256:")
            && line.contains(", the ISO hashes to sha256:"),
        "{line}"
    );
    // A lock has no signature (whatever the verdict on an ISO and a lock of two arches).
    let json: serde_json::Value =
        serde_json::from_slice(&check(&from, &i.new_lock, &["--json"]).stdout).unwrap();
    assert_eq!(json["to"]["signature"], serde_json::Value::Null);
    assert_eq!(json["from"]["signature"]["status"], "unverified");
}
