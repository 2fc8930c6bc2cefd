//! `cks-iso build` given bad input in the whole local world: an unknown architecture, a malformed
//! or unpublished release, a missing manifest, a CCM tag whose manifest names two images, a CNI
//! manifest naming a second pause image, an image without arm64. Each must fail clearly (exit
//! code, the item named, a hint where the user can act) and leave no ISO, no work dir and, when
//! it stops before pulling, nothing pulled into the cache.

use std::fs;
use std::path::Path;

use super::common::{build, flags, images_resolved_into, work_dirs};
use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// A CCM tag whose deployment.yaml names two images where the pin rule expects one.
const TWO_IMAGES: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cloud-controller-manager\n  namespace: kube-system\nspec:\n  template:\n    spec:\n      containers:\n      - name: ccm\n        image: apache/cloudstack-kubernetes-provider:v1.2.0\n      - name: sidecar\n        image: apache/cloudstack-kubernetes-provider:v1.1.0\n";

/// A CNI manifest naming another pause tag than kubeadm's 3.10; 3.9 sorts after 3.10, so nodes
/// would run it. The world has no pause:3.9: only stopping before the pull gives our message.
const OTHER_PAUSE: &str = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: cni\nspec:\n  template:\n    spec:\n      containers:\n      - name: cni\n        image: registry.k8s.io/pause:3.9\n";

/// Flags replacing the default build's, the exit code expected, and the words the error holds.
type Case<'a> = (Vec<&'a str>, i32, Vec<&'a str>);

/// A world whose CCM v1.3.0-rc1 names two images and whose pause:3.10 has no arm64.
fn world_with_bad_upstream() -> World {
    let snapshot = cks_iso_testworld::world::default_snapshot("1.33.1")
        .ccm("v1.3.0-rc1")
        .replace(
            "raw.githubusercontent.com/apache/cloudstack-kubernetes-provider/v1.3.0-rc1/deployment.yaml",
            TWO_IMAGES,
            "text/plain",
        );
    World::start(Options {
        without_arm64: Some("registry.k8s.io/pause:3.10".into()),
        snapshot: Some(snapshot),
        ..Options::default()
    })
}

/// Every bad input, with its exit code and the words its error must hold. The arm64 one is last:
/// it is the only one that gets as far as pulling.
fn cases<'a>(missing_dashboard: &'a str, other_pause: &'a str) -> Vec<Case<'a>> {
    vec![
        (
            vec!["--arch", "s390x"],
            2,
            vec!["--arch \"s390x\" is not an architecture", "hint: use amd64"],
        ),
        (vec!["--kubernetes", "1.33.x"], 2, vec!["1.33.x"]),
        (
            vec!["--dashboard", missing_dashboard],
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
            vec!["--network", other_pause],
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
    ]
}

/// `base` with each flag of `extra` replaced (later flags override earlier ones only for
/// repeatable ones), or added when `base` has none.
fn with_replaced<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = base.to_vec();
    for pair in extra.chunks(2) {
        if let Some(i) = args.iter().position(|a| *a == pair[0]) {
            args[i + 1] = pair[1];
        } else {
            args.extend(pair);
        }
    }
    args
}

/// The build with `extra` exited `code` with every word of `words` in its error, and left no
/// ISO, no work dir and (unless it is the arm64 case, the one that pulls) no image in the cache.
fn assert_refused_leaving_nothing(
    world: &World,
    dirs: (&Path, &Path, &Path),
    base: &[&str],
    (extra, code, words): Case,
) {
    let (out, cache, tmp) = dirs;
    let o = build(world, tmp, &with_replaced(base, &extra))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{extra:?}:\n{err}");
    for w in words {
        assert!(err.contains(w), "{extra:?}: {w:?} not in:\n{err}");
    }
    assert!(
        !out.exists() || names(out).is_empty(),
        "{extra:?} left {:?}",
        names(out)
    );
    assert!(
        names(tmp).is_empty(),
        "{extra:?} left a work dir: {:?}",
        names(tmp)
    );
    if extra != ["--arch", "arm64"] {
        assert_eq!(
            images_resolved_into(cache),
            0,
            "{extra:?} pulled images into the cache"
        );
    }
}

#[test]
fn bad_input_fails_clearly_and_leaves_no_iso_and_no_work_dir() {
    let world = world_with_bad_upstream();
    let dir = tempfile::tempdir().unwrap();
    let (out, cache, tmp) = work_dirs(dir.path());
    let base = flags(&world, p(&out), p(&cache));
    let missing_dashboard = world
        .dashboard_url()
        .replace("recommended.yaml", "missing.yaml");
    let other_pause = dir.path().join("pause-3.9 network.yaml");
    fs::write(&other_pause, OTHER_PAUSE).unwrap();
    for case in cases(&missing_dashboard, p(&other_pause)) {
        assert_refused_leaving_nothing(&world, (&out, &cache, &tmp), &base, case);
    }
    // Another minor's autoscaler is a warning, and the build goes on.
    let mut cmd = build(&world, &tmp, &base);
    cmd.env("AUTOSCALER_VERSION", "1.32.2");
    let o = ok(cmd.output().unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning:") && err.contains("1.32.2"), "{err}");
}
