//! Registering ISOs in CloudStack (docs/guide/registration.md) against the test world's CloudStack
//! stand-in — first proven against the Python `cs` client from PyPI, then judging cks-iso:
//! `build --register` for both arches, idempotence and `--replace`, the URL pre-checks and
//! CloudStack's own download failures, `versions list`/`retire`, and credentials from
//! CloudMonkey's and `cs`'s settings that never show.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use cks_iso_testworld::cloudstack::Options;
use cks_iso_testworld::world::{Options as WorldOptions, World};
use serde_json::Value;

use crate::support::cloud::{Cloud, sha256_of, small_iso};
use crate::support::*;

/// A version as the stand-in keeps it, field by field.
type Version = BTreeMap<String, String>;

/// `scripts/cs-calls.py PHASE ARGS` with the venv's `cs` against `cloud`'s stand-in.
fn cs(cloud: &Cloud, secret: &str, phase: &str, args: &[&str]) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv-sbom/bin/python");
    let has_cs = Command::new(&python)
        .args(["-c", "import cs"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_cs,
        "the `cs` package is not in {}: run `make deps`",
        python.display()
    );
    let out = ok(no_internet(&mut Command::new(&python))
        .arg(root.join("scripts/cs-calls.py"))
        .args([
            &cloud.api.endpoint(),
            &cloud.api.options().api_key,
            secret,
            phase,
        ])
        .args(args)
        .output()
        .unwrap());
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_stand_in_answers_the_cs_client_as_cloudstack_does() {
    let cloud = Cloud::start(Options::default());
    let iso = small_iso(cloud.dir.path(), "cs.iso", "1.33.1", "amd64", 1);
    cloud.publish(&iso);
    let url = format!("{}/cs.iso", cloud.host.url());
    let checksum = format!("{{SHA-256}}{}", sha256_of(&iso));
    let secret = cloud.api.options().secret_key.clone();
    let r = cs(&cloud, &secret, "register", &[&url, &checksum]);
    assert_eq!(r["version"], "4.22.0.0", "{r}");
    assert_eq!(r["zones"], serde_json::json!(["zone-a", "zone-b"]));
    assert_eq!(r["added_isostate"], "Creating");
    assert_eq!(
        (&r["isostate"], &r["arch"]),
        (&"Ready".into(), &"x86_64".into()),
        "{r}"
    );
    assert_eq!(r["zones_ready"], serde_json::json!([true, true]));
    // listIsos answers the hex without its algorithm, as TemplateJoinDaoImpl strips it.
    assert_eq!(r["checksum"], sha256_of(&iso).as_str(), "{r}");
    assert_eq!(r["too_few_cpus"][0], 431, "{r}");
    assert_eq!(r["too_few_cpus"][1], 431);
    // The add came as a POST (cs's method=post), the lists as GETs, every one signed v3.
    let seen = cloud.api.seen();
    let add = seen
        .iter()
        .find(|s| s.command == "addKubernetesSupportedVersion")
        .unwrap();
    assert_eq!(add.method, "POST");
    assert!(
        seen.iter()
            .all(|s| s.params.get("signatureVersion").is_some_and(|v| v == "3"))
    );
    // The async delete, failed while a cluster uses the version, then done.
    let id = r["id"].as_str().unwrap();
    let cluster = cloud.api.add_cluster("prod", id);
    let failed = cs(&cloud, &secret, "delete", &[id]);
    assert_eq!(failed["job_failed"]["errorcode"], 530, "{failed}");
    assert!(
        failed["job_failed"]["errortext"]
            .as_str()
            .unwrap()
            .contains("Existing clusters currently using the version")
    );
    assert!(
        cloud
            .api
            .commands()
            .contains(&"queryAsyncJobResult".to_owned())
    );
    assert!(!cluster.is_empty());
    // Refused: a wrong secret, and (cs's known limitation) a `~` that cs does not escape as Java does.
    let wrong = cs(&cloud, &secret, "wrong-secret", &[]);
    assert_eq!(wrong["refused"][0], 401, "{wrong}");
    assert_eq!(cs(&cloud, &secret, "tilde", &[])["refused"], 401);
}

/// `build --register` of the world's request for both arches into `out`, published at `cloud`'s
/// web server, with `extra`.
fn build_register(world: &World, cloud: &Cloud, out: &Path, extra: &[&str]) -> Command {
    let tmp = cloud.dir.path().join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = build_in(world.config_path(), &tmp);
    cmd.env("HOME", &cloud.home)
        .args([
            "--kubernetes",
            world.kubernetes(),
            "--network",
            world.network_url(),
        ])
        .args([
            "--dashboard",
            world.dashboard_url(),
            "--arch",
            "amd64",
            "--arch",
            "arm64",
        ])
        .args([
            "--output",
            p(out),
            "--cache-dir",
            p(&cloud.dir.path().join("cache")),
        ])
        .args([
            "--register",
            "--publish-url",
            &cloud.host.url(),
            "--poll-interval",
            "0.1",
        ])
        .args(extra);
    cmd
}

/// The ISO in `out` whose name ends in `-UNAME.iso`.
fn iso_of(out: &Path, uname: &str) -> PathBuf {
    fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(&format!("-{uname}.iso")))
        .unwrap()
}

/// After the first `build --register`: one version per arch, each with its ISO's checksum and
/// name, Ready in both zones. Returns the versions.
fn assert_both_arches_registered(cloud: &Cloud, out: &Path, log: &str) -> Vec<Version> {
    let versions = cloud.api.versions();
    assert_eq!(versions.len(), 2, "{versions:?}\n{log}");
    for arch in ["x86_64", "aarch64"] {
        let v = versions
            .iter()
            .find(|v| v["arch"] == arch)
            .unwrap_or_else(|| panic!("{arch}: {versions:?}"));
        let iso = iso_of(out, arch);
        assert_eq!(v["checksum"], format!("{{SHA-256}}{}", sha256_of(&iso)));
        assert_eq!(v["isostate"], "Ready");
        assert_eq!(v["name"], iso.file_stem().unwrap().to_string_lossy());
    }
    assert!(log.contains("zone-a: Ready, zone-b: Ready"), "{log}");
    versions
}

/// `--replace` with a changed ISO under the amd64 version's name: refused without it, then one
/// enabled version of the name, with the new checksum, the old one disabled, not deleted.
fn assert_replace_leaves_one_enabled(cloud: &Cloud, out: &Path, amd: &Version) {
    let name = amd["name"].clone();
    let changed_dir = cloud.dir.path().join("changed");
    fs::create_dir_all(&changed_dir).unwrap();
    let changed = small_iso(
        &changed_dir,
        &format!("{name}.iso"),
        &amd["semanticversion"],
        "amd64",
        7,
    );
    let local = out.join(format!("{name}.iso"));
    fs::copy(&changed, &local).unwrap();
    fails(
        &mut cloud.register(&[&local], &[]),
        1,
        &["already has a version named", "--replace"],
    );
    ok(cloud
        .register(&[&local], &["--replace", "--retire", "disable"])
        .output()
        .unwrap());
    let named: Vec<_> = cloud
        .api
        .versions()
        .into_iter()
        .filter(|v| v["name"] == name)
        .collect();
    let enabled: Vec<_> = named.iter().filter(|v| v["state"] == "Enabled").collect();
    assert_eq!(enabled.len(), 1, "{named:?}");
    assert_eq!(
        enabled[0]["checksum"],
        format!("{{SHA-256}}{}", sha256_of(&local))
    );
    assert_eq!(
        named.len(),
        2,
        "the old one is disabled, not deleted: {named:?}"
    );
}

#[test]
fn build_register_registers_both_arches_once_and_replace_leaves_one_enabled() {
    let world = World::start(WorldOptions::default());
    let cloud = Cloud::start(Options::default());
    let out = cloud.dir.path().join("out");
    // The build writes into `out`; the web server serves `published`: publish between build and
    // registration by making them one directory.
    fs::remove_dir(&cloud.published).unwrap();
    std::os::unix::fs::symlink(&out, &cloud.published).unwrap();
    let first = ok(build_register(&world, &cloud, &out, &[]).output().unwrap());
    let versions = assert_both_arches_registered(&cloud, &out, &combined(&first));
    // A second run sends no add.
    cloud.api.clear_seen();
    let second = ok(build_register(&world, &cloud, &out, &[]).output().unwrap());
    assert!(
        !cloud
            .api
            .commands()
            .contains(&"addKubernetesSupportedVersion".to_owned()),
        "{}",
        combined(&second)
    );
    assert!(combined(&second).contains("already registered"));
    let amd = versions.iter().find(|v| v["arch"] == "x86_64").unwrap();
    assert_replace_leaves_one_enabled(&cloud, &out, amd);
}

/// A cloud whose web server publishes an amd64 ISO of Kubernetes 1.33.1, and the local ISO.
fn cloud_publishing_one_iso() -> (Cloud, PathBuf) {
    let cloud = Cloud::start(Options::default());
    let iso = small_iso(
        cloud.dir.path(),
        "setup-v1.33.1-x86_64.iso",
        "1.33.1",
        "amd64",
        1,
    );
    cloud.publish(&iso);
    (cloud, iso)
}

/// A redirect (found by cks-iso's HEAD) and a URL longer than 255 characters exit 1 with the
/// reason and a hint before CloudStack hears of them.
#[test]
fn redirects_and_overlong_urls_are_refused_before_cloudstack_is_asked() {
    let (cloud, iso) = cloud_publishing_one_iso();
    let url = |path: &str| format!("{}/{path}", cloud.host.url());
    let redirect = url("redirect/setup-v1.33.1-x86_64.iso");
    fails(
        &mut cloud.cks(&["register", p(&iso), "--url", &redirect]),
        1,
        &["302", "store.download.follow.redirects", "hint:"],
    );
    let long = url(&format!("{}.iso", "a".repeat(250)));
    fails(
        &mut cloud.cks(&["register", p(&iso), "--url", &long]),
        1,
        &["at most 255", "hint:"],
    );
    assert!(
        cloud.api.commands().is_empty(),
        "{:?}",
        cloud.api.commands()
    );
}

/// A file of the same size but other bytes at the URL: CloudStack's checksum comparison fails,
/// and cks-iso exits 1 with CloudStack's reason, the zone and a hint.
#[test]
fn a_published_file_with_other_bytes_fails_cloudstack_s_checksum_with_a_hint() {
    let (cloud, iso) = cloud_publishing_one_iso();
    let other = small_iso(
        &cloud.dir.path().join("other"),
        "setup-v1.33.1-x86_64.iso",
        "1.33.1",
        "amd64",
        2,
    );
    assert_eq!(
        fs::metadata(&other).unwrap().len(),
        fs::metadata(&iso).unwrap().len()
    );
    fs::copy(&other, cloud.published.join("setup-v1.33.1-x86_64.iso")).unwrap();
    fails(
        &mut cloud.register(&[&iso], &[]),
        1,
        &[
            "didn't match the given value",
            "zone-a",
            "hint: the file at the URL is not this ISO",
        ],
    );
}

/// A published file that is not ISO 9660 at all: CloudStack refuses its content, and cks-iso
/// exits 1 with the reason and a hint.
#[test]
fn a_published_file_that_is_not_iso_9660_fails_with_a_hint() {
    let cloud = Cloud::start(Options::default());
    let iso = small_iso(
        cloud.dir.path(),
        "setup-v1.33.2-x86_64.iso",
        "1.33.2",
        "amd64",
        1,
    );
    let size = fs::metadata(&iso).unwrap().len() as usize;
    fs::write(
        cloud.published.join("setup-v1.33.2-x86_64.iso"),
        vec![b'x'; size],
    )
    .unwrap();
    fails(
        &mut cloud.register(&[&iso], &[]),
        1,
        &[
            "Template content is unsupported",
            "hint: the file at the URL is not an ISO 9660 image",
        ],
    );
}

/// arm64 on a server without `arch` (4.20.0): refused after `listCapabilities`, before any add.
#[test]
fn arm64_on_a_server_without_arch_is_refused_before_any_add() {
    let old = Cloud::start(Options {
        version: "4.20.0.0".into(),
        ..Options::default()
    });
    let arm = small_iso(
        old.dir.path(),
        "setup-v1.33.1-aarch64.iso",
        "1.33.1",
        "arm64",
        1,
    );
    old.publish(&arm);
    fails(
        &mut old.register(&[&arm], &[]),
        1,
        &["no arch parameter", "4.20.1", "hint:"],
    );
    assert!(old.api.commands().contains(&"listCapabilities".to_owned()));
    assert!(
        !old.api
            .commands()
            .contains(&"addKubernetesSupportedVersion".to_owned())
    );
}

/// A `~` in a signed value (here the URL) is encoded as CloudStack's URLEncoder does.
#[test]
fn a_tilde_in_a_value_is_signed_as_cloudstack_verifies_it() {
    let cloud = Cloud::start(Options::default());
    let iso = small_iso(
        cloud.dir.path(),
        "setup-v1.33.1-x86_64.iso",
        "1.33.1",
        "amd64",
        1,
    );
    fs::copy(&iso, cloud.published.join("~setup.iso")).unwrap();
    let url = format!("{}/~setup.iso", cloud.host.url());
    ok(cloud
        .cks(&["register", p(&iso), "--url", &url, "--poll-interval", "0.1"])
        .output()
        .unwrap());
    let v = &cloud.api.versions()[0];
    assert_eq!(
        (v["url"].as_str(), v["isostate"].as_str()),
        (url.as_str(), "Ready")
    );
}

/// A cloud with 1.33.1, 1.33.2, 1.33.3 and 1.32.5 registered, 1.33.1 used by the cluster
/// `prod`.
fn cloud_with_four_versions_one_in_use() -> Cloud {
    let cloud = Cloud::start(Options::default());
    let d = cloud.dir.path();
    let isos: Vec<_> = ["1.33.1", "1.33.2", "1.33.3", "1.32.5"]
        .iter()
        .map(|v| {
            let iso = small_iso(d, &format!("setup-v{v}-x86_64.iso"), v, "amd64", 1);
            cloud.publish(&iso);
            iso
        })
        .collect();
    let refs: Vec<&Path> = isos.iter().map(|p| p.as_path()).collect();
    ok(cloud.register(&refs, &[]).output().unwrap());
    let in_use = cloud
        .api
        .versions()
        .into_iter()
        .find(|v| v["semanticversion"] == "1.33.1")
        .unwrap()["id"]
        .clone();
    cloud.api.add_cluster("prod", &in_use);
    cloud
}

/// `versions retire --keep 1 --retire delete` with `extra`, which must succeed; its output.
fn retire(cloud: &Cloud, extra: &[&str]) -> String {
    let mut cmd = cloud.cks(&["versions", "retire", "--keep", "1", "--retire", "delete"]);
    combined(&ok(cmd.args(extra).output().unwrap()))
}

/// `versions retire --dry-run` says what it would delete and what is in use, and only reads.
#[test]
fn versions_retire_dry_run_only_reads() {
    let cloud = cloud_with_four_versions_one_in_use();
    cloud.api.clear_seen();
    let text = retire(&cloud, &["--dry-run"]);
    assert!(
        text.contains("would delete") && text.contains("in use by cluster prod"),
        "{text}"
    );
    assert!(
        cloud
            .api
            .commands()
            .iter()
            .all(|c| c.starts_with("list") || c == "queryAsyncJobResult"),
        "{:?}",
        cloud.api.commands()
    );
}

/// For real: 1.33.2 goes; 1.33.1's delete job fails (a cluster uses it), reported, exit 0; the
/// list then shows what is left, as JSON and as a table.
#[test]
fn versions_retire_keeps_the_newest_patch_and_the_one_in_use() {
    let cloud = cloud_with_four_versions_one_in_use();
    let text = retire(&cloud, &["--poll-interval", "0.05"]);
    assert!(
        text.contains("Existing clusters currently using the version"),
        "{text}"
    );
    let left: Vec<String> = cloud
        .api
        .versions()
        .iter()
        .map(|v| v["semanticversion"].clone())
        .collect();
    assert_eq!(left, ["1.33.1", "1.33.3", "1.32.5"], "{text}");
    let listed = ok(cloud.cks(&["versions", "list", "--json"]).output().unwrap());
    let json: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(json["format"], 1);
    assert_eq!(json["versions"].as_array().unwrap().len(), 3);
    assert_eq!(json["versions"][0]["zones"][0]["isready"], true);
    let table = ok(cloud.cks(&["versions", "list"]).output().unwrap());
    assert!(String::from_utf8_lossy(&table.stdout).contains("zone-a: Ready, zone-b: Ready"));
}

#[test]
fn credentials_from_cmk_and_cs_variables_are_named_and_never_shown() {
    let cloud = Cloud::start(Options::default());
    let iso = small_iso(
        cloud.dir.path(),
        "setup-v1.33.1-x86_64.iso",
        "1.33.1",
        "amd64",
        1,
    );
    cloud.publish(&iso);
    let mut outputs = Vec::new();
    // ~/.cmk/config's current profile.
    let doctor = cloud.cks(&["doctor"]).output().unwrap();
    let text = combined(&doctor);
    assert!(
        text.contains("ok    cloudstack api:") && text.contains(".cmk/config profile \"world\""),
        "{text}"
    );
    outputs.push(text);
    let reg = ok(cloud.register(&[&iso], &["-vv"]).output().unwrap());
    let text = combined(&reg);
    assert!(
        text.contains("credentials from") && text.contains("zone-b"),
        "{text}"
    );
    outputs.push(text);
    // The cs client's variables, with no CloudMonkey file.
    fs::remove_file(cloud.home.join(".cmk/config")).unwrap();
    let o = cloud.api.options();
    let with_cs = |cmd: &mut Command| {
        cmd.env("CLOUDSTACK_ENDPOINT", cloud.api.endpoint())
            .env("CLOUDSTACK_KEY", &o.api_key)
            .env("CLOUDSTACK_SECRET", &o.secret_key);
    };
    let mut doctor = cloud.cks(&["doctor"]);
    with_cs(&mut doctor);
    let text = combined(&doctor.output().unwrap());
    assert!(
        text.contains("ok    cloudstack api:")
            && text.contains("CLOUDSTACK_ENDPOINT, CLOUDSTACK_KEY, CLOUDSTACK_SECRET"),
        "{text}"
    );
    outputs.push(text);
    let mut list = cloud.cks(&["versions", "list", "-vv"]);
    with_cs(&mut list);
    let listed = ok(list.output().unwrap());
    outputs.push(combined(&listed));
    // A wrong secret: 401, with the hint.
    let mut wrong = cloud.cks(&["versions", "list"]);
    with_cs(&mut wrong);
    wrong.env("CLOUDSTACK_SECRET", "not-the-secret");
    outputs.push(fails(&mut wrong, 1, &["401", "hint:"]));
    // Neither key shows in any output, nor in any file but the ones given.
    for secret in cloud.secrets() {
        for text in &outputs {
            assert!(!text.contains(&secret), "{secret} shown:\n{text}");
        }
        let found = Command::new("grep")
            .args(["-rlF", &secret])
            .arg(cloud.dir.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&found.stdout),
            "",
            "files holding a key"
        );
    }
}
