//! Where credentials may go: an identity token (an OAuth2 refresh token) is
//! exchanged only with the token service a registry's `Bearer` challenge names — never sent as a
//! Basic password, never carried along a token service's redirect to another host — and a
//! credential helper that hangs or floods is stopped and named, the pull going on without it.
//! Each registry and token service is one of the world's fronts before a real `docker-registry`,
//! recording what it received.

use std::path::Path;

use base64::Engine as _;
use cks_iso_testworld::basic_front::BasicFront;
use cks_iso_testworld::registry::{FrontAuth, RegistryWorld, TokenFront, world};
use cks_iso_testworld::server::{HttpServer, Outgoing};

use crate::support::hostile::{output_within, output_within_rss};
use crate::support::registry::{pull_cmd, stderr, succeeded};

/// The refresh token every test's auth file holds.
const REFRESH: &str = "refresh-me-7";

/// `cks-iso pull` of pause through the front at `base`, with `config` as the Docker config.
fn pull_pause(
    world: &RegistryWorld,
    base: &str,
    tmp: &Path,
    config: &str,
) -> std::process::Command {
    let docker = tmp.join("docker");
    std::fs::create_dir_all(&docker).unwrap();
    std::fs::write(docker.join("config.json"), config).unwrap();
    let pause = world.corpus.get("registry.k8s.io/pause:3.10").reference();
    let mut args = vec![pause, "--arch".into(), "amd64".into()];
    args.extend(world.mirror_args(base));
    let (cache, out) = (tmp.join("cache"), tmp.join("out"));
    let _ = std::fs::remove_dir_all(&out);
    let mut cmd = pull_cmd(&args, &cache, &out);
    cmd.env("DOCKER_CONFIG", &docker);
    cmd
}

/// The user:password of every Basic `Authorization` value in `seen`.
fn basic_secrets(seen: &[String]) -> Vec<String> {
    seen.iter()
        .filter_map(|value| value.strip_prefix("Basic "))
        .map(|b64| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .unwrap_or_default();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .collect()
}

/// A registry answering `/v2/` with a Basic challenge never receives the identity token, in any
/// header: the pull goes without credentials (and is refused), with a warning naming the entry.
/// Docker would send the entry's empty password, containerd nothing; today's main sent the
/// refresh token as the password on every request.
#[test]
fn an_identity_token_is_never_sent_to_a_basic_registry() {
    let world = world();
    let front = BasicFront::start(&world.registry.host(), "cks", "right-horse");
    let tmp = tempfile::tempdir().unwrap();
    let host = front.host();
    let config = format!(r#"{{"auths":{{"{host}":{{"identitytoken":"{REFRESH}"}}}}}}"#);
    let refused = pull_pause(&world, &front.url(), tmp.path(), &config)
        .output()
        .unwrap();
    let said = stderr(&refused);
    let seen = front.authorizations();
    assert!(
        !seen.iter().any(|v| v.contains(REFRESH))
            && !basic_secrets(&seen).iter().any(|s| s.contains(REFRESH)),
        "the identity token reached the Basic registry: {:?}",
        basic_secrets(&seen)
    );
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("{host} asks for Basic authentication"))
            && said.contains("(identitytoken)")
            && said.contains("never sent as a password"),
        "{said}"
    );
    assert!(said.contains("refused access"), "{said}");
    assert!(!said.contains(REFRESH), "the token leaked: {said}");

    // The same registry with a user name and password: they are sent, and it lets the pull in.
    let auth = cks_iso_testworld::http::base64(b"cks:right-horse");
    let config = format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#);
    let pulled = pull_pause(&world, &front.url(), tmp.path(), &config)
        .output()
        .unwrap();
    succeeded(&pulled);
    assert!(basic_secrets(&front.authorizations()).contains(&"cks:right-horse".to_owned()));
}

/// A token service that answers the identity token's exchange with a 307 or 308 to another host
/// does not get it carried there (a POST keeps its body along those): the pull fails naming the
/// redirect, and the other host receives nothing. A redirect on the token service's own host is
/// followed.
#[test]
fn an_identity_token_does_not_follow_a_token_service_redirect_to_another_host() {
    let world = world();
    let front = TokenFront::start(
        &world.registry.host(),
        FrontAuth::RefreshToken(REFRESH.into()),
    );
    let received: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let elsewhere = {
        let received = received.clone();
        HttpServer::start(move |request| {
            received.lock().unwrap().push(format!(
                "{} {} {}",
                request.method,
                request.target,
                String::from_utf8_lossy(&request.body)
            ));
            Outgoing::new(200, r#"{"access_token":"from-elsewhere"}"#)
                .with("Content-Type", "application/json")
        })
    };
    let host = front.host();
    let config = format!(r#"{{"auths":{{"{host}":{{"identitytoken":"{REFRESH}"}}}}}}"#);
    for status in [307, 308] {
        let tmp = tempfile::tempdir().unwrap();
        front.redirect_token_requests(status, &format!("http://{}", elsewhere.host()));
        let result = pull_pause(&world, &front.url(), tmp.path(), &config)
            .output()
            .unwrap();
        let said = stderr(&result);
        assert!(
            received.lock().unwrap().is_empty(),
            "HTTP {status}: the other host received {:?}",
            received.lock().unwrap()
        );
        assert_eq!(result.status.code(), Some(1), "{said}");
        assert!(
            said.contains(&format!(
                "the token service {host} redirects the identity token (HTTP {status}) to \
                 http://{}/token-moved",
                elsewhere.host()
            )) && said.contains("another host"),
            "{said}"
        );
        assert!(
            said.contains("hint: an identity token is sent only"),
            "{said}"
        );
        assert!(!said.contains(REFRESH), "the token leaked: {said}");
    }

    // Moved on its own host: followed, and the exchange succeeds there.
    let tmp = tempfile::tempdir().unwrap();
    front.redirect_token_requests(308, &front.url());
    let result = pull_pause(&world, &front.url(), tmp.path(), &config)
        .output()
        .unwrap();
    succeeded(&result);
    assert!(
        front
            .scopes()
            .contains(&"repository:registry.k8s.io/pause:pull".to_owned()),
        "{:?}",
        front.scopes()
    );
}

/// Writes the executable `docker-credential-<name>` with `body` into `bin`.
fn helper(bin: &Path, name: &str, body: &str) {
    std::fs::create_dir_all(bin).unwrap();
    let program = bin.join(format!("docker-credential-{name}"));
    std::fs::write(&program, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
}

/// A pull of pause through an anonymous front whose host's credentials come from the helper
/// `name`, with `CKS_ISO_HELPER_TIMEOUT=2`.
fn pull_with_helper(
    world: &RegistryWorld,
    front: &TokenFront,
    tmp: &Path,
    name: &str,
) -> std::process::Command {
    let config = format!(r#"{{"credHelpers":{{"{}":"{name}"}}}}"#, front.host());
    let mut cmd = pull_pause(world, &front.url(), tmp, &config);
    let path = format!(
        "{}:{}",
        tmp.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.env("PATH", path).env("CKS_ISO_HELPER_TIMEOUT", "2");
    cmd
}

/// A helper that never answers (a keychain waiting for an unlock) is stopped at the deadline,
/// with everything it started, and named in one warning; the public image is pulled anyway.
#[test]
fn a_hanging_credential_helper_times_out_and_the_pull_goes_on() {
    let world = world();
    let front = TokenFront::start(&world.registry.host(), FrontAuth::Anonymous);
    let tmp = tempfile::tempdir().unwrap();
    // The shell waits on a child of its own: stopping only the shell would leave the pipe open.
    helper(&tmp.path().join("bin"), "hang", "sleep 300");
    let started = std::time::Instant::now();
    let result = output_within(
        &mut pull_with_helper(&world, &front, tmp.path(), "hang"),
        60,
    )
    .expect("the pull waited for the hanging helper for a minute");
    let said = stderr(&result);
    succeeded(&result);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let warnings: Vec<&str> = said.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{said}");
    assert!(
        warnings[0].contains("docker-credential-hang")
            && warnings[0].contains("did not answer within 2 seconds")
            && warnings[0].contains("CKS_ISO_HELPER_TIMEOUT"),
        "{said}"
    );
}

/// A helper that writes without end is stopped once its output passes what any answer holds, and
/// named; memory stays bounded and nothing panics (today's main read it all: exit 101 at 4.2 GB).
#[test]
fn a_credential_helper_writing_endless_output_is_stopped_and_named() {
    let world = world();
    let front = TokenFront::start(&world.registry.host(), FrontAuth::Anonymous);
    let tmp = tempfile::tempdir().unwrap();
    helper(
        &tmp.path().join("bin"),
        "flood",
        "exec yes '{\"Username\":'",
    );
    let (result, rss) = output_within_rss(
        &mut pull_with_helper(&world, &front, tmp.path(), "flood"),
        60,
    )
    .expect("the pull kept reading the endless helper for a minute");
    let said = stderr(&result);
    assert_ne!(result.status.code(), Some(101), "it panicked: {said}");
    succeeded(&result);
    assert!(
        said.contains("docker-credential-flood")
            && said.contains("wrote more than 1.00 MiB")
            && said.contains("was stopped"),
        "{said}"
    );
    assert!(rss < 256 << 20, "peak RSS {} MiB", rss >> 20);
}
