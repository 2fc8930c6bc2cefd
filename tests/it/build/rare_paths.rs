//! Paths of `cks-iso build` no other test takes (the audit's leftovers): `--etcd` on an arm64
//! ISO, `CCM_VERSION` from the environment, a pinned autoscaler while git is unreachable, a local
//! manifest whose path holds a space and a `#`, and the joined-`---` repair as information at the
//! default level; all in one build of the whole local world, whose ISO `verify` accepts.

use std::fs;
use std::path::{Path, PathBuf};

use super::common::{assert_verify_accepts, build, edited_config, extract, flags, work_dirs};
use crate::support::*;
use cks_iso_testworld::world::{Options, World};

/// The upstream URL of etcd 3.5.21's arm64 release.
const ETCD_ARM64_URL: &str =
    "https://github.com/etcd-io/etcd/releases/download/v3.5.21/etcd-v3.5.21-linux-arm64.tar.gz";

/// The world's configuration with the autoscaler's git on a closed port: a pinned autoscaler
/// must not need the tag listing.
fn config_with_git_closed(world: &World, dir: &Path) -> PathBuf {
    let (config, yaml) = edited_config(world, dir, "no-git.yaml", |l| {
        match l
            .trim_start()
            .starts_with("https://github.com/kubernetes/autoscaler:")
        {
            true => {
                "  https://github.com/kubernetes/autoscaler: http://127.0.0.1:9/autoscaler.git\n"
                    .to_owned()
            }
            false => format!("{l}\n"),
        }
    });
    assert!(yaml.contains("127.0.0.1:9/autoscaler.git"), "{yaml}");
    config
}

/// The world's Headlamp manifest, as a local file in a directory with a space and a `#`.
fn local_headlamp(world: &World, dir: &Path) -> PathBuf {
    let files = cks_iso_testworld::world::default_snapshot(world.kubernetes()).files();
    let headlamp_url = world.headlamp_url().trim_start_matches("https://");
    let local = dir.join("my manifests #2");
    fs::create_dir_all(&local).unwrap();
    let headlamp = local.join("head lamp.yaml");
    fs::write(&headlamp, &files[headlamp_url].body).unwrap();
    headlamp
}

/// One information line says why the arm64 etcd goes under the amd64 name, and the joined
/// separator is repaired, said once as information.
fn assert_etcd_and_repair_said_as_information(err: &str) {
    let why: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("etcd nodes extract only etcd/etcd-linux-amd64.tar.gz"))
        .collect();
    assert_eq!(why.len(), 1, "one line says why:\n{err}");
    assert!(
        why[0].contains("etcd-v3.5.21-linux-arm64.tar.gz goes under that name")
            && !why[0].contains("warning"),
        "{err}"
    );
    assert!(
        err.contains("manifest.yaml: split the `---` joined to the end of line(s)")
            && !err.contains("joins two documents"),
        "the joined separator is repaired, said once as information:\n{err}"
    );
}

/// The name etcd nodes extract holds the arm64 release (aarch64 executables), and is the only
/// file under `etcd/`.
fn assert_arm64_etcd_under_the_amd64_name(root: &Path, dir: &Path) {
    let etcd = root.join("etcd/etcd-linux-amd64.tar.gz");
    let (listing, _) = tool("tar", ["-tzf", p(&etcd)]);
    assert!(
        listing.contains("etcd-v3.5.21-linux-arm64/etcd"),
        "{listing}"
    );
    let unpacked = dir.join("etcd-unpacked");
    fs::create_dir_all(&unpacked).unwrap();
    tool("tar", ["-xzf", p(&etcd), "-C", p(&unpacked)]);
    let binary = fs::read(unpacked.join("etcd-v3.5.21-linux-arm64/etcd")).unwrap();
    assert_eq!(
        (&binary[..4], u16::from_le_bytes([binary[18], binary[19]])),
        (&b"\x7fELF"[..], 183),
        "an aarch64 ELF executable"
    );
    assert_eq!(names(&root.join("etcd")), ["etcd-linux-amd64.tar.gz"]);
}

/// The real upstream name and URL of etcd are in the lock and both SBOMs as in `versions.txt`,
/// which also records the CCM, the autoscaler, and the local file by its name (percent-encoded),
/// never by its host path; the provider manifest names the CCM of the environment.
fn assert_recorded_as_asked(root: &Path, autoscaler: &str) {
    for record in ["cks-iso.lock", "sbom.cdx.json", "sbom.spdx.json"] {
        let text = fs::read_to_string(root.join(record)).unwrap();
        assert!(
            text.contains(ETCD_ARM64_URL),
            "{record} lacks {ETCD_ARM64_URL}"
        );
    }
    let versions = fs::read_to_string(root.join("versions.txt")).unwrap();
    for want in [
        "\netcd v3.5.21\n".to_owned(),
        "\nccm v1.3.0-rc1\n".to_owned(),
        format!("\nautoscaler {autoscaler}\n"),
        "/releases/download/v3.5.21/etcd-v3.5.21-linux-arm64.tar.gz\n".to_owned(),
        "\nimage docker.io/apache/cloudstack-kubernetes-provider:v1.3.0-rc1 sha256:".to_owned(),
        " file:head%20lamp.yaml\n".to_owned(),
    ] {
        assert!(versions.contains(&want), "{want:?} not in:\n{versions}");
    }
    assert!(
        versions.lines().any(|l| {
            l.starts_with("file etcd/etcd-linux-amd64.tar.gz sha256:")
                && l.ends_with(ETCD_ARM64_URL)
        }),
        "{versions}"
    );
    let provider = fs::read_to_string(root.join("provider.yaml")).unwrap();
    assert!(
        provider.contains("image: apache/cloudstack-kubernetes-provider:v1.3.0-rc1"),
        "{provider}"
    );
}

/// `--etcd` on an arm64 ISO puts the arm64 release's tarball under the one name etcd nodes read,
/// `etcd/etcd-linux-amd64.tar.gz`, with its real upstream URL in `versions.txt`, the lock and the
/// SBOMs, and one line saying why; `CCM_VERSION` comes from the environment; the pinned
/// autoscaler needs no git; the spaced local Headlamp path round-trips through `versions.txt`.
#[test]
fn etcd_ccm_from_the_environment_a_pinned_autoscaler_without_git_and_a_spaced_path() {
    let world = World::start(Options {
        ccm_tag: "v1.3.0-rc1".into(),
        ..Options::default()
    });
    let autoscaler = world.autoscaler_version().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let (out, cache, tmp) = work_dirs(dir.path());
    let config = config_with_git_closed(&world, dir.path());
    let headlamp = local_headlamp(&world, dir.path());

    let mut args = flags(&world, p(&out), p(&cache));
    let at = args.iter().position(|a| *a == "--headlamp").unwrap();
    args[at + 1] = p(&headlamp);
    args.extend(["--arch", "arm64", "--etcd", "3.5.21"]);
    let mut cmd = build(&world, &tmp, &args);
    cmd.env("CKS_ISO_CONFIG", &config)
        .env("CCM_VERSION", "1.3.0-rc1")
        .env("AUTOSCALER_VERSION", &autoscaler);
    let o = ok(cmd.output().unwrap());
    assert_etcd_and_repair_said_as_information(&String::from_utf8_lossy(&o.stderr));

    let iso = out.join(format!("setup-v{}-aarch64.iso", world.kubernetes()));
    let root = dir.path().join("x");
    extract(&iso, &root);
    assert_arm64_etcd_under_the_amd64_name(&root, dir.path());
    assert_recorded_as_asked(&root, &autoscaler);
    assert_verify_accepts(&iso);
}
