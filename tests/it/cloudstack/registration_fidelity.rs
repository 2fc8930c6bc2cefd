//! Registration against CloudStack as it answers (issue 44): `listIsos` strips the algorithm from
//! the checksum (`TemplateJoinDaoImpl` through `DigestHelper.getHashValueFromChecksumValue`) while
//! older releases answered the stored `{SHA-256}hex`, and `register` must know its own ISO in
//! either form; a Ready ISO whose listed checksum is not the one sent is refused (L9).

use std::fs;

use cks_iso_testworld::cloudstack::Options;

use crate::support::cloud::{Cloud, sha256_of, small_iso};
use crate::support::*;

fn adds(cloud: &Cloud) -> usize {
    cloud
        .api
        .commands()
        .iter()
        .filter(|c| *c == "addKubernetesSupportedVersion")
        .count()
}

/// Registers the same ISO twice against `options`' stand-in: one add, then "already registered".
fn register_twice(options: Options) {
    let cloud = Cloud::start(options);
    let iso = small_iso(
        cloud.dir.path(),
        "setup-v1.33.1-x86_64.iso",
        "1.33.1",
        "amd64",
        1,
    );
    cloud.publish(&iso);
    let first = ok(cloud.register(&[&iso], &[]).output().unwrap());
    assert!(
        String::from_utf8_lossy(&first.stdout).contains("  registered  Ready"),
        "{}",
        combined(&first)
    );
    assert_eq!(adds(&cloud), 1);
    let second = ok(cloud.register(&[&iso], &[]).output().unwrap());
    let text = combined(&second);
    assert!(text.contains("already registered"), "{text}");
    assert_eq!(adds(&cloud), 1, "a second add was sent:\n{text}");
    // The request log holds the listIsos answer cks-iso compared with.
    let listed = cloud
        .api
        .seen()
        .iter()
        .filter(|s| s.command == "listIsos")
        .count();
    assert!(listed >= 2, "{:?}", cloud.api.commands());
}

#[test]
fn the_same_iso_twice_sends_one_add_when_listisos_strips_the_algorithm() {
    register_twice(Options::default());
}

#[test]
fn the_same_iso_twice_sends_one_add_when_listisos_answers_the_stored_value() {
    register_twice(Options {
        list_stored_checksum: true,
        ..Options::default()
    });
}

#[test]
fn a_ready_iso_listed_with_another_checksum_exits_1_naming_both() {
    let other = "0".repeat(64);
    let cloud = Cloud::start(Options {
        reported_checksum: Some(other.clone()),
        ..Options::default()
    });
    let iso = small_iso(
        cloud.dir.path(),
        "setup-v1.33.1-x86_64.iso",
        "1.33.1",
        "amd64",
        1,
    );
    cloud.publish(&iso);
    let sent = format!("{{SHA-256}}{}", sha256_of(&iso));
    let text = fails(
        &mut cloud.register(&[&iso], &[]),
        1,
        &["Ready", &other, &sent, "hint:"],
    );
    assert!(!text.contains("  registered  Ready"), "{text}");
    // The add went out once; the download itself succeeded (CloudStack checked the real bytes).
    assert_eq!(adds(&cloud), 1);
    assert_eq!(cloud.api.versions()[0]["isostate"], "Ready");
    assert!(fs::metadata(&iso).is_ok());
}
