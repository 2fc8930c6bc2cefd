//! Sigstore signatures of registry.k8s.io images, end to end against the local world, whose own
//! small Sigstore (testworld `sigstore`: CAs, CT log, Rekor SETs, `trusted_root.json`) signs them
//! the way Kubernetes' promoter does. Happy path for both arches (evidence in `signatures/`,
//! deterministic, `verify` still passes), then one world for the negative matrix: each spoiled
//! signature fails the build with its own error, before any ISO is written.

mod support;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use cks_iso_testworld::sigstore::{IssuerForm, SignOptions};
use cks_iso_testworld::world::{Options, World};
use sha2::Digest as _;
use support::*;

const EPOCH: &str = "1700000000";
const PAUSE: &str = "registry.k8s.io/pause:3.10";

fn build(world: &World, dir: &Path, out: &str, args: &[&str]) -> Command {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = cks_iso();
    cmd.env("CKS_ISO_CONFIG", world.config_path())
        .env("TMPDIR", &tmp)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .env_remove("CKS_ISO_SIGNATURES")
        .arg("build")
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

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(out: Output) -> Output {
    assert!(out.status.success(), "build failed:\n{}", stderr(&out));
    out
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
    let first = ok(build(
        &world,
        dir.path(),
        "out",
        &["--arch", "amd64", "--arch", "arm64"],
    )
    .output()
    .unwrap());
    assert!(
        stderr(&first).contains("image signatures verified"),
        "{}",
        stderr(&first)
    );
    for (arch, name) in [("amd64", "x86_64"), ("arm64", "aarch64")] {
        let iso = dir
            .path()
            .join(format!("out/setup-v{}-{name}.iso", world.kubernetes()));
        let tree = dir.path().join(format!("tree-{arch}"));
        fs::create_dir_all(&tree).unwrap();
        tool("bsdtar", ["-x", "-f", p(&iso), "-C", p(&tree)]);
        let report: serde_json::Value =
            serde_json::from_slice(&fs::read(tree.join("signatures/report.json")).unwrap())
                .unwrap();
        assert_eq!(report["mode"], "verify");
        let root = fs::read(world.trusted_root_path()).unwrap();
        assert_eq!(report["trusted_root_sha256"], sha256_hex(&root));
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
}
