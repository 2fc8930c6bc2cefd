//! A lock handed over by someone else: one that names another URL for a file or manifest than
//! the one cks-iso takes it from, or lists an entry twice. With a warm cache such a lock used to
//! build, recording the forged URL in `versions.txt`, the ISO's lock and the SBOMs, so that one
//! lock gave two different ISOs (and `diff` called them identical). Each is refused before the
//! ISO is written, naming the entry, both URLs and what to do.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::common::Scene;
use crate::support::hostile::*;
use crate::support::*;

const CNI_PATH: &str = "cni/cni-plugins-amd64.tgz";

/// The lock at `from` changed by `edit`, written to `to`.
fn edited(from: &Path, to: &Path, edit: impl FnOnce(&mut Value)) {
    let mut lock: Value = serde_json::from_slice(&fs::read(from).unwrap()).unwrap();
    edit(&mut lock);
    fs::write(to, serde_json::to_string_pretty(&lock).unwrap()).unwrap();
}

/// The amd64 file entry at `path` in `lock`.
fn file_entry<'a>(lock: &'a mut Value, path: &str) -> &'a mut Value {
    lock["arches"]["amd64"]["files"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("no {path} in the lock"))
}

/// `build --locked LOCK --offline` with `cache`, into `out` under the scene's directory.
fn locked_offline(scene: &Scene, cache: &Path, lock: &Path, out: &str) -> Command {
    let args = ["--locked", p(lock), "--offline", "--cache-dir", p(cache)];
    let mut cmd = build(&scene.config, scene.dir(), &args);
    cmd.arg("--output").arg(scene.dir().join(out));
    cmd
}

/// The URL the lock at `lock` names for the amd64 file at `path`.
fn locked_url(lock: &Path, path: &str) -> String {
    let mut text: Value = serde_json::from_slice(&fs::read(lock).unwrap()).unwrap();
    file_entry(&mut text, path)["url"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The CNI tarball's entry with the genuine digest and size but another URL: refused naming both
/// URLs and the way to write a lock, nothing written.
fn assert_another_file_url_refused(scene: &Scene, cache: &Path, lock: &Path) {
    let genuine_url = locked_url(lock, CNI_PATH);
    let forged_url = "https://github.com/evil/plugins/releases/download/v1.6.2/cni.tgz";
    let forged = scene.dir().join("forged.lock");
    edited(lock, &forged, |l| {
        file_entry(l, CNI_PATH)["url"] = forged_url.into();
    });
    let out = "forged-out";
    fails(
        &mut locked_offline(scene, cache, &forged, out),
        2,
        &[
            &format!("the lock's {CNI_PATH} for linux/amd64 names the URL {forged_url}"),
            &format!("cks-iso takes it from {genuine_url}"),
            "hint: the lock was changed by hand or by someone else",
            "cks-iso build --lock-file",
        ],
    );
    assert!(files_under(&scene.dir().join(out)).is_empty());
}

/// A manifest of the catalogue (the autoscaler's example) under another URL: refused naming both
/// URLs, nothing written.
fn assert_another_manifest_url_refused(scene: &Scene, cache: &Path, lock: &Path) {
    let forged_manifest = scene.dir().join("forged-manifest.lock");
    let mut manifest_url = String::new();
    edited(lock, &forged_manifest, |l| {
        let entry = l["manifests"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|m| m["path"] == "autoscaler.yaml")
            .expect("autoscaler.yaml in the lock");
        manifest_url = entry["source"].as_str().unwrap().to_owned();
        entry["source"] = "https://example.org/autoscaler.yaml".into();
    });
    fails(
        &mut locked_offline(scene, cache, &forged_manifest, "forged-manifest-out"),
        2,
        &[
            "the lock's autoscaler.yaml names the URL https://example.org/autoscaler.yaml",
            &format!("cks-iso takes it from {manifest_url}"),
            "hint:",
        ],
    );
    assert!(files_under(&scene.dir().join("forged-manifest-out")).is_empty());
}

/// kubeadm listed twice, the second time under another URL: refused naming the entry and the
/// other URL, nothing written.
fn assert_an_entry_listed_twice_refused(scene: &Scene, cache: &Path, lock: &Path) {
    let twice = scene.dir().join("twice.lock");
    edited(lock, &twice, |l| {
        let mut copy = file_entry(l, "k8s/kubeadm").clone();
        copy["url"] = "https://example.org/kubeadm".into();
        l["arches"]["amd64"]["files"]
            .as_array_mut()
            .unwrap()
            .push(copy);
    });
    fails(
        &mut locked_offline(scene, cache, &twice, "twice-out"),
        2,
        &[
            "arches.amd64.files: k8s/kubeadm is listed more than once",
            "https://example.org/kubeadm",
            "hint: pass a cks-iso.lock written by `cks-iso build --lock-file`",
        ],
    );
    assert!(files_under(&scene.dir().join("twice-out")).is_empty());
}

#[test]
fn a_lock_naming_another_url_or_an_entry_twice_is_refused_with_a_warm_cache() {
    let scene = Scene::start();
    let d = scene.dir();
    let (cache, lock) = (d.join("cache"), d.join("run.lock"));
    let online = d.join("online");
    run(&mut scene.build_pinned(&cache, &online, &["--lock-file", p(&lock)]));
    // The genuine lock rebuilds offline from the warm cache: what follows fails for its edit.
    run(&mut locked_offline(&scene, &cache, &lock, "genuine"));

    assert_another_file_url_refused(&scene, &cache, &lock);
    assert_another_manifest_url_refused(&scene, &cache, &lock);
    assert_an_entry_listed_twice_refused(&scene, &cache, &lock);
}
