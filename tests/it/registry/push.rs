//! `cks-iso push` into a second real registry (Debian's `docker-registry`), judged by skopeo:
//! a lock's images with the source's index and manifest digests, a second push that starts no
//! upload (counted at a front that sees every request), an ISO pushed with the world stopped,
//! and the failures a user meets (a target refusing a blob, wrong credentials).

use std::path::{Path, PathBuf};

use crate::support::push::{CuttingFront, Front, fixtures, lock_of, push, raw_digest, write_lock};
use crate::support::*;
use cks_iso_testworld::basic_front::BasicFront;
use cks_iso_testworld::images::Fixture;
use cks_iso_testworld::registry::{self, DockerRegistry};

#[test]
fn a_lock_is_pushed_with_its_digests_and_a_second_push_uploads_nothing() {
    let world = registry::world();
    let images = fixtures(&world);
    assert!(images.len() >= 2, "the corpus has tagged amd64 images");
    let tmp = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let front = Front::start(&target.host(), false);
    let lock = write_lock(tmp.path(), &lock_of(&images));
    let cache = tmp.path().join("cache");
    let mapping = tmp.path().join("mapping.txt");
    let mut args: Vec<String> = vec![
        "--locked".into(),
        p(&lock).into(),
        "--to".into(),
        format!("{}/mirror", front.host()),
        "--insecure-registry".into(),
        front.host(),
        "--mapping-file".into(),
        p(&mapping).into(),
        // Small chunks: the 24 KiB layers go up as PATCHes.
        "--chunk-size".into(),
        "4096".into(),
    ];
    args.extend(world.mirror_args(&world.registry.url()));
    let out = push(&cache, &args);
    assert!(out.status.success(), "push: {}", stderr(&out));
    assert!(front.count("POST /v2/mirror/") > 0, "uploads went through");
    // The corpus's images share layers: the second repository mounts them from the first.
    assert!(
        front.seen_any("?mount=sha256:"),
        "a cross-repository mount was asked"
    );
    let err = stderr(&out);
    let mounted: u64 = (err
        .split(", ")
        .find_map(|part| part.strip_suffix(" mounted")))
    .and_then(|n| n.parse().ok())
    .unwrap_or_else(|| panic!("a summary with mounts in\n{err}"));
    assert!(mounted >= 1, "{err}");
    let lines = std::fs::read_to_string(&mapping).unwrap();
    for f in &images {
        let tag = f.tag.as_deref().unwrap();
        let pushed = format!("{}/mirror/{}:{tag}", target.host(), f.name);
        let source = format!("{}/{}:{tag}", world.registry.host(), f.name);
        assert_eq!(raw_digest(&pushed), f.top, "{pushed}: the index digest");
        assert_eq!(raw_digest(&source), f.top, "{source}");
        let platform = &f.per_arch["amd64"].manifest;
        let by_digest = format!("{}/mirror/{}@{platform}", target.host(), f.name);
        assert_eq!(raw_digest(&by_digest), *platform, "{by_digest}");
        let line = format!(
            "{} {}/mirror/{}:{tag}@{}",
            f.reference(),
            front.host(),
            f.name,
            f.top
        );
        assert!(lines.lines().any(|l| l == line), "{line} in\n{lines}");
    }
    front.forget();
    let again = push(&cache, &args);
    assert!(again.status.success(), "second push: {}", stderr(&again));
    assert_eq!(front.count("POST "), 0, "no upload started the second time");
    assert_eq!(front.count("PUT "), 0, "no manifest put the second time");
    assert!(front.count("HEAD ") > 0);
    let mut dry = args.clone();
    dry.push("--dry-run".into());
    let out = push(&cache, &dry);
    assert!(out.status.success(), "dry run: {}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("would upload 0 blobs"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn an_iso_is_pushed_with_the_world_stopped() {
    let world = registry::world();
    let images = fixtures(&world);
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let docker = tree.join("docker");
    std::fs::create_dir_all(&docker).unwrap();
    let mut args: Vec<String> = vec!["--arch".into(), "amd64".into()];
    args.extend(images.iter().map(Fixture::reference));
    args.extend(world.mirror_args(&world.registry.url()));
    let pulled = crate::support::registry::pull(&args, &tmp.path().join("pullcache"), &docker);
    assert!(pulled.status.success(), "pull: {}", stderr(&pulled));
    write_lock(&tree, &lock_of(&images));
    let iso = tmp.path().join("setup.iso");
    ok(run(cks_iso().arg("iso").arg(&tree).arg("-o").arg(&iso)));
    drop(world);
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let cache = tmp.path().join("cache");
    let args: Vec<String> = vec![
        p(&iso).into(),
        "--to".into(),
        target.host(),
        "--insecure-registry".into(),
        target.host(),
    ];
    let out = push(&cache, &args);
    assert!(out.status.success(), "push ISO: {}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    for f in &images {
        let tag = f.tag.as_deref().unwrap();
        let line = (stdout.lines())
            .find(|l| l.starts_with(&format!("{} ", f.reference())))
            .unwrap_or_else(|| panic!("{} in\n{stdout}", f.reference()));
        let digest = line.rsplit('@').next().unwrap();
        let platform = &f.per_arch["amd64"].manifest;
        // The whole index where the ISO holds every manifest it lists, else amd64's manifest.
        assert!(digest == f.top || digest == platform, "{line}");
        let pushed = format!("{}/{}:{tag}", target.host(), f.name);
        assert_eq!(raw_digest(&pushed), digest, "{pushed}");
        let by_digest = format!("{}/{}@{platform}", target.host(), f.name);
        assert_eq!(raw_digest(&by_digest), *platform, "{by_digest}");
    }
    // containerd pulls the images by their upstream names through the target, configured with the
    // guide's hosts.toml (one directory per upstream registry, the path kept by override_path).
    if let Some(containerd) = crate::support::containerd::Containerd::start() {
        let hosts = tmp.path().join("certs.d");
        for f in &images {
            let dir = hosts.join(f.host());
            std::fs::create_dir_all(&dir).unwrap();
            let toml = format!(
                "server = \"https://{host}\"\n\n[host.\"http://{target}/v2/{host}\"]\n  \
                 capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n",
                host = f.host(),
                target = target.host()
            );
            std::fs::write(dir.join("hosts.toml"), toml).unwrap();
        }
        for f in &images {
            let reference = f.reference();
            containerd.ctr(&[
                "images",
                "pull",
                "--hosts-dir",
                p(&hosts),
                "--platform",
                "linux/amd64",
                &reference,
            ]);
            let listed = containerd.ctr(&["images", "ls", "-q"]);
            let listed = String::from_utf8_lossy(&listed.stdout);
            assert!(
                listed.lines().any(|l| l == reference),
                "{reference} in\n{listed}"
            );
        }
    }
}

#[test]
fn a_refused_blob_and_wrong_credentials_fail_naming_the_image() {
    let world = registry::world();
    let images = fixtures(&world);
    let tmp = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let refusing = Front::start(&target.host(), true);
    let lock = write_lock(tmp.path(), &lock_of(&images[..1]));
    let cache = tmp.path().join("cache");
    let mirror = world.mirror_args(&world.registry.url());
    let to = |host: String| -> Vec<String> {
        let mut args = vec![
            "--locked".into(),
            p(&lock).into(),
            "--to".into(),
            host.clone(),
            "--insecure-registry".into(),
            host,
        ];
        args.extend(mirror.iter().cloned());
        args
    };
    let out = push(&cache, &to(refusing.host()));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    for needle in [
        images[0].reference().as_str(),
        "refused blob sha256:",
        "HTTP 400",
        "storage quota exceeded",
    ] {
        assert!(err.contains(needle), "{needle:?} in\n{err}");
    }
    assert!(out.stdout.is_empty(), "nothing claimed pushed");
    let basic = BasicFront::start(&target.host(), "alice", "right");
    let auth = tmp.path().join("auth.json");
    let wrong = cks_iso_testworld::http::base64(b"alice:wrong");
    std::fs::write(
        &auth,
        format!(r#"{{"auths":{{"{}":{{"auth":"{wrong}"}}}}}}"#, basic.host()),
    )
    .unwrap();
    let mut args = to(basic.host());
    args.extend(["--to-authfile".into(), p(&auth).into()]);
    let out = push(&cache, &args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    for needle in ["refused access", "docker login"] {
        assert!(err.contains(needle), "{needle:?} in\n{err}");
    }
}

/// Pushes one image through a [`CuttingFront`]; the bytes `PATCH`ed in all, the sizes of the
/// blobs the chunked sessions were closed with, and push's stderr.
fn push_cut(partial: bool) -> (u64, u64, String) {
    let world = registry::world();
    let images = fixtures(&world);
    let tmp = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let front = CuttingFront::start(&target.host(), partial);
    let lock = write_lock(tmp.path(), &lock_of(&images[..1]));
    let host = front.server.host();
    let mut args: Vec<String> = vec![
        "--locked".into(),
        p(&lock).into(),
        "--to".into(),
        host.clone(),
        "--insecure-registry".into(),
        host,
        "--chunk-size".into(),
        "4096".into(),
    ];
    args.extend(world.mirror_args(&world.registry.url()));
    let out = push(&tmp.path().join("cache"), &args);
    assert!(out.status.success(), "push: {}", stderr(&out));
    assert!(front.cut.lock().unwrap().is_some(), "a PATCH was cut");
    let sessions = front.sessions.lock().unwrap().clone();
    let repository = format!(
        "{}/{}",
        images[0].host(),
        images[0].name.split_once('/').unwrap().1
    );
    let sent: u64 = sessions.values().map(|(bytes, _)| bytes).sum();
    // The size of each blob a session was closed with, as the target serves it.
    let mut sizes = 0;
    let chunked = sessions.values().filter(|(bytes, _)| *bytes > 0);
    for digest in chunked.filter_map(|(_, d)| d.as_deref()) {
        let head = cks_iso_testworld::http::request(
            &target.host(),
            "HEAD",
            &format!("/v2/{repository}/blobs/{digest}"),
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(head.status, 200, "{digest} is at the target");
        sizes += head
            .header("content-length")
            .unwrap()
            .parse::<u64>()
            .unwrap();
    }
    let f = &images[0];
    let pushed = format!("{}/{}:{}", target.host(), f.name, f.tag.as_deref().unwrap());
    assert_eq!(raw_digest(&pushed), f.top);
    (sent, sizes, stderr(&out))
}

#[test]
fn a_chunk_broken_before_the_registry_saw_it_is_sent_again_alone() {
    let (sent, sizes, err) = push_cut(false);
    assert!(
        err.contains("1 chunked upload resumed, 0 started again"),
        "{err}"
    );
    assert_eq!(
        sent,
        sizes + 4096,
        "one 4096-byte chunk sent again, not the blob"
    );
}

#[test]
fn a_session_distribution_cancels_after_a_partial_chunk_starts_again() {
    let (sent, sizes, err) = push_cut(true);
    assert!(
        err.contains("0 chunked uploads resumed, 1 started again"),
        "{err}"
    );
    // The broken session's one chunk is lost; the blob goes again whole in a new session.
    assert_eq!(
        sent,
        sizes + 4096,
        "the broken chunk, then the blob in a new session"
    );
}

/// An htpasswd file in `dir` for alice with the password "right", in bcrypt as distribution's
/// htpasswd wants it (perl's crypt(), from libxcrypt, writes it).
fn alices_htpasswd(dir: &Path) -> PathBuf {
    let hash = run_tool(
        "perl",
        &[
            "-e",
            r#"print crypt("right", q($2y$05$cksisotestworldsaltsaa))"#,
        ],
    );
    let htpasswd = dir.join("htpasswd");
    std::fs::write(
        &htpasswd,
        format!("alice:{}\n", String::from_utf8_lossy(&hash.stdout)),
    )
    .unwrap();
    htpasswd
}

/// An auth file in `dir` logging alice in at `host` with `password`.
fn alices_login(dir: &Path, host: &str, password: &str) -> PathBuf {
    let file = dir.join(format!("auth-{password}.json"));
    let basic = cks_iso_testworld::http::base64(format!("alice:{password}").as_bytes());
    let text = format!(r#"{{"auths":{{"{host}":{{"auth":"{basic}"}}}}}}"#);
    std::fs::write(&file, text).unwrap();
    file
}

/// skopeo, trusting `ca` and logged in as alice, reads `pushed`'s manifest, whose digest is
/// `top`.
fn assert_skopeo_reads_as_alice(dir: &Path, ca: &Path, pushed: &str, top: &str) {
    // skopeo takes CAs from `*.crt` files in --cert-dir.
    let certs = dir.join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::copy(ca, certs.join("ca.crt")).unwrap();
    let raw = run_tool(
        "skopeo",
        &[
            "inspect",
            "--raw",
            "--creds",
            "alice:right",
            "--cert-dir",
            p(&certs),
            pushed,
        ],
    );
    assert!(raw.status.success(), "skopeo: {}", stderr(&raw));
    assert_eq!(cks_iso_testworld::http::sha256(&raw.stdout), top);
}

#[test]
fn a_tls_registry_with_htpasswd_takes_the_push_with_its_own_login() {
    let world = registry::world();
    let images = fixtures(&world);
    let tmp = tempfile::tempdir().unwrap();
    let htpasswd = alices_htpasswd(tmp.path());
    let tls = registry::Tls::generate();
    let storage = tempfile::tempdir().unwrap();
    let auth = format!(
        "auth:\n  htpasswd:\n    realm: cks-iso-testworld\n    path: {}\n",
        htpasswd.display()
    );
    let target = DockerRegistry::start_with(storage.path(), Some(&tls), &auth);
    let lock = write_lock(tmp.path(), &lock_of(&images[..1]));
    let args = |password: &str| -> Vec<String> {
        let authfile = alices_login(tmp.path(), &target.host(), password);
        let mut args: Vec<String> = vec![
            "--locked".into(),
            p(&lock).into(),
            "--to".into(),
            format!("{}/cks", target.host()),
            "--ca-file".into(),
            p(&tls.ca()).into(),
            "--to-authfile".into(),
            p(&authfile).into(),
        ];
        args.extend(world.mirror_args(&world.registry.url()));
        args
    };
    let cache = tmp.path().join("cache");
    let out = push(&cache, &args("wrong"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    for needle in ["refused access", "HTTP 401", "docker login"] {
        assert!(err.contains(needle), "{needle:?} in\n{err}");
    }
    let out = push(&cache, &args("right"));
    assert!(out.status.success(), "push: {}", stderr(&out));
    let f = &images[0];
    let pushed = format!(
        "docker://{}/cks/{}:{}",
        target.host(),
        f.name,
        f.tag.as_deref().unwrap()
    );
    assert_skopeo_reads_as_alice(tmp.path(), &tls.ca(), &pushed, &f.top);
}

#[test]
fn a_token_registry_issues_push_scoped_tokens_for_the_targets_own_login() {
    use cks_iso_testworld::registry::{FrontAuth, TokenFront};
    let world = registry::world();
    let images = fixtures(&world);
    let tmp = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let auth = FrontAuth::Password {
        user: "bob".into(),
        password: "s3cret".into(),
    };
    let front = TokenFront::start(&target.host(), auth);
    let lock = write_lock(tmp.path(), &lock_of(&images[..1]));
    let authfile = tmp.path().join("auth.json");
    let basic = cks_iso_testworld::http::base64(b"bob:s3cret");
    let text = format!(r#"{{"auths":{{"{}":{{"auth":"{basic}"}}}}}}"#, front.host());
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
    let f = &images[0];
    let want = format!("repository:mirror/{}:pull,push", f.name);
    // The front records the query as sent: `,` percent-encoded, as token services decode it.
    let scopes: Vec<String> = (front.scopes().iter())
        .map(|s| s.replace("%2C", ","))
        .collect();
    assert!(scopes.contains(&want), "{want} in {scopes:?}");
    let pushed = format!(
        "{}/mirror/{}:{}",
        target.host(),
        f.name,
        f.tag.as_deref().unwrap()
    );
    assert_eq!(raw_digest(&pushed), f.top);
}

#[test]
fn a_mount_at_a_token_registry_asks_one_token_for_both_repositories() {
    use cks_iso_testworld::registry::{FrontAuth, TokenFront};
    let world = registry::world();
    let images = fixtures(&world);
    let tmp = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let auth = FrontAuth::Password {
        user: "bob".into(),
        password: "s3cret".into(),
    };
    let front = TokenFront::start(&target.host(), auth);
    // As distribution's token authorization: a mount needs `pull` on the repository it reads.
    front.require_scopes();
    let lock = write_lock(tmp.path(), &lock_of(&images));
    let authfile = tmp.path().join("auth.json");
    let basic = cks_iso_testworld::http::base64(b"bob:s3cret");
    let text = format!(r#"{{"auths":{{"{}":{{"auth":"{basic}"}}}}}}"#, front.host());
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
    let err = stderr(&out);
    let mounted: u64 = (err
        .split(", ")
        .find_map(|part| part.strip_suffix(" mounted")))
    .and_then(|n| n.parse().ok())
    .unwrap_or_else(|| panic!("a summary with mounts in\n{err}"));
    assert!(
        mounted >= 1,
        "the corpus's shared layers are mounted: {err}"
    );
    let scopes: Vec<String> = (front.scopes().iter())
        .map(|s| s.replace("%2C", ","))
        .collect();
    let both = scopes
        .iter()
        .find(|s| s.contains(' '))
        .unwrap_or_else(|| panic!("one token asked for two repositories in {scopes:?}"));
    let words: Vec<&str> = both.split(' ').collect();
    assert!(
        words.len() == 2
            && words[0].ends_with(":pull,push")
            && words[1].starts_with("repository:mirror/")
            && words[1].ends_with(":pull")
            && words[0] != words[1],
        "{both}"
    );
    for f in &images {
        let tag = f.tag.as_deref().unwrap();
        let pushed = format!("{}/mirror/{}:{tag}", target.host(), f.name);
        assert_eq!(raw_digest(&pushed), f.top, "{pushed}");
    }
}
