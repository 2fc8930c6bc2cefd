//! The ISO's own `cks-iso.lock` must describe this very ISO: one architecture, the same versions,
//! files and images as `versions.txt` (whose hashes and archives the other checks hold to the
//! content). A lock that disagrees would rebuild something else. ISOs from before the lock (or
//! from upstream's script) have none, which is not a violation of the node-side contract.

use std::collections::BTreeMap;

use super::ctx::Ctx;
use crate::lock::{FILE_NAME, Lock};
use crate::versions::Versions;

/// Checks the embedded lock, when there is one, against `versions`; returns it when it reads.
pub(super) fn check(cx: &mut Ctx, versions: &Versions) -> Option<Lock> {
    if !cx.entries.contains_key(FILE_NAME) {
        return None;
    }
    let text = cx.text(FILE_NAME)?;
    let lock = match Lock::parse(&text, FILE_NAME) {
        Ok(lock) => lock,
        Err(e) => {
            cx.violation(FILE_NAME, e.to_string());
            return None;
        }
    };
    compare_all(cx, versions, &lock);
    Some(lock)
}

/// The lock's versions, files and images against `versions`.
fn compare_all(cx: &mut Ctx, versions: &Versions, lock: &Lock) {
    let Some((arch, entry)) = lock.arches.iter().next().filter(|_| lock.arches.len() == 1) else {
        return cx.violation(
            FILE_NAME,
            format!(
                "locks {}, not this ISO's one architecture",
                lock.arch_list()
            ),
        );
    };
    let r = &lock.request;
    let bare = |v: &str| v.trim_start_matches('v').to_owned();
    let pairs = [
        ("arch", arch.clone(), versions.arch.clone()),
        (
            "kubernetes",
            r.kubernetes.clone(),
            bare(&versions.kubernetes),
        ),
        ("cni-plugins", r.cni.clone(), bare(&versions.cni_plugins)),
        ("crictl", r.crictl.clone(), bare(&versions.crictl)),
        (
            "autoscaler",
            r.autoscaler.clone(),
            versions.autoscaler.clone(),
        ),
        ("ccm", r.ccm.clone(), versions.ccm.clone()),
        (
            "etcd",
            r.etcd.clone().unwrap_or_default(),
            versions.etcd.as_deref().map(bare).unwrap_or_default(),
        ),
        (
            "csi-driver",
            r.csi.clone().unwrap_or_default(),
            versions.csi_driver.clone().unwrap_or_default(),
        ),
    ];
    for (what, locked, listed) in pairs {
        if locked != listed {
            cx.violation(
                FILE_NAME,
                format!("locks {what} {locked:?}, versions.txt says {listed:?}"),
            );
        }
    }
    let mut locked: BTreeMap<&str, &str> = entry
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.sha256.as_str()))
        .collect();
    locked.extend(
        lock.manifests
            .iter()
            .map(|m| (m.path.as_str(), m.sha256.as_str())),
    );
    let listed: BTreeMap<&str, &str> = versions
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.sha256.as_str()))
        .collect();
    compare(cx, "file", &locked, &listed);
    let locked: BTreeMap<&str, &str> = entry
        .images
        .iter()
        .map(|i| (i.reference.as_str(), i.digest.as_str()))
        .collect();
    let listed: BTreeMap<&str, &str> = versions
        .images
        .iter()
        .map(|i| (i.name.as_str(), i.digest.as_str()))
        .collect();
    compare(cx, "image", &locked, &listed);
}

/// Both sides name the same items with the same hash.
fn compare(cx: &mut Ctx, what: &str, locked: &BTreeMap<&str, &str>, listed: &BTreeMap<&str, &str>) {
    for (name, hash) in locked {
        match listed.get(name) {
            None => cx.violation(
                FILE_NAME,
                format!("locks the {what} {name}, which versions.txt does not list"),
            ),
            Some(other) if other != hash => cx.violation(
                FILE_NAME,
                format!("locks the {what} {name} as {hash}, versions.txt says {other}"),
            ),
            Some(_) => {}
        }
    }
    for name in listed.keys().filter(|n| !locked.contains_key(*n)) {
        cx.violation(
            FILE_NAME,
            format!("does not lock the {what} {name}, which versions.txt lists"),
        );
    }
}
