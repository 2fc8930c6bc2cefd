//! The CloudStack client's bounds and credential rules (issue 44: M2, M3, L2–L7), each against
//! the test world's CloudStack stand-in: an endless answer and endless paging end, credentials
//! come from one file held to the file rules, delete jobs stop at `--timeout`, project-owned
//! clusters are seen, `versions retire` decides per zone, and nothing printed carries a URL's
//! password or a raw terminal escape.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use cks_iso_testworld::cloudstack::Options;
use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
use cks_iso_testworld::server::{HttpServer, Outgoing};

use crate::support::cloud::{Cloud, small_iso};
use crate::support::hostile::output_within_rss;
use crate::support::*;

const MB: u64 = 1 << 20;

/// `cmd` with the stand-in's keys in `CKS_ISO_CLOUDSTACK_*` and `endpoint` as the URL.
fn with_keys<'a>(cloud: &Cloud, cmd: &'a mut Command, endpoint: &str) -> &'a mut Command {
    let o = cloud.api.options();
    cmd.env("CKS_ISO_CLOUDSTACK_URL", endpoint)
        .env("CKS_ISO_CLOUDSTACK_API_KEY", &o.api_key)
        .env("CKS_ISO_CLOUDSTACK_SECRET_KEY", &o.secret_key)
}

/// Registers ISOs of `versions` (x86_64), each with `extra` flags; returns their version ids.
fn registered(cloud: &Cloud, versions: &[(&str, &[&str])]) -> Vec<String> {
    for (v, extra) in versions {
        let iso = small_iso(
            cloud.dir.path(),
            &format!("setup-v{v}-x86_64.iso"),
            v,
            "amd64",
            1,
        );
        cloud.publish(&iso);
        ok(cloud.register(&[&iso], extra).output().unwrap());
    }
    versions
        .iter()
        .map(|(v, _)| {
            cloud
                .api
                .versions()
                .into_iter()
                .find(|x| x["semanticversion"] == *v)
                .unwrap()["id"]
                .clone()
        })
        .collect()
}

#[test]
fn an_endless_answer_ends_in_seconds_and_bounded_memory() {
    let cloud = Cloud::start(Options::default());
    let base = cloud.api.endpoint().replace("/client/api", "");
    let proxy = FaultProxy::start(&base);
    proxy.add(Rule::path_contains("command=listKubernetesSupportedVersions").fault(Fault::Endless));
    let mut cmd = cloud.cks(&["versions", "list"]);
    with_keys(&cloud, &mut cmd, &format!("{}/client/api", proxy.url()));
    let started = Instant::now();
    let (out, rss) = output_within_rss(&mut cmd, 10).expect("still running after 10 s");
    let text = combined(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("larger than 16") && text.contains("hint:"),
        "{text}"
    );
    assert!(rss < 100 * MB, "peak RSS {} MiB", rss / MB);
    eprintln!(
        "endless answer: exit 1 after {:.1} s, peak RSS {} MiB, {} MiB sent",
        started.elapsed().as_secs_f64(),
        rss / MB,
        proxy.endless_bytes() / MB
    );
}

#[test]
fn endless_paging_stops_at_the_first_count_and_http_is_warned_about() {
    let cloud = Cloud::start(Options {
        endless_pages: true,
        ..Options::default()
    });
    let out = ok(cloud.cks(&["versions", "list", "--json"]).output().unwrap());
    let pages = cloud
        .api
        .commands()
        .iter()
        .filter(|c| *c == "listKubernetesSupportedVersions")
        .count();
    assert!((1..=100).contains(&pages), "{pages} pages asked for");
    assert_eq!(pages, 2, "the first page's count says two pages");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["versions"].as_array().unwrap().len(), 1000);
    assert!(stderr(&out).contains("is plain http"), "{}", stderr(&out));
}

/// A web server that counts what it receives and answers 200 `{}`.
fn recorder() -> (HttpServer, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let server = HttpServer::start(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        Outgoing::new(200, "{}")
    });
    (server, hits)
}

#[test]
fn a_local_cloudstack_ini_with_only_an_endpoint_never_receives_the_home_keys() {
    let cloud = Cloud::start(Options::default());
    let (fake, hits) = recorder();
    let o = cloud.api.options();
    fs::remove_file(cloud.home.join(".cmk/config")).unwrap();
    fs::write(
        cloud.home.join(".cloudstack.ini"),
        format!(
            "[cloudstack]\nendpoint = {}\nkey = {}\nsecret = {}\n",
            cloud.api.endpoint(),
            o.api_key,
            o.secret_key
        ),
    )
    .unwrap();
    let fake_endpoint = format!("http://{}/client/api", fake.host());
    fs::write(
        cloud.dir.path().join("cloudstack.ini"),
        format!("[cloudstack]\nendpoint = {fake_endpoint}\n"),
    )
    .unwrap();
    // The home file is used whole; the local one is named and left unread.
    let out = ok(cloud.cks(&["versions", "list"]).output().unwrap());
    let text = combined(&out);
    assert!(text.contains("cloudstack.ini is not read"), "{text}");
    assert!(text.contains(&fake_endpoint), "{text}");
    assert!(
        cloud
            .api
            .commands()
            .contains(&"listKubernetesSupportedVersions".to_owned())
    );
    // Asked for by CLOUDSTACK_CONFIG, it is the one file: incomplete, exit 2.
    let mut asked = cloud.cks(&["versions", "list"]);
    asked.env("CLOUDSTACK_CONFIG", cloud.dir.path().join("cloudstack.ini"));
    fails(
        &mut asked,
        2,
        &["gives endpoint but not key, secret", "hint:"],
    );
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the planted endpoint was called"
    );
}

#[test]
fn a_fifo_or_dev_zero_as_the_secret_key_file_exits_2_at_once() {
    let cloud = Cloud::start(Options::default());
    let fifo = cloud.dir.path().join("secret.fifo");
    run_tool("mkfifo", &[p(&fifo)]);
    for (file, needle) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a character device"),
    ] {
        let mut cmd = cloud.cks(&["versions", "list", "--api-url", &cloud.api.endpoint()]);
        cmd.args(["--api-key", "k", "--secret-key-file", p(file)]);
        let started = Instant::now();
        let (out, rss) = output_within_rss(&mut cmd, 10).expect("hung on the secret key file");
        let text = combined(&out);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(text.contains(needle) && text.contains("hint:"), "{text}");
        assert!(rss < 50 * MB, "{needle}: peak RSS {} MiB", rss / MB);
        eprintln!(
            "{needle}: exit 2 in {:.2} s, peak RSS {} MiB",
            started.elapsed().as_secs_f64(),
            rss / MB
        );
    }
    assert!(cloud.api.commands().is_empty());
}

#[test]
fn a_foreign_world_writable_cmk_config_is_refused_and_doctor_says_why() {
    if !root_or_skip("chown a file to another user") {
        return;
    }
    let cloud = Cloud::start(Options::default());
    let config = cloud.home.join(".cmk/config");
    run_tool("chown", &["1234:1234", p(&config)]);
    fs::set_permissions(&config, fs::Permissions::from_mode(0o666)).unwrap();
    fails(
        &mut cloud.cks(&["versions", "list"]),
        2,
        &["owned by uid 1234", "hint:"],
    );
    let doctor = cloud.cks(&["doctor"]).output().unwrap();
    let text = combined(&doctor);
    assert_ne!(doctor.status.code(), Some(0), "{text}");
    assert!(
        text.contains("cloudstack api") && text.contains("owned by uid 1234"),
        "{text}"
    );
    assert!(
        cloud.api.commands().is_empty(),
        "{:?}",
        cloud.api.commands()
    );
}

#[test]
fn a_delete_job_that_never_ends_stops_at_the_timeout() {
    let cloud = Cloud::start(Options {
        job_never_ends: true,
        ..Options::default()
    });
    registered(&cloud, &[("1.33.1", &[]), ("1.33.2", &[])]);
    let mut cmd = cloud.cks(&["versions", "retire", "--keep", "1", "--retire", "delete"]);
    cmd.args(["--timeout", "2", "--poll-interval", "0.2"]);
    let started = Instant::now();
    let (out, _) = output_within_rss(&mut cmd, 20).expect("the delete job was polled for ever");
    let text = combined(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("had not ended after 2s") && text.contains("hint:"),
        "{text}"
    );
    assert!(started.elapsed().as_secs() < 15);
}

#[test]
fn a_version_only_a_project_cluster_uses_is_kept() {
    let cloud = Cloud::start(Options::default());
    let ids = registered(&cloud, &[("1.33.1", &[]), ("1.33.2", &[])]);
    cloud
        .api
        .add_cluster_in("team-cluster", &ids[0], Some("p-1"));
    let out = ok(cloud
        .cks(&["versions", "retire", "--keep", "1"])
        .output()
        .unwrap());
    let text = combined(&out);
    assert!(text.contains("in use by cluster team-cluster"), "{text}");
    let states: Vec<String> = cloud
        .api
        .versions()
        .iter()
        .map(|v| v["state"].clone())
        .collect();
    assert_eq!(states, ["Enabled", "Enabled"]);
    assert!(
        cloud
            .api
            .seen()
            .iter()
            .any(|s| s.command == "listKubernetesClusters"
                && s.params.get("projectid").is_some_and(|p| p == "-1"))
    );
}

#[test]
fn retire_decides_per_zone() {
    let cloud = Cloud::start(Options::default());
    registered(
        &cloud,
        &[
            ("1.33.1", &["--zone", "zone-a"]),
            ("1.33.2", &["--zone", "zone-b"]),
        ],
    );
    let out = ok(cloud
        .cks(&["versions", "retire", "--keep", "1", "--dry-run"])
        .output()
        .unwrap());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nothing to retire"),
        "{}",
        combined(&out)
    );
}

#[test]
fn a_password_in_the_publish_url_is_never_printed() {
    let cloud = Cloud::start(Options::default());
    let iso = small_iso(
        cloud.dir.path(),
        "setup-v1.33.1-x86_64.iso",
        "1.33.1",
        "amd64",
        1,
    );
    cloud.publish(&iso);
    let base = cloud.host.url().replace("http://", "http://ops:s3cr3t-pw@");
    let out = ok(cloud
        .cks(&[
            "register",
            p(&iso),
            "--publish-url",
            &base,
            "--poll-interval",
            "0.1",
            "-vv",
        ])
        .output()
        .unwrap());
    let text = combined(&out);
    assert!(text.contains("registered"), "{text}");
    assert!(!text.contains("s3cr3t-pw"), "{text}");
    // A URL it refuses is shown without it too.
    let long = format!("{base}/{}.iso", "a".repeat(250));
    let refused = fails(
        &mut cloud.cks(&["register", p(&iso), "--url", &long]),
        1,
        &["at most 255"],
    );
    assert!(!refused.contains("s3cr3t-pw"), "{refused}");
}

#[test]
fn terminal_escapes_from_cloudstack_reach_stdout_escaped() {
    let cloud = Cloud::start(Options::default());
    // The version's name is the ISO's file name; the URL is a plain one.
    let iso = small_iso(cloud.dir.path(), "plain.iso", "1.33.1", "amd64", 1);
    cloud.publish(&iso);
    let evil = cloud.dir.path().join("evil\u{1b}]0;pwned\u{7}.iso");
    fs::copy(&iso, &evil).unwrap();
    let url = format!("{}/plain.iso", cloud.host.url());
    let reg = ok(cloud
        .cks(&[
            "register",
            p(&evil),
            "--url",
            &url,
            "--poll-interval",
            "0.1",
        ])
        .output()
        .unwrap());
    for out in [reg, ok(cloud.cks(&["versions", "list"]).output().unwrap())] {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
            "{stdout:?}"
        );
        assert!(stdout.contains("evil\\u{1b}]0;pwned\\u{7}"), "{stdout:?}");
    }
}
