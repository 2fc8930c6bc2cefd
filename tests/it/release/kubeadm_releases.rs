//! Kubernetes releases as upstream publishes them today build end to end: every 1.35 release's
//! kubeadm keys its etcd map by skew expressions (kubernetes PR #134866; the world serves 1.35's
//! `constants.go` in that form), and 1.35.9 lies past the embedded table, so only the constants
//! file can name its etcd, pause and CoreDNS. The ISO must carry exactly those images.

use std::fs;

use crate::support::*;
use cks_iso_testworld::upstream::KubeRelease;
use cks_iso_testworld::world::{Options, World, snapshot_of};

#[test]
fn kubernetes_1_35_9_builds_from_its_skew_keyed_constants() {
    let release = KubeRelease::new("1.35.9", "v1.13.1", "3.6.10-0", "3.10.1");
    let snapshot = snapshot_of(release);
    let constants = String::from_utf8(
        snapshot.files()["raw.githubusercontent.com/kubernetes/kubernetes/v1.35.9/cmd/kubeadm/app/constants/constants.go"]
            .body
            .clone(),
    )
    .unwrap();
    assert!(
        constants.contains("uint8(getSkewedKubernetesVersion(-1).Minor()): \"3.6.10-0\""),
        "{constants}"
    );
    let world = World::start(Options {
        kubernetes: "1.35.9".into(),
        snapshot: Some(snapshot),
        ..Options::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = build_in_world(
        &world,
        dir.path(),
        &[
            "--kubernetes",
            "1.35.9",
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
            "--output",
            p(&out),
        ],
    );
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    ok(run);
    assert!(!stderr.contains("embedded table"), "{stderr}");
    let iso = out.join("setup-v1.35.9-x86_64.iso");
    let root = dir.path().join("x");
    fs::create_dir_all(&root).unwrap();
    tool("bsdtar", ["-x", "-f", p(&iso), "-C", p(&root)]);
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    for image in [
        "image registry.k8s.io/etcd:3.6.10-0 sha256:",
        "image registry.k8s.io/pause:3.10.1 sha256:",
        "image registry.k8s.io/coredns/coredns:v1.13.1 sha256:",
    ] {
        assert!(versions.contains(image), "{image} not in\n{versions}");
    }
    let (code, report) = verify_iso(&iso, &[]);
    assert_eq!(code, Some(0), "{report}");
}
