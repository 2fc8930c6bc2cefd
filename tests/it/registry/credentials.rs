//! Registry credentials found where operators' Docker and Podman keep them: credential helpers
//! asked for the name Docker uses (driven through the real helper protocol, a helper script on
//! `PATH`), Podman's default auth files, repository-scoped keys, and a `credsStore` naming a helper
//! this machine lacks, which must not break public pulls.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::registry::{pull_cmd, stderr, succeeded};
use cks_iso_testworld::registry::{FrontAuth, RegistryWorld, TokenFront, world};

fn args(world: &RegistryWorld, base: &str, refs: &[String]) -> Vec<String> {
    let mut args = refs.to_vec();
    args.extend(["--arch".into(), "amd64".into()]);
    args.extend(world.mirror_args(base));
    args
}

fn auth(user: &str, password: &str) -> String {
    cks_iso_testworld::http::base64(format!("{user}:{password}").as_bytes())
}

/// A front that gives tokens only to `cks` with the password `right-horse`.
fn password_front(world: &RegistryWorld) -> TokenFront {
    TokenFront::start(
        &world.registry.host(),
        FrontAuth::Password {
            user: "cks".into(),
            password: "right-horse".into(),
        },
    )
}

/// `PATH` with `bin` first.
fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Writes `docker-credential-<name>` into `bin`: it appends each server name it is asked for to
/// `<bin>/<name>.asked` and answers `cks`/`right-horse` for `answers_for`, "not found" otherwise.
fn write_helper(bin: &Path, name: &str, answers_for: &str) -> PathBuf {
    std::fs::create_dir_all(bin).unwrap();
    let asked = bin.join(format!("{name}.asked"));
    let program = bin.join(format!("docker-credential-{name}"));
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 3\nread server\nprintf '%s\\n' \"$server\" >> '{}'\n\
             [ \"$server\" = '{answers_for}' ] || {{ echo 'credentials not found in native keychain'; exit 1; }}\n\
             echo '{{\"ServerURL\":\"{answers_for}\",\"Username\":\"cks\",\"Secret\":\"right-horse\"}}'\n",
            asked.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    asked
}

fn lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn credential_helper_is_asked_for_the_registry_host_and_named_in_verbose_logs() {
    let world = world();
    let front = password_front(&world);
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let bin = tmp.path().join("bin");
    let host = front.host();
    let asked = write_helper(&bin, "cks-test", &host);
    let docker_config = tmp.path().join("docker");
    std::fs::create_dir(&docker_config).unwrap();
    std::fs::write(
        docker_config.join("config.json"),
        format!(r#"{{"credHelpers":{{"{host}":"cks-test"}}}}"#),
    )
    .unwrap();
    let pause = world.corpus.get("registry.k8s.io/pause:3.10").reference();
    let busybox = world
        .corpus
        .get("docker.io/library/busybox:1.36")
        .reference();
    let mut cmd = pull_cmd(&args(&world, &front.url(), &[pause, busybox]), &cache, &out);
    cmd.arg("-v")
        .env("DOCKER_CONFIG", &docker_config)
        .env("PATH", path_with(&bin));
    let result = cmd.output().unwrap();
    succeeded(&result);
    assert_eq!(
        lines(&asked),
        vec![host.clone()],
        "asked once, for the host"
    );
    let text = stderr(&result);
    let config = docker_config.join("config.json");
    assert!(
        text.contains(&format!(
            "from {}, credHelpers {host:?} (docker-credential-cks-test)",
            config.display()
        )),
        "{text}"
    );
    assert!(!text.contains("right-horse"), "secret leaked: {text}");
}

/// A `config.json` copied from a desktop names `credsStore: desktop`, which this machine lacks:
/// public images still pull, with one warning naming the helper.
#[test]
fn credential_store_that_is_not_installed_warns_once_and_pulls_anonymously() {
    let world = world();
    let front = TokenFront::start(&world.registry.host(), FrontAuth::Anonymous);
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let missing = "cks-iso-test-not-installed";
    let found = Command::new("sh")
        .args(["-c", &format!("command -v docker-credential-{missing}")])
        .output()
        .unwrap();
    assert!(!found.status.success(), "the helper must be missing here");
    let docker_config = tmp.path().join("docker");
    std::fs::create_dir(&docker_config).unwrap();
    std::fs::write(
        docker_config.join("config.json"),
        format!(r#"{{"credsStore":"{missing}"}}"#),
    )
    .unwrap();
    let pause = world.corpus.get("registry.k8s.io/pause:3.10").reference();
    let busybox = world
        .corpus
        .get("docker.io/library/busybox:1.36")
        .reference();
    let mut cmd = pull_cmd(&args(&world, &front.url(), &[pause, busybox]), &cache, &out);
    cmd.env("DOCKER_CONFIG", &docker_config);
    let result = cmd.output().unwrap();
    assert_eq!(succeeded(&result).len(), 2);
    let text = stderr(&result);
    let warnings: Vec<&str> = text.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{text}");
    assert!(
        warnings[0].contains(&format!("docker-credential-{missing}"))
            && warnings[0].contains(&front.host()),
        "{text}"
    );
}

/// `podman login` writes `$XDG_RUNTIME_DIR/containers/auth.json`; `$XDG_CONFIG_HOME/containers/
/// auth.json` comes next. A repository-scoped key beats the registry's own key.
#[test]
fn podman_default_auth_files_are_read_with_repository_scoped_keys_first() {
    let world = world();
    let front = password_front(&world);
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let host = front.host();
    let run = tmp.path().join("run");
    std::fs::create_dir_all(run.join("containers")).unwrap();
    let runtime_file = run.join("containers/auth.json");
    // Behind the front, pause is the repository `registry.k8s.io/pause`.
    std::fs::write(
        &runtime_file,
        format!(
            r#"{{"auths":{{"{host}":{{"auth":"{}"}},"{host}/registry.k8s.io":{{"auth":"{}"}}}}}}"#,
            auth("cks", "wrong-battery"),
            auth("cks", "right-horse")
        ),
    )
    .unwrap();
    let pause = world.corpus.get("registry.k8s.io/pause:3.10").reference();
    let mut cmd = pull_cmd(
        &args(&world, &front.url(), std::slice::from_ref(&pause)),
        &cache,
        &out,
    );
    cmd.arg("-v").env("XDG_RUNTIME_DIR", &run);
    let result = cmd.output().unwrap();
    succeeded(&result);
    let text = stderr(&result);
    assert!(
        text.contains(&format!(
            "from {}, auths \"{host}/registry.k8s.io\"",
            runtime_file.display()
        )),
        "{text}"
    );

    // The same credentials from the configuration home's file, the runtime one holding none.
    let config_home = tmp.path().join("config");
    std::fs::create_dir_all(config_home.join("containers")).unwrap();
    std::fs::write(&runtime_file, r#"{"auths":{}}"#).unwrap();
    std::fs::write(
        config_home.join("containers/auth.json"),
        format!(
            r#"{{"auths":{{"{host}":{{"auth":"{}"}}}}}}"#,
            auth("cks", "right-horse")
        ),
    )
    .unwrap();
    std::fs::remove_dir_all(&cache).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    let mut cmd = pull_cmd(
        &args(&world, &front.url(), std::slice::from_ref(&pause)),
        &cache,
        &out,
    );
    cmd.env("XDG_RUNTIME_DIR", &run)
        .env("XDG_CONFIG_HOME", &config_home);
    succeeded(&cmd.output().unwrap());
}

/// `docker login` against some registries stores an `identitytoken`: it is exchanged, as Docker
/// does, for a pull token with an OAuth2 refresh-token `POST` to the realm, never sent as Basic.
#[test]
fn identity_token_is_exchanged_for_a_pull_token_the_oauth2_way() {
    let world = world();
    let front = TokenFront::start(
        &world.registry.host(),
        FrontAuth::RefreshToken("refresh-me-7".into()),
    );
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let host = front.host();
    let docker_config = tmp.path().join("docker");
    std::fs::create_dir(&docker_config).unwrap();
    let pause = world.corpus.get("registry.k8s.io/pause:3.10").reference();
    let run = |config: &str| {
        std::fs::write(docker_config.join("config.json"), config).unwrap();
        let mut cmd = pull_cmd(
            &args(&world, &front.url(), std::slice::from_ref(&pause)),
            &cache,
            &out,
        );
        cmd.arg("-vv").env("DOCKER_CONFIG", &docker_config);
        cmd.output().unwrap()
    };
    let result = run(&format!(
        r#"{{"auths":{{"{host}":{{"auth":"","identitytoken":"refresh-me-7"}}}}}}"#
    ));
    succeeded(&result);
    assert!(
        front
            .scopes()
            .contains(&"repository:registry.k8s.io/pause:pull".to_owned()),
        "{:?}",
        front.scopes()
    );
    let text = stderr(&result);
    assert!(text.contains("(identitytoken)"), "{text}");
    assert!(!text.contains("refresh-me-7"), "the token leaked: {text}");

    // A wrong identity token is refused as an auth error, not sent any other way.
    let wrong = run(&format!(
        r#"{{"auths":{{"{host}":{{"identitytoken":"stale-token"}}}}}}"#
    ));
    assert!(!wrong.status.success());
    let text = stderr(&wrong);
    assert!(text.contains("refused access"), "{text}");
    assert!(!text.contains("stale-token"), "the token leaked: {text}");
}

/// An HTTPS registry (docker-registry's `redirect` storage middleware) that answers every blob
/// GET with a 307 to a plain-HTTP host: refused, nothing asked of that host, unless the host is
/// named with `--insecure-registry`; then the same pull succeeds through it.
#[test]
fn an_https_registry_redirecting_blobs_to_plain_http_is_refused_unless_the_target_is_insecure() {
    use cks_iso_testworld::images::{push_blob, push_manifest};
    use cks_iso_testworld::registry::{DockerRegistry, Tls};
    use cks_iso_testworld::server::{HttpServer, Outgoing};
    use cks_iso_testworld::upstream::sha256_hex;
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    // Pushed over plain HTTP, served from the same storage over TLS.
    let plain = DockerRegistry::start(storage.path(), None);
    let repo = "hostile/redirected";
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
    let layer = b"a layer fetched only where the redirect leads";
    let (config_digest, layer_digest) = (
        format!("sha256:{}", sha256_hex(config)),
        format!("sha256:{}", sha256_hex(layer)),
    );
    push_blob(&plain.host(), repo, &config_digest, config).unwrap();
    push_blob(&plain.host(), repo, &layer_digest, layer).unwrap();
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config_digest}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"{layer_digest}","size":{}}}]}}"#,
        config.len(),
        layer.len()
    );
    let media = "application/vnd.oci.image.manifest.v1+json";
    push_manifest(&plain.host(), repo, "1", media, manifest.as_bytes()).unwrap();

    // The plain-HTTP host the redirects lead to serves the storage's files, and counts requests.
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let cdn = {
        let (asked, root) = (asked.clone(), storage.path().to_owned());
        HttpServer::start(move |request| {
            asked.lock().unwrap().push(request.target.clone());
            let path = request.target.split('?').next().unwrap_or_default();
            match std::fs::read(root.join(path.trim_start_matches('/'))) {
                Ok(bytes) => Outgoing::new(200, bytes),
                Err(_) => Outgoing::new(404, "no"),
            }
        })
    };
    let tls = Tls::generate();
    let redirect = format!(
        "middleware:\n  storage:\n    - name: redirect\n      options:\n        baseurl: http://{}\n",
        cdn.host()
    );
    let registry = DockerRegistry::start_with(storage.path(), Some(&tls), &redirect);
    let reference = format!("{}/{repo}:1", registry.host());
    let pull = |out: &str, extra: &[&str]| {
        let mut args: Vec<String> = [&reference, "--arch", "amd64", "--retries", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(["--ca-file".into(), tls.ca().display().to_string()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        let cache = dir.path().join(format!("cache-{out}"));
        crate::support::registry::pull(&args, &cache, &dir.path().join(out))
    };

    let refused = pull("refused", &[]);
    let said = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(
        said.contains("a redirect from https to")
            && said.contains(&format!("http://{}", cdn.host())),
        "{said}"
    );
    assert!(said.contains("--insecure-registry"), "{said}");
    assert!(
        asked.lock().unwrap().is_empty(),
        "the plain-HTTP host was asked: {:?}",
        asked.lock().unwrap()
    );

    // Named insecure, the redirect target is followed and the image pulled.
    let followed = pull("followed", &["--insecure-registry", &cdn.host()]);
    succeeded(&followed);
    assert!(
        asked
            .lock()
            .unwrap()
            .iter()
            .any(|t| t.contains(&sha256_hex(layer))),
        "{:?}",
        asked.lock().unwrap()
    );
}
