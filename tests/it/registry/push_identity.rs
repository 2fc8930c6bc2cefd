//! `push` with a `docker login` that stored an identity token (a refresh token): the OAuth2
//! exchange asks the token service for the scopes the push needs (`pull,push` on the target, and
//! `pull` on a mount's source) in one space-separated `scope` field, as Docker's client does. A
//! front that checks scopes as distribution's token authorization does refuses anything less.

use crate::support::push::{fixtures, lock_of, push, raw_digest, write_lock};
use crate::support::*;
use cks_iso_testworld::registry::{self, DockerRegistry, FrontAuth, TokenFront};

const REFRESH: &str = "refresh-for-push-3";

#[test]
fn an_identity_token_login_gets_push_and_mount_scopes_and_the_push_lands() {
    let world = registry::world();
    let images = fixtures(&world);
    let tmp = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let front = TokenFront::start(&target.host(), FrontAuth::RefreshToken(REFRESH.into()));
    front.require_scopes();
    let lock = write_lock(tmp.path(), &lock_of(&images));
    let authfile = tmp.path().join("auth.json");
    let text = format!(
        r#"{{"auths":{{"{}":{{"identitytoken":"{REFRESH}"}}}}}}"#,
        front.host()
    );
    std::fs::write(&authfile, text).unwrap();
    let mut args: Vec<String> = vec![
        "--locked".into(),
        p(&lock).into(),
        "--to".into(),
        format!("{}/mirror", front.host()),
        "--insecure-registry".into(),
        front.host(),
        "--to-authfile".into(),
        p(&authfile).into(),
    ];
    args.extend(world.mirror_args(&world.registry.url()));
    let out = push(&tmp.path().join("cache"), &args);
    assert!(out.status.success(), "push: {}", stderr(&out));
    assert!(
        !stderr(&out).contains(REFRESH),
        "the refresh token is never shown"
    );
    assert_oauth_scopes(&front.scopes(), &images[0].name);
    for f in &images {
        let tag = f.tag.as_deref().unwrap();
        let pushed = format!("{}/mirror/{}:{tag}", target.host(), f.name);
        assert_eq!(raw_digest(&pushed), f.top, "{pushed}");
    }
}

/// The scopes the front recorded from the POSTed forms: a push scope on `mirror/NAME`, and a
/// mount's form asking two repositories in one field.
fn assert_oauth_scopes(scopes: &[String], name: &str) {
    let want = format!("repository:mirror/{name}:pull,push");
    assert!(
        scopes.iter().any(|s| s.split(' ').any(|w| w == want)),
        "{want} asked in {scopes:?}"
    );
    let both = (scopes.iter())
        .find(|s| s.split(' ').count() == 2)
        .unwrap_or_else(|| panic!("a mount's form asks two repositories in {scopes:?}"));
    let words: Vec<&str> = both.split(' ').collect();
    assert!(
        words[0].ends_with(":pull,push")
            && words[1].starts_with("repository:mirror/")
            && words[1].ends_with(":pull"),
        "{both}"
    );
}
