//! Sigstore signatures of registry.k8s.io images and dl.k8s.io's binaries, end to end against
//! the local world, whose own small Sigstore (testworld `sigstore`: CAs, CT log, Rekor SETs,
//! `trusted_root.json`) signs them the way Kubernetes' promoter and krel do: the happy path for
//! both arches. Evidence in `signatures/` (byte-exact signature manifests and payloads, each
//! binary's bundle and original `.sig`/`.cert`), named in both SBOMs and versions.txt, in the
//! lock, deterministic, re-verified with every server stopped (and by two independent oracles:
//! Python's `cryptography` and Sigstore's Python client, which `make deps` installs), refused
//! under Sigstore's public root, and ISO tampering caught.
//!
//! The refusals are in `image_refusals.rs` and `binary_refusals.rs`, the lock's part in
//! `image_locks.rs`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::common::{
    GOOGLE, STAGING, TRUST, assert_bundle_oracle_agrees, build, isos, oracle, read_json, sha256_hex,
};
use crate::support::{cks_iso, ok, p, run, signature_report, stderr};
use cks_iso_testworld::world::{Options, World};

/// The two arches, as Kubernetes and as the ISO's name say them.
const ARCHES: [(&str, &str); 2] = [("amd64", "x86_64"), ("arm64", "aarch64")];

#[test]
fn both_arches_verify_and_carry_the_evidence() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lock = d.join("run.lock");
    build_both_arches(&world, d, &lock);
    for (arch, name) in ARCHES {
        let iso = d.join(format!("out/setup-v{}-{name}.iso", world.kubernetes()));
        let tree = d.join(format!("tree-{arch}"));
        let report = signature_report(&iso, &tree);
        let covered = assert_images_evidence(&world, &report, &tree);
        assert_sboms_and_versions_name_the_signer(&tree, covered);
        assert_node_scripts_see_nothing_new(&tree);
        run(cks_iso().args(["verify", p(&iso)]));
        binaries_evidence(&world, &tree);
    }
    assert_binaries_signatures_locked(&lock);
    assert_a_second_build_is_identical(&world, d);

    // Re-verified offline, every server stopped, against the world's root given by hand.
    let root = d.join("root.json");
    fs::copy(world.trusted_root_path(), &root).unwrap();
    let version = world.kubernetes().to_owned();
    drop(world);
    let iso = d.join(format!("out/setup-v{version}-x86_64.iso"));
    for (_, name) in ARCHES {
        let out = verify_signatures(
            &d.join(format!("out/setup-v{version}-{name}.iso")),
            Some(&root),
        );
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
    }
    assert_oracles_agree(d, &root);
    assert_public_root_refuses_with_a_hint(&iso);
    let tamper = Tamper {
        dir: d,
        tree: d.join("tree-amd64"),
        root: &root,
    };
    assert_report_tampering_caught(&tamper);
    assert_binary_tampering_caught(&tamper);
}

/// The first build: both arches, with a lock; its log says every signature verified.
fn build_both_arches(world: &World, dir: &Path, lock: &Path) {
    let args = ["--arch", "amd64", "--arch", "arm64", "--lock-file", p(lock)];
    let first = ok(build(world, dir, "out", &args).output().unwrap());
    assert!(
        stderr(&first).contains("image signatures verified")
            && stderr(&first).contains("3 of 3 covered files' signatures verified"),
        "{}",
        stderr(&first)
    );
}

/// The report of one ISO: verify mode, the world's root shipped byte for byte, every
/// registry.k8s.io image verified by krel-trust on its platform manifest with its signature
/// manifest and payloads byte-exact, every other image not covered. Returns the covered count.
fn assert_images_evidence(world: &World, report: &serde_json::Value, tree: &Path) -> usize {
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
        assert_eq!(image["identity"], TRUST);
        assert_eq!(image["issuer"], GOOGLE);
        // The platform manifest's own signature is the one taken.
        assert_eq!(image["signed_digest"], image["manifest"], "{image:#}");
        assert_signature_manifest_byte_exact(tree, image);
    }
    for image in images.iter().filter(|i| !k8s.contains(i)) {
        assert_eq!(image["verdict"], "not-covered", "{image:#}");
    }
    k8s.len()
}

/// An image's signature manifest is stored under its own digest, and so is each payload it names.
fn assert_signature_manifest_byte_exact(tree: &Path, image: &serde_json::Value) {
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
        let payload = fs::read(tree.join("signatures/images/blobs/sha256").join(hex)).unwrap();
        assert_eq!(sha256_hex(&payload), hex);
    }
}

/// The CycloneDX SBOM names each covered image's signer, so does the SPDX comment, and
/// versions.txt counts the `covered` images.
fn assert_sboms_and_versions_name_the_signer(tree: &Path, covered: usize) {
    let bom = read_json(&tree.join("sbom.cdx.json"));
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
            .starts_with(&format!("verified: {TRUST} via {GOOGLE}, Rekor log index ")),
        "{signature}"
    );
    let spdx = fs::read_to_string(tree.join("sbom.spdx.json")).unwrap();
    assert!(
        spdx.contains("; signature verified: krel-trust@"),
        "the SPDX comment names the signer"
    );
    let versions = fs::read_to_string(tree.join("versions.txt")).unwrap();
    let line =
        format!("# signatures verify: {covered} of {covered} covered images verified, 0 unsigned");
    assert!(versions.contains(&line), "{versions}");
}

/// Node scripts never see the evidence: nothing new in docker/, no *.yaml.
fn assert_node_scripts_see_nothing_new(tree: &Path) {
    for entry in fs::read_dir(tree.join("docker")).unwrap() {
        assert!(
            entry
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tar")
        );
    }
}

/// The binaries' evidence in an extracted ISO: verified by krel-staging, a bundle and the
/// original `.sig`/`.cert` (as the world serves them) each, named in both SBOMs and versions.txt.
fn binaries_evidence(world: &World, tree: &Path) {
    let report = read_json(&tree.join("signatures/report.json"));
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
        assert_binary_verified_with_its_material(world, tree, b);
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

/// One binary's report entry: verified by krel-staging, its hash, its dl.k8s.io URL, a Rekor v1
/// bundle with a checkpoint, and the original `.sig` and `.cert` byte for byte as served.
fn assert_binary_verified_with_its_material(world: &World, tree: &Path, b: &serde_json::Value) {
    assert_eq!(b["verdict"], "verified", "{b:#}");
    assert_eq!(b["identity"], STAGING);
    assert_eq!(b["issuer"], GOOGLE);
    let file = fs::read(tree.join(b["path"].as_str().unwrap())).unwrap();
    assert_eq!(b["sha256"], sha256_hex(&file).as_str());
    let path = b["path"].as_str().unwrap();
    let url = b["url"].as_str().unwrap();
    assert!(url.starts_with("https://dl.k8s.io/release/"), "{url}");
    let bundle = read_json(&tree.join(b["bundle"].as_str().unwrap()));
    assert_eq!(
        bundle["mediaType"],
        "application/vnd.dev.sigstore.bundle.v0.3+json"
    );
    let entry = &bundle["verificationMaterial"]["tlogEntries"][0];
    assert_eq!(entry["kindVersion"]["kind"], "hashedrekord");
    assert!(entry["inclusionProof"]["checkpoint"]["envelope"].is_string());
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

/// The lock records the binaries' signature material: kubeadm's sig, cert and Rekor entry.
fn assert_binaries_signatures_locked(lock: &Path) {
    let locked = read_json(lock);
    let files = locked["arches"]["amd64"]["files"].as_array().unwrap();
    let kubeadm = files.iter().find(|f| f["path"] == "k8s/kubeadm").unwrap();
    for key in ["sig", "cert", "rekor"] {
        let hex = kubeadm["signature"][key].as_str().unwrap_or_default();
        assert_eq!(hex.len(), 64, "{kubeadm:#}");
    }
}

/// Deterministic: a second build makes the same bytes.
fn assert_a_second_build_is_identical(world: &World, dir: &Path) {
    let args = ["--arch", "amd64", "--arch", "arm64"];
    ok(build(world, dir, "again", &args).output().unwrap());
    for name in isos(&dir.join("out")) {
        let a = fs::read(dir.join("out").join(&name)).unwrap();
        let b = fs::read(dir.join("again").join(&name)).unwrap();
        assert!(a == b, "{name} differs between two builds");
    }
}

/// `verify --signatures` of `iso`, against `root` when given (else Sigstore's public root).
fn verify_signatures(iso: &Path, root: Option<&Path>) -> Output {
    let mut cmd = cks_iso();
    cmd.args(["verify", "--signatures"]);
    if let Some(root) = root {
        cmd.args(["--trusted-root", p(root)]);
    }
    cmd.arg(p(iso)).output().unwrap()
}

/// An independent oracle (Python's `cryptography`) agrees on both ISOs' evidence, and
/// Sigstore's own client verifies the binaries' bundles, offline.
fn assert_oracles_agree(dir: &Path, root: &Path) {
    for (arch, _) in ARCHES {
        let tree = dir.join(format!("tree-{arch}"));
        let out = oracle(&tree, root);
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "oracle: {}", stderr(&out));
        assert!(
            said.starts_with("ok: ") && !said.starts_with("ok: 0 "),
            "{said}"
        );
        assert_bundle_oracle_agrees(&tree, root);
    }
}

/// Sigstore's public root (the default) did not sign the world's images; the closing hint names
/// the likely cause: another root than the one the ISO was built with.
fn assert_public_root_refuses_with_a_hint(iso: &Path) {
    let out = verify_signatures(iso, None);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !out.status.success() && text.contains("Rekor signed entry timestamp"),
        "{text}"
    );
    let err = stderr(&out);
    let hint = err
        .lines()
        .find(|l| l.starts_with("hint: "))
        .unwrap_or_default();
    assert!(
        hint.contains("pass --trusted-root FILE") && !hint.contains("The ISO contract"),
        "{err}"
    );
}

/// Where tampered ISOs are made: re-authored from the extracted `tree` with one thing changed.
struct Tamper<'a> {
    dir: &'a Path,
    tree: PathBuf,
    root: &'a Path,
}

impl Tamper<'_> {
    /// A copy of the tree as `edit` leaves it, made into an ISO that `verify --signatures`
    /// refuses; returns what it said.
    fn refused(&self, name: &str, edit: &dyn Fn(&Path)) -> String {
        let copy = self.dir.join(format!("tamper-{name}"));
        run(Command::new("cp").args(["-a", p(&self.tree), p(&copy)]));
        edit(&copy);
        let bad = self.dir.join(format!("{name}.iso"));
        run(cks_iso().args(["iso", p(&copy), "-o", p(&bad)]));
        let out = verify_signatures(&bad, Some(self.root));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            !out.status.success(),
            "{name}: verify --signatures passed:\n{text}"
        );
        text
    }
}

/// A file of the tree with one bit of byte `at` flipped.
fn flip(rel: &str, at: usize) -> impl Fn(&Path) + '_ {
    move |t: &Path| {
        let mut bytes = fs::read(t.join(rel)).unwrap();
        bytes[at] ^= 1;
        fs::write(t.join(rel), bytes).unwrap();
    }
}

/// `report` written into a tree's `signatures/report.json`.
fn write_report(tree: &Path, report: &serde_json::Value) {
    fs::write(
        tree.join("signatures/report.json"),
        serde_json::to_vec(report).unwrap(),
    )
    .unwrap();
}

/// The images' evidence tampered: a flipped byte in a payload (which the oracle catches too),
/// two images' signatures swapped in the report, a verdict rewritten to hide an image.
fn assert_report_tampering_caught(tamper: &Tamper) {
    let report = read_json(&tamper.tree.join("signatures/report.json"));
    let verified: Vec<&serde_json::Value> = report["images"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["verdict"] == "verified")
        .collect();
    let manifest = read_json(
        &tamper
            .tree
            .join(verified[0]["signature_manifest"].as_str().unwrap()),
    );
    let payload = format!(
        "signatures/images/blobs/sha256/{}",
        manifest["layers"][0]["digest"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:")
    );
    let text = tamper.refused("payload", &flip(&payload, 10));
    assert!(text.contains("layer integrity"), "{text}");
    let out = oracle(&tamper.dir.join("tamper-payload"), tamper.root);
    assert!(!out.status.success() && stderr(&out).contains("payload digest"));
    let text = tamper.refused("swapped", &|t| {
        let mut r = report.clone();
        let images = r["images"].as_array_mut().unwrap();
        let at = |i: usize| {
            images
                .iter()
                .position(|image| image["reference"] == verified[i]["reference"])
                .unwrap()
        };
        let (a, b) = (at(0), at(1));
        for key in ["signed_digest", "signature_manifest"] {
            let tmp = images[a][key].clone();
            images[a][key] = images[b][key].clone();
            images[b][key] = tmp;
        }
        write_report(t, &r);
    });
    assert!(text.contains("which the ISO does not ship"), "{text}");
    let text = tamper.refused("hidden", &|t| {
        let mut r = report.clone();
        for image in r["images"].as_array_mut().unwrap() {
            if image["reference"] == verified[0]["reference"] {
                image["verdict"] = "not-covered".into();
            }
        }
        write_report(t, &r);
    });
    assert!(text.contains("recorded as not-covered"), "{text}");
}

/// The binaries' evidence tampered: a flipped byte in a binary, another letter in a bundle's SET.
fn assert_binary_tampering_caught(tamper: &Tamper) {
    let text = tamper.refused("binary", &flip("k8s/kubeadm", 5000));
    assert!(text.contains("k8s/kubeadm"), "{text}");
    let bundle = "signatures/binaries/k8s/kubectl.sigstore.json";
    let json = fs::read_to_string(tamper.tree.join(bundle)).unwrap();
    let at = json.find("\"signedEntryTimestamp\": \"").unwrap() + 30;
    // Another base64 letter, not a flipped bit: a flipped bit can leave the alphabet, and the SET
    // is then refused as malformed before Rekor's signature over it is checked.
    let text = tamper.refused("bundle", &|t: &Path| {
        let mut bytes = fs::read(t.join(bundle)).unwrap();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        fs::write(t.join(bundle), bytes).unwrap();
    });
    assert!(text.contains("kubectl") && text.contains("Rekor"), "{text}");
}
