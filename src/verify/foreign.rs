//! `verify` of an ISO that cks-iso did not build (it has no `versions.txt`): official and
//! community ISOs, which operators now check before they register them (apache/cloudstack#10796).
//!
//! There is no record to hold such an ISO to, and it never has SBOMs or a lock, so only what
//! nodes read is checked, and what breaks nodes first is named first: every file in `docker/` is
//! judged the way `ctr -n k8s.io image import` judges it ([`crate::archive::containerd`]), because
//! one archive containerd cannot read aborts a cluster upgrade (apache/cloudstack#13157: the
//! official `setup-v1.34.7-calico-x86_64.iso` carried a `docker/pause:3.10.1.tar` holding only
//! `blobs/`, "unrecognized image format"). The ISO's architecture, which decides the platform the
//! images must be for, is read from `k8s/kubeadm`'s ELF header.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use cks_iso_iso9660::read::FileKind;

use super::ctx::{Ctx, matching, tarball};
use crate::archive::containerd;
use crate::contract;
use crate::image::Arch;

/// Said once for such an ISO, before anything else.
pub(super) const NOTE: &str = "not built by cks-iso: checking what nodes read";

/// The ISO's architecture: `k8s/kubeadm`'s ELF machine, else the `-x86_64`/`-aarch64` of the
/// ISO's file name.
pub(super) fn arch(cx: &Ctx, iso: &Path) -> Option<Arch> {
    iso_arch(cx.reader, iso)
}

/// An ISO's architecture as [`verify`](super::verify) finds it when nothing records it:
/// `k8s/kubeadm`'s ELF machine, else the `-x86_64`/`-aarch64` of the file name.
pub fn iso_arch(reader: &cks_iso_iso9660::read::IsoReader, iso: &Path) -> Option<Arch> {
    let mut head = [0u8; 20];
    let machine = reader
        .open_file(contract::K8S_BINARIES[0])
        .ok()
        .and_then(|mut f| f.read_exact(&mut head).ok())
        .filter(|()| head.starts_with(b"\x7fELF"))
        .map(|()| u16::from_le_bytes([head[18], head[19]]));
    let from_elf = [Arch::Amd64, Arch::Arm64]
        .into_iter()
        .find(|a| Some(a.e_machine()) == machine);
    let name = iso.file_name().map(|n| n.to_string_lossy().into_owned());
    from_elf.or_else(|| match name.as_deref() {
        Some(n) if n.ends_with("-x86_64.iso") => Some(Arch::Amd64),
        Some(n) if n.ends_with("-aarch64.iso") => Some(Arch::Arm64),
        _ => None,
    })
}

/// Every file in `docker/`, imported as a node imports it, each failure named with containerd's
/// words; then exactly one pause image ([`super::pause`]). Returns the names the imports record.
pub(super) fn images(cx: &mut Ctx, arch: Option<Arch>) -> BTreeSet<String> {
    let files: Vec<String> = matching(cx, contract::IMAGES_PREFIX, "", "");
    let mut bundled = BTreeSet::new();
    let mut held = Vec::new();
    let mut unreadable = 0;
    for path in &files {
        cx.report.images += 1;
        let file_name = &path[contract::IMAGES_PREFIX.len()..];
        let imported = cx.reader.open_file(path).map_err(|e| e.reason);
        match imported.map(|f| containerd::import(f, arch)) {
            Err(reason) => cx.violation(path, format!("cannot be read: {reason}")),
            Ok(Err(refused)) => {
                cx.violation(
                    path,
                    format!("nodes cannot import it: ctr -n k8s.io image import {refused}"),
                );
                // Meant as the pause image by its name: no second complaint about the count.
                unreadable += usize::from(file_name.starts_with("pause"));
            }
            Ok(Ok(imported)) => {
                held.extend(imported.names.iter().map(|n| (path.clone(), n.clone())));
                bundled.extend(imported.names);
            }
        }
    }
    // Nothing records the release's pause tag: exactly one pause image, whichever.
    super::pause::check(cx, &held, None, unreadable);
    bundled
}

/// The tarballs nodes extract list to their end and stay in their tree; the etcd tarball's
/// executables are for the ISO's architecture.
pub(super) fn tarballs(cx: &mut Ctx, arch: Option<Arch>) {
    let mut paths = matching(cx, "cni/", "", ".tgz");
    paths.extend(matching(cx, "cri-tools/", "", ".tar.gz"));
    paths.extend(matching(cx, "etcd/", "", ".tar.gz"));
    for path in paths {
        if let Err(e) = tarball(cx, &path, arch) {
            cx.violation(&path, format!("unreadable: {e}"));
        }
    }
    cx.report.files = cx
        .entries
        .values()
        .filter(|e| e.kind == FileKind::File && !e.path.starts_with(contract::IMAGES_PREFIX))
        .count();
}
