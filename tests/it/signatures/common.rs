//! Helpers the signature suites share: a `build` of the world with signatures on their defaults,
//! the independent oracles (Python's `cryptography`, Sigstore's Python client) run on an
//! extracted ISO, and the checks every refused build makes (exit 1, the words wanted, no ISO).
//! They live here so that each suite file reads as its own story and none depends on another.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{build_in, no_internet, p, stderr, tool};
use cks_iso_testworld::faults::FaultProxy;
use cks_iso_testworld::sigstore::SignOptions;
use cks_iso_testworld::world::World;
use sha2::Digest as _;

/// The image whose signatures the suites spoil.
pub(crate) const PAUSE: &str = "registry.k8s.io/pause:3.10";
/// The identity that signs Kubernetes' binaries.
pub(crate) const STAGING: &str = "krel-staging@k8s-releng-prod.iam.gserviceaccount.com";
/// The identity that signs Kubernetes' images.
pub(crate) const TRUST: &str = "krel-trust@k8s-releng-prod.iam.gserviceaccount.com";
/// The issuer of both.
pub(crate) const GOOGLE: &str = "https://accounts.google.com";

/// `build` of `world` into `dir/out` with `dir/cache`, signatures on their defaults, and `args`.
pub(crate) fn build(world: &World, dir: &Path, out: &str, args: &[&str]) -> Command {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = build_in(world.config_path(), &tmp);
    cmd.env_remove("CKS_ISO_SIGNATURES")
        .env_remove("CKS_ISO_REKOR_URL")
        .args([
            "--kubernetes",
            world.kubernetes(),
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
            "--output",
            p(&dir.join(out)),
            "--cache-dir",
            p(&dir.join("cache")),
        ])
        .args(args);
    cmd
}

/// The lower-case hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The names of the ISOs in `dir` (none when `dir` does not exist).
pub(crate) fn isos(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|r| {
            r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".iso"))
                .collect()
        })
        .unwrap_or_default()
}

/// `iso` extracted by bsdtar into `tree` (created).
pub(crate) fn extract(iso: &Path, tree: &Path) {
    fs::create_dir_all(tree).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(tree)]);
}

/// A JSON file, parsed.
pub(crate) fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// A build into `dir/bad` with `args` fails with exit 1, its stderr holds each of `wanted`, and
/// it wrote no ISO.
pub(crate) fn fails_with(world: &World, dir: &Path, args: &[&str], wanted: &[&str]) {
    let out = build(world, dir, "bad", args).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for w in wanted {
        assert!(err.contains(w), "missing {w:?} in:\n{err}");
    }
    assert!(isos(&dir.join("bad")).is_empty(), "no ISO after:\n{err}");
}

/// Replaces the `.sig` tags of pause's index and platform manifests with `layer`s signed so;
/// with `payload_of`, a genuine signature of that other image, copied to pause's tags.
pub(crate) fn spoil(world: &World, opts: &SignOptions, payload_of: Option<(&str, &str)>) {
    let image = world.image(PAUSE);
    let mut digests = vec![image.digest.clone()];
    digests.extend(image.manifests.values().cloned());
    for digest in digests {
        let layer = match payload_of {
            Some((repository, other)) => world.sigstore().sign(repository, other, opts),
            None => world.sigstore().sign(&image.repository, &digest, opts),
        };
        world.push_signature(&image.repository, &digest, &[layer]);
    }
}

/// The world's configuration with its registry behind `proxy`, in `dir` beside a copy of its
/// trust root.
pub(crate) fn config_through(world: &World, proxy: &FaultProxy, dir: &Path) -> PathBuf {
    let yaml = world
        .config_yaml()
        .replace(&world.registry_url(), &proxy.url())
        .replace(
            &world.registry_host(),
            proxy.url().trim_start_matches("http://"),
        );
    let config = dir.join("cks-iso.yaml");
    fs::write(&config, yaml).unwrap();
    fs::copy(world.trusted_root_path(), dir.join("trusted_root.json")).unwrap();
    config
}

/// `scripts/check-binary-bundles.py` (Sigstore's Python client, installed by `make deps`) on an
/// extracted ISO. A missing package fails the test: `make test` installs it.
pub(crate) fn bundle_oracle(tree: &Path, root: &Path) -> Output {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-sbom/bin/python");
    let has_sigstore = Command::new(&python)
        .args(["-c", "import sigstore.verify"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_sigstore,
        "the sigstore Python package is not in {}: run `make deps`",
        python.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-binary-bundles.py");
    no_internet(&mut Command::new(&python))
        .arg(&script)
        .args([p(tree), p(root), STAGING, GOOGLE])
        .output()
        .unwrap()
}

/// The bundle oracle on `tree` succeeds and counts 3 bundles.
pub(crate) fn assert_bundle_oracle_agrees(tree: &Path, root: &Path) {
    let out = bundle_oracle(tree, root);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bundle oracle: {said}{}",
        stderr(&out)
    );
    assert_eq!(said.trim(), "ok: 3 bundles");
}

/// `scripts/check-image-signatures.py` on an extracted ISO: the independent oracle.
pub(crate) fn oracle(tree: &Path, root: &Path) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-image-signatures.py");
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-sbom/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `make deps`",
        python.display()
    );
    let out = no_internet(&mut Command::new(&python))
        .arg(&script)
        .args([p(tree), p(root), TRUST, GOOGLE])
        .output()
        .expect("the virtualenv's python (run `make deps`)");
    assert!(
        !stderr(&out).contains("ModuleNotFoundError"),
        "the oracle needs Python's `cryptography` in .venv-sbom: run `make deps`: {}",
        stderr(&out)
    );
    out
}
