//! Hostile add-ons, round three (issue 44, H1 and its notes): an image whose name contains `pause`
//! would become every pod's sandbox, because CloudStack's `setup-kube-system` picks it with
//! `ctr -n k8s.io images ls -q | grep pause | sort | tail -n 1`. `quay.io/evil/pause-sandbox:1`
//! is published in the world so that only the rule stops it; each way it can arrive (`--image`,
//! `--images-file`, the configuration's `extras:`, a `--manifest` URL) makes `build` exit 1
//! naming the rule, before it is pulled, and `resolve` says the same. It sorts before kubeadm's
//! `registry.k8s.io/pause:3.10`, so nodes would still run kubeadm's: refused all the same, since
//! the next ISO's pause may sort before it. The probe's own `zz.example.org/evil/pause-sandbox:1`
//! sorts after, and is named as the image nodes would run.
//! A YAML file that is not a Kubernetes manifest is refused as an add-on, and a YAML bomb is
//! fetched once, not retried as corruption. A lock listing such an image is refused too.

use std::fs;
use std::path::{Path, PathBuf};

use crate::addons::content::{Pushed, build, build_with, deployment, push, serve_manifest};
use crate::support::hostile::files_under;
use crate::support::*;
use cks_iso_testworld::world::{Options, World};

const EVIL: &str = "quay.io/evil/pause-sandbox:1";
const RULE: &str = "grep pause | sort | tail -n 1";

/// `cks-iso resolve` in `world` with the configuration `config` and `args`.
fn resolve(world: &World, config: &Path, cache: &Path, args: &[&str]) -> std::process::Command {
    let mut cmd = cks_iso();
    cmd.env("CKS_ISO_CONFIG", config)
        .env("XDG_CACHE_HOME", cache)
        .args(["resolve", "--kubernetes", world.kubernetes()])
        .args(args);
    cmd
}

/// What the add-on refusals name when the image comes by `--image`, `--images-file` or
/// `extras:`.
const ASKED: &str = "the add-on images asked for (--image, --images-file, extras: images:) \
                     include quay.io/evil/pause-sandbox:1, a second pause image";

/// The ways [`EVIL`] can arrive, written into `d`: an images file, a configuration with it in
/// `extras:` and a manifest naming it served by the world, as `(list, config, manifest URL)`.
fn ways_in(world: &World, d: &Path) -> (PathBuf, PathBuf, String) {
    let url = serve_manifest(world, "evil/addon/v1/addon.yaml", &deployment(&[EVIL]));
    let list = d.join("images.txt");
    fs::write(&list, format!("# add-ons\n{EVIL}\n")).unwrap();
    let config = d.join("config.yaml");
    let extras = format!("extras:\n  images: [\"{EVIL}\"]\n");
    fs::write(&config, format!("{}{extras}", world.config_yaml())).unwrap();
    fs::copy(world.trusted_root_path(), d.join("trusted_root.json")).unwrap();
    (list, config, url)
}

/// Each way [`EVIL`] arrives makes `build` exit 1 naming it, the rule, kubeadm's pause and the
/// hint for that way, with no ISO written to `out`.
fn assert_each_way_refused(
    world: &World,
    d: &Path,
    out: &Path,
    list: &Path,
    config: &Path,
    url: &str,
) {
    let drop = "hint: drop quay.io/evil/pause-sandbox:1 from --image, --images-file and extras";
    let manifest = format!("addon.yaml={url}");
    let named = format!("addon.yaml ({url}) line 15 names {EVIL}, a second pause image");
    let leave = "hint: leave quay.io/evil/pause-sandbox:1 out of addon.yaml";
    let cases = [
        (
            "--image",
            build(world, d, out, &["--image", EVIL]),
            ASKED,
            drop,
        ),
        (
            "--images-file",
            build(world, d, out, &["--images-file", p(list)]),
            ASKED,
            drop,
        ),
        (
            "extras:",
            build_with(config, world, d, out, &[]),
            ASKED,
            drop,
        ),
        (
            "--manifest",
            build(world, d, out, &["--manifest", &manifest]),
            &named,
            leave,
        ),
    ];
    for (way, mut cmd, first, hint) in cases {
        let said = fails(
            &mut cmd,
            1,
            &[
                first,
                RULE,
                "none but kubeadm's, registry.k8s.io/pause:3.10",
                "with both, nodes would run registry.k8s.io/pause:3.10",
                hint,
            ],
        );
        assert!(!said.contains("NOT COVERED"), "{way}: {said}");
        assert!(
            !out.exists() || names(out).is_empty(),
            "{way}: an ISO was written"
        );
    }
}

/// The probe's image sorts after kubeadm's: refused, naming it as the image nodes would run.
fn assert_the_probe_refused(world: &World, d: &Path, out: &Path) {
    let probe = "zz.example.org/evil/pause-sandbox:1";
    fails(
        &mut build(world, d, out, &["--image", probe]),
        1,
        &[
            probe,
            RULE,
            "with both, nodes would run zz.example.org/evil/pause-sandbox:1",
        ],
    );
}

/// Refused before the pull: not one of the pushed image's layers, nor its manifest, reached the
/// cache under `d`.
fn assert_nothing_pulled(d: &Path, pushed: &Pushed) {
    let cached = files_under(&d.join("cache")).join("\n");
    for layer in &pushed.layers {
        let hex = layer.trim_start_matches("sha256:");
        assert!(!cached.contains(hex), "layer {layer} was downloaded");
    }
    assert!(!cached.contains(pushed.top.trim_start_matches("sha256:")));
}

/// `resolve` refuses what `build` refuses: the probe's image, another pause tag, the manifest
/// naming it and the configuration's `extras:`; an add-on image without `pause` in its name is
/// still sized.
fn assert_resolve_agrees(world: &World, d: &Path, config: &Path, url: &str) {
    let cache = d.join("xdg-cache");
    let plain = world.config_path();
    let manifest = format!("addon.yaml={url}");
    for (args, theirs) in [
        (vec!["--image", EVIL], EVIL),
        (
            vec!["--image", "registry.k8s.io/pause:3.9"],
            "registry.k8s.io/pause:3.9",
        ),
        (vec!["--manifest", manifest.as_str()], EVIL),
    ] {
        fails(
            &mut resolve(world, plain, &cache, &args),
            1,
            &[theirs, "a second pause image", RULE, "hint:"],
        );
    }
    fails(&mut resolve(world, config, &cache, &[]), 1, &[ASKED, RULE]);
    push(world, "quay.io/evil/sandbox", "1", &["amd64"]);
    let listed = ok(
        resolve(world, plain, &cache, &["--image", "quay.io/evil/sandbox:1"])
            .output()
            .unwrap(),
    );
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(listed.contains("quay.io/evil/sandbox:1"), "{listed}");
}

#[test]
fn a_second_pause_image_is_refused_whichever_way_it_arrives_and_resolve_agrees() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out");
    // Published: pulled, it would be bundled as any add-on image is.
    let pushed = push(&world, "quay.io/evil/pause-sandbox", "1", &["amd64"]);
    let (list, config, url) = ways_in(&world, d);

    assert_each_way_refused(&world, d, &out, &list, &config, &url);
    assert_the_probe_refused(&world, d, &out);
    assert_nothing_pulled(d, &pushed);
    assert_resolve_agrees(&world, d, &config, &url);
}

#[test]
fn a_non_kubernetes_yaml_is_refused_as_an_add_on_and_a_yaml_bomb_is_fetched_once() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out");
    // Valid YAML, but no Kubernetes object: a values file, say.
    let values = serve_manifest(
        &world,
        "acme/chart/v1/values.yaml",
        "replicaCount: 2\nimage:\n  repository: quay.io/acme/agent\n  tag: \"2.1\"\n",
    );
    fails(
        &mut build(
            &world,
            d,
            &out,
            &["--manifest", &format!("agent.yaml={values}")],
        ),
        1,
        &[
            "agent.yaml",
            "document 1 is not a Kubernetes object: it has no apiVersion",
            "hint: an add-on manifest is what `kubectl apply -f` takes",
        ],
    );

    // A billion laughs: nine levels of nine aliases.
    let mut bomb = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for (prev, name) in "abcdefgh".chars().zip("bcdefghi".chars()) {
        let refs = vec![format!("*{prev}"); 9].join(",");
        bomb.push_str(&format!("{name}: &{name} [{refs}]\n"));
    }
    let path = "acme/bomb/v1/bomb.yaml";
    let url = serve_manifest(&world, path, &bomb);
    let started = std::time::Instant::now();
    let said = fails(
        &mut build(
            &world,
            d,
            &out,
            &["--manifest", &format!("bomb.yaml={url}")],
        ),
        1,
        &["bomb.yaml", "does not parse as YAML"],
    );
    let seconds = started.elapsed().as_secs_f64();
    let asked = world
        .upstream()
        .served()
        .into_iter()
        .filter(|s| s.path.contains(path))
        .count();
    eprintln!("the YAML bomb: {asked} request(s), refused in {seconds:.2} s");
    assert_eq!(
        asked, 1,
        "a document that does not parse is not corruption: {said}"
    );
    assert!(
        !out.exists() || names(&out).is_empty(),
        "an ISO was written"
    );
}

/// A lock written by hand, listing the probe's image among amd64's images: `build --locked`
/// refuses it before anything is pulled, as it refuses the same image asked for by flag.
#[test]
fn a_lock_listing_a_second_pause_image_is_refused() {
    use crate::support::hostile::{build as build_in_dir, world_args, world_in};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    let (lock, cache, genuine) = (d.join("run.lock"), d.join("cache"), d.join("genuine"));
    let mut args = world_args(&world, world.dashboard_url());
    args.extend(["--cache-dir", p(&cache)]);
    args.extend(["--lock-file", p(&lock), "--output", p(&genuine)]);
    run(&mut build_in_dir(&config, d, &args));
    let mut value: serde_json::Value = serde_json::from_slice(&fs::read(&lock).unwrap()).unwrap();
    let images = value["arches"]["amd64"]["images"].as_array_mut().unwrap();
    let mut evil = images
        .iter()
        .find(|i| i["reference"] == "registry.k8s.io/pause:3.10")
        .expect("kubeadm's pause in the lock")
        .clone();
    evil["reference"] = serde_json::json!("zz.example.org/evil/pause-sandbox:1");
    images.push(evil);
    let hostile = d.join("hostile.lock");
    fs::write(&hostile, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let out = d.join("out");
    let args = ["--locked", p(&hostile), "--output", p(&out)];
    fails(
        &mut build_in_dir(&config, d, &args),
        1,
        &[
            "the lock's images for linux/amd64 include zz.example.org/evil/pause-sandbox:1, a \
             second pause image",
            RULE,
            "nodes would run zz.example.org/evil/pause-sandbox:1",
            "hint: the lock was changed by hand",
        ],
    );
    assert!(
        !out.exists() || names(&out).is_empty(),
        "an ISO was written"
    );
}
