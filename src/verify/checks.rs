//! The rules, one function each, all reporting into the same list.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cks_iso_iso9660::read::FileKind;

use super::ctx::{Ctx, matching, sha256_of, tarball};
use super::yamls::yamls;
use super::{Cause, Expect, Report};
use crate::archive;
use crate::cloudstack::CloudStack;
use crate::contract::{self, K8S_BINARIES};
use crate::image::Arch;
use crate::versions::Versions;
use cks_iso_iso9660::read::{Entry, IsoReader, ReadError};

const REQUIRED: [&str; 8] = [
    contract::K8S_BINARIES[0],
    contract::K8S_BINARIES[1],
    contract::K8S_BINARIES[2],
    contract::KUBELET_SERVICE,
    contract::KUBEADM_DROPIN,
    contract::VERSIONS,
    contract::AUTOSCALER,
    contract::PROVIDER,
];

pub(super) fn run(
    reader: &IsoReader,
    iso: &Path,
    expect: &Expect,
    report: &mut Report,
) -> Result<(), ReadError> {
    let entries = reader
        .entries()?
        .into_iter()
        .map(|e| (e.path.clone(), e))
        .collect();
    let mut cx = Ctx {
        cause: Cause::Contract,
        reader,
        entries,
        report,
        hashes: BTreeMap::new(),
        archives: BTreeMap::new(),
    };
    if !cx.entries.contains_key(contract::VERSIONS) {
        return foreign(&mut cx, iso, expect);
    }
    volume(&mut cx, expect);
    modes(&mut cx);
    layout(&mut cx, true);
    let versions = versions(&mut cx, iso);
    // The release asked for, else the one the ISO was built for.
    let cloudstack = expect.cloudstack.or_else(|| {
        let text = versions.as_ref()?.cloudstack.as_deref()?;
        CloudStack::parse(text).ok()
    });
    dashboards(&mut cx, cloudstack);
    etcd(&mut cx, cloudstack);
    let arch = versions.as_ref().and_then(|v| Arch::parse(&v.arch).ok());
    let bundled = images(&mut cx, versions.as_ref(), arch);
    let named = yamls(&mut cx, &bundled);
    units(&mut cx);
    if let Some(versions) = &versions {
        let lock = super::lock::check(&mut cx, versions);
        let extras = super::accounted::extras(lock.as_ref());
        super::accounted::check(&mut cx, versions, lock.as_ref(), &named, &extras);
        // Each archive by the name versions.txt gives it, whose agreement with the archive
        // itself is checked in `images`.
        let held: Vec<(String, String)> = (versions.images.iter())
            .filter(|i| cx.entries.contains_key(&i.archive))
            .map(|i| (i.archive.clone(), i.name.clone()))
            .collect();
        let kubeadm = super::accounted::kubeadm_pause(versions, lock.as_ref());
        super::pause::check(&mut cx, &held, kubeadm.as_deref(), 0);
    }
    super::sboms::check(&mut cx, versions.as_ref());
    if let Some(sig) = &expect.signatures {
        cx.cause = Cause::Signature;
        super::signatures::check(&mut cx, versions.as_ref(), sig);
        cx.cause = Cause::Contract;
    }
    Ok(())
}

/// An ISO without `versions.txt`, which cks-iso did not build: said once, then what nodes read,
/// the archives nodes would fail to import first ([`super::foreign`]).
fn foreign(cx: &mut Ctx, iso: &Path, expect: &Expect) -> Result<(), ReadError> {
    cx.report.notes.push(super::foreign::NOTE.to_owned());
    let arch = super::foreign::arch(cx, iso);
    cx.report.arch = arch.map(|a| a.as_str().to_owned());
    let bundled = super::foreign::images(cx, arch);
    volume(cx, expect);
    modes(cx);
    layout(cx, false);
    super::foreign::tarballs(cx, arch);
    dashboards(cx, expect.cloudstack);
    etcd(cx, expect.cloudstack);
    yamls(cx, &bundled);
    units(cx);
    if let Some(sig) = &expect.signatures {
        super::signatures::check(cx, None, sig);
    }
    Ok(())
}

/// The volume ID nodes look for (a copy shorter than its volume was reported before any rule,
/// alone, by `super::verify`).
fn volume(cx: &mut Ctx, expect: &Expect) {
    if cx.reader.volume_id() != expect.volume_id {
        let found = cx.reader.volume_id().to_owned();
        cx.violation(
            "",
            format!(
                "volume ID is {found:?}; nodes look for {:?}",
                expect.volume_id
            ),
        );
    }
}

/// Directories 0755, files 0644 (the k8s binaries may be 0755), owner 0:0.
fn modes(cx: &mut Ctx) {
    let entries: Vec<Entry> = cx.entries.values().cloned().collect();
    for e in entries {
        let ok = match e.kind {
            FileKind::Dir => e.mode == 0o755,
            FileKind::File => {
                e.mode == 0o644 || (e.mode == 0o755 && K8S_BINARIES.contains(&e.path.as_str()))
            }
            FileKind::Symlink => true,
            _ => {
                cx.violation(&e.path, "device, FIFO or socket in the ISO");
                continue;
            }
        };
        if !ok {
            cx.violation(
                &e.path,
                format!("mode {:04o}; directories must be 0755, files 0644", e.mode),
            );
        }
        match e.owner {
            Some((0, 0)) => {}
            Some((u, g)) => cx.violation(&e.path, format!("owner {u}:{g}, not 0:0")),
            None => cx.violation(&e.path, "no Rock Ridge owner (is Rock Ridge missing?)"),
        }
    }
}

/// Required files, the node scripts' exactly-one globs, CSI both-or-neither, `docker/` contents;
/// `versions.txt` only when `own` (an ISO cks-iso built).
fn layout(cx: &mut Ctx, own: bool) {
    for path in REQUIRED
        .into_iter()
        .filter(|p| own || *p != contract::VERSIONS)
    {
        if cx
            .entries
            .get(path)
            .is_none_or(|e| e.kind != FileKind::File)
        {
            cx.violation(path, "missing");
        }
    }
    for (dir, prefix, suffix, glob) in [
        ("cni/", "cni-plugins-", "64.tgz", "cni/cni-plugins-*64.tgz"),
        (
            "cri-tools/",
            "crictl-linux-",
            "64.tar.gz",
            "cri-tools/crictl-linux-*64.tar.gz",
        ),
    ] {
        let found = matching(cx, dir, prefix, suffix);
        if found.len() != 1 {
            cx.violation(
                dir.trim_end_matches('/'),
                format!(
                    "{glob} matches {} files, not exactly one: {found:?}",
                    found.len()
                ),
            );
        }
    }
    let csi = ["snapshot-crds.yaml", "manifest.yaml"].map(|p| cx.entries.contains_key(p));
    if csi[0] != csi[1] {
        cx.violation(
            "",
            "the CSI manifests snapshot-crds.yaml and manifest.yaml must be bundled together",
        );
    }
    let docker: Vec<Entry> = cx
        .entries
        .values()
        .filter(|e| e.path.starts_with(contract::IMAGES_PREFIX))
        .cloned()
        .collect();
    for e in docker {
        if e.kind != FileKind::File || !e.path.ends_with(".tar") || e.path[7..].contains('/') {
            cx.violation(&e.path, "docker/ must hold image archives (*.tar) and nothing else: every file there is imported");
        }
    }
}

/// etcd nodes (CloudStack 4.21 on, and the newest known release when the ISO names none) extract
/// only [`contract::ETCD_TARBALL`], whatever their architecture: an etcd tarball under another
/// name, with none under that one, gives them nothing to install. (What the tarball holds is
/// checked with its hash: executables of the ISO's architecture.)
fn etcd(cx: &mut Ctx, cloudstack: Option<CloudStack>) {
    if !cloudstack.is_none_or(CloudStack::reads_etcd)
        || cx.entries.contains_key(contract::ETCD_TARBALL)
    {
        return;
    }
    let nodes = cloudstack.map_or("etcd nodes (CloudStack 4.21 and later)".to_owned(), |c| {
        format!("CloudStack {c} etcd nodes")
    });
    for path in matching(cx, "etcd/", "", ".tar.gz") {
        cx.violation(
            &path,
            format!(
                "{nodes} extract only {}, whatever their architecture, so they find nothing to \
                 install",
                contract::ETCD_TARBALL
            ),
        );
    }
}

/// `dashboard.yaml`, which the management server applies up to 4.22 (and waits for its pod), or
/// on 4.23 `headlamp.yaml` in its place.
fn dashboards(cx: &mut Ctx, cloudstack: Option<CloudStack>) {
    let has = |cx: &Ctx, p: &str| cx.entries.get(p).is_some_and(|e| e.kind == FileKind::File);
    if has(cx, contract::DASHBOARD) {
        return;
    }
    let headlamp = has(cx, contract::HEADLAMP);
    let problem = match cloudstack {
        Some(c) if !c.dashboard_required() && headlamp => return,
        Some(c) if !c.dashboard_required() => {
            format!("missing, and so is headlamp.yaml: CloudStack {c} applies one of them")
        }
        Some(c) => format!("missing: CloudStack {c} applies it at cluster create and upgrade"),
        None if headlamp => "missing: CloudStack 4.20 to 4.22 apply it at cluster create and \
            upgrade; an ISO for 4.23 only may leave it out (check it with --cloudstack 4.23)"
            .into(),
        None => "missing".into(),
    };
    cx.violation("dashboard.yaml", problem);
}

/// `versions.txt` parses, names the ISO's architecture, and its file hashes match.
fn versions(cx: &mut Ctx, iso: &Path) -> Option<Versions> {
    let text = cx.text(contract::VERSIONS)?;
    let versions = match Versions::parse(&text) {
        Ok(v) => v,
        Err(e) => {
            cx.violation(contract::VERSIONS, e.to_string());
            return None;
        }
    };
    cx.report.arch = Some(versions.arch.clone());
    let name = iso
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let machine = match versions.arch.as_str() {
        "amd64" => Some("x86_64"),
        "arm64" => Some("aarch64"),
        _ => None,
    };
    match machine {
        None => cx.violation(
            contract::VERSIONS,
            format!("unknown arch {:?}", versions.arch),
        ),
        Some(m) if name.ends_with("-x86_64.iso") || name.ends_with("-aarch64.iso") => {
            if !name.ends_with(&format!("-{m}.iso")) {
                cx.violation(
                    "",
                    format!(
                        "the file name says another architecture than versions.txt ({})",
                        versions.arch
                    ),
                );
            }
        }
        Some(_) => {}
    }
    let arch = Arch::parse(&versions.arch).ok();
    for file in &versions.files {
        cx.report.files += 1;
        let actual = match file.path.ends_with(".tgz") || file.path.ends_with(".tar.gz") {
            true => tarball(cx, &file.path, arch),
            false => sha256_of(cx.reader, &file.path),
        };
        if let Ok(actual) = &actual {
            cx.hashes.insert(file.path.clone(), actual.clone());
        }
        match actual {
            Ok(actual) if actual == file.sha256 => {}
            Ok(actual) => cx.violation(
                &file.path,
                format!("sha256 is {actual}, versions.txt says {}", file.sha256),
            ),
            Err(e) => cx.violation(
                &file.path,
                format!("listed in versions.txt but unreadable: {e}"),
            ),
        }
    }
    Some(versions)
}

/// Every archive in `docker/` is well-formed for the ISO's platform and matches its
/// `versions.txt` line; returns the bundled image names.
fn images(cx: &mut Ctx, versions: Option<&Versions>, arch: Option<Arch>) -> BTreeSet<String> {
    let archives: Vec<String> = matching(cx, contract::IMAGES_PREFIX, "", ".tar");
    let mut bundled = BTreeSet::new();
    let Some(versions) = versions else {
        return bundled;
    };
    if versions.images.len() != archives.len() {
        cx.violation(
            contract::VERSIONS,
            format!(
                "{} image lines but {} archives in docker/",
                versions.images.len(),
                archives.len()
            ),
        );
    }
    let by_archive: BTreeMap<&str, _> = versions
        .images
        .iter()
        .map(|i| (i.archive.as_str(), i))
        .collect();
    for path in &archives {
        let Some(record) = by_archive.get(path.as_str()) else {
            cx.violation(path, "no image line in versions.txt");
            continue;
        };
        let Some(arch) = arch else { continue };
        let inspected = cx
            .reader
            .open_file(path)
            .map_err(|e| e.reason)
            .and_then(|f| archive::inspect(f, arch).map_err(|e| e.to_string()));
        cx.report.images += 1;
        match inspected {
            Err(problem) => cx.violation_as(Cause::Image, path, problem),
            Ok(i) => {
                if i.name.as_deref() != Some(record.name.as_str()) {
                    cx.violation(
                        path,
                        format!("names {:?}, versions.txt says {}", i.name, record.name),
                    );
                }
                if i.digest.to_string() != record.digest {
                    cx.violation(
                        path,
                        format!("digest {}, versions.txt says {}", i.digest, record.digest),
                    );
                }
                cx.archives.insert(path.clone(), i);
            }
        }
        bundled.insert(record.name.clone());
    }
    for record in &versions.images {
        if !archives.contains(&record.archive) {
            cx.violation(
                &record.archive,
                format!(
                    "versions.txt lists {} here but the archive is missing",
                    record.name
                ),
            );
        }
    }
    bundled
}

/// The kubelet unit and drop-in point at `/opt/bin`, where CKS installs the binaries.
fn units(cx: &mut Ctx) {
    for path in ["kubelet.service", "10-kubeadm.conf"] {
        if !cx.entries.contains_key(path) {
            continue;
        }
        let Some(text) = cx.text(path) else { continue };
        if !text.contains("/opt/bin/kubelet") || text.contains("/usr/bin/kubelet") {
            cx.violation(
                path,
                "must run /opt/bin/kubelet (CKS installs the binaries there), not /usr/bin",
            );
        }
    }
}
