//! Sigstore signatures of registry.k8s.io images, end to end against the local world, whose own
//! small Sigstore (testworld `sigstore`: CAs, CT log, Rekor SETs, `trusted_root.json`) signs them
//! the way Kubernetes' promoter does. Happy path for both arches (evidence in `signatures/`,
//! deterministic, `verify` still passes), then one world for the negative matrix: each spoiled
//! signature fails the build with its own error, before any ISO is written.
//!
//! The same for dl.k8s.io's Kubernetes binaries: the world's Sigstore signs each 1.26+ binary
//! (`.sig`/`.cert` served beside it, identity krel-staging) and logs it in its Rekor stand-in (a
//! real Merkle tree, signed checkpoints). Bundles in `signatures/binaries/`, deterministic, in the
//! lock, re-verified with every server stopped (and by Sigstore's Python client, which `make deps`
//! installs), ISO tampering caught; then the binaries' negative matrix.
//!
//! The lock names each image's signature manifest: a locked rebuild after Kubernetes signed an
//! image again takes it by digest and makes the same ISO. `--signatures off` is recorded as not
//! checked, and `verify --signatures` says why an ISO has no evidence to re-verify.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::support::*;
use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
use cks_iso_testworld::rekor::Tamper;
use cks_iso_testworld::sigstore::{IssuerForm, SignOptions};
use cks_iso_testworld::world::{Options, World, binary_signer};
use sha2::Digest as _;

const PAUSE: &str = "registry.k8s.io/pause:3.10";
const STAGING: &str = "krel-staging@k8s-releng-prod.iam.gserviceaccount.com";

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

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

fn isos(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|r| {
            r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".iso"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn both_arches_verify_and_carry_the_evidence() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("run.lock");
    let first = ok(build(
        &world,
        dir.path(),
        "out",
        &[
            "--arch",
            "amd64",
            "--arch",
            "arm64",
            "--lock-file",
            p(&lock),
        ],
    )
    .output()
    .unwrap());
    assert!(
        stderr(&first).contains("image signatures verified")
            && stderr(&first).contains("3 of 3 covered files' signatures verified"),
        "{}",
        stderr(&first)
    );
    for (arch, name) in [("amd64", "x86_64"), ("arm64", "aarch64")] {
        let iso = dir
            .path()
            .join(format!("out/setup-v{}-{name}.iso", world.kubernetes()));
        let tree = dir.path().join(format!("tree-{arch}"));
        let report = signature_report(&iso, &tree);
        assert_eq!(report["mode"], "verify");
        let root = fs::read(world.trusted_root_path()).unwrap();
        assert_eq!(report["trusted_root_sha256"], sha256_hex(&root));
        assert_eq!(
            fs::read(tree.join("signatures/trusted_root.json")).unwrap(),
            root
        );
        let images = report["images"].as_array().unwrap();
        let k8s: Vec<_> = images
            .iter()
            .filter(|i| {
                i["reference"]
                    .as_str()
                    .unwrap()
                    .starts_with("registry.k8s.io/")
            })
            .collect();
        assert!(k8s.len() >= 8, "{report:#}");
        for image in &k8s {
            assert_eq!(image["verdict"], "verified", "{image:#}");
            assert_eq!(
                image["identity"],
                "krel-trust@k8s-releng-prod.iam.gserviceaccount.com"
            );
            assert_eq!(image["issuer"], "https://accounts.google.com");
            // The platform manifest's own signature is the one taken.
            assert_eq!(image["signed_digest"], image["manifest"], "{image:#}");
            let file = tree.join(image["signature_manifest"].as_str().unwrap());
            let bytes = fs::read(&file).unwrap();
            let name = file.file_stem().unwrap().to_string_lossy().into_owned();
            assert_eq!(sha256_hex(&bytes), name, "byte-exact signature manifest");
            let manifest: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            for layer in manifest["layers"].as_array().unwrap() {
                let hex = layer["digest"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("sha256:");
                let payload =
                    fs::read(tree.join("signatures/images/blobs/sha256").join(hex)).unwrap();
                assert_eq!(sha256_hex(&payload), hex);
            }
        }
        for image in images.iter().filter(|i| !k8s.contains(i)) {
            assert_eq!(image["verdict"], "not-covered", "{image:#}");
        }
        // The CycloneDX SBOM names each covered image's signer.
        let bom: serde_json::Value =
            serde_json::from_slice(&fs::read(tree.join("sbom.cdx.json")).unwrap()).unwrap();
        let pause = bom["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["bom-ref"] == "docker/pause:3.10.tar")
            .unwrap();
        let signature = pause["properties"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "cks-iso:signature")
            .unwrap();
        assert!(
            signature["value"]
                .as_str()
                .unwrap()
                .starts_with("verified: krel-trust@k8s-releng-prod.iam.gserviceaccount.com via https://accounts.google.com, Rekor log index "),
            "{signature}"
        );
        let spdx = fs::read_to_string(tree.join("sbom.spdx.json")).unwrap();
        assert!(
            spdx.contains("; signature verified: krel-trust@"),
            "the SPDX comment names the signer"
        );
        let versions = fs::read_to_string(tree.join("versions.txt")).unwrap();
        let line = format!(
            "# signatures verify: {n} of {n} covered images verified, 0 unsigned",
            n = k8s.len()
        );
        assert!(versions.contains(&line), "{versions}");
        // Node scripts never see it: nothing new in docker/, no *.yaml.
        for entry in fs::read_dir(tree.join("docker")).unwrap() {
            assert!(
                entry
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".tar")
            );
        }
        run(cks_iso().args(["verify", p(&iso)]));
        binaries_evidence(&world, &tree);
    }
    // The lock records the binaries' signature material.
    let locked: serde_json::Value = serde_json::from_slice(&fs::read(&lock).unwrap()).unwrap();
    let files = locked["arches"]["amd64"]["files"].as_array().unwrap();
    let kubeadm = files.iter().find(|f| f["path"] == "k8s/kubeadm").unwrap();
    for key in ["sig", "cert", "rekor"] {
        let hex = kubeadm["signature"][key].as_str().unwrap_or_default();
        assert_eq!(hex.len(), 64, "{kubeadm:#}");
    }
    // Deterministic: a second build makes the same bytes.
    ok(build(
        &world,
        dir.path(),
        "again",
        &["--arch", "amd64", "--arch", "arm64"],
    )
    .output()
    .unwrap());
    for name in isos(&dir.path().join("out")) {
        let a = fs::read(dir.path().join("out").join(&name)).unwrap();
        let b = fs::read(dir.path().join("again").join(&name)).unwrap();
        assert!(a == b, "{name} differs between two builds");
    }

    // Re-verified offline, every server stopped, against the world's root given by hand.
    let root = dir.path().join("root.json");
    fs::copy(world.trusted_root_path(), &root).unwrap();
    let version = world.kubernetes().to_owned();
    drop(world);
    let iso = dir.path().join(format!("out/setup-v{version}-x86_64.iso"));
    let verify = |iso: &Path, root: Option<&Path>| {
        let mut cmd = cks_iso();
        cmd.args(["verify", "--signatures"]);
        if let Some(root) = root {
            cmd.args(["--trusted-root", p(root)]);
        }
        cmd.arg(p(iso)).output().unwrap()
    };
    for iso in [
        iso.clone(),
        dir.path().join(format!("out/setup-v{version}-aarch64.iso")),
    ] {
        let out = verify(&iso, Some(&root));
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
    }
    // An independent oracle (Python's `cryptography`) agrees on both ISOs' evidence.
    for arch in ["amd64", "arm64"] {
        let out = oracle(&dir.path().join(format!("tree-{arch}")), &root);
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "oracle: {}", stderr(&out));
        assert!(
            said.starts_with("ok: ") && !said.starts_with("ok: 0 "),
            "{said}"
        );
        // Sigstore's own client verifies the binaries' bundles, offline.
        let out = bundle_oracle(&dir.path().join(format!("tree-{arch}")), &root);
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "bundle oracle: {said}{}",
            stderr(&out)
        );
        assert_eq!(said.trim(), "ok: 3 bundles");
    }
    // Sigstore's public root (the default) did not sign the world's images.
    let out = verify(&iso, None);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !out.status.success() && text.contains("Rekor signed entry timestamp"),
        "{text}"
    );
    // The closing hint names the likely cause: another root than the one the ISO was built with.
    let err = stderr(&out);
    let hint = err
        .lines()
        .find(|l| l.starts_with("hint: "))
        .unwrap_or_default();
    assert!(
        hint.contains("pass --trusted-root FILE") && !hint.contains("The ISO contract"),
        "{err}"
    );

    // Tampered ISOs: re-authored from the extracted tree with one thing changed.
    let tree = dir.path().join("tree-amd64");
    let report_path = tree.join("signatures/report.json");
    let report: serde_json::Value =
        serde_json::from_slice(&fs::read(&report_path).unwrap()).unwrap();
    let verified: Vec<&serde_json::Value> = report["images"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["verdict"] == "verified")
        .collect();
    let retamper = |name: &str, edit: &dyn Fn(&Path)| {
        let copy = dir.path().join(format!("tamper-{name}"));
        run(Command::new("cp").args(["-a", p(&tree), p(&copy)]));
        edit(&copy);
        let bad = dir.path().join(format!("{name}.iso"));
        run(cks_iso().args(["iso", p(&copy), "-o", p(&bad)]));
        let out = verify(&bad, Some(&root));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            !out.status.success(),
            "{name}: verify --signatures passed:\n{text}"
        );
        text
    };
    // A flipped byte in a payload.
    let manifest: serde_json::Value = serde_json::from_slice(
        &fs::read(tree.join(verified[0]["signature_manifest"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    let payload = format!(
        "signatures/images/blobs/sha256/{}",
        manifest["layers"][0]["digest"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:")
    );
    let text = retamper("payload", &|t| {
        let mut bytes = fs::read(t.join(&payload)).unwrap();
        bytes[10] ^= 1;
        fs::write(t.join(&payload), bytes).unwrap();
    });
    assert!(text.contains("layer integrity"), "{text}");
    let out = oracle(&dir.path().join("tamper-payload"), &root);
    assert!(!out.status.success() && stderr(&out).contains("payload digest"));
    // Two images' signatures swapped in the report.
    let text = retamper("swapped", &|t| {
        let mut r = report.clone();
        let images = r["images"].as_array_mut().unwrap();
        let (a, b) = (
            images
                .iter()
                .position(|i| i["reference"] == verified[0]["reference"])
                .unwrap(),
            images
                .iter()
                .position(|i| i["reference"] == verified[1]["reference"])
                .unwrap(),
        );
        for key in ["signed_digest", "signature_manifest"] {
            let tmp = images[a][key].clone();
            images[a][key] = images[b][key].clone();
            images[b][key] = tmp;
        }
        fs::write(
            t.join("signatures/report.json"),
            serde_json::to_vec(&r).unwrap(),
        )
        .unwrap();
    });
    assert!(text.contains("which the ISO does not ship"), "{text}");
    // A verdict rewritten to hide an image from the re-check.
    let text = retamper("hidden", &|t| {
        let mut r = report.clone();
        for image in r["images"].as_array_mut().unwrap() {
            if image["reference"] == verified[0]["reference"] {
                image["verdict"] = "not-covered".into();
            }
        }
        fs::write(
            t.join("signatures/report.json"),
            serde_json::to_vec(&r).unwrap(),
        )
        .unwrap();
    });
    assert!(text.contains("recorded as not-covered"), "{text}");
    // A flipped byte in a binary, and another letter in a bundle's SET.
    fn flip(rel: &str, at: usize) -> impl Fn(&Path) + '_ {
        move |t: &Path| {
            let mut bytes = fs::read(t.join(rel)).unwrap();
            bytes[at] ^= 1;
            fs::write(t.join(rel), bytes).unwrap();
        }
    }
    let text = retamper("binary", &flip("k8s/kubeadm", 5000));
    assert!(text.contains("k8s/kubeadm"), "{text}");
    let bundle = "signatures/binaries/k8s/kubectl.sigstore.json";
    let json = fs::read_to_string(tree.join(bundle)).unwrap();
    let at = json.find("\"signedEntryTimestamp\": \"").unwrap() + 30;
    // Another base64 letter, not a flipped bit: a flipped bit can leave the alphabet, and the SET
    // is then refused as malformed before Rekor's signature over it is checked.
    let text = retamper("bundle", &|t: &Path| {
        let mut bytes = fs::read(t.join(bundle)).unwrap();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        fs::write(t.join(bundle), bytes).unwrap();
    });
    assert!(text.contains("kubectl") && text.contains("Rekor"), "{text}");
}

/// The binaries' evidence in an extracted ISO: verified by krel-staging, a bundle and the
/// original `.sig`/`.cert` (as the world serves them) each, named in both SBOMs and versions.txt.
fn binaries_evidence(world: &World, tree: &Path) {
    let report: serde_json::Value =
        serde_json::from_slice(&fs::read(tree.join("signatures/report.json")).unwrap()).unwrap();
    let binaries = report["binaries"].as_array().unwrap();
    let paths: Vec<&str> = binaries
        .iter()
        .map(|b| b["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["k8s/kubeadm", "k8s/kubectl", "k8s/kubelet"],
        "{report:#}"
    );
    for b in binaries {
        assert_eq!(b["verdict"], "verified", "{b:#}");
        assert_eq!(b["identity"], STAGING);
        assert_eq!(b["issuer"], "https://accounts.google.com");
        let file = fs::read(tree.join(b["path"].as_str().unwrap())).unwrap();
        let hex = hex::encode(sha2::Sha256::digest(&file));
        assert_eq!(b["sha256"], hex.as_str());
        let path = b["path"].as_str().unwrap();
        let url = b["url"].as_str().unwrap();
        assert!(url.starts_with("https://dl.k8s.io/release/"), "{url}");
        let bundle: serde_json::Value =
            serde_json::from_slice(&fs::read(tree.join(b["bundle"].as_str().unwrap())).unwrap())
                .unwrap();
        assert_eq!(
            bundle["mediaType"],
            "application/vnd.dev.sigstore.bundle.v0.3+json"
        );
        let entry = &bundle["verificationMaterial"]["tlogEntries"][0];
        assert_eq!(entry["kindVersion"]["kind"], "hashedrekord");
        assert!(entry["inclusionProof"]["checkpoint"]["envelope"].is_string());
        // The original .sig and .cert, byte for byte as served.
        let served = url.trim_start_matches("https://");
        for ext in ["sig", "cert"] {
            let kept = fs::read(tree.join(format!("signatures/binaries/{path}.{ext}"))).unwrap();
            let upstream = world.upstream().take(&format!("{served}.{ext}")).unwrap();
            world.upstream().put(
                &format!("{served}.{ext}"),
                upstream.body.clone(),
                upstream.content_type,
            );
            assert_eq!(kept, upstream.body, "{path}.{ext}");
        }
    }
    // The SBOM names the binary's signer.
    let spdx = fs::read_to_string(tree.join("sbom.spdx.json")).unwrap();
    assert!(
        spdx.contains(&format!("\"signature verified: {STAGING}")),
        "SPDX"
    );
    let versions = fs::read_to_string(tree.join("versions.txt")).unwrap();
    assert!(
        versions.contains("; 3 of 3 binaries verified"),
        "{versions}"
    );
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
    crate::support::no_internet(&mut Command::new(&python))
        .arg(&script)
        .args([p(tree), p(root), STAGING, "https://accounts.google.com"])
        .output()
        .unwrap()
}

/// `scripts/check-image-signatures.py` on an extracted ISO: the independent oracle.
fn oracle(tree: &Path, root: &Path) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-image-signatures.py");
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-sbom/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `make deps`",
        python.display()
    );
    let out = crate::support::no_internet(&mut Command::new(&python))
        .arg(&script)
        .args([
            p(tree),
            p(root),
            "krel-trust@k8s-releng-prod.iam.gserviceaccount.com",
            "https://accounts.google.com",
        ])
        .output()
        .expect("the virtualenv's python (run `make deps`)");
    assert!(
        !stderr(&out).contains("ModuleNotFoundError"),
        "the oracle needs Python's `cryptography` in .venv-sbom: run `make deps`: {}",
        stderr(&out)
    );
    out
}

/// Replaces the `.sig` tags of pause's index and platform manifests with `layer`s signed so.
fn spoil(world: &World, opts: &SignOptions, payload_of: Option<(&str, &str)>) {
    let image = world.image(PAUSE);
    let mut digests = vec![image.digest.clone()];
    digests.extend(image.manifests.values().cloned());
    for digest in digests {
        let layer = match payload_of {
            // A genuine signature of another image, copied to this one's tag.
            Some((repository, other)) => world.sigstore().sign(repository, other, opts),
            None => world.sigstore().sign(&image.repository, &digest, opts),
        };
        world.push_signature(&image.repository, &digest, &[layer]);
    }
}

fn fails_with(world: &World, dir: &Path, args: &[&str], wanted: &[&str]) {
    let out = build(world, dir, "bad", args).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for w in wanted {
        assert!(err.contains(w), "missing {w:?} in:\n{err}");
    }
    assert!(isos(&dir.join("bad")).is_empty(), "no ISO after:\n{err}");
}

#[test]
fn bad_or_missing_signatures_fail_the_build_before_writing() {
    let world = World::start(Options {
        unsigned: vec![PAUSE.into()],
        ..Options::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let amd64 = ["--arch", "amd64"];

    // Unsigned: a loud warning under verify (and recorded), an error under enforce.
    let out = ok(build(&world, dir.path(), "out", &amd64).output().unwrap());
    assert!(
        stderr(&out).contains(&format!("{PAUSE}: UNSIGNED")),
        "{}",
        stderr(&out)
    );
    let enforce = [&amd64[..], &["--signatures", "enforce"]].concat();
    fails_with(
        &world,
        dir.path(),
        &enforce,
        &[PAUSE, "no signature", "enforce"],
    );

    // Only the index signed (as before recursive signing, 2023): accepted through the index.
    let image = world.image(PAUSE);
    let layer = world
        .sigstore()
        .sign(&image.repository, &image.digest, &SignOptions::default());
    world.push_signature(&image.repository, &image.digest, &[layer]);
    let out = ok(build(&world, dir.path(), "index", &enforce)
        .output()
        .unwrap());
    let iso = dir
        .path()
        .join(format!("index/setup-v{}-x86_64.iso", world.kubernetes()));
    let tree = dir.path().join("tree-index");
    let report = signature_report(&iso, &tree);
    let entry = image_entry(&report, PAUSE);
    assert_eq!(entry["verdict"], "verified", "{}", stderr(&out));
    assert_eq!(entry["signed_digest"], image.digest.as_str(), "{entry:#}");

    let pause = world.image(PAUSE).manifests["amd64"].clone();
    let cases: Vec<(&str, SignOptions, Vec<&str>)> = vec![
        (
            "wrong identity",
            SignOptions {
                identity: "mallory@example.com".into(),
                ..SignOptions::default()
            },
            vec!["fails the identity check", "mallory@example.com"],
        ),
        (
            "wrong issuer (.1.8)",
            SignOptions {
                issuer: "https://token.actions.githubusercontent.com".into(),
                issuer_form: IssuerForm::V2,
                ..SignOptions::default()
            },
            vec!["fails the issuer check", "token.actions"],
        ),
        (
            "wrong issuer (.1.1)",
            SignOptions {
                issuer: "https://token.actions.githubusercontent.com".into(),
                issuer_form: IssuerForm::V1,
                ..SignOptions::default()
            },
            vec!["fails the issuer check", "token.actions"],
        ),
        (
            "leaf from a CA not in the root",
            SignOptions {
                rogue_ca: true,
                ..SignOptions::default()
            },
            vec![
                "fails the certificate chain check",
                "not issued by a CA of the trusted root",
            ],
        ),
        (
            "flipped bit in the SET",
            SignOptions {
                flip_set: true,
                ..SignOptions::default()
            },
            vec!["fails the Rekor signed entry timestamp check"],
        ),
    ];
    for (what, opts, wanted) in cases {
        spoil(&world, &opts, None);
        let mut wanted = wanted;
        wanted.extend([PAUSE, pause.as_str()]);
        eprintln!("case: {what}");
        fails_with(&world, dir.path(), &amd64, &wanted);
    }

    // A valid signature of etcd, copied to pause's tags.
    let etcd = world.image("registry.k8s.io/etcd:3.5.21-0");
    spoil(
        &world,
        &SignOptions::default(),
        Some((&etcd.repository, &etcd.digest)),
    );
    fails_with(
        &world,
        dir.path(),
        &amd64,
        &[
            "fails the signed digest check",
            "copied from another image",
            &etcd.digest,
        ],
    );

    // Signed properly again: the same world builds.
    spoil(&world, &SignOptions::default(), None);
    ok(build(&world, dir.path(), "good", &enforce)
        .output()
        .unwrap());

    // A policy file covering an image nobody signed: enforce refuses it by name.
    let other = world
        .images()
        .iter()
        .find(|i| i.source == "network")
        .expect("the CNI manifest names images");
    let policy = dir.path().join("policy.yaml");
    fs::write(
        &policy,
        format!(
            "rules:\n  - match: \"{}\"\n    identity: release@cni.example\n    issuer: {}\n",
            other.repository, "https://accounts.google.com"
        ),
    )
    .unwrap();
    let with_policy = [&enforce[..], &["--signature-policy", p(&policy)]].concat();
    // pull checks too when asked: the spoiled image is named and not written, the others are.
    spoil(
        &world,
        &SignOptions {
            identity: "mallory@example.com".into(),
            ..SignOptions::default()
        },
        None,
    );
    let pulled = dir.path().join("pulled");
    let out = cks_iso()
        .env("CKS_ISO_CONFIG", world.config_path())
        .args([
            "pull",
            PAUSE,
            "registry.k8s.io/etcd:3.5.21-0",
            "--arch",
            "amd64",
        ])
        .args(["--signatures", "enforce", "--out", p(&pulled)])
        .args(["--cache-dir", p(&dir.path().join("cache"))])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("fails the identity check"), "{err}");
    let written: Vec<String> = fs::read_dir(&pulled)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written, ["etcd:3.5.21-0.tar"], "{err}");
    fails_with(
        &world,
        dir.path(),
        &with_policy,
        &[&other.repository, "no signature"],
    );
}

/// The world's configuration with its registry behind `proxy`, in `dir` beside a copy of its
/// trust root.
pub(crate) fn config_through(world: &World, proxy: &FaultProxy, dir: &Path) -> std::path::PathBuf {
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

#[test]
fn signature_fetches_are_retried_and_never_accepted_corrupt() {
    let world = World::start(Options::default());
    let proxy = FaultProxy::start(&world.registry_url());
    let dir = tempfile::tempdir().unwrap();
    let config = config_through(&world, &proxy, dir.path());
    // pause's signatures again, with a payload whose digest the test knows.
    let image = world.image(PAUSE);
    let platform = image.manifests["amd64"].clone();
    let layer = world
        .sigstore()
        .sign(&image.repository, &platform, &SignOptions::default());
    world.push_signature(&image.repository, &platform, std::slice::from_ref(&layer));
    let payload = format!("sha256:{}", sha256_hex(&layer.payload));
    let tag = format!("/manifests/{}.sig", platform.replace(':', "-"));

    // 503s on the .sig tag and the payload: retried, then verified.
    proxy.add(Rule::path_contains(&tag).times(2).fault(Fault::Status(503)));
    proxy.add(
        Rule::path_contains(&payload)
            .times(1)
            .fault(Fault::Status(503)),
    );
    let out = build(
        &world,
        dir.path(),
        "out",
        &["--arch", "amd64", "--signatures", "enforce"],
    )
    .env("CKS_ISO_CONFIG", &config)
    .output()
    .unwrap();
    ok(out);
    assert!(proxy.requests_to(&tag).len() >= 3);

    // A payload that always arrives with a flipped byte is never taken.
    proxy.clear_rules();
    proxy.add(Rule::path_contains(&payload).fault(Fault::FlipByte { offset: 5 }));
    fs::remove_dir_all(dir.path().join("cache")).unwrap();
    let out = build(&world, dir.path(), "bad", &["--arch", "amd64"])
        .env("CKS_ISO_CONFIG", &config)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("signature payload") && err.contains(&payload),
        "{err}"
    );
    assert!(isos(&dir.path().join("bad")).is_empty());

    // The binaries' Rekor entries: a 503 is retried, a flipped byte in one is fetched again (with
    // its .sig and .cert), and the build verifies them.
    proxy.clear_rules();
    let rekor = FaultProxy::start(&world.rekor().url());
    let yaml = fs::read_to_string(&config)
        .unwrap()
        .replace(&world.rekor().url(), &rekor.url());
    fs::write(&config, yaml).unwrap();
    let entries = "/api/v1/log/entries/";
    rekor.add(
        Rule::path_contains(entries)
            .times(1)
            .fault(Fault::Status(503)),
    );
    rekor.add(
        Rule::path_contains(entries)
            .times(1)
            .fault(Fault::FlipByte { offset: 120 }),
    );
    let out = build(&world, dir.path(), "rekor", &["--arch", "amd64"])
        .env("CKS_ISO_CONFIG", &config)
        .output()
        .unwrap();
    let err = stderr(&out);
    ok(out);
    assert!(err.contains("fetching its signature again"), "{err}");
    assert!(rekor.requests_to(entries).len() >= 5, "{err}");
}

fn kubeadm_path(world: &World, arch: &str) -> String {
    format!(
        "dl.k8s.io/release/v{}/bin/linux/{arch}/kubeadm",
        world.kubernetes()
    )
}

#[test]
fn bad_or_missing_binary_signatures_fail_the_build_before_writing() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Bad material is fetched again before it fails the build: once is enough here.
    let amd64 = ["--arch", "amd64", "--retries", "2"];
    let path = kubeadm_path(&world, "amd64");
    let file = world.upstream().take(&path).unwrap();
    world
        .upstream()
        .put(&path, file.body.clone(), file.content_type);
    let body = file.body;
    let url = format!("https://{path}");
    let restore = || world.sign_binary(&path, &body, &binary_signer(), None);

    let cases: Vec<(&str, SignOptions, Option<String>, Vec<&str>)> = vec![
        (
            "wrong identity",
            SignOptions {
                identity: "mallory@example.com".into(),
                ..binary_signer()
            },
            None,
            vec!["fails the identity check", "mallory@example.com", STAGING],
        ),
        (
            "flipped bit in the SET",
            SignOptions {
                flip_set: true,
                ..binary_signer()
            },
            None,
            vec!["fails the Rekor signed entry timestamp check"],
        ),
        (
            "a Rekor entry for another blob",
            binary_signer(),
            Some("ab".repeat(32)),
            vec![
                "fails the Rekor entry check",
                "has no entry that logs this file",
            ],
        ),
    ];
    for (name, opts, other, wanted) in &cases {
        world.sign_binary(&path, &body, opts, other.as_deref());
        let wanted = [&[url.as_str(), "sha256:", "hint:"][..], wanted].concat();
        eprintln!("case: {name}");
        fails_with(&world, d, &amd64, &wanted);
    }
    restore();
    for (tamper, step) in [
        (Tamper::Checkpoint, "fails the Rekor checkpoint check"),
        (Tamper::ProofHash, "fails the Rekor inclusion proof check"),
    ] {
        world.rekor().tamper(tamper);
        fails_with(&world, d, &amd64, &[url.as_str(), step]);
    }
    world.rekor().tamper(Tamper::None);

    // A 1.26+ binary without .sig is an error, whatever the mode but off.
    let sig = world.upstream().take(&format!("{path}.sig")).unwrap();
    fails_with(
        &world,
        d,
        &amd64,
        &[
            url.as_str(),
            "no signature for sha256:",
            "always signed",
            "hint:",
        ],
    );
    ok(build(
        &world,
        d,
        "off",
        &[&amd64[..], &["--signatures", "off"]].concat(),
    )
    .output()
    .unwrap());
    world
        .upstream()
        .put(&format!("{path}.sig"), sig.body, sig.content_type);

    // A policy rule covering CNI, which publishes no signature: a warning under verify, an
    // error under enforce.
    let policy = d.join("policy.yaml");
    fs::write(
        &policy,
        "rules:\n  - match: \"github.com/containernetworking/**\"\n    identity: release@cni.example\n    issuer: https://accounts.google.com\n",
    )
    .unwrap();
    let with_policy = [&amd64[..], &["--signature-policy", p(&policy)]].concat();
    let out = ok(build(&world, d, "cni", &with_policy).output().unwrap());
    assert!(
        stderr(&out).contains("UNSIGNED: no .sig or .cert"),
        "{}",
        stderr(&out)
    );
    let enforce = [&with_policy[..], &["--signatures", "enforce"]].concat();
    fails_with(
        &world,
        d,
        &enforce,
        &[
            "containernetworking",
            "no signature for",
            "--signatures enforce",
        ],
    );
}

/// The lock of a build with `--lock-file`, parsed.
fn read_lock(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// The lock's entry for `reference` in linux/amd64.
fn locked_image<'a>(lock: &'a serde_json::Value, reference: &str) -> &'a serde_json::Value {
    lock["arches"]["amd64"]["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["reference"] == reference)
        .unwrap()
}

#[test]
fn image_signatures_are_locked_and_an_iso_without_evidence_says_why() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let amd64 = ["--arch", "amd64"];
    let lock = dir.path().join("run.lock");
    ok(build(
        &world,
        dir.path(),
        "out",
        &[&amd64[..], &["--lock-file", p(&lock)]].concat(),
    )
    .output()
    .unwrap());
    // Each verified image's signature manifest is locked, by the tag that held it.
    let first = read_lock(&lock);
    let pause = locked_image(&first, PAUSE).clone();
    let hex = pause["manifest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    assert_eq!(
        pause["signature"]["tag"],
        format!("sha256-{hex}.sig"),
        "{pause:#}"
    );
    let locked_sig = pause["signature"]["manifest"].as_str().unwrap().to_owned();
    assert!(
        locked_sig.starts_with("sha256:") && locked_sig.len() == 71,
        "{pause:#}"
    );
    let iso_name = format!("setup-v{}-x86_64.iso", world.kubernetes());
    let tree = dir.path().join("tree");
    fs::create_dir_all(&tree).unwrap();
    tool(
        "bsdtar",
        [
            "-x",
            "-f",
            p(&dir.path().join("out").join(&iso_name)),
            "-C",
            p(&tree),
        ],
    );
    let stored = fs::read(tree.join(format!(
        "signatures/images/{}.json",
        locked_sig.trim_start_matches("sha256:")
    )))
    .unwrap();
    assert_eq!(format!("sha256:{}", sha256_hex(&stored)), locked_sig);

    // Kubernetes signs pause again: cosign moves every `.sig` tag to a new manifest.
    let image = world.image(PAUSE);
    let mut digests = vec![image.digest.clone()];
    digests.extend(image.manifests.values().cloned());
    for digest in digests {
        let layer = world
            .sigstore()
            .sign(&image.repository, &digest, &SignOptions::default());
        world.push_signature(&image.repository, &digest, &[layer]);
    }

    // `--locked`, online and with an empty cache, takes the locked manifest by digest: the same
    // ISO byte for byte.
    let again = tempfile::tempdir().unwrap();
    let out = ok(build(&world, again.path(), "out", &["--locked", p(&lock)])
        .output()
        .unwrap());
    let a = fs::read(dir.path().join("out").join(&iso_name)).unwrap();
    let b = fs::read(again.path().join("out").join(&iso_name)).unwrap();
    assert!(a == b, "the locked rebuild differs:\n{}", stderr(&out));
    // So does `--locked --offline` from the first build's cache.
    ok(build(
        &world,
        dir.path(),
        "offline",
        &["--locked", p(&lock), "--offline"],
    )
    .output()
    .unwrap());
    let c = fs::read(dir.path().join("offline").join(&iso_name)).unwrap();
    assert!(a == c, "the locked offline rebuild differs");
    // Without the lock the new signature is taken: other evidence, another ISO.
    let relock = dir.path().join("new.lock");
    ok(build(
        &world,
        dir.path(),
        "new",
        &[&amd64[..], &["--lock-file", p(&relock)]].concat(),
    )
    .output()
    .unwrap());
    let d = fs::read(dir.path().join("new").join(&iso_name)).unwrap();
    assert!(a != d, "an unlocked build took the old signature");
    let renewed = read_lock(&relock);
    let new_sig = &locked_image(&renewed, PAUSE)["signature"]["manifest"];
    assert_ne!(new_sig.as_str().unwrap(), locked_sig, "{renewed:#}");

    // `cache export --locked` carries the locked signature manifest, though the cache's record of
    // the tag now names the new one: another machine builds the same ISO offline from it.
    let export = dir.path().join("export");
    run(cks_iso().args([
        "cache",
        "export",
        "--locked",
        p(&lock),
        "-o",
        p(&export),
        "--cache-dir",
        p(&dir.path().join("cache")),
    ]));
    let other = tempfile::tempdir().unwrap();
    run(cks_iso().args([
        "cache",
        "import",
        p(&export),
        "--cache-dir",
        p(&other.path().join("cache")),
    ]));
    ok(build(
        &world,
        other.path(),
        "out",
        &["--locked", p(&lock), "--offline"],
    )
    .output()
    .unwrap());
    let e = fs::read(other.path().join("out").join(&iso_name)).unwrap();
    assert!(a == e, "the offline rebuild from an exported cache differs");

    // A lock naming a signature manifest the registry no longer has: the build stops.
    let gone = format!("sha256:{}", sha256_hex(b"never pushed"));
    let text = fs::read_to_string(&lock)
        .unwrap()
        .replace(&locked_sig, &gone);
    let bad_lock = dir.path().join("gone.lock");
    fs::write(&bad_lock, text).unwrap();
    let empty = tempfile::tempdir().unwrap();
    fails_with(
        &world,
        empty.path(),
        &["--locked", p(&bad_lock)],
        &[PAUSE, &gone, "signed again since it was locked", "hint: "],
    );
    // Offline, a cache without it says so.
    fails_with(
        &world,
        dir.path(),
        &["--locked", p(&bad_lock), "--offline"],
        &[PAUSE, &gone, "--offline", "cache export"],
    );

    // `--signatures off` is recorded as not checked, and `verify --signatures` says so.
    ok(build(
        &world,
        dir.path(),
        "off",
        &[&amd64[..], &["--signatures", "off"]].concat(),
    )
    .output()
    .unwrap());
    let off_iso = dir.path().join("off").join(&iso_name);
    let off_tree = dir.path().join("off-tree");
    fs::create_dir_all(&off_tree).unwrap();
    tool("bsdtar", ["-x", "-f", p(&off_iso), "-C", p(&off_tree)]);
    assert!(!off_tree.join("signatures").exists());
    let versions = fs::read_to_string(off_tree.join("versions.txt")).unwrap();
    assert!(
        versions.ends_with("# signatures off: not checked\n"),
        "{versions}"
    );
    let bom: serde_json::Value =
        serde_json::from_slice(&fs::read(off_tree.join("sbom.cdx.json")).unwrap()).unwrap();
    let noted = |bom_ref: &str| {
        bom["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["bom-ref"] == bom_ref)
            .and_then(|c| c["properties"].as_array())
            .and_then(|ps| ps.iter().find(|p| p["name"] == "cks-iso:signature"))
            .map(|p| p["value"].as_str().unwrap().to_owned())
    };
    assert_eq!(
        noted("docker/pause:3.10.tar").as_deref(),
        Some("not checked (--signatures off)"),
        "{bom:#}"
    );
    let spdx = fs::read_to_string(off_tree.join("sbom.spdx.json")).unwrap();
    assert!(
        spdx.contains("signature not checked (--signatures off)"),
        "SPDX"
    );
    run(cks_iso().args(["verify", p(&off_iso)]));
    let verify_sigs = |iso: &Path| {
        let out = cks_iso()
            .args(["verify", "--signatures", "--trusted-root"])
            .arg(world.trusted_root_path())
            .arg(iso)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = verify_sigs(&off_iso);
    assert!(
        said.contains("built with --signatures off") && said.contains("--signatures verify"),
        "{said}"
    );
    assert!(!said.contains("not reported"), "{said}");

    // An ISO whose report holds no binaries (built before binaries were checked) is named so.
    let old = dir.path().join("old-tree");
    run(Command::new("cp").args(["-a", p(&tree), p(&old)]));
    let mut report: serde_json::Value =
        serde_json::from_slice(&fs::read(old.join("signatures/report.json")).unwrap()).unwrap();
    report.as_object_mut().unwrap().remove("binaries");
    fs::write(
        old.join("signatures/report.json"),
        serde_json::to_vec_pretty(&report).unwrap(),
    )
    .unwrap();
    fs::remove_dir_all(old.join("signatures/binaries")).unwrap();
    let old_iso = dir.path().join("old.iso");
    run(cks_iso().args(["iso", p(&old), "-o", p(&old_iso)]));
    let said = verify_sigs(&old_iso);
    assert!(
        said.contains("reports no binaries") && said.contains("k8s/kubeadm"),
        "{said}"
    );
    assert!(!said.contains("not reported"), "{said}");
}
