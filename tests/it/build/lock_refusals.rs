//! Locks refused, through the binary against the whole local world: drift (a local manifest
//! edited after locking, a binary upstream republished) fails naming the item and both hashes,
//! flags or variables that contradict the lock are usage errors naming what contradicts it, and a
//! file that is no lock (not JSON, a future version, a cut ISO, an ISO without a lock) is a usage
//! error with a hint, never a panic; none leaves an ISO behind.

use std::fs;
use std::path::{Path, PathBuf};

use super::common::{ISOS, assert_no_isos, build_with_config as build, locked_args, tmp_in};
use crate::support::*;
use cks_iso_testworld::upstream::sha256_hex;
use cks_iso_testworld::world::{Options, World, default_snapshot};

/// What the drift test locked: the local network manifest, the tree it came from, the lock and
/// the manifest's locked sha256.
struct Locked {
    local: PathBuf,
    tree: PathBuf,
    lock: PathBuf,
    locked: serde_json::Value,
    network_sha256: String,
}

/// The default build of 1.33.1 in `world` into `out`, with `extra` flags.
fn build_default(
    world: &World,
    tmp: &Path,
    network: &str,
    out: &Path,
    cache: &Path,
    extra: &[&str],
) {
    let mut args = vec![
        "--kubernetes",
        "1.33.1",
        "--network",
        network,
        "--dashboard",
        world.dashboard_url(),
        "--output",
        p(out),
        "--cache-dir",
        p(cache),
    ];
    args.extend(extra);
    run(build(world.config_path(), tmp, &args).env("SOURCE_DATE_EPOCH", EPOCH));
}

/// A first build fetches the world's network.yaml, taken out of its ISO as the local file
/// `my network.yaml`; a second build from that file writes the lock, which names the file by its
/// name (no host path).
fn lock_a_local_network_manifest(world: &World, d: &Path, tmp: &Path) -> Locked {
    let (out, cache, lock) = (d.join("out"), d.join("cache"), d.join("run.lock"));
    build_default(world, tmp, world.network_url(), &out, &cache, &[]);
    let tree = d.join("tree");
    fs::create_dir_all(&tree).unwrap();
    let iso = out.join(ISOS[0]);
    tool(
        "bsdtar",
        ["-x", "-f", p(&iso), "-C", p(&tree), "network.yaml"],
    );
    let local = d.join("my network.yaml");
    fs::copy(tree.join("network.yaml"), &local).unwrap();
    fs::remove_dir_all(&out).unwrap();
    build_default(
        world,
        tmp,
        p(&local),
        &out,
        &cache,
        &["--lock-file", p(&lock)],
    );
    let locked: serde_json::Value = serde_json::from_slice(&fs::read(&lock).unwrap()).unwrap();
    let network = locked["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["path"] == "network.yaml")
        .unwrap();
    assert_eq!(network["source"], "file:my network.yaml", "no host path");
    let network_sha256 = network["sha256_taken"].as_str().unwrap().to_owned();
    Locked {
        local,
        tree,
        lock,
        locked,
        network_sha256,
    }
}

/// The local file must be given again, and must not have changed: an edit fails naming the file
/// and both hashes, and leaves nothing.
fn assert_local_file_given_again_unchanged(world: &World, l: &Locked, d: &Path, tmp: &Path) {
    let (out2, cache) = (d.join("out2"), d.join("cache"));
    fails(
        &mut build(
            world.config_path(),
            tmp,
            &locked_args(&l.lock, &[], &out2, &cache),
        ),
        2,
        &["my network.yaml", "--network FILE"],
    );
    let mut changed = fs::read(&l.local).unwrap();
    changed.extend_from_slice(b"# edited after locking\n");
    fs::write(&l.local, &changed).unwrap();
    let args = locked_args(&l.lock, &["--network", p(&l.local)], &out2, &cache);
    fails(
        &mut build(world.config_path(), tmp, &args),
        1,
        &[
            "network.yaml",
            &l.network_sha256,
            &sha256_hex(&changed),
            "changed since it was locked",
        ],
    );
    assert_no_isos(&out2);
    assert_no_isos(tmp);
}

/// Contradicting flags are usage errors; a contradiction from the environment names the
/// variable, one from the flag the flag.
fn assert_contradictions_are_usage_errors(world: &World, l: &Locked, d: &Path, tmp: &Path) {
    let (out2, cache) = (d.join("out2"), d.join("cache"));
    let local = p(&l.local);
    let locked_with = |extra: &[&str]| {
        let extra = [&["--network", local][..], extra].concat();
        build(
            world.config_path(),
            tmp,
            &locked_args(&l.lock, &extra, &out2, &cache),
        )
    };
    fails(
        &mut locked_with(&["--cni", "9.9.9"]),
        2,
        &["--cni \"9.9.9\" contradicts the lock, which says \"1.6.2\""],
    );
    fails(
        &mut locked_with(&["--arch", "arm64"]),
        2,
        &["locks amd64, not arm64"],
    );
    let locked_ccm = |ccm: &[&str]| {
        let mut cmd = locked_with(ccm);
        cmd.env("CCM_VERSION", "v9.9.9");
        cmd
    };
    fails(
        &mut locked_ccm(&[]),
        2,
        &["CCM_VERSION=\"v9.9.9\" contradicts"],
    );
    fails(
        &mut locked_ccm(&["--ccm-version", "v8.8.8"]),
        2,
        &["--ccm-version \"v8.8.8\" contradicts"],
    );
}

/// A world whose upstream now serves another kubeadm (with a matching checksum); the bytes.
fn world_republishing_kubeadm() -> (World, Vec<u8>) {
    let kubeadm = "dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm";
    let mut other = cks_iso_testworld::upstream::elf("amd64", 99, "kubeadm", 4096);
    other.extend_from_slice(b"republished");
    let snapshot = default_snapshot("1.33.1")
        .replace(kubeadm, other.clone(), "application/octet-stream")
        .replace(
            &format!("{kubeadm}.sha256"),
            sha256_hex(&other),
            "text/plain",
        );
    let world = World::start(Options {
        snapshot: Some(snapshot),
        ..Options::default()
    });
    (world, other)
}

/// A locked build with a fresh cache downloads the republished kubeadm and refuses it, naming
/// both hashes, leaving nothing.
fn assert_republished_binary_refused(l: &Locked, d: &Path, tmp: &Path) {
    let (world, other) = world_republishing_kubeadm();
    fs::write(&l.local, fs::read(l.tree.join("network.yaml")).unwrap()).unwrap();
    let locked_kubeadm = l.locked["arches"]["amd64"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "k8s/kubeadm")
        .unwrap()["sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    let (out2, fresh) = (d.join("out2"), d.join("fresh"));
    let args = locked_args(&l.lock, &["--network", p(&l.local)], &out2, &fresh);
    fails(
        &mut build(world.config_path(), tmp, &args),
        1,
        &["kubeadm", &locked_kubeadm, &sha256_hex(&other), "hint:"],
    );
    assert_no_isos(&out2);
    assert_no_isos(tmp);
}

#[test]
fn drift_in_a_local_manifest_or_a_served_binary_fails_naming_it_and_both_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let world = World::start(Options::default());
    let tmp = tmp_in(d, "tmp");
    let locked = lock_a_local_network_manifest(&world, d, &tmp);
    assert_local_file_given_again_unchanged(&world, &locked, d, &tmp);
    assert_contradictions_are_usage_errors(&world, &locked, d, &tmp);
    drop(world);
    assert_republished_binary_refused(&locked, d, &tmp);
}

/// `build --locked FILE` in `d`, with no configuration, into `d/out`.
fn build_locked_from(d: &Path, file: &Path) -> std::process::Command {
    let (out, cache) = (d.join("out"), d.join("c"));
    build(
        &d.join("none.yaml"),
        d,
        &locked_args(file, &[], &out, &cache),
    )
}

#[test]
fn a_lock_that_is_not_one_is_a_usage_error_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        (
            "not-json.lock",
            b"{ this is not json".to_vec(),
            vec!["is not a cks-iso lock"],
        ),
        (
            "future.lock",
            br#"{"version": 2, "cks_iso": "9.0.0"}"#.to_vec(),
            vec!["lock version 2", "reads version 1"],
        ),
        (
            "text.lock",
            b"hello".to_vec(),
            vec!["neither a cks-iso lock nor a readable ISO"],
        ),
    ];
    for (name, body, mut needles) in cases {
        let file = d.join(name);
        fs::write(&file, body).unwrap();
        needles.extend([name, "hint:"]);
        fails(&mut build_locked_from(d, &file), 2, &needles);
    }
    // A truncated ISO.
    let tree = d.join("tree");
    fs::create_dir_all(&tree).unwrap();
    fs::write(tree.join("big.bin"), noise(7, 4 << 20)).unwrap();
    let iso = d.join("whole.iso");
    run(cks_iso().args(["iso", p(&tree), "-o", p(&iso)]));
    let bytes = fs::read(&iso).unwrap();
    let cut = d.join("cut.iso");
    fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    fails(&mut build_locked_from(d, &cut), 2, &["cut.iso", "hint:"]);
    // An ISO without a lock.
    fails(
        &mut build_locked_from(d, &iso),
        2,
        &["whole.iso:cks-iso.lock", "hint:"],
    );
    assert_no_isos(&d.join("out"));
}
