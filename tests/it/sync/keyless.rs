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

use crate::support::cloud::Cloud;
use crate::support::sync::{sync, write_desired};
use crate::support::*;

const ADD: &str = "addKubernetesSupportedVersion";
const RELEASER: &str = "release@cks.example";

/// No output and no file under `dir` holds the token's signature part (what makes it usable).
fn token_nowhere(token: &str, dir: &Path, outputs: &[&str]) {
    let secret = token.rsplit('.').next().unwrap();
    for out in outputs {
        assert!(!out.contains(secret), "the token shows in:\n{out}");
    }
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            } else if path.is_file() {
                let bytes = fs::read(&path).unwrap();
                let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
                assert!(!found, "{} holds the identity token", path.display());
            }
        }
    }
}

#[test]
fn sync_signs_keyless_with_the_token_file_and_refuses_a_token_fulcio_refuses() {
    let world = World::start(Options::default());
    let cloud = Cloud::start(CloudOptions::default());
    let issuer = world.oidc().url().to_owned();
    // The token lives outside the directories the sync writes, as a token helper's file would.
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("token");
    let policy = cloud.dir.path().join("signers.yaml");
    fs::write(
        &policy,
        format!(
            "rules:\n  - match: \"setup-v1.33.*\"\n    certificate-identity: {RELEASER}\n    \
             certificate-oidc-issuer: {issuer}\n"
        ),
    )
    .unwrap();
    let d = write_desired(&world, &cloud, "[amd64]");
    let yaml = fs::read_to_string(&d).unwrap();
    let keyless = format!(
        "{yaml}sign: keyless\nidentity-token-file: {}\nsigning-config: {}\niso-signer-policy: {}\n",
        token_file.display(),
        world.signing_config_path().display(),
        policy.display()
    );
    fs::write(&d, keyless).unwrap();
    let added = || cloud.api.commands().iter().any(|c| c == ADD);
    let iso = cloud.published.join("setup-v1.33.1-x86_64.iso");
    let mut outputs = Vec::new();

    // A token the issuer did not sign: built, refused by Fulcio, nothing published or added.
    let forged = world.oidc().forge(&Claims::email(RELEASER));
    fs::write(&token_file, &forged).unwrap();
    let said = fails(
        &mut sync(&world, &cloud, &[]),
        1,
        &[
            "Fulcio at http://127.0.0.1:",
            "answered HTTP 400",
            "1 failed",
        ],
    );
    assert!(!added() && !iso.exists(), "{said}");
    outputs.push(said);

    // An expired one: refused before the build, naming the file and Fulcio.
    let expired = world.oidc().mint(&Claims {
        lifetime: -60,
        ..Claims::email(RELEASER)
    });
    fs::write(&token_file, &expired).unwrap();
    let said = fails(
        &mut sync(&world, &cloud, &[]),
        1,
        &[
            &format!("the identity token of {}", token_file.display()),
            "for Fulcio at http://127.0.0.1:",
            &format!("the token of {RELEASER} expired at 20"),
        ],
    );
    assert!(!added() && !iso.exists(), "{said}");
    outputs.push(said);

    // A fresh one: signed, the signer policy lets it through, registered (an empty
    // SIGSTORE_ID_TOKEN, as a CI may leave it, is no token: the file's is taken).
    let token = world.oidc().mint(&Claims::email(RELEASER));
    fs::write(&token_file, &token).unwrap();
    let out = sync(&world, &cloud, &[])
        .env("SIGSTORE_ID_TOKEN", "")
        .output();
    let out = ok(out.unwrap());
    let said = combined(&out);
    assert!(added(), "{said}");
    assert!(
        said.contains(&format!("signed by {RELEASER} via {issuer}")),
        "{said}"
    );
    outputs.push(said);
    let verified = ok(cks_iso()
        .arg("verify")
        .arg(&iso)
        .args(["--iso-signature", "--signer-trusted-root"])
        .arg(world.trusted_root_path())
        .args(["--certificate-identity", RELEASER])
        .args(["--certificate-oidc-issuer", &issuer])
        .output()
        .unwrap());
    let said = combined(&verified);
    assert!(
        said.contains(&format!("signed by {RELEASER} via {issuer}, at 20")),
        "{said}"
    );
    let outputs: Vec<&str> = outputs.iter().map(String::as_str).collect();
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
