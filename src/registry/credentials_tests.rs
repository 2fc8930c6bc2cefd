use super::*;
use crate::image::Reference;
use crate::registry::Routes;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    file
}

fn auth(user: &str, password: &str) -> String {
    STANDARD.encode(format!("{user}:{password}"))
}

/// A `docker-credential-<name>` in `dir` that writes the server name it was asked for to
/// `<dir>/<name>.asked` and answers `user`/`secret` for `answers_for`, "not found" otherwise.
fn helper(dir: &Path, name: &str, answers_for: &str) {
    let asked = dir.join(format!("{name}.asked"));
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = get ] || exit 3\nread server\nprintf '%s\\n' \"$server\" >> '{}'\n\
         [ \"$server\" = '{answers_for}' ] || {{ echo 'credentials not found in native keychain'; exit 1; }}\n\
         echo '{{\"ServerURL\":\"x\",\"Username\":\"{name}-user\",\"Secret\":\"{name}-secret\"}}'\n",
        asked.display()
    );
    let program = dir.join(format!("docker-credential-{name}"));
    std::fs::write(&program, script).unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
}

fn asked(dir: &Path, name: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(format!("{name}.asked")))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

fn user(found: Option<Credentials>) -> Option<String> {
    found.map(|c| c.username)
}

#[test]
fn docker_config_auths_match_hub_aliases_and_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let a = auth("me", "s3cret");
    let file = write(
        dir.path(),
        "config.json",
        &format!(
            r#"{{"auths":{{"https://index.docker.io/v1/":{{"auth":"{a}"}},"127.0.0.1:5000":{{"auth":"{a}"}}}}}}"#
        ),
    );
    let files = AuthFiles::new(vec![file.clone()], Some(file));
    let hub = files
        .lookup(DOCKER_HUB_API, "library/pause")
        .unwrap()
        .unwrap();
    assert_eq!(
        (hub.username.as_str(), hub.password.as_str()),
        ("me", "s3cret")
    );
    assert!(files.lookup("127.0.0.1:5000", "a/b").unwrap().is_some());
    assert!(files.lookup("quay.io", "a/b").unwrap().is_none());
    assert!(!format!("{hub:?}").contains("s3cret"));
}

#[test]
fn malformed_auth_file_error_does_not_quote_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "config.json",
        r#"{"auths":{"x":{"auth":"s3cret-not-b64!"}}}"#,
    );
    let files = AuthFiles::new(vec![file], None);
    let err = files.lookup("x", "a").unwrap_err().to_string();
    assert!(!err.contains("s3cret"), "{err}");
    let nope = dir.path().join("nope.json");
    let missing = AuthFiles::new(vec![nope.clone()], Some(nope));
    assert!(missing.lookup("x", "a").is_err());
}

/// containers-auth.json(5): `quay.io/org/app` beats `quay.io/org`, which beats `quay.io`; a
/// namespace covers whole path components only.
#[test]
fn repository_scoped_auths_keys_match_longest_first() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "auth.json",
        &format!(
            r#"{{"auths":{{"quay.io":{{"auth":"{}"}},"quay.io/org":{{"auth":"{}"}},"quay.io/org/app":{{"auth":"{}"}},"docker.io/library":{{"auth":"{}"}}}}}}"#,
            auth("registry", "p"),
            auth("org", "p"),
            auth("app", "p"),
            auth("library", "p"),
        ),
    );
    let files = AuthFiles::new(vec![file], None);
    let who = |host: &str, repo: &str| user(files.lookup(host, repo).unwrap());
    assert_eq!(who("quay.io", "org/app").as_deref(), Some("app"));
    assert_eq!(who("quay.io", "org/app/sub").as_deref(), Some("app"));
    assert_eq!(who("quay.io", "org/other").as_deref(), Some("org"));
    assert_eq!(
        who("quay.io", "organisation/x").as_deref(),
        Some("registry")
    );
    assert_eq!(who("quay.io", "else/x").as_deref(), Some("registry"));
    assert_eq!(
        who(DOCKER_HUB_API, "library/pause").as_deref(),
        Some("library")
    );
    assert_eq!(who(DOCKER_HUB_API, "calico/node"), None);
}

/// Docker Hub pulls go to `registry-1.docker.io`, but Docker files Hub logins under
/// `https://index.docker.io/v1/`: the helper is asked for that name, for the host a pull of a
/// Hub image asks credentials for.
#[test]
fn hub_credentials_are_asked_of_helpers_under_dockers_name_for_hub() {
    let dir = tempfile::tempdir().unwrap();
    let hub = Routes::default().endpoint(&Reference::parse("calico/node:v3.29.1").unwrap());
    for (config, name) in [
        (r#"{"credHelpers":{"docker.io":"hub"}}"#, "hub"),
        (r#"{"credsStore":"store"}"#, "store"),
    ] {
        helper(dir.path(), name, DOCKER_HUB_AUTH_KEY);
        let file = write(dir.path(), &format!("{name}.json"), config);
        let mut files = AuthFiles::new(vec![file], None);
        files.helper_path = Some(dir.path().as_os_str().to_owned());
        let found = files.lookup(hub.host(), &hub.name).unwrap();
        assert_eq!(
            user(found).as_deref(),
            Some(format!("{name}-user").as_str())
        );
        assert_eq!(asked(dir.path(), name), [DOCKER_HUB_AUTH_KEY]);
        // Asked once per run, however many repositories ask.
        files.lookup(hub.host(), "library/pause").unwrap();
        assert_eq!(asked(dir.path(), name).len(), 1);
    }
}

/// A `credsStore` copied from a desktop (`desktop`, `osxkeychain`) names a helper this machine
/// does not have: no credentials from it, and the files after it are still read.
#[test]
fn missing_or_failing_helper_gives_no_credentials_and_the_search_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let missing = write(dir.path(), "missing.json", r#"{"credsStore":"desktop"}"#);
    let failing_program = dir.path().join("docker-credential-broken");
    std::fs::write(&failing_program, "#!/bin/sh\nexit 7\n").unwrap();
    std::fs::set_permissions(
        &failing_program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let failing = write(
        dir.path(),
        "failing.json",
        r#"{"credHelpers":{"registry.example":"broken"}}"#,
    );
    let mut files = AuthFiles::new(vec![missing.clone(), failing.clone()], None);
    files.helper_path = Some(dir.path().as_os_str().to_owned());
    assert_eq!(files.lookup("registry.example", "a").unwrap(), None);
    let later = write(
        dir.path(),
        "later.json",
        &format!(
            r#"{{"auths":{{"registry.example":{{"auth":"{}"}}}}}}"#,
            auth("later", "p")
        ),
    );
    let mut files = AuthFiles::new(vec![missing, failing, later], None);
    files.helper_path = Some(dir.path().as_os_str().to_owned());
    assert_eq!(
        user(files.lookup("registry.example", "a").unwrap()).as_deref(),
        Some("later")
    );
}

/// `identitytoken` entries, and a helper answering the user `<token>`, are identity tokens: for
/// the OAuth2 exchange, never Basic.
#[test]
fn identity_tokens_are_marked_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "config.json",
        r#"{"auths":{"a.example":{"auth":"","identitytoken":"refresh"}},"credHelpers":{"b.example":"tok"}}"#,
    );
    let program = dir.path().join("docker-credential-tok");
    std::fs::write(
        &program,
        "#!/bin/sh\nread server\necho '{\"ServerURL\":\"b.example\",\"Username\":\"<token>\",\"Secret\":\"r2\"}'\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut files = AuthFiles::new(vec![file], None);
    files.helper_path = Some(dir.path().as_os_str().to_owned());
    let a = files.lookup("a.example", "x").unwrap().unwrap();
    assert!(a.identity && a.password == "refresh");
    let b = files.lookup("b.example", "x").unwrap().unwrap();
    assert!(b.identity && b.password == "r2");
}
