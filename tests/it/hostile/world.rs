//! A hostile world: locks and ISOs handed over by someone else, manifest URLs carrying passwords,
//! registries and mirrors that lie. Each scenario runs the real binary against the local world
//! (servers on loopback) and asserts what must not happen: no file outside `--output`, no
//! password in anything recorded, no credential over plain HTTP.

use std::fs;
use std::path::{Path, PathBuf};

use super::common::Scene;
use crate::support::hostile::*;
use crate::support::*;

const ISO: &str = "setup-v1.33.1-x86_64.iso";

#[test]
fn iso_names_from_flags_locks_and_isos_never_leave_the_output_dir() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    let (out, cache, lock) = (d.join("out"), d.join("cache"), d.join("run.lock"));
    let mut args = world_args(&world, world.dashboard_url());
    args.extend(["--output", p(&out), "--cache-dir", p(&cache)]);
    args.extend(["--lock-file", p(&lock)]);
    run(&mut build(&config, d, &args));

    // Each name a flag may carry: refused before anything is fetched, nothing written anywhere.
    let escape = d.join("escaped");
    let outside = format!("{}/x", escape.display());
    let out2 = d.join("out2");
    for bad in ["../escaped", outside.as_str(), "", "..", "a\nb", "bell\x07"] {
        let mut args = world_args(&world, world.dashboard_url());
        args.extend([
            "--output",
            p(&out2),
            "--cache-dir",
            p(&cache),
            "--name",
            bad,
        ]);
        fails(
            &mut build(&config, d, &args),
            2,
            &["--name", "is not a usable ISO name", "hint:"],
        );
        fails(
            &mut build(
                &config,
                d,
                &["--locked", p(&lock), "--output", p(&out2), "--name", bad],
            ),
            2,
            &["--name", "is not a usable ISO name"],
        );
    }

    // A lock whose request.name leaves the output dir, as a file and inside an ISO.
    let mut value: serde_json::Value = serde_json::from_slice(&fs::read(&lock).unwrap()).unwrap();
    let tree = d.join("tree");
    fs::create_dir_all(&tree).unwrap();
    for bad in ["../escaped", outside.as_str(), "", ".", "new\nline"] {
        value["request"]["name"] = serde_json::json!(bad);
        let hostile = d.join("hostile.lock");
        fs::write(&hostile, serde_json::to_string_pretty(&value).unwrap()).unwrap();
        let named = format!("{}: request.name", hostile.display());
        fails(
            &mut build(&config, d, &["--locked", p(&hostile), "--output", p(&out2)]),
            2,
            &[&named, "is not a usable ISO name", "hint:"],
        );
        fs::copy(&hostile, tree.join("cks-iso.lock")).unwrap();
        let iso = d.join("handed-over.iso");
        let _ = fs::remove_file(&iso);
        run(cks_iso().args(["iso", p(&tree), "-o", p(&iso), "--source-date-epoch", EPOCH]));
        let named = format!("{}:cks-iso.lock: request.name", iso.display());
        fails(
            &mut build(&config, d, &["--locked", p(&iso), "--output", p(&out2)]),
            2,
            &[&named, "is not a usable ISO name"],
        );
    }
    assert!(!escape.exists(), "a name wrote outside --output");
    assert!(files_under(&out2).is_empty(), "{:?}", files_under(&out2));
    let strays: Vec<String> = files_under(d)
        .into_iter()
        .filter(|f| f.contains("escaped") || f.ends_with(".iso") && !f.starts_with("out/"))
        .filter(|f| !f.ends_with("handed-over.iso"))
        .collect();
    assert!(strays.is_empty(), "written outside --output: {strays:?}");
}

#[test]
fn a_password_in_a_manifest_url_is_used_but_never_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    let (out, cache, lock) = (d.join("out"), d.join("cache"), d.join("run.lock"));
    const SECRET: &str = "s3cret-horse-staple";
    let base = world.upstream().url();
    let dashboard = format!(
        "{}/raw.githubusercontent.com/{}",
        base.replacen("http://", &format!("http://cks:{SECRET}@"), 1),
        cks_iso_testworld::upstream::DASHBOARD_PATH
    );
    let mut args = world_args(&world, &dashboard);
    args.extend(["--output", p(&out), "--cache-dir", p(&cache)]);
    args.extend(["--lock-file", p(&lock), "--log-format", "json", "-vv"]);
    let built = run(&mut build(&config, d, &args));
    let logs = combined(&built);
    assert!(
        !logs.contains(SECRET),
        "the password is in the logs:\n{logs}"
    );
    let stripped = format!(
        "{base}/raw.githubusercontent.com/{}",
        cks_iso_testworld::upstream::DASHBOARD_PATH
    );
    let lock_text = fs::read_to_string(&lock).unwrap();
    assert!(
        lock_text.contains(&format!("\"source\": \"{stripped}\"")),
        "the lock names the URL without its user: {lock_text}"
    );
    // Everything beside the ISO, everything inside it, and the cache.
    let inside = d.join("inside");
    fs::create_dir_all(&inside).unwrap();
    tool("bsdtar", ["-x", "-f", p(&out.join(ISO)), "-C", p(&inside)]);
    for root in [&out, &inside, &cache, &lock] {
        let paths = match root.is_dir() {
            true => files_under(root)
                .into_iter()
                .map(|f| root.join(f))
                .collect(),
            false => vec![root.to_path_buf()],
        };
        for path in paths {
            let bytes = fs::read(&path).unwrap();
            let found = bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
            assert!(!found, "{} records the password", path.display());
        }
    }
    let versions = fs::read_to_string(inside.join("versions.txt")).unwrap();
    assert!(versions.contains(&stripped), "{versions}");

    // The same URL as a registry mirror is refused without repeating the password.
    let mirror = format!("registry.k8s.io=http://cks:{SECRET}@127.0.0.1:1");
    let mut args = world_args(&world, world.dashboard_url());
    let out2 = d.join("out2");
    args.extend(["--output", p(&out2), "--cache-dir", p(&cache)]);
    args.extend(["--registry-mirror", &mirror]);
    let said = fails(&mut build(&config, d, &args), 2, &["--registry-mirror"]);
    assert!(!said.contains(SECRET), "{said}");
}

#[test]
fn an_https_registry_naming_a_plain_http_token_realm_never_gets_the_credentials_sent_there() {
    use cks_iso_testworld::registry::{DockerRegistry, Tls};
    use cks_iso_testworld::server::{HttpServer, Outgoing};
    use std::sync::{Arc, Mutex};

    const SECRET: &str = "right-horse-battery";
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The realm on plain HTTP records every Authorization header it is sent.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let realm = {
        let seen = seen.clone();
        HttpServer::start(move |request| {
            let auth = request.header("authorization").unwrap_or("none").to_owned();
            seen.lock().unwrap().push(auth);
            Outgoing::new(401, "no")
        })
    };
    let tls = Tls::generate();
    let storage = tempfile::tempdir().unwrap();
    let auth = format!(
        "auth:\n  token:\n    realm: http://{}/token\n    service: hostile\n    issuer: hostile\n    \
         rootcertbundle: {}\n",
        realm.host(),
        tls.ca().display()
    );
    let registry = DockerRegistry::start_with(storage.path(), Some(&tls), &auth);
    let basic = cks_iso_testworld::http::base64(format!("cks:{SECRET}").as_bytes());
    let authfile = d.join("auth.json");
    fs::write(
        &authfile,
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{basic}"}}}}}}"#,
            registry.host()
        ),
    )
    .unwrap();
    let mirror = format!("registry.k8s.io={}", registry.url());
    let args: Vec<String> = [
        "registry.k8s.io/pause:3.10",
        "--arch",
        "amd64",
        "--registry-mirror",
        &mirror,
        "--ca-file",
        p(&tls.ca()),
        "--authfile",
        p(&authfile),
        "--retries",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (cache, out) = (d.join("cache"), d.join("out"));
    let pulled = crate::support::registry::pull(&args, &cache, &out);
    let said = combined(&pulled);
    assert_eq!(pulled.status.code(), Some(1), "{said}");
    let sent = seen.lock().unwrap().clone();
    assert!(
        sent.iter().all(|a| a == "none"),
        "credentials went over plain HTTP to the realm: {sent:?}"
    );
    assert!(
        said.contains(&format!("http://{}/token", realm.host())) && said.contains("plain HTTP"),
        "{said}"
    );
    assert!(!said.contains(SECRET) && !said.contains(&basic), "{said}");
}

const CNI: &str = "github.com/containernetworking/plugins/releases/download/v1.6.2/cni-plugins-linux-amd64-v1.6.2.tgz";
const CRICTL: &str = "github.com/kubernetes-sigs/cri-tools/releases/download/v1.33.0/crictl-v1.33.0-linux-amd64.tar.gz";

/// Tarballs whose members leave the tree, as `(download path, members, the member named)`:
/// `..`, absolute paths, `..` through a directory, symbolic and hard links out of it.
fn leaving_tarballs() -> Vec<(&'static str, Vec<Member>, &'static str)> {
    vec![
        (CNI, vec![file("./bridge"), file("../evil")], "../evil"),
        (
            CNI,
            vec![file("./bridge"), file("/etc/cron.d/evil")],
            "/etc/cron.d/evil",
        ),
        (
            CNI,
            vec![file("./bridge"), file("./a/../../evil")],
            "./a/../../evil",
        ),
        (
            CNI,
            vec![file("./bridge"), link("./passwd", b'2', "/etc/passwd")],
            "./passwd",
        ),
        (
            CNI,
            vec![file("./bridge"), link("./sub/up", b'2', "../../etc")],
            "./sub/up",
        ),
        (
            CNI,
            vec![file("./bridge"), link("./shadow", b'1', "/etc/shadow")],
            "./shadow",
        ),
        (
            CNI,
            vec![file("./bridge"), link("./h", b'1', "../x")],
            "./h",
        ),
        (CRICTL, vec![file("../crictl")], "../crictl"),
    ]
}

/// Each leaving tarball, published in place of the genuine one, fails the build naming the
/// download and the member, and leaves nothing in its output directory.
fn assert_each_leaving_tarball_fails_build(scene: &Scene, cache: &Path) {
    for (i, (path, members, bad)) in leaving_tarballs().iter().enumerate() {
        publish(&scene.world, path, &hostile_tgz(members));
        let out = scene.dir().join(format!("out{i}"));
        let name = path.rsplit('/').next().unwrap();
        fails(
            &mut scene.build(cache, &out, &[]),
            1,
            &[name, &format!("{bad:?}")],
        );
        assert!(files_under(&out).is_empty(), "{:?}", files_under(&out));
    }
}

/// Links and `..` that stay inside are what real releases ship: published, they build.
fn assert_links_that_stay_inside_build(scene: &Scene, cache: &Path) {
    publish(
        &scene.world,
        CNI,
        &hostile_tgz(&[
            link("./", b'5', ""),
            file("./bridge"),
            link("./sub/", b'5', ""),
            link("./sub/b", b'2', "../bridge"),
            link("./hard", b'1', "./bridge"),
        ]),
    );
    publish(&scene.world, CRICTL, &hostile_tgz(&[file("crictl")]));
    run(&mut scene.build(cache, &scene.dir().join("fine"), &[]));
}

/// The good ISO in `good` with its CNI tarball swapped for one holding a link to `/etc/passwd`,
/// every checksum of it in the tree changed to match, written by `cks-iso iso` into `d`.
fn iso_with_a_leaving_cni_tarball(d: &Path, good: &Path) -> PathBuf {
    let tree = d.join("tree");
    fs::create_dir_all(&tree).unwrap();
    tool("bsdtar", ["-x", "-f", p(&good.join(ISO)), "-C", p(&tree)]);
    tool("chmod", ["-R", "u+w", p(&tree)]);
    let cni = tree.join("cni/cni-plugins-amd64.tgz");
    let old = cks_iso_testworld::upstream::sha256_hex(&fs::read(&cni).unwrap());
    let evil = hostile_tgz(&[file("./bridge"), link("./passwd", b'2', "/etc/passwd")]);
    let new = cks_iso_testworld::upstream::sha256_hex(&evil);
    fs::write(&cni, &evil).unwrap();
    for entry in files_under(&tree) {
        let path = tree.join(&entry);
        if let Ok(text) = fs::read_to_string(&path)
            && text.contains(&old)
        {
            fs::write(&path, text.replace(&old, &new)).unwrap();
        }
    }
    let iso = d.join("swapped.iso");
    run(cks_iso().args(["iso", p(&tree), "-o", p(&iso), "--source-date-epoch", EPOCH]));
    iso
}

#[test]
fn tarballs_whose_members_leave_the_tree_fail_build_and_verify() {
    let scene = Scene::start();
    let d = scene.dir();
    let (cache, good) = (d.join("cache"), d.join("good"));
    run(&mut scene.build(&cache, &good, &[]));

    assert_each_leaving_tarball_fails_build(&scene, &cache);
    assert_links_that_stay_inside_build(&scene, &cache);
    // verify reads the tarballs in the ISO the same way: a good ISO with the CNI tarball swapped.
    let iso = iso_with_a_leaving_cni_tarball(d, &good);
    fails(
        cks_iso().arg("verify").arg(&iso),
        1,
        &["cni/cni-plugins-amd64.tgz", "\"./passwd\""],
    );
}

#[test]
fn diff_reports_what_an_iso_lacks_though_its_lock_still_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    let (out, cache, lock) = (d.join("out"), d.join("cache"), d.join("run.lock"));
    let mut args = world_args(&world, world.dashboard_url());
    args.extend([
        "--output",
        p(&out),
        "--cache-dir",
        p(&cache),
        "--lock-file",
        p(&lock),
    ]);
    run(&mut build(&config, d, &args));
    let good = out.join(ISO);
    // The real ISO is what its lock says: nothing to report.
    for other in [&good, &lock] {
        let same = cks_iso()
            .arg("diff")
            .arg(other)
            .arg(&good)
            .output()
            .unwrap();
        assert_eq!(same.status.code(), Some(0), "{}", combined(&same));
    }

    // dashboard.yaml deleted, the pause archive replaced by 7 bytes, the lock left as it was.
    let tree = d.join("tree");
    fs::create_dir_all(&tree).unwrap();
    tool("bsdtar", ["-x", "-f", p(&good), "-C", p(&tree)]);
    tool("chmod", ["-R", "u+w", p(&tree)]);
    fs::remove_file(tree.join("dashboard.yaml")).unwrap();
    fs::write(tree.join("docker/pause:3.10.tar"), b"7 bytes").unwrap();
    let bad = d.join("bad.iso");
    run(cks_iso().args(["iso", p(&tree), "-o", p(&bad), "--source-date-epoch", EPOCH]));
    for other in [&good, &lock] {
        let started = std::time::Instant::now();
        let said = fails(
            cks_iso().arg("diff").arg(other).arg(&bad),
            1,
            &[
                "unlike its own lock",
                "dashboard.yaml",
                "docker/pause:3.10.tar",
            ],
        );
        assert!(said.contains("the ISO lacks it"), "{said}");
        assert!(said.contains("the archive holds only 7"), "{said}");
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    }
    let json = cks_iso()
        .args(["diff", "--json", p(&lock), p(&bad)])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["identical"], false);
    assert_eq!(
        report["unlike_lock"].as_array().unwrap().len(),
        2,
        "{report:#}"
    );
}

#[test]
fn a_bad_image_inside_a_manifest_is_a_failure_of_the_work_naming_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    let network = d.join("network.yaml");
    fs::write(
        &network,
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - image: \"Bad Image::ref\"\n",
    )
    .unwrap();
    let mut args = world_args(&world, world.dashboard_url());
    args[5] = p(&network);
    let (out, cache) = (d.join("out"), d.join("cache"));
    args.extend(["--output", p(&out), "--cache-dir", p(&cache)]);
    fails(
        &mut build(&config, d, &args),
        1,
        &["network.yaml", "\"Bad Image::ref\"", "hint:"],
    );
}

/// An ISO of `cks_tree` with `extra` files added, written with `cks-iso iso`.
fn tree_iso(dir: &Path, name: &str, extra: &[(&str, &[u8])]) -> PathBuf {
    let root = dir.join(format!("{name}.d"));
    cks_tree(&root);
    for (path, bytes) in extra {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }
    let iso = dir.join(format!("{name}.iso"));
    run(cks_iso().args(["iso", p(&root), "-o", p(&iso), "--source-date-epoch", EPOCH]));
    iso
}

#[test]
fn names_and_lines_from_an_iso_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = tree_iso(d, "plain", &[]);
    let evil = "notes\x1b]0;pwned\x07\x1b[2J.txt";
    let hostile = tree_iso(d, "hostile", &[(evil, b"x"), ("docker/x\x1b[31m", b"y")]);
    for args in [
        vec!["diff", p(&plain), p(&hostile)],
        vec!["verify", p(&hostile)],
    ] {
        let out = cks_iso().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", combined(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            !stdout.contains('\x1b') && !stdout.contains('\x07'),
            "{stdout:?}"
        );
        assert!(stdout.contains("\\u{1b}"), "{args:?}: {stdout}");
    }
}

#[test]
fn verify_refuses_a_volume_declaring_more_blocks_than_the_file_has() {
    let dir = tempfile::tempdir().unwrap();
    let iso = tree_iso(dir.path(), "a", &[]);
    let mut bytes = fs::read(&iso).unwrap();
    // The primary volume descriptor's volume space size, both-endian, at 16 * 2048 + 80.
    let at = 16 * 2048 + 80;
    let blocks: u32 = 0xFFFF_FFF0;
    bytes[at..at + 4].copy_from_slice(&blocks.to_le_bytes());
    bytes[at + 4..at + 8].copy_from_slice(&blocks.to_be_bytes());
    let lying = dir.path().join("lying.iso");
    fs::write(&lying, &bytes).unwrap();
    fails(
        cks_iso().arg("verify").arg(&lying),
        1,
        &["lying.iso", "the volume declares", "a truncated copy"],
    );
}
