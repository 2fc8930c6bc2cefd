//! The ISO of a CKS-shaped tree, judged by the readers nodes and people use: isoinfo, xorriso
//! (and its osirrox extractor), bsdtar and 7z. Protects contract §1–2: volume ID `CDROM`, Rock Ridge
//! names byte-exact, modes 0755/0644, owner 0, a 0755 root, Joliet present.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::support::*;

struct Built {
    _dir: tempfile::TempDir,
    src: std::path::PathBuf,
    iso: std::path::PathBuf,
    files: Vec<(String, u32)>,
}

fn built() -> Built {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("staging");
    let files = cks_tree(&src);
    let iso = dir.path().join("setup-v1.33.1-x86_64.iso");
    build_iso(&src, &iso);
    Built {
        _dir: dir,
        src,
        iso,
        files,
    }
}

#[test]
fn isoinfo_reports_volume_cdrom_rock_ridge_and_joliet() {
    let b = built();
    let (out, _) = tool("isoinfo", ["-d", "-i", p(&b.iso)]);
    assert!(out.contains("Volume id: CDROM\n"), "{out}");
    assert!(out.contains("Rock Ridge signatures"), "{out}");
    assert!(out.contains("Joliet"), "{out}");
}

/// Parses `isoinfo -R -l` into path → (mode string, uid, gid, size).
fn isoinfo_listing(iso: &Path) -> BTreeMap<String, (String, u32, u32, u64)> {
    let (out, _) = tool("isoinfo", ["-R", "-l", "-i", p(iso)]);
    let mut entries = BTreeMap::new();
    let mut dir = String::new();
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("Directory listing of ") {
            dir = rest.trim_end().to_owned();
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 5 || fields[0].len() != 10 {
            continue;
        }
        // Name starts after the "]  " that closes the extent column; it may contain spaces.
        let Some(close) = line.find("] ") else {
            continue;
        };
        let name = line[close + 2..].trim_start().trim_end_matches(' ');
        let name = name.split(" -> ").next().unwrap();
        if name.is_empty() || name == "." || name == ".." {
            continue;
        }
        let size: u64 = fields[4].parse().unwrap();
        entries.insert(
            format!("{dir}{name}"),
            (
                fields[0].to_owned(),
                fields[2].parse().unwrap(),
                fields[3].parse().unwrap(),
                size,
            ),
        );
    }
    entries
}

#[test]
fn isoinfo_lists_exact_names_normalised_modes_and_owner_zero() {
    let b = built();
    let listing = isoinfo_listing(&b.iso);
    for (rel, mode) in &b.files {
        let (perm, uid, gid, size) = listing
            .get(&format!("/{rel}"))
            .unwrap_or_else(|| panic!("/{rel} not in isoinfo -R -l: {:#?}", listing.keys()));
        let want = if *mode == 0o755 {
            "-rwxr-xr-x"
        } else {
            "-rw-r--r--"
        };
        assert_eq!(perm, want, "{rel}");
        assert_eq!((*uid, *gid), (0, 0), "{rel}");
        assert_eq!(*size, fs::metadata(b.src.join(rel)).unwrap().len(), "{rel}");
    }
    for dir in ["/k8s", "/docker", "/names", "/cni", "/cri-tools"] {
        assert_eq!(listing[dir].0, "drwxr-xr-x", "{dir}");
    }
    assert!(
        listing["/k8s/kubeadm-link"].0.starts_with('l'),
        "symlink kept"
    );
}

#[test]
fn xorriso_loads_the_image_without_a_warning() {
    let b = built();
    require("xorriso");
    let out = run(std::process::Command::new("xorriso")
        .args([
            "-abort_on",
            "WARNING",
            "-return_with",
            "WARNING",
            "32",
            "-indev",
        ])
        .arg(&b.iso)
        .args(["-find", "/", "-exec", "lsdl"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for word in ["WARNING", "SORRY", "FAILURE", "FATAL"] {
        assert!(!stderr.contains(word), "xorriso said {word}:\n{stderr}");
    }
    assert!(stderr.contains("Volume id    : 'CDROM'"), "{stderr}");
    for (rel, _) in &b.files {
        assert!(
            stdout.contains(&format!("'/{rel}'")),
            "{rel} missing from\n{stdout}"
        );
    }
}

/// Checks every file of the source against `extracted`: same bytes, normalised mode.
fn assert_same_tree(b: &Built, extracted: &Path) {
    for (rel, mode) in &b.files {
        let got = extracted.join(rel);
        assert_eq!(
            fs::read(&got).unwrap_or_else(|e| panic!("{}: {e}", got.display())),
            fs::read(b.src.join(rel)).unwrap(),
            "{rel} differs"
        );
        let perm = fs::metadata(&got).unwrap().permissions().mode() & 0o7777;
        assert_eq!(perm, *mode, "{rel} has mode {perm:o}");
    }
    let link = fs::read_link(extracted.join("k8s/kubeadm-link")).unwrap();
    assert_eq!(link, Path::new("kubeadm"));
}

#[test]
fn bsdtar_extracts_identical_files_with_normalised_modes() {
    let b = built();
    let out = tempfile::tempdir().unwrap();
    tool("bsdtar", ["-x", "-p", "-f", p(&b.iso), "-C", p(out.path())]);
    assert_same_tree(&b, out.path());
    let (listing, _) = tool("bsdtar", ["-t", "-v", "-n", "-f", p(&b.iso)]);
    for line in listing.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!((fields[2], fields[3]), ("0", "0"), "owner of {line}");
    }
}

#[test]
fn osirrox_extracts_identical_files_with_normalised_modes() {
    let b = built();
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("x");
    tool(
        "xorriso",
        [
            "-osirrox",
            "on",
            "-indev",
            p(&b.iso),
            "-extract",
            "/",
            p(&dest),
        ],
    );
    assert_same_tree(&b, &dest);
    let root = fs::metadata(&dest).unwrap();
    assert_eq!(
        root.permissions().mode() & 0o7777,
        0o755,
        "the ISO root is 0755, not the staging dir's 0700"
    );
    if is_root() {
        assert_eq!((root.uid(), root.gid()), (0, 0));
    }
}

#[test]
fn seven_zip_tests_the_image_ok() {
    let b = built();
    let (out, _) = tool("7z", ["t", p(&b.iso)]);
    assert!(out.contains("Everything is Ok"), "{out}");
}
