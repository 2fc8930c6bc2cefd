//! Extra images (`build --image`) are held to the signature rules core images are held to, end to
//! end against the world's registry and its own Sigstore: one under registry.k8s.io is judged by
//! the built-in rule; one elsewhere by a policy file's `prefix:` rule written with cosign's key
//! names; a wrongly signed one fails the build naming it; an unsigned one and one no rule covers
//! are warnings that `--signatures enforce` turns into failures. The evidence lands in the ISO's
//! `signatures/` and the lock, and `verify --signatures` re-verifies it. Then `verify` on the ISO:
//! it passes, and names the image when one extra archive is removed from an unpacked copy and the
//! ISO is authored again.

use std::fs;
use std::path::Path;

use crate::signatures::common::build;
use crate::support::*;
use cks_iso_testworld::sigstore::SignOptions;
use cks_iso_testworld::world::{Options, World};

/// Published by the world, in no default build, left unsigned (a registry.k8s.io image).
const UNSIGNED: &str = "registry.k8s.io/headlamp/headlamp:v0.41.0";
/// Signed below by `release@headlamp.example`, whom the policy file names.
const SIGNED: &str = "ghcr.io/headlamp-k8s/headlamp:v0.40.1";
/// Signed below by someone the policy does not name.
const MISSIGNED: &str = "ghcr.io/headlamp-k8s/headlamp:latest";
/// An image no rule covers (amd64 only, as the world publishes it).
const UNCOVERED: &str = "docker.io/apache/cloudstack-kubernetes-provider:v1.1.0";
const SIGNER: &str = "release@headlamp.example";
const GOOGLE: &str = "https://accounts.google.com";

/// Signs `reference`'s index and every platform manifest in the world as `identity`.
fn sign(world: &World, reference: &str, identity: &str) {
    let image = world
        .images()
        .iter()
        .find(|i| i.reference == reference)
        .unwrap_or_else(|| panic!("{reference} is not an image of the world"));
    let mut digests = vec![image.digest.clone()];
    digests.extend(image.manifests.values().cloned());
    digests.dedup();
    let opts = SignOptions {
        identity: identity.into(),
        ..SignOptions::default()
    };
    for digest in digests {
        let layer = world.sigstore().sign(&image.repository, &digest, &opts);
        world.push_signature(&image.repository, &digest, &[layer]);
    }
}

/// A registry.k8s.io image of the world that no default build bundles (another autoscaler
/// release), which the world signs as registry.k8s.io signs.
fn other_k8s_image(world: &World) -> String {
    world
        .images()
        .iter()
        .find(|i| i.source == "autoscaler-other")
        .expect("the world publishes other autoscaler releases")
        .reference
        .clone()
}

/// `build` for amd64 with the policy file and `args`; its output.
fn build_with(world: &World, dir: &Path, out: &str, args: &[&str]) -> std::process::Output {
    let policy = dir.join("policy.yaml");
    build(
        world,
        dir,
        out,
        &[&["--arch", "amd64", "--signature-policy", p(&policy)], args].concat(),
    )
    .output()
    .unwrap()
}

fn no_iso(dir: &Path) {
    let isos: Vec<_> = fs::read_dir(dir)
        .map(|r| r.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(isos.is_empty(), "no ISO after a failed build: {isos:?}");
}

#[test]
fn extra_images_are_judged_as_core_images_and_verify_accounts_for_their_archives() {
    let world = World::start(Options {
        unsigned: vec![UNSIGNED.into()],
        ..Options::default()
    });
    sign(&world, SIGNED, SIGNER);
    sign(&world, MISSIGNED, "mallory@example.com");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A prefix rule, as a publisher's `cosign verify` line names the signer.
    fs::write(
        d.join("policy.yaml"),
        format!(
            "rules:\n  - prefix: ghcr.io/headlamp-k8s\n    certificate-identity: {SIGNER}\n    \
             certificate-oidc-issuer: {GOOGLE}\n"
        ),
    )
    .unwrap();
    let k8s = other_k8s_image(&world);
    let lock = d.join("run.lock");
    let report = build_warned_of_unsigned_and_uncovered(&world, d, &k8s, &lock);
    assert_verified_extras_locked_by_signature(&report, &d.join("tree-warn"), &lock, &k8s);
    assert_enforce_refuses_unsigned_and_uncovered(&world, d);

    // A wrong signer fails whatever the mode, naming the image and who signed it.
    let out = build_with(&world, d, "bad", &["--image", MISSIGNED]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for w in [MISSIGNED, "fails the identity check", "mallory@example.com"] {
        assert!(err.contains(w), "{w:?} missing:\n{err}");
    }
    no_iso(&d.join("bad"));

    // enforce with the two that verify: the ISO re-verifies offline, and verify accounts for it.
    let enforce = [
        "--signatures",
        "enforce",
        "--image",
        SIGNED,
        "--image",
        &k8s,
    ];
    ok(build_with(&world, d, "good", &enforce));
    let iso = d.join(format!("good/setup-v{}-x86_64.iso", world.kubernetes()));
    let policy = d.join("policy.yaml");
    run(cks_iso()
        .args(["verify", "--signatures", "--trusted-root"])
        .arg(world.trusted_root_path())
        .args(["--signature-policy", p(&policy), p(&iso)]));
    run(cks_iso().args(["verify", p(&iso)]));
    removed_archive_is_named(&iso, d);
}

/// Under verify (the default), with every extra and a lock: the unsigned and the uncovered extra
/// are loud warnings, recorded; the signed one verified by the policy's signer, the other
/// registry.k8s.io one by the built-in rule. Returns the ISO's signature report.
fn build_warned_of_unsigned_and_uncovered(
    world: &World,
    d: &Path,
    k8s: &str,
    lock: &Path,
) -> serde_json::Value {
    let mut args = Vec::new();
    for reference in [SIGNED, k8s, UNSIGNED, UNCOVERED] {
        args.extend(["--image", reference]);
    }
    args.extend(["--lock-file", p(lock)]);
    let out = ok(build_with(world, d, "warn", &args));
    let err = stderr(&out);
    assert!(err.contains(&format!("{UNSIGNED}: UNSIGNED")), "{err}");
    assert!(err.contains(&format!("{UNCOVERED}: NOT COVERED")), "{err}");
    let iso = d.join(format!("warn/setup-v{}-x86_64.iso", world.kubernetes()));
    let report = signature_report(&iso, &d.join("tree-warn"));
    let signed = image_entry(&report, SIGNED);
    assert_eq!(signed["verdict"], "verified", "{signed:#}");
    assert_eq!(signed["identity"], SIGNER);
    assert_eq!(signed["issuer"], GOOGLE);
    let builtin = image_entry(&report, k8s);
    assert_eq!(builtin["verdict"], "verified", "{builtin:#}");
    assert_eq!(
        builtin["identity"],
        "krel-trust@k8s-releng-prod.iam.gserviceaccount.com"
    );
    assert_eq!(image_entry(&report, UNSIGNED)["verdict"], "unsigned");
    assert_eq!(image_entry(&report, UNCOVERED)["verdict"], "not-covered");
    report
}

/// The evidence: each verified extra's signature manifest in the ISO's `signatures/` (extracted
/// in `tree`), named in the lock; the unsigned and uncovered extras locked without one.
fn assert_verified_extras_locked_by_signature(
    report: &serde_json::Value,
    tree: &Path,
    lock: &Path,
    k8s: &str,
) {
    let locked: serde_json::Value = serde_json::from_slice(&fs::read(lock).unwrap()).unwrap();
    let images = locked["arches"]["amd64"]["images"].as_array().unwrap();
    for reference in [SIGNED, k8s] {
        let entry = image_entry(report, reference);
        let path = entry["signature_manifest"].as_str().unwrap();
        assert!(tree.join(path).is_file(), "{path}");
        let in_lock = images
            .iter()
            .find(|i| i["reference"] == reference)
            .unwrap_or_else(|| panic!("{reference} not locked"));
        let hex = path.trim_start_matches("signatures/images/");
        assert_eq!(
            in_lock["signature"]["manifest"],
            format!("sha256:{}", hex.trim_end_matches(".json")),
            "{in_lock:#}"
        );
    }
    for reference in [UNSIGNED, UNCOVERED] {
        let entry = images.iter().find(|i| i["reference"] == reference).unwrap();
        assert!(entry.get("signature").is_none(), "{entry:#}");
    }
}

/// enforce: the unsigned one and the uncovered one each fail the build, by name.
fn assert_enforce_refuses_unsigned_and_uncovered(world: &World, d: &Path) {
    for (reference, wanted) in [
        (UNSIGNED, vec!["no signature"]),
        (
            UNCOVERED,
            vec![
                "an extra image no signature rule covers",
                "prefix: docker.io/apache/cloudstack-kubernetes-provider",
            ],
        ),
    ] {
        let args = ["--signatures", "enforce", "--image", reference];
        let out = build_with(world, d, "enforced", &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(reference), "{reference} not named:\n{err}");
        for w in wanted {
            assert!(err.contains(w), "{w:?} missing:\n{err}");
        }
        no_iso(&d.join("enforced"));
    }
}

/// An unpacked copy of `iso` without the signed extra's archive, authored again, fails `verify`
/// naming the image.
fn removed_archive_is_named(iso: &Path, dir: &Path) {
    let tree = dir.join("unpacked");
    fs::create_dir_all(&tree).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(&tree)]);
    let archive = tree.join("docker/headlamp:v0.40.1.tar");
    assert!(archive.is_file(), "the extra's archive is in docker/");
    fs::remove_file(&archive).unwrap();
    let again = dir.join("again-x86_64.iso");
    build_iso(&tree, &again);
    let out = cks_iso().args(["verify", p(&again)]).output().unwrap();
    let all = combined(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains(&format!(
            "versions.txt lists {SIGNED} here but the archive is missing"
        )),
        "{all}"
    );
    assert!(
        all.contains(&format!(
            "the lock's extra image {SIGNED} has no archive in docker/"
        )),
        "{all}"
    );
}
