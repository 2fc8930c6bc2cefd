//! A lock handed over by someone else: one that names another URL for a file or manifest than
//! the one cks-iso takes it from, or lists an entry twice. With a warm cache such a lock used to
//! build, recording the forged URL in `versions.txt`, the ISO's lock and the SBOMs, so that one
//! lock gave two different ISOs (and `diff` called them identical). Each is refused before the
//! ISO is written, naming the entry, both URLs and what to do.

use std::fs;
use std::path::Path;

use serde_json::Value;

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

#[test]
fn a_lock_naming_another_url_or_an_entry_twice_is_refused_with_a_warm_cache() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    let cache = d.join("cache");
    let lock = d.join("run.lock");
    let autoscaler = world.autoscaler_version().unwrap().to_owned();
    let online = d.join("online");
    let mut args = world_args(&world, world.dashboard_url());
    args.extend([
        "--autoscaler-version",
        &autoscaler,
        "--cache-dir",
        p(&cache),
    ]);
    args.extend(["--lock-file", p(&lock), "--output", p(&online)]);
    run(&mut build(&config, d, &args));
    let locked = |lock: &Path, out: &str| {
        let out = d.join(out);
        let args = ["--locked", p(lock), "--offline", "--cache-dir", p(&cache)];
        let mut cmd = build(&config, d, &args);
        cmd.arg("--output").arg(out);
        cmd
    };
    // The genuine lock rebuilds offline from the warm cache: what follows fails for its edit.
    run(&mut locked(&lock, "genuine"));

    // The CNI tarball's entry with the genuine digest and size but another URL.
    let genuine_url = {
        let mut text: Value = serde_json::from_slice(&fs::read(&lock).unwrap()).unwrap();
        file_entry(&mut text, CNI_PATH)["url"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let forged_url = "https://github.com/evil/plugins/releases/download/v1.6.2/cni.tgz";
    let forged = d.join("forged.lock");
    edited(&lock, &forged, |l| {
        file_entry(l, CNI_PATH)["url"] = forged_url.into();
    });
    let out = "forged-out";
    fails(
        &mut locked(&forged, out),
        2,
        &[
            &format!("the lock's {CNI_PATH} for linux/amd64 names the URL {forged_url}"),
            &format!("cks-iso takes it from {genuine_url}"),
            "hint: the lock was changed by hand or by someone else",
            "cks-iso build --lock-file",
        ],
    );
    assert!(files_under(&d.join(out)).is_empty());

    // A manifest of the catalogue (the autoscaler's example) under another URL.
    let forged_manifest = d.join("forged-manifest.lock");
    let mut manifest_url = String::new();
    edited(&lock, &forged_manifest, |l| {
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
        &mut locked(&forged_manifest, "forged-manifest-out"),
        2,
        &[
            "the lock's autoscaler.yaml names the URL https://example.org/autoscaler.yaml",
            &format!("cks-iso takes it from {manifest_url}"),
            "hint:",
        ],
    );
    assert!(files_under(&d.join("forged-manifest-out")).is_empty());

    // kubeadm listed twice, the second time under another URL.
    let twice = d.join("twice.lock");
    edited(&lock, &twice, |l| {
        let mut copy = file_entry(l, "k8s/kubeadm").clone();
        copy["url"] = "https://example.org/kubeadm".into();
        l["arches"]["amd64"]["files"]
            .as_array_mut()
            .unwrap()
            .push(copy);
    });
    fails(
        &mut locked(&twice, "twice-out"),
        2,
        &[
            "arches.amd64.files: k8s/kubeadm is listed more than once",
            "https://example.org/kubeadm",
            "hint: pass a cks-iso.lock written by `cks-iso build --lock-file`",
        ],
    );
    assert!(files_under(&d.join("twice-out")).is_empty());
}
