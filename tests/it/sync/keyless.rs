//! `sign: keyless` in the desired state: every ISO a sync builds is signed keyless with the OIDC
//! token of the run, read from `identity-token-file:` (the file a token helper keeps fresh),
//! through the test world's issuer, Fulcio and Rekor. A token Fulcio refuses (one the issuer did
//! not sign) and an expired one fail that version naming Fulcio, with nothing published or
//! registered (the CloudStack stand-in's request log shows no add); a fresh one signs, the
//! `iso-signer-policy:` naming that identity lets the ISO through to CloudStack, and `verify
//! --iso-signature` with the identity and issuer accepts the published bundle. The token shows
//! in no output and no file the sync wrote.

use std::fs;
use std::path::Path;

use cks_iso_testworld::cloudstack::Options as CloudOptions;
use cks_iso_testworld::oidc::Claims;
use cks_iso_testworld::world::{Options, World};

use crate::iso::keyless::token_nowhere;
use crate::support::cloud::Cloud;
use crate::support::sync::{sync, write_desired};
use crate::support::*;

const ADD: &str = "addKubernetesSupportedVersion";
const RELEASER: &str = "release@cks.example";

/// A desired state signing keyless with the token in `token_file`, through the world's signing
/// config, and a signer policy letting only [`RELEASER`] of the world's issuer through.
fn desire_keyless_signed_by_the_releaser(world: &World, cloud: &Cloud, token_file: &Path) {
    let issuer = world.oidc().url();
    let policy = cloud.dir.path().join("signers.yaml");
    fs::write(
        &policy,
        format!(
            "rules:\n  - match: \"setup-v1.33.*\"\n    certificate-identity: {RELEASER}\n    \
             certificate-oidc-issuer: {issuer}\n"
        ),
    )
    .unwrap();
    let d = write_desired(world, cloud, "[amd64]");
    let yaml = fs::read_to_string(&d).unwrap();
    let keyless = format!(
        "{yaml}sign: keyless\nidentity-token-file: {}\nsigning-config: {}\niso-signer-policy: {}\n",
        token_file.display(),
        world.signing_config_path().display(),
        policy.display()
    );
    fs::write(&d, keyless).unwrap();
}

/// Nothing was registered and no ISO published: `said` is the failed sync's output.
fn assert_nothing_published_or_added(cloud: &Cloud, iso: &Path, said: &str) {
    let added = cloud.api.commands().iter().any(|c| c == ADD);
    assert!(!added && !iso.exists(), "{said}");
}

/// A token the issuer did not sign: built, refused by Fulcio, nothing published or added. The
/// token and what the sync said.
fn forged_token_refused_by_fulcio(
    world: &World,
    cloud: &Cloud,
    token_file: &Path,
    iso: &Path,
) -> (String, String) {
    let forged = world.oidc().forge(&Claims::email(RELEASER));
    fs::write(token_file, &forged).unwrap();
    let said = fails(
        &mut sync(world, cloud, &[]),
        1,
        &[
            "Fulcio at http://127.0.0.1:",
            "answered HTTP 400",
            "1 failed",
        ],
    );
    assert_nothing_published_or_added(cloud, iso, &said);
    (forged, said)
}

/// An expired token: refused before the build, naming the file and Fulcio. The token and what
/// the sync said.
fn expired_token_refused(
    world: &World,
    cloud: &Cloud,
    token_file: &Path,
    iso: &Path,
) -> (String, String) {
    let expired = world.oidc().mint(&Claims {
        lifetime: -60,
        ..Claims::email(RELEASER)
    });
    fs::write(token_file, &expired).unwrap();
    let said = fails(
        &mut sync(world, cloud, &[]),
        1,
        &[
            &format!("the identity token of {}", token_file.display()),
            "for Fulcio at http://127.0.0.1:",
            &format!("the token of {RELEASER} expired at 20"),
        ],
    );
    assert_nothing_published_or_added(cloud, iso, &said);
    (expired, said)
}

/// A fresh token: signed, the signer policy lets it through, registered (an empty
/// SIGSTORE_ID_TOKEN, as a CI may leave it, is no token: the file's is taken). The token and what
/// the sync said.
fn fresh_token_signs_and_registers(
    world: &World,
    cloud: &Cloud,
    token_file: &Path,
) -> (String, String) {
    let token = world.oidc().mint(&Claims::email(RELEASER));
    fs::write(token_file, &token).unwrap();
    let out = sync(world, cloud, &[])
        .env("SIGSTORE_ID_TOKEN", "")
        .output();
    let out = ok(out.unwrap());
    let said = combined(&out);
    assert!(cloud.api.commands().iter().any(|c| c == ADD), "{said}");
    assert!(
        said.contains(&format!("signed by {RELEASER} via {}", world.oidc().url())),
        "{said}"
    );
    (token, said)
}

/// `verify --iso-signature` with the releaser's identity and issuer accepts the published ISO.
fn assert_verify_accepts_the_releasers_signature(world: &World, iso: &Path) {
    let issuer = world.oidc().url();
    let verified = ok(cks_iso()
        .arg("verify")
        .arg(iso)
        .args(["--iso-signature", "--signer-trusted-root"])
        .arg(world.trusted_root_path())
        .args(["--certificate-identity", RELEASER])
        .args(["--certificate-oidc-issuer", issuer])
        .output()
        .unwrap());
    let said = combined(&verified);
    assert!(
        said.contains(&format!("signed by {RELEASER} via {issuer}, at 20")),
        "{said}"
    );
}

#[test]
fn sync_signs_keyless_with_the_token_file_and_refuses_a_token_fulcio_refuses() {
    let world = World::start(Options::default());
    let cloud = Cloud::start(CloudOptions::default());
    // The token lives outside the directories the sync writes, as a token helper's file would.
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("token");
    desire_keyless_signed_by_the_releaser(&world, &cloud, &token_file);
    let iso = cloud.published.join("setup-v1.33.1-x86_64.iso");
    let (forged, refused) = forged_token_refused_by_fulcio(&world, &cloud, &token_file, &iso);
    let (expired, too_late) = expired_token_refused(&world, &cloud, &token_file, &iso);
    let (token, signed) = fresh_token_signs_and_registers(&world, &cloud, &token_file);
    assert_verify_accepts_the_releasers_signature(&world, &iso);
    let outputs = [refused.as_str(), too_late.as_str(), signed.as_str()];
    for t in [&forged, &expired, &token] {
        token_nowhere(t, cloud.dir.path(), &outputs);
    }
}

#[test]
fn sign_keyless_without_a_token_or_beside_sign_key_is_refused_before_anything_changes() {
    let world = World::start(Options::default());
    let cloud = Cloud::start(CloudOptions::default());
    let d = write_desired(&world, &cloud, "[amd64]");
    let yaml = fs::read_to_string(&d).unwrap();
    fs::write(&d, format!("{yaml}sign: keyless\n")).unwrap();
    let mut cmd = sync(&world, &cloud, &[]);
    cmd.env_remove("SIGSTORE_ID_TOKEN");
    fails(
        &mut cmd,
        2,
        &[
            "sign: keyless, and no identity token",
            "hint: set SIGSTORE_ID_TOKEN",
        ],
    );
    fs::write(&d, format!("{yaml}sign: keyless\nsign-key: k.pem\n")).unwrap();
    fails(
        &mut sync(&world, &cloud, &[]),
        2,
        &["sign: expected sign: keyless or sign-key, one of them, found \"both\""],
    );
    assert!(cloud.api.commands().iter().all(|c| c.starts_with("list")));
}
