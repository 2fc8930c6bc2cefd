//! `cks-iso cache export|import|ls|verify|prune` on a real cache: images pulled with `cks-iso pull`
//! from the world's docker-registry, a downloaded file and a manifest kept by URL the way a build
//! keeps them, and a lock written for exactly those. No mocks: every check reads the directories
//! the commands left.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::common::{cache_cmd, contents, ls_json, text};
use crate::support::registry::{pull, succeeded};
use crate::support::{cks_iso, ended_quietly, ok, p};
use cks_iso::cache::{Cache, Key};
use cks_iso::image::Digest;
use cks_iso_testworld::registry::{RegistryWorld, world};
use serde_json::{Value, json};

const FILE_URL: &str = "https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm";
const MANIFEST_URL: &str = "https://raw.githubusercontent.com/example/cni/v1/network.yaml";

/// Images the lock names, per arch; busybox is pulled too but locked by nobody.
const LOCKED: [(&str, &str); 4] = [
    ("amd64", "registry.k8s.io/kube-apiserver:v1.33.1"),
    ("amd64", "registry.k8s.io/pause:3.10"),
    ("amd64", "quay.io/example/amd64-only:1.0"),
    ("arm64", "registry.k8s.io/pause:3.10"),
];
const UNLOCKED: &str = "docker.io/library/busybox:1.36";

/// A filled cache, the lock for part of it, and the digests that lock needs.
struct Setup {
    _world: RegistryWorld,
    tmp: tempfile::TempDir,
    cache: PathBuf,
    lock: PathBuf,
    needed: BTreeSet<String>,
    needed_keys: BTreeSet<String>,
    file: Digest,
}

/// Pulls every image of [`LOCKED`], and [`UNLOCKED`] for amd64, into `cache` from the world's
/// registry.
fn pull_images(world: &RegistryWorld, cache: &Path, tmp: &Path) {
    for arch in ["amd64", "arm64"] {
        let mut refs: Vec<String> = LOCKED
            .iter()
            .filter(|(a, _)| *a == arch)
            .map(|(_, r)| r.to_string())
            .collect();
        if arch == "amd64" {
            refs.push(UNLOCKED.into());
        }
        let mut args = refs.clone();
        args.extend(["--arch".into(), arch.into()]);
        args.extend(world.mirror_args(&world.registry.url()));
        let lines = succeeded(&pull(&args, cache, &tmp.join(format!("out-{arch}"))));
        assert_eq!(lines.len(), refs.len());
    }
}

/// A downloaded file and a manifest kept by URL, the way a build keeps them, and the file's
/// published checksum, which no lock needs; the file's digest and size, the manifest's digest.
fn remember_downloads(cache: &Path) -> (Digest, u64, Digest) {
    let store = Cache::new(cache);
    let kubeadm = b"\x7fELF kubeadm for the cache tests".to_vec();
    let file = store.put_bytes(&kubeadm).unwrap();
    let size = kubeadm.len() as u64;
    store
        .remember(&Key::Url(FILE_URL.into()), &file, size, FILE_URL)
        .unwrap();
    let network = b"apiVersion: v1\nkind: ConfigMap\n".to_vec();
    let taken = store.put_bytes(&network).unwrap();
    let key = Key::Url(MANIFEST_URL.into());
    store
        .remember(&key, &taken, network.len() as u64, MANIFEST_URL)
        .unwrap();
    let published = format!("{}\n", file.hex());
    let sum = store.put_bytes(published.as_bytes()).unwrap();
    let sum_url = format!("{FILE_URL}.sha256");
    store
        .remember(&Key::Url(sum_url.clone()), &sum, 65, &sum_url)
        .unwrap();
    (file, size, taken)
}

/// The lock's `arches`: [`LOCKED`]'s images per arch and the file for amd64; adds every digest
/// and index key they need to `needed` and `needed_keys`.
fn locked_arches(
    world: &RegistryWorld,
    (file, size): (&Digest, u64),
    needed: &mut BTreeSet<String>,
    needed_keys: &mut BTreeSet<String>,
) -> serde_json::Map<String, Value> {
    let mut arches = serde_json::Map::new();
    for arch in ["amd64", "arm64"] {
        let mut images = Vec::new();
        for (_, reference) in LOCKED.iter().filter(|(a, _)| *a == arch) {
            let fixture = world.corpus.get(reference);
            let image = &fixture.per_arch[arch];
            needed.insert(fixture.top.clone());
            needed.extend([image.manifest.clone(), image.config.clone()]);
            needed.extend(image.layers.iter().cloned());
            needed_keys.insert(format!("tag:{reference}"));
            images.push(json!({
                "reference": reference, "digest": fixture.top,
                "manifest": image.manifest, "size": 1,
            }));
        }
        let files = match arch {
            "amd64" => vec![json!({
                "path": "k8s/kubeadm", "url": FILE_URL, "size": size, "sha256": file.hex(),
            })],
            _ => Vec::new(),
        };
        arches.insert(
            arch.into(),
            json!({"iso": format!("setup-{arch}.iso"), "files": files, "images": images}),
        );
    }
    arches
}

/// A lock of 1.33.1 with `arches` and the manifest `taken`.
fn lock_document(arches: serde_json::Map<String, Value>, taken: &Digest) -> Value {
    json!({
        "version": 1, "cks_iso": env!("CARGO_PKG_VERSION"), "epoch": 1700000000,
        "request": {
            "kubernetes": "1.33.1", "arches": ["amd64", "arm64"], "cni": "1.6.2",
            "crictl": "1.33.0", "etcd": null, "csi": null, "ccm": "v1.2.0",
            "autoscaler": "1.33.4", "volume_id": "CDROM", "name": "setup-v1.33.1",
        },
        "autoscaler": {"version": "1.33.4", "tag": "cluster-autoscaler-1.33.4",
                       "commit": null, "pinned": true},
        "kubeadm": {"pause": "3.10", "etcd": "3.5.21-0", "coredns": "v1.12.0",
                    "source": "embedded table"},
        "manifests": [
            {"path": "network.yaml", "role": "network", "source": MANIFEST_URL,
             "sha256_taken": taken.hex(), "sha256": taken.hex()},
            {"path": "kubelet.service", "role": "unit", "source": "builtin:kubelet.service",
             "sha256_taken": Digest::of(b"unit").hex(), "sha256": Digest::of(b"unit").hex()},
        ],
        "arches": arches,
    })
}

fn setup() -> Setup {
    let world = world();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    pull_images(&world, &cache, tmp.path());
    let (file, size, taken) = remember_downloads(&cache);
    let mut needed = BTreeSet::from([file.to_string(), taken.to_string()]);
    let mut needed_keys = BTreeSet::from([
        format!("url:{FILE_URL}"),
        Key::Url(MANIFEST_URL.into()).to_string(),
    ]);
    let arches = locked_arches(&world, (&file, size), &mut needed, &mut needed_keys);
    let lock_path = tmp.path().join("cks-iso.lock");
    let lock = lock_document(arches, &taken);
    fs::write(&lock_path, serde_json::to_string_pretty(&lock).unwrap()).unwrap();
    Setup {
        _world: world,
        tmp,
        cache,
        lock: lock_path,
        needed,
        needed_keys,
        file,
    }
}

#[test]
fn export_then_import_carries_exactly_what_the_lock_needs() {
    let s = setup();
    let export = s.tmp.path().join("export");
    let out = ok(cache_cmd(
        &s.cache,
        &["export", "--locked", p(&s.lock), "-o", p(&export)],
    ));
    assert!(
        text(&out.stdout).contains("exported"),
        "{}",
        text(&out.stdout)
    );
    let (blobs, keys) = contents(&export);
    assert_eq!(blobs, s.needed, "the export holds exactly the needed blobs");
    assert_eq!(keys, s.needed_keys, "and exactly the needed index entries");
    assert!(
        crate::support::names(&export.join("blobs/sha256"))
            .iter()
            .all(|n| !n.starts_with('.'))
    );

    let carried = s.tmp.path().join("other-side");
    // Without the lock nothing in the export verifies its index entries: each is named, skipped.
    let out = ok(cache_cmd(&carried, &["import", p(&export)]));
    let said = text(&out.stderr);
    for key in &s.needed_keys {
        assert!(
            said.contains(&format!("index entry {key} not imported")),
            "{key}: {said}"
        );
    }
    assert!(said.contains("no --locked lock names it"), "{said}");
    assert!(
        said.contains(&format!("no published checksum for it ({FILE_URL}.sha256)")),
        "{said}"
    );
    assert_eq!(contents(&carried), (s.needed.clone(), BTreeSet::new()));
    let out = ok(cache_cmd(
        &carried,
        &["import", p(&export), "--locked", p(&s.lock)],
    ));
    assert!(
        text(&out.stdout).contains("imported"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        !text(&out.stderr).contains("not imported"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        contents(&carried),
        (s.needed.clone(), s.needed_keys.clone())
    );
    let listed = ls_json(&carried, &s.lock);
    assert_eq!(listed["locks"][0]["missing"], 0, "{listed:#}");
    assert_eq!(listed["locks"][0]["complete"], true, "{listed:#}");
    assert_eq!(listed["unneeded"]["count"], 0, "{listed:#}");
    let store = Cache::new(&carried);
    let pause = store
        .recall(&Key::Tag("registry.k8s.io/pause:3.10".into()))
        .expect("tag entry");
    assert_eq!(
        pause.digest.to_string(),
        s._world.corpus.get("registry.k8s.io/pause:3.10").top
    );
    assert_eq!(
        store.recall(&Key::Url(FILE_URL.into())).unwrap().digest,
        s.file
    );

    // The source still lists busybox as needed by no lock; the text form names each blob.
    let out = ok(cache_cmd(&s.cache, &["ls", "--locked", p(&s.lock)]));
    let listing = text(&out.stdout);
    assert!(listing.contains("0 missing"), "{listing}");
    assert!(
        listing.contains(&format!("ok      {}", s.file)),
        "{listing}"
    );
    assert!(
        !listing.contains("needed by none of these locks: 0"),
        "{listing}"
    );
}

#[test]
fn an_iso_carrying_a_lock_is_read_like_the_lock() {
    let s = setup();
    let root = s.tmp.path().join("root");
    fs::create_dir_all(&root).unwrap();
    fs::copy(&s.lock, root.join("cks-iso.lock")).unwrap();
    let iso = s.tmp.path().join("with-lock.iso");
    crate::support::build_iso(&root, &iso);
    let export = s.tmp.path().join("export");
    ok(cache_cmd(
        &s.cache,
        &["export", "--locked", p(&iso), "-o", p(&export)],
    ));
    assert_eq!(contents(&export).0, s.needed);
    // An ISO without a lock, and a file that is neither, are refused as bad input.
    fs::remove_file(root.join("cks-iso.lock")).unwrap();
    let bare = s.tmp.path().join("bare.iso");
    crate::support::build_iso(&root, &bare);
    let out = cache_cmd(&s.cache, &["ls", "--locked", p(&bare)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cks-iso.lock"),
        "{}",
        text(&out.stderr)
    );
    let junk = s.tmp.path().join("junk.lock");
    fs::write(&junk, "{ not json").unwrap();
    let out = cache_cmd(&s.cache, &["ls", "--locked", p(&junk)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("is not a cks-iso lock"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn export_names_the_first_missing_blob_and_writes_nothing() {
    let s = setup();
    let apiserver = &s._world.corpus.get(LOCKED[0].1).per_arch["amd64"];
    let layer = &apiserver.layers[1];
    fs::remove_file(s.cache.join("blobs/sha256").join(&layer[7..])).unwrap();
    let export = s.tmp.path().join("export");
    let out = cache_cmd(
        &s.cache,
        &["export", "--locked", p(&s.lock), "-o", p(&export)],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(layer) && err.contains("kube-apiserver"),
        "{err}"
    );
    assert!(err.contains("hint:") && err.contains("--locked"), "{err}");
    assert!(!export.exists(), "nothing written");
    let listed = ls_json(&s.cache, &s.lock);
    assert_eq!(listed["locks"][0]["missing"], 1, "{listed:#}");

    // Without the index the layers are unknown: prune refuses rather than guess.
    fs::remove_file(s.cache.join("blobs/sha256").join(&apiserver.manifest[7..])).unwrap();
    let out = cache_cmd(&s.cache, &["prune", "--keep-locked", p(&s.lock)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&apiserver.manifest) && err.contains("nothing removed"),
        "{err}"
    );
    assert!(
        contents(&s.cache).0.len() > s.needed.len(),
        "nothing was pruned"
    );
}

#[test]
fn verify_names_a_flipped_byte_and_fix_removes_it() {
    let s = setup();
    ok(cache_cmd(&s.cache, &["verify"]));
    let layer = s._world.corpus.get(LOCKED[1].1).per_arch["arm64"].layers[0].clone();
    let path = s.cache.join("blobs/sha256").join(&layer[7..]);
    let mut bytes = fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    fs::write(&path, &bytes).unwrap();
    // A file a writer is busy with is not a problem.
    fs::write(s.cache.join("blobs/sha256/.abc.1234.partial"), b"half").unwrap();
    // An index entry whose blob is gone is one.
    fs::remove_file(s.cache.join("blobs/sha256").join(s.file.hex())).unwrap();

    let out = cache_cmd(&s.cache, &["verify"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}{}", text(&out.stderr));
    assert!(report.contains(&format!("corrupt {layer}")), "{report}");
    assert!(
        report.contains(&format!("dangling index entry url:{FILE_URL}")),
        "{report}"
    );
    assert!(!report.contains(".partial"), "{report}");
    assert!(text(&out.stderr).contains("hint:"), "{}", text(&out.stderr));
    assert!(path.exists(), "verify alone removes nothing");

    let out = ok(cache_cmd(&s.cache, &["verify", "--fix"]));
    let report = text(&out.stdout);
    assert!(
        report.contains(&format!("removed blob {layer}")),
        "{report}"
    );
    assert!(
        report.contains(&format!("removed index entry url:{FILE_URL}")),
        "{report}"
    );
    assert!(!path.exists());
    assert!(s.cache.join("blobs/sha256/.abc.1234.partial").exists());
    ok(cache_cmd(&s.cache, &["verify"]));
    let listed = ls_json(&s.cache, &s.lock);
    assert_eq!(
        listed["locks"][0]["missing"], 2,
        "the layer and the file: {listed:#}"
    );
}

#[test]
fn import_refuses_a_corrupt_blob_and_takes_the_rest() {
    let s = setup();
    let export = s.tmp.path().join("export");
    ok(cache_cmd(
        &s.cache,
        &["export", "--locked", p(&s.lock), "-o", p(&export)],
    ));
    let victim = s.file.clone();
    let path = export.join("blobs/sha256").join(victim.hex());
    let mut bytes = fs::read(&path).unwrap();
    bytes[0] ^= 0x80;
    fs::write(&path, &bytes).unwrap();
    let carried = s.tmp.path().join("other-side");
    let out = cache_cmd(&carried, &["import", p(&export)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&victim.to_string()) && err.contains("hint:"),
        "{err}"
    );
    let (blobs, keys) = contents(&carried);
    let mut expected = s.needed.clone();
    expected.remove(&victim.to_string());
    assert_eq!(blobs, expected, "every other blob imported");
    assert!(
        !keys.contains(&format!("url:{FILE_URL}")),
        "no entry naming nothing"
    );
    let out = cache_cmd(&carried, &["import", p(&s.tmp.path().join("nowhere"))]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn prune_keeps_exactly_what_the_locks_need() {
    let s = setup();
    let out = cache_cmd(&s.cache, &["prune"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--keep-locked"));
    let (before, keys_before) = contents(&s.cache);
    let busybox = &s._world.corpus.get(UNLOCKED).per_arch["amd64"];
    assert!(before.contains(&busybox.config));

    let out = ok(cache_cmd(&s.cache, &["prune", "--keep-locked", p(&s.lock)]));
    let report = text(&out.stdout);
    assert!(report.contains("freed"), "{report}");
    assert!(
        report.contains(&format!("removed {}", busybox.config)),
        "{report}"
    );
    assert!(
        report.contains(&format!("removed index entry url:{FILE_URL}.sha256")),
        "{report}"
    );
    // Tag entries are kept where the pulls wrote them.
    let kept_keys = s.needed_keys.intersection(&keys_before).cloned().collect();
    assert_eq!(contents(&s.cache), (s.needed.clone(), kept_keys));
    let listed = ls_json(&s.cache, &s.lock);
    assert_eq!(listed["locks"][0]["missing"], 0, "{listed:#}");
    // A second prune finds nothing more.
    let out = ok(cache_cmd(&s.cache, &["prune", "--keep-locked", p(&s.lock)]));
    assert!(
        text(&out.stdout).starts_with("freed 0 B: 0 blob(s) and 0 index entries removed"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn cache_ls_into_a_closed_pipe_ends_quietly() {
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = cks_iso();
    cmd.args(["cache", "ls", "--cache-dir"]).arg(cache.path());
    ended_quietly("cks-iso cache ls", &crate::support::into_closed_pipe(cmd));
}
