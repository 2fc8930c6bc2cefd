//! `cks-iso verify` of ISOs cks-iso did not build (no `versions.txt`, no SBOMs, no lock), as
//! operators now run it on official and community ISOs: it says once that the ISO was not built by
//! cks-iso, checks only what nodes read, and names first each archive in `docker/` that
//! `ctr -n k8s.io image import` refuses, with containerd's reason.
//!
//! The broken archive has the shape of apache/cloudstack#13157: the official
//! `setup-v1.34.7-calico-x86_64.iso` carried a `docker/pause:3.10.1.tar` holding only `blobs/`
//! (no `index.json`, `oci-layout` or `manifest.json`), so every 1.33 → 1.34.7 upgrade aborted on
//! "unrecognized image format". The verdicts are checked against a real containerd 1.6 where the
//! tests run as root.

use std::fs;
use std::path::Path;

use crate::support::containerd::Containerd;
use crate::support::world::world;
use crate::support::*;
use crate::verify::tree::{good_tree, verify};
use cks_iso::image::Arch;

/// Rewrites the archive at `path` keeping only the entries `keep` accepts, headers as they were.
pub(crate) fn keep_only(path: &Path, keep: impl Fn(&str) -> bool) {
    let bytes = fs::read(path).unwrap();
    let mut out = tar::Builder::new(Vec::new());
    let mut archive = tar::Archive::new(bytes.as_slice());
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        if keep(&name) {
            let mut header = entry.header().clone();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
            out.append_data(&mut header, &name, data.as_slice())
                .unwrap();
        }
    }
    fs::write(path, out.into_inner().unwrap()).unwrap();
}

/// A tree as upstream's script leaves it: the node-side files and image archives, and nothing of
/// cks-iso's own (`versions.txt`, the SBOMs, a lock). Its busybox archive is a Docker archive
/// (`manifest.json` only, as `docker save` wrote before Docker 25).
fn upstream_tree(root: &Path) {
    good_tree(&world(), root, Arch::Amd64);
    for own in ["versions.txt", "sbom.cdx.json", "sbom.spdx.json"] {
        fs::remove_file(root.join(own)).unwrap();
    }
    keep_only(&root.join("docker/busybox:1.36.tar"), |name| {
        name == "manifest.json" || name.starts_with("blobs/")
    });
    // Nodes extract these: real gzip tars of executables, shaped like the releases.
    for (path, member) in [
        ("cni/cni-plugins-amd64.tgz", "./bridge"),
        ("cri-tools/crictl-linux-amd64.tar.gz", "crictl"),
    ] {
        let elf = cks_iso_testworld::upstream::elf("amd64", 3, member, 4096);
        let body = cks_iso_testworld::upstream::tgz(&[(member.to_owned(), elf, 0o755)]);
        fs::write(root.join(path), body).unwrap();
    }
}

const PAUSE: &str = "docker/pause:3.10.tar";

#[test]
fn an_iso_from_elsewhere_names_the_archive_nodes_cannot_import_first() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    upstream_tree(&src);
    let good_pause = fs::read(src.join(PAUSE)).unwrap();
    assert_good_archives_pass_with_one_note(dir.path(), &src);

    // apache/cloudstack#13157: the pause archive holds only blobs/.
    keep_only(&src.join(PAUSE), |name| name.starts_with("blobs/"));
    let bad = dir.path().join("bad-x86_64.iso");
    build_iso(&src, &bad);
    assert_the_blobs_only_archive_is_named_first(&bad);
    let json = cks_iso()
        .args(["verify", "--json", p(&bad)])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        report["isos"][0]["notes"],
        serde_json::json!(["not built by cks-iso: checking what nodes read"])
    );
    assert_eq!(
        report["isos"][0]["violations"][0]["path"], PAUSE,
        "{report:#}"
    );
    assert_containerd_agrees(dir.path(), &src, good_pause);
}

/// The ISO of the upstream tree `src`, its archives good, passes, with one note.
fn assert_good_archives_pass_with_one_note(dir: &Path, src: &Path) {
    let good = dir.join("setup-v1.34.7-calico-x86_64.iso");
    build_iso(src, &good);
    let (code, out, err) = verify(&good);
    assert_eq!(code, 0, "{out}{err}");
    let note = format!(
        "{}: not built by cks-iso: checking what nodes read",
        p(&good)
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            note.as_str(),
            &format!(
                "ok {} (amd64, 11 files and 3 image archives checked)",
                p(&good)
            )
        ],
        "{out}"
    );
}

/// verify of `bad` says once, first, that cks-iso did not build it, then names the pause archive
/// with containerd's reason, and complains of nothing of cks-iso's own.
fn assert_the_blobs_only_archive_is_named_first(bad: &Path) {
    let (code, out, err) = verify(bad);
    assert_eq!(code, 1, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("{}: not built by cks-iso: checking what nodes read", p(bad)),
        "said once, first:\n{out}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "{}: {PAUSE}: nodes cannot import it: ctr -n k8s.io image import fails with \
             \"unrecognized image format\": it holds only blobs/",
            p(bad)
        )),
        "the archive is named first, with containerd's reason:\n{out}"
    );
    assert_eq!(
        out.matches("not built by cks-iso").count(),
        1,
        "said once:\n{out}"
    );
    for own in ["versions.txt", "sbom", "SBOM", "cks-iso.lock"] {
        assert!(!out.contains(own), "no complaint about {own}:\n{out}");
    }
    assert!(err.contains("contract violation"), "{err}");
}

/// What containerd itself says of both archives: the good pause and the Docker-shaped busybox
/// import, the blobs-only pause does not, for the same reason.
fn assert_containerd_agrees(dir: &Path, src: &Path, good_pause: Vec<u8>) {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    let tmp = dir.join("archives");
    fs::create_dir_all(&tmp).unwrap();
    let good_archive = tmp.join("good-pause.tar");
    fs::write(&good_archive, good_pause).unwrap();
    let import = |path: &Path| {
        containerd.try_ctr(&[
            "images",
            "import",
            "--platform",
            "linux/amd64",
            "--snapshotter",
            "native",
            p(path),
        ])
    };
    for ok_archive in [&good_archive, &src.join("docker/busybox:1.36.tar")] {
        let o = import(ok_archive);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = import(&src.join(PAUSE));
    assert!(
        !o.status.success(),
        "containerd refuses the blobs-only archive too"
    );
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("unrecognized image format"), "{said}");
}
