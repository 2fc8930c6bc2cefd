//! `cks-iso push --image/--images-file`: an image list resolved through the pull client (the
//! world's registry behind a mirror), pinned to the digest each name resolved to and pushed with
//! it, under the flat mapping a Harbor project needs; the signature policy applied as `build`
//! applies it to an add-on image; two images on one flat name refused before anything is asked.

use crate::support::push::{fixtures, push, raw_digest};
use crate::support::*;
use cks_iso_testworld::registry::{self, DockerRegistry};

#[test]
fn an_image_list_is_pushed_pinned_under_flat_names() {
    let world = registry::world();
    let images = fixtures(&world);
    assert!(images.len() >= 3, "three tagged amd64 fixtures");
    let tmp = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let target = DockerRegistry::start(storage.path(), None);
    let list = tmp.path().join("images.txt");
    let lines: Vec<String> = images[1..].iter().map(|f| f.reference()).collect();
    std::fs::write(&list, format!("# add-ons\n\n{}\n", lines.join("\n"))).unwrap();
    let mapping = tmp.path().join("mapping.txt");
    let mut args: Vec<String> = vec![
        "--image".into(),
        images[0].reference(),
        "--images-file".into(),
        p(&list).into(),
        "--to".into(),
        format!("{}/project", target.host()),
        "--map".into(),
        "flat".into(),
        "--insecure-registry".into(),
        target.host(),
        "--mapping-file".into(),
        p(&mapping).into(),
        "--signatures".into(),
        "off".into(),
    ];
    args.extend(world.mirror_args(&world.registry.url()));
    let out = push(&tmp.path().join("cache"), &args);
    assert!(out.status.success(), "push: {}", stderr(&out));
    let written = std::fs::read_to_string(&mapping).unwrap();
    assert_eq!(written.lines().count(), images.len(), "{written}");
    for f in &images {
        let last = f.name.rsplit('/').next().unwrap();
        let tag = f.tag.as_deref().unwrap();
        let pushed = format!("{}/project/{last}:{tag}", target.host());
        assert_eq!(raw_digest(&pushed), f.top, "{pushed}: the source's digest");
        let line = format!("{} {pushed}@{}", f.reference(), f.top);
        assert!(written.lines().any(|l| l == line), "{line} in\n{written}");
    }
    // Under enforce, an add-on image no signature rule covers is refused, as build refuses it,
    // and nothing is pushed.
    let storage = tempfile::tempdir().unwrap();
    let other = DockerRegistry::start(storage.path(), None);
    let busybox = (world.corpus.fixtures.iter())
        .find(|f| f.name == "docker.io/library/busybox" && f.tag.is_some())
        .expect("the corpus has busybox");
    let mut args: Vec<String> = vec![
        "--image".into(),
        busybox.reference(),
        "--to".into(),
        other.host(),
        "--insecure-registry".into(),
        other.host(),
        "--signatures".into(),
        "enforce".into(),
    ];
    args.extend(world.mirror_args(&world.registry.url()));
    let out = push(&tmp.path().join("cache"), &args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    for needle in [busybox.reference().as_str(), "could not be resolved"] {
        assert!(err.contains(needle), "{needle:?} in\n{err}");
    }
    assert!(out.stdout.is_empty(), "nothing claimed pushed");
    let catalog =
        cks_iso_testworld::http::request(&other.host(), "GET", "/v2/_catalog", &[], &[]).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&catalog.body).trim(),
        r#"{"repositories":[]}"#
    );
}

#[test]
fn two_images_on_one_flat_name_are_refused_before_any_request() {
    let tmp = tempfile::tempdir().unwrap();
    // Nobody listens on port 9: a request would fail otherwise than the check.
    let args: Vec<String> = [
        "--image",
        "127.0.0.1:9/a/pause:1",
        "--image",
        "127.0.0.1:9/b/pause:1",
        "--to",
        "127.0.0.1:9/project",
        "--map",
        "flat",
        "--insecure-registry",
        "127.0.0.1:9",
    ]
    .map(String::from)
    .to_vec();
    let out = push(&tmp.path().join("cache"), &args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    for needle in [
        "127.0.0.1:9/a/pause:1 and 127.0.0.1:9/b/pause:1 would both be pushed to \
         127.0.0.1:9/project/pause",
        "hint: push them with --map nested",
    ] {
        assert!(err.contains(needle), "{needle:?} in\n{err}");
    }
    let mut nested = args.clone();
    nested[7] = "nested".into();
    let out = push(&tmp.path().join("cache"), &nested);
    assert_eq!(
        out.status.code(),
        Some(1),
        "nested names differ: {}",
        stderr(&out)
    );
}
