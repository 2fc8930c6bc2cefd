//! `sign-key` with `tlog: true` in the desired state: every ISO a sync builds is signed with the
//! key and the signature entered in the world's Rekor (named by the desired state's
//! `signing-config`), its entry in the published bundle. The sync's own signer gate (a policy of
//! that key) proves the entry before CloudStack hears of the ISO, `verify --iso-signature --key`
//! names the log's time, and `--offline` with `tlog` is refused before anything changes.

use std::fs;

use cks_iso_testworld::cloudstack::Options as CloudOptions;
use cks_iso_testworld::world::{Options, World};

use crate::support::cloud::Cloud;
use crate::support::sync::{sync, write_desired};
use crate::support::*;

const ADD: &str = "addKubernetesSupportedVersion";

/// A desired state for amd64 signing with a new key in Rekor, and a signer policy of that key;
/// the public key's path.
fn desire_key_in_rekor(world: &World, cloud: &Cloud) -> std::path::PathBuf {
    let (key, public) = crate::iso::signing::openssl_keys(cloud.dir.path(), "sync");
    let policy = cloud.dir.path().join("signers.yaml");
    fs::write(&policy, format!("keys: [{}]\n", public.display())).unwrap();
    let d = write_desired(world, cloud, "[amd64]");
    let yaml = fs::read_to_string(&d).unwrap();
    let text = format!(
        "{yaml}sign-key: {}\ntlog: true\nsigning-config: {}\niso-signer-policy: {}\n",
        key.display(),
        world.signing_config_path().display(),
        policy.display()
    );
    fs::write(&d, text).unwrap();
    public
}

#[test]
fn sync_enters_its_key_signatures_in_rekor_and_refuses_tlog_offline() {
    let world = World::start(Options::default());
    let cloud = Cloud::start(CloudOptions::default());
    let public = desire_key_in_rekor(&world, &cloud);
    // Offline: refused up front, nothing asked of CloudStack beyond lists, no entry.
    let posted = || {
        (world.rekor().requests().iter())
            .filter(|r| *r == "POST /api/v1/log/entries")
            .count()
    };
    let locks = cloud.dir.path().join("locks");
    fs::create_dir_all(&locks).unwrap();
    fails(
        &mut sync(&world, &cloud, &["--offline", "--locks", p(&locks)]),
        2,
        &[
            "tlog enters each signature in Rekor, and --offline forbids",
            "hint: leave tlog out",
        ],
    );
    assert_eq!(posted(), 0);
    assert!(cloud.api.commands().iter().all(|c| c.starts_with("list")));

    let out = ok(sync(&world, &cloud, &[]).output().unwrap());
    let said = combined(&out);
    assert!(cloud.api.commands().iter().any(|c| c == ADD), "{said}");
    assert_eq!(posted(), 1, "one ISO, one entry: {said}");
    assert!(
        said.contains("signed by the key sha256:") && said.contains(", at 20"),
        "{said}"
    );
    let iso = cloud.published.join("setup-v1.33.1-x86_64.iso");
    let bundle: serde_json::Value =
        serde_json::from_slice(&fs::read(format!("{}.sigstore.json", iso.display())).unwrap())
            .unwrap();
    let entries = bundle["verificationMaterial"]["tlogEntries"]
        .as_array()
        .unwrap();
    assert_eq!(entries.len(), 1, "{bundle:#}");
    assert_eq!(entries[0]["kindVersion"]["kind"], "hashedrekord");
    let (code, verified) = verify_iso(
        &iso,
        &[
            "--iso-signature",
            "--key",
            p(&public),
            "--signer-trusted-root",
        ]
        .into_iter()
        .chain([p(world.trusted_root_path())])
        .collect::<Vec<_>>(),
    );
    assert_eq!(code, Some(0), "{verified}");
    assert!(verified.contains(", at 20"), "{verified}");
}
