//! Sigstore signatures of dl.k8s.io's Kubernetes binaries, end to end against the local world:
//! its Sigstore signs each 1.26+ binary (`.sig`/`.cert` served beside it, identity krel-staging)
//! and logs it in its Rekor stand-in (a real Merkle tree, signed checkpoints). Happy path for
//! both arches (bundles in `signatures/binaries/`, deterministic, in the lock, re-verified with
//! every server stopped, ISO tampering caught), then one world for the negative matrix: each
//! spoiled signature fails the build with its own error, before any ISO is written.

mod support;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use cks_iso_testworld::rekor::Tamper;
use cks_iso_testworld::sigstore::SignOptions;
use cks_iso_testworld::world::{Options, World, binary_signer};
use sha2::Digest as _;
use support::*;

const EPOCH: &str = "1700000000";
const STAGING: &str = "krel-staging@k8s-releng-prod.iam.gserviceaccount.com";

fn build(world: &World, dir: &Path, out: &str, args: &[&str]) -> Command {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = cks_iso();
    cmd.env("CKS_ISO_CONFIG", world.config_path())
        .env("TMPDIR", &tmp)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .env_remove("CKS_ISO_SIGNATURES")
        .env_remove("CKS_ISO_REKOR_URL")
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

fn isos(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|r| {
            r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".iso"))
                .collect()
        })
        .unwrap_or_default()
}

fn kubeadm_path(world: &World, arch: &str) -> String {
    format!(
        "dl.k8s.io/release/v{}/bin/linux/{arch}/kubeadm",
        world.kubernetes()
    )
}

#[test]
fn both_arches_verify_binaries_and_carry_their_bundles() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lock = d.join("run.lock");
    let both = ["--arch", "amd64", "--arch", "arm64"];
    let args = [&both[..], &["--lock-file", p(&lock)]].concat();
    let out = ok(build(&world, d, "out", &args).output().unwrap());
    assert!(
        stderr(&out).contains("3 of 3 covered files' signatures verified"),
        "{}",
        stderr(&out)
    );
    for (arch, name) in [("amd64", "x86_64"), ("arm64", "aarch64")] {
        let iso = d.join(format!("out/setup-v{}-{name}.iso", world.kubernetes()));
        let tree = d.join(format!("tree-{arch}"));
        fs::create_dir_all(&tree).unwrap();
        tool("bsdtar", ["-x", "-f", p(&iso), "-C", p(&tree)]);
        let report: serde_json::Value =
            serde_json::from_slice(&fs::read(tree.join("signatures/report.json")).unwrap())
                .unwrap();
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
            let bundle: serde_json::Value = serde_json::from_slice(
                &fs::read(tree.join(b["bundle"].as_str().unwrap())).unwrap(),
            )
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
                let kept =
                    fs::read(tree.join(format!("signatures/binaries/{path}.{ext}"))).unwrap();
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
    // The lock records the material's digests.
    let locked: serde_json::Value = serde_json::from_slice(&fs::read(&lock).unwrap()).unwrap();
    let files = locked["arches"]["amd64"]["files"].as_array().unwrap();
    let kubeadm = files.iter().find(|f| f["path"] == "k8s/kubeadm").unwrap();
    for key in ["sig", "cert", "rekor"] {
        assert_eq!(
            kubeadm["signature"][key].as_str().unwrap().len(),
            64,
            "{kubeadm:#}"
        );
    }
    // Deterministic: a second build makes the same bytes.
    ok(build(&world, d, "again", &both).output().unwrap());
    for name in isos(&d.join("out")) {
        let a = fs::read(d.join("out").join(&name)).unwrap();
        let b = fs::read(d.join("again").join(&name)).unwrap();
        assert!(a == b, "{name} differs between two builds");
    }

    // Re-verified offline, every server stopped, against the world's root given by hand.
    let root = d.join("root.json");
    fs::copy(world.trusted_root_path(), &root).unwrap();
    let version = world.kubernetes().to_owned();
    drop(world);
    let verify = |iso: &Path| {
        cks_iso()
            .args(["verify", "--signatures", "--trusted-root", p(&root)])
            .arg(p(iso))
            .output()
            .unwrap()
    };
    for name in ["x86_64", "aarch64"] {
        let out = verify(&d.join(format!("out/setup-v{version}-{name}.iso")));
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
    }
    // The independent oracle, when the virtualenv has Sigstore's Python client.
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-sbom/bin/python");
    let has_sigstore = Command::new(&python)
        .args(["-c", "import sigstore.verify"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_sigstore {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-binary-bundles.py");
        let out = Command::new(&python)
            .arg(&script)
            .args([
                p(&d.join("tree-amd64")),
                p(&root),
                STAGING,
                "https://accounts.google.com",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "oracle: {}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
    } else {
        eprintln!("the sigstore Python package is not in .venv-sbom: its oracle is skipped");
    }

    // Tampered ISOs: re-authored from the extracted tree with one thing changed.
    let tree = d.join("tree-amd64");
    let retamper = |name: &str, rel: &str, at: usize| {
        let copy = d.join(format!("tamper-{name}"));
        run(Command::new("cp").args(["-a", p(&tree), p(&copy)]));
        let mut bytes = fs::read(copy.join(rel)).unwrap();
        bytes[at] ^= 1;
        fs::write(copy.join(rel), bytes).unwrap();
        let bad = d.join(format!("{name}.iso"));
        run(cks_iso().args(["iso", p(&copy), "-o", p(&bad)]));
        let out = verify(&bad);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            !out.status.success(),
            "{name}: verify --signatures passed:\n{text}"
        );
        text
    };
    let text = retamper("binary", "k8s/kubeadm", 5000);
    assert!(text.contains("k8s/kubeadm"), "{text}");
    // A flipped bit inside the bundle's base64 signature text still parses, and fails.
    let bundle = "signatures/binaries/k8s/kubectl.sigstore.json";
    let body = fs::read_to_string(tree.join(bundle)).unwrap();
    let at = body.find("\"signedEntryTimestamp\": \"").unwrap() + 30;
    let text = retamper("bundle", bundle, at);
    assert!(text.contains("kubectl"), "{text}");
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
fn bad_or_missing_binary_signatures_fail_the_build_before_writing() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let amd64 = ["--arch", "amd64"];
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
