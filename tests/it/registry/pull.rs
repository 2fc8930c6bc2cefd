//! `cks-iso pull` against a real registry (Debian's docker-registry) holding the generated
//! corpus, through mirrors, plain HTTP, TLS and a bearer-token front with redirected blobs; the
//! archives judged by skopeo and a private containerd.

use std::path::{Path, PathBuf};

use crate::support::containerd::Containerd;
use crate::support::registry::{assert_cache_verified, assert_empty, pull, stderr, succeeded};
use crate::support::run_tool;
use cks_iso_testworld::images::Fixture;
use cks_iso_testworld::registry::{
    DockerRegistry, FrontAuth, RegistryWorld, Tls, TokenFront, world,
};
use serde_json::Value;

/// The corpus images published for `arch`.
fn published(world: &RegistryWorld, arch: &str) -> Vec<Fixture> {
    world
        .corpus
        .fixtures
        .iter()
        .filter(|f| f.per_arch.contains_key(arch))
        .cloned()
        .collect()
}

fn args(world: &RegistryWorld, base: &str, arch: &str, refs: &[String]) -> Vec<String> {
    let mut args = refs.to_vec();
    args.extend(["--arch".into(), arch.into()]);
    args.extend(world.mirror_args(base));
    args
}

fn json(output: std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).expect("skopeo prints JSON")
}

#[test]
fn every_archive_is_read_by_skopeo_and_containerd_with_the_registry_digest() {
    crate::support::require("skopeo");
    let world = world();
    let containerd = Containerd::start();
    for arch in ["amd64", "arm64"] {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
        let fixtures = published(&world, arch);
        let refs: Vec<String> = fixtures.iter().map(Fixture::reference).collect();
        let lines = succeeded(&pull(
            &args(&world, &world.registry.url(), arch, &refs),
            &cache,
            &out,
        ));
        assert_eq!(lines.len(), fixtures.len(), "one line per image");
        assert_cache_verified(&cache);
        for (i, fixture) in fixtures.iter().enumerate() {
            let what = format!("{} for {arch}", fixture.reference());
            let (name, digest, file) = &lines[i];
            assert_eq!(name, &fixture.reference(), "{what}: full name");
            assert_eq!(digest, &fixture.top, "{what}: the registry's digest");
            let file = PathBuf::from(file);
            assert!(file.starts_with(&out) && file.is_file(), "{what}: {file:?}");
            // skopeo splits `transport:path:ref` at colons; archive names contain them.
            let plain = tmp.path().join(format!("judge-{i}.tar"));
            std::fs::hard_link(&file, &plain).unwrap();
            let plain = plain.to_str().unwrap();
            let image = &fixture.per_arch[arch];
            let docker = json(run_tool(
                "skopeo",
                &["inspect", &format!("docker-archive:{plain}")],
            ));
            assert_eq!(docker["Architecture"], arch, "{what}");
            assert_eq!(
                docker["Layers"],
                serde_json::json!(image.diff_ids),
                "{what}"
            );
            let oci = json(run_tool(
                "skopeo",
                &[
                    "--override-os",
                    "linux",
                    "--override-arch",
                    arch,
                    "inspect",
                    &format!("oci-archive:{plain}"),
                ],
            ));
            assert_eq!(oci["Digest"], fixture.top, "{what}: oci-archive digest");
            assert_eq!(
                oci["Layers"],
                serde_json::json!(image.layers),
                "{what}: compressed layers"
            );
            if let Some(containerd) = &containerd {
                import(containerd, arch, &file, fixture);
            }
        }
    }
}

/// `ctr images import` keeps the full name and the registry's digest.
fn import(containerd: &Containerd, arch: &str, file: &Path, fixture: &Fixture) {
    let platform = format!("linux/{arch}");
    containerd.ctr(&[
        "images",
        "import",
        "--platform",
        &platform,
        "--snapshotter",
        "native",
        file.to_str().unwrap(),
    ]);
    let listing = containerd.ctr(&["images", "ls"]);
    let listing = String::from_utf8_lossy(&listing.stdout);
    let name = fixture.reference();
    let row = listing
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|cols| cols.first() == Some(&name.as_str()))
        .unwrap_or_else(|| panic!("{name} ({arch}) not listed after import:\n{listing}"));
    assert_eq!(
        row[2], fixture.top,
        "{name} ({arch}) keeps the registry's digest"
    );
    containerd.ctr(&["images", "rm", &name]);
}

#[test]
fn insecure_registry_is_spoken_to_over_plain_http_under_its_own_name() {
    let world = world();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let pause = world.corpus.get("registry.k8s.io/pause:3.10");
    let reference = format!("{}/{}", world.registry.host(), pause.reference());
    let base = vec![reference.clone(), "--arch".into(), "arm64".into()];
    // Without --insecure-registry the client speaks HTTPS, which a plain registry cannot answer.
    let refused = pull(&base, &cache, &out);
    assert!(!refused.status.success());
    assert_empty(&out);
    let mut insecure = base.clone();
    insecure.extend(["--insecure-registry".into(), world.registry.host()]);
    let lines = succeeded(&pull(&insecure, &cache, &out));
    assert_eq!(lines[0].0, reference);
    assert_eq!(lines[0].1, pause.top);
    assert!(lines[0].2.ends_with("pause:3.10.tar"), "{}", lines[0].2);
}

#[test]
fn token_front_redirects_blobs_to_a_host_that_never_sees_authorization() {
    let world = world();
    let front = TokenFront::start(&world.registry.host(), FrontAuth::Anonymous);
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let fixtures = published(&world, "amd64");
    let refs: Vec<String> = fixtures.iter().map(Fixture::reference).collect();
    let lines = succeeded(&pull(
        &args(&world, &front.url(), "amd64", &refs),
        &cache,
        &out,
    ));
    assert_eq!(lines.len(), fixtures.len());
    for (line, fixture) in lines.iter().zip(&fixtures) {
        assert_eq!(line.1, fixture.top);
    }
    assert!(
        front.cdn_requests() > 0,
        "blobs must have come through the redirect"
    );
    assert!(
        !front.cdn_saw_authorization(),
        "Authorization leaked to the second host"
    );
    assert!(
        front
            .scopes()
            .contains(&"repository:registry.k8s.io/kube-apiserver:pull".to_owned()),
        "{:?}",
        front.scopes()
    );
    // Each blob once, although base layers are shared by several images.
    let mut blobs: Vec<&String> = fixtures
        .iter()
        .flat_map(|f| {
            let image = &f.per_arch["amd64"];
            std::iter::once(&image.config).chain(&image.layers)
        })
        .collect();
    blobs.sort();
    blobs.dedup();
    assert_eq!(
        front.cdn_requests(),
        blobs.len(),
        "every distinct blob fetched exactly once"
    );
    assert_cache_verified(&cache);

    // A second pull finds every blob in the cache and fetches none again.
    let out2 = tmp.path().join("out2");
    succeeded(&pull(
        &args(&world, &front.url(), "amd64", &refs),
        &cache,
        &out2,
    ));
    assert_eq!(
        front.cdn_requests(),
        blobs.len(),
        "cached blobs are not fetched again"
    );
}

#[test]
fn token_expiring_mid_pull_is_fetched_again() {
    let world = world();
    let front = TokenFront::start(&world.registry.host(), FrontAuth::Anonymous);
    // Every token is good for 3 requests: each repository needs more than that.
    front.expire_tokens_after(3);
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let refs: Vec<String> = published(&world, "arm64")
        .iter()
        .map(Fixture::reference)
        .collect();
    // One transfer at a time, so no other request can use up a renewed token before its owner.
    let mut one_at_a_time = args(&world, &front.url(), "arm64", &refs);
    one_at_a_time.extend(["--jobs".into(), "1".into()]);
    let lines = succeeded(&pull(&one_at_a_time, &cache, &out));
    assert_eq!(lines.len(), refs.len());
    let repos = {
        let mut names: Vec<&str> = refs
            .iter()
            .map(|r| r.split([':', '@']).next().unwrap())
            .collect();
        names.sort();
        names.dedup();
        names.len()
    };
    assert!(
        front.token_requests() > repos,
        "{} token requests for {repos} repositories: no token was renewed",
        front.token_requests()
    );
    assert_cache_verified(&cache);
}

#[test]
fn tls_registry_works_with_its_ca_and_fails_clearly_without() {
    let world = world();
    let tls = Tls::generate();
    let secure = DockerRegistry::start(world.storage.path(), Some(&tls));
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let busybox = world.corpus.get("docker.io/library/busybox:1.36");
    let reference = format!("{}/{}", secure.host(), busybox.reference());
    let base = vec![reference.clone(), "--arch".into(), "amd64".into()];
    let refused = pull(&base, &cache, &out);
    assert!(!refused.status.success());
    let text = stderr(&refused);
    assert!(
        text.contains("certificate") && text.contains("--ca-file"),
        "{text}"
    );
    assert_empty(&out);
    assert_cache_verified(&cache);
    let mut trusted = base.clone();
    trusted.extend(["--ca-file".into(), tls.ca().to_str().unwrap().into()]);
    let lines = succeeded(&pull(&trusted, &cache, &out));
    assert_eq!(
        (lines[0].0.as_str(), lines[0].1.as_str()),
        (reference.as_str(), busybox.top.as_str())
    );
}

#[test]
fn missing_image_is_not_found_by_name_and_leaves_nothing() {
    let world = world();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let good = world.corpus.get("registry.k8s.io/pause:3.10").reference();
    for missing in [
        "registry.k8s.io/no-such-image:v1",
        "registry.k8s.io/pause:9.99",
    ] {
        let refs = [missing.to_owned(), good.clone()];
        let result = pull(
            &args(&world, &world.registry.url(), "amd64", &refs),
            &cache,
            &out,
        );
        assert!(!result.status.success());
        let text = stderr(&result);
        assert!(text.contains(&format!("{missing}: not found")), "{text}");
        // The good image is still written; the missing one has no archive.
        assert_eq!(crate::support::names(&out), ["pause:3.10.tar"]);
        assert_cache_verified(&cache);
    }
}

#[test]
fn image_without_the_target_platform_names_the_platforms_it_has() {
    let world = world();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let only = world
        .corpus
        .get("quay.io/example/amd64-only:1.0")
        .reference();
    let result = pull(
        &args(
            &world,
            &world.registry.url(),
            "arm64",
            std::slice::from_ref(&only),
        ),
        &cache,
        &out,
    );
    assert!(!result.status.success());
    let text = stderr(&result);
    assert!(
        text.contains(&only) && text.contains("linux/amd64") && text.contains("linux/arm64"),
        "{text}"
    );
    assert_empty(&out);
    assert_cache_verified(&cache);
}

fn write_authfile(dir: &Path, host: &str, user: &str, password: &str) -> PathBuf {
    let auth = cks_iso_testworld::http::base64(format!("{user}:{password}").as_bytes());
    let path = dir.join("auth.json");
    std::fs::write(
        &path,
        format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#),
    )
    .unwrap();
    path
}

/// A token front that gives tokens only to `cks` with the password `right-horse`.
fn password_front(world: &RegistryWorld) -> TokenFront {
    TokenFront::start(
        &world.registry.host(),
        FrontAuth::Password {
            user: "cks".into(),
            password: "right-horse".into(),
        },
    )
}

#[test]
fn bad_credentials_fail_as_an_auth_error_without_the_secret() {
    let world = world();
    let front = password_front(&world);
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let pause = world.corpus.get("registry.k8s.io/pause:3.10").reference();
    let refs = [pause.clone()];
    let anonymous = pull(&args(&world, &front.url(), "amd64", &refs), &cache, &out);
    assert!(!anonymous.status.success());
    assert!(
        stderr(&anonymous).contains("refused access"),
        "{}",
        stderr(&anonymous)
    );

    let secret = "wrong-battery-staple";
    let authfile = write_authfile(tmp.path(), &front.host(), "cks", secret);
    let mut with_file = args(&world, &front.url(), "amd64", &refs);
    with_file.extend(["--authfile".into(), authfile.to_str().unwrap().into()]);
    let wrong = pull(
        &[with_file.clone(), vec!["-vv".into()]].concat(),
        &cache,
        &out,
    );
    assert!(!wrong.status.success());
    let text = stderr(&wrong);
    assert!(
        text.contains("refused access") && text.contains(&pause),
        "{text}"
    );
    let encoded = cks_iso_testworld::http::base64(format!("cks:{secret}").as_bytes());
    assert!(
        !text.contains(secret) && !text.contains(&encoded),
        "secret leaked: {text}"
    );
    assert_empty(&out);
    assert_cache_verified(&cache);

    // The right password, this time from REGISTRY_AUTH_FILE.
    let authfile = write_authfile(tmp.path(), &front.host(), "cks", "right-horse");
    let mut right = crate::support::registry::pull_cmd(
        &args(&world, &front.url(), "amd64", &refs),
        &cache,
        &out,
    );
    right.env("REGISTRY_AUTH_FILE", &authfile);
    succeeded(&right.output().unwrap());
}

#[test]
fn registry_that_is_down_is_asked_once_for_all_its_images() {
    let port = cks_iso_testworld::registry::free_port();
    let host = format!("127.0.0.1:{port}");
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let mut args: Vec<String> = ["a:1", "b:2", "c:3"]
        .iter()
        .map(|i| format!("{host}/{i}"))
        .collect();
    args.extend(
        [
            "--arch",
            "amd64",
            "--insecure-registry",
            &host,
            "--attempts",
            "2",
        ]
        .map(String::from),
    );
    let result = pull(&args, &cache, &out);
    assert!(!result.status.success());
    let text = stderr(&result);
    let asked = "cannot fetch the registry's API root";
    assert_eq!(text.matches(asked).count(), 1, "asked per image:\n{text}");
    assert_eq!(text.matches("cannot be reached").count(), 2, "{text}");
    assert!(text.contains(&format!("{host}/b:2")), "{text}");
    assert_empty(&out);
}

#[test]
fn images_sharing_an_archive_name_get_distinct_files_and_a_warning() {
    let world = world();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let pause = world.corpus.get("registry.k8s.io/pause:3.10");
    let direct = format!("{}/{}", world.registry.host(), pause.reference());
    let mut list = args(
        &world,
        &world.registry.url(),
        "amd64",
        &[pause.reference(), direct.clone()],
    );
    list.extend(["--insecure-registry".into(), world.registry.host()]);
    let result = pull(&list, &cache, &out);
    let lines = succeeded(&result);
    assert_eq!(lines.len(), 2);
    assert_ne!(
        lines[0].2, lines[1].2,
        "one archive must not overwrite the other"
    );
    assert!(lines.iter().all(|l| l.1 == pause.top));
    let files = crate::support::names(&out);
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(
        files
            .iter()
            .all(|f| f.starts_with("pause:3.10-") && f.ends_with(".tar")),
        "{files:?}"
    );
    let text = stderr(&result);
    assert!(
        text.contains("shares the archive name pause:3.10.tar"),
        "{text}"
    );
}

/// `doctor` asks for a pull token the way a pull does: anonymously it is refused, with the
/// configured credentials it gets one, and the check line says which.
#[test]
fn doctor_obtains_a_pull_token_as_a_pull_would() {
    let world = world();
    let front = password_front(&world);
    let tmp = tempfile::tempdir().unwrap();
    let doctor = |authfile: Option<&Path>| {
        let mut cmd = crate::support::cks_iso();
        cmd.arg("doctor")
            .args(world.mirror_args(&front.url()))
            .args(["--retries", "1", "--connect-timeout", "2"])
            .arg("--cache-dir")
            .arg(tmp.path().join("cache"))
            .env("HOME", tmp.path())
            .env_remove("DOCKER_CONFIG")
            .env_remove("REGISTRY_AUTH_FILE")
            .env_remove("CKS_ISO_CONFIG");
        if let Some(file) = authfile {
            cmd.arg("--authfile").arg(file);
        }
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let anonymous = doctor(None);
    assert!(!anonymous.contains("pull token obtained"), "{anonymous}");
    let authfile = write_authfile(tmp.path(), &front.host(), "cks", "right-horse");
    let with_file = doctor(Some(&authfile));
    assert!(
        with_file.contains("pull token obtained with the configured credentials"),
        "{with_file}"
    );
    // The line names where they came from.
    assert!(
        with_file.contains(&format!(
            "(auths \"{}\" in {})",
            front.host(),
            authfile.display()
        )),
        "{with_file}"
    );
}

/// `pull --json`: one object with a `format` version, each archive written (name, registry
/// digest, file, size) and each image that failed, in the order given; exit 1 when one failed.
#[test]
fn pull_json_is_one_object_naming_what_was_written_and_what_failed() {
    let world = world();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let pause = world.corpus.get("registry.k8s.io/pause:3.10");
    let missing = "registry.k8s.io/no-such-image:v1".to_owned();
    let mut list = args(
        &world,
        &world.registry.url(),
        "amd64",
        &[pause.reference(), missing.clone()],
    );
    list.push("--json".into());
    let result = pull(&list, &cache, &out);
    assert_eq!(result.status.code(), Some(1), "{}", stderr(&result));
    let report: Value = serde_json::from_slice(&result.stdout).expect("stdout is one JSON object");
    assert_eq!(report["format"], 1);
    assert_eq!(report["arch"], "linux/amd64");
    let images = report["images"].as_array().unwrap();
    assert_eq!(images.len(), 1, "{report}");
    assert_eq!(images[0]["reference"], pause.reference());
    assert_eq!(images[0]["digest"], pause.top);
    let archive = PathBuf::from(images[0]["archive"].as_str().unwrap());
    assert_eq!(archive, out.join("pause:3.10.tar"));
    assert_eq!(
        images[0]["size"],
        std::fs::metadata(&archive).unwrap().len(),
        "{report}"
    );
    let failed = report["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{report}");
    assert_eq!(failed[0]["reference"], missing);
    assert!(
        failed[0]["error"].as_str().unwrap().contains("not found"),
        "{report}"
    );
}
