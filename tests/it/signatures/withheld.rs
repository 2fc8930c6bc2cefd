//! Image signatures held to the rule binaries are held to: registry.k8s.io signs every
//! control-plane image of Kubernetes 1.26 and later (KEP-3031 beta), so a registry mirror that
//! withholds their `.sig` tags and referrers must not turn them into a mere `UNSIGNED` warning.
//! The world's registry is put behind a fault proxy that answers 404 to every signature lookup
//! (the `.sig` tags, the Referrers API, the tag-schema fallback): the default build fails naming
//! the control-plane image with the hint `--signatures warn`, `--signatures warn` builds with one
//! warning per image, and images upstream does not always sign (pause, etcd, CoreDNS) stay a
//! warning under `verify`. `verify-image` holds them to the same rule, with or without
//! `--enforce`.

use crate::signatures::common::{build, config_through};
use crate::support::*;
use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
use cks_iso_testworld::world::{Options, World};

const APISERVER: &str = "registry.k8s.io/kube-apiserver:v1.33.1";
const PAUSE: &str = "registry.k8s.io/pause:3.10";

#[test]
fn a_mirror_withholding_control_plane_signatures_fails_the_default_build_and_warn_passes() {
    let world = World::start(Options::default());
    assert_eq!(world.kubernetes(), "1.33.1", "the images named below");
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, dir.path());
    // A mirror that passes images on but no signature: `.sig` tags and the fallback index
    // (`/manifests/sha256-…`), and the Referrers API.
    proxy.add(Rule::path_contains("/manifests/sha256-").fault(Fault::Status(404)));
    proxy.add(Rule::path_contains("/referrers/").fault(Fault::Status(404)));

    let out = build(&world, dir.path(), "bad", &["--arch", "amd64"])
        .env("CKS_ISO_CONFIG", &config)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no signature for sha256:")
            && err.contains(
                "registry.k8s.io signs every registry.k8s.io/kube-apiserver image of Kubernetes \
                 1.26 and later"
            )
            && err.contains(APISERVER),
        "{err}"
    );
    assert!(
        err.contains("hint:") && err.contains("--signatures warn accepts it with a warning"),
        "{err}"
    );
    assert!(
        err.contains("4 images of linux/amd64 failed the signature check"),
        "the four control-plane images, and not pause, etcd or CoreDNS: {err}"
    );
    assert!(
        std::fs::read_dir(dir.path().join("bad")).map_or(0, |d| d.count()) == 0,
        "no ISO: {err}"
    );

    // --signatures warn: the same build passes, each withheld signature one warning, recorded
    // unsigned in the ISO's report.
    let out = ok(build(
        &world,
        dir.path(),
        "warn",
        &["--arch", "amd64", "--signatures", "warn"],
    )
    .env("CKS_ISO_CONFIG", &config)
    .output()
    .unwrap());
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{APISERVER}: UNSIGNED"))
            && err.contains("though upstream signs every copy"),
        "{err}"
    );
    assert!(err.contains(&format!("{PAUSE}: UNSIGNED")), "{err}");
    let iso = dir
        .path()
        .join(format!("warn/setup-v{}-x86_64.iso", world.kubernetes()));
    let report = signature_report(&iso, &dir.path().join("tree"));
    assert_eq!(report["mode"], "warn");
    assert_eq!(image_entry(&report, APISERVER)["verdict"], "unsigned");

    // Signatures passed on again: the default build verifies every one.
    proxy.clear_rules();
    let out = ok(build(&world, dir.path(), "good", &["--arch", "amd64"])
        .env("CKS_ISO_CONFIG", &config)
        .output()
        .unwrap());
    assert!(!stderr(&out).contains("UNSIGNED"), "{}", stderr(&out));
}

#[test]
fn an_image_upstream_does_not_always_sign_stays_a_warning_under_verify() {
    // pause is promoted on its own schedule, and tags older than signing exist.
    let world = World::start(Options {
        unsigned: vec![PAUSE.into()],
        ..Options::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = ok(build(&world, dir.path(), "out", &["--arch", "amd64"])
        .output()
        .unwrap());
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{PAUSE}: UNSIGNED")) && err.contains("--signatures enforce"),
        "{err}"
    );
}

#[test]
fn verify_image_fails_a_withheld_control_plane_signature_without_enforce() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, dir.path());
    let verify_image = |extra: &[&str]| {
        cks_iso()
            .env("CKS_ISO_CONFIG", &config)
            .args(["verify-image", "--cache-dir"])
            .arg(dir.path().join("cache"))
            .args(extra)
            .args([APISERVER, PAUSE])
            .output()
            .unwrap()
    };
    // Passed on, both verify: the rule below is about what the mirror withholds.
    let out = verify_image(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", combined(&out));

    proxy.add(Rule::path_contains("/manifests/sha256-").fault(Fault::Status(404)));
    proxy.add(Rule::path_contains("/referrers/").fault(Fault::Status(404)));
    let out = verify_image(&[]);
    let (text, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{text}{err}");
    let line = |image: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{image} ")))
            .unwrap_or_else(|| panic!("no line for {image}: {text}"))
            .to_owned()
    };
    assert!(
        line(APISERVER).contains("FAILED: no signature for sha256:")
            && line(APISERVER).contains("registry.k8s.io signs every"),
        "{text}"
    );
    assert!(
        line(PAUSE).contains("UNSIGNED"),
        "pause stays a warning: {text}"
    );
    assert!(
        err.contains("1 of 2 image(s) failed the signature check") && err.contains(APISERVER),
        "{err}"
    );
    assert!(
        err.contains("hint:") && err.contains("does not pass its sha256-<hex>.sig tags"),
        "{err}"
    );

    // --enforce: pause fails too, as unsigned.
    let out = verify_image(&["--enforce"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("2 of 2 image(s) failed"), "{err}");
}
