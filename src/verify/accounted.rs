//! Every image archive in `docker/` must be accounted for: nodes import every file there, on
//! every node, at create and at upgrade, so an archive nobody asked for is carried into every
//! cluster unnoticed (a hand-copied add-on, a stale leftover), and one asked for but missing leaves
//! an add-on that cannot start air-gapped. An archive is accounted for when its image is one of
//! kubeadm's (the Kubernetes release's, with the pause, etcd and CoreDNS tags the lock records, or
//! those this cks-iso knows for the release), one a root `*.yaml` names (air-gap completeness of
//! the manifests is checked beside them, in `checks`), or an extra image the embedded lock
//! records. Each image is judged by the name `versions.txt` gives its archive, whose agreement
//! with the archive itself is checked in `checks`.

use std::collections::BTreeSet;

use super::ctx::Ctx;
use crate::contract;
use crate::image::Reference;
use crate::lock::Lock;
use crate::release::kubeadm::Extras;
use crate::release::{self, KubeVersion};
use crate::versions::Versions;

/// kubeadm's three images whose tags do not follow the release; by repository (after the
/// registry) when this cks-iso cannot tell their tags.
const KUBEADM_EXTRAS: [&str; 4] = ["pause", "etcd", "coredns", "coredns/coredns"];

/// What an ISO's images may be: kubeadm's names, and the names root manifests and the lock's
/// extras give.
struct Accounted {
    /// Normalised references.
    names: BTreeSet<String>,
    /// Repositories any tag of which is kubeadm's (when the extras' tags are unknown).
    kubeadm_repositories: BTreeSet<String>,
}

impl Accounted {
    fn covers(&self, name: &str) -> bool {
        let Ok(reference) = Reference::parse(name) else {
            return false;
        };
        self.names.contains(&reference.to_string())
            || self.kubeadm_repositories.contains(&reference.repository())
    }
}

/// Checks that each archive `versions.txt` records is accounted for (`named`: the normalised
/// images the root manifests name; `extras`: the normalised references of the lock's extra
/// images) and that each of those extras has its archive.
pub(super) fn check(
    cx: &mut Ctx,
    versions: &Versions,
    lock: Option<&Lock>,
    named: &BTreeSet<String>,
    extras: &BTreeSet<String>,
) {
    let mut accounted = kubeadm(versions, lock);
    accounted.names.extend(named.iter().cloned());
    accounted.names.extend(extras.iter().cloned());
    for record in &versions.images {
        if !cx.entries.contains_key(&record.archive) || accounted.covers(&record.name) {
            continue;
        }
        cx.violation(
            &record.archive,
            format!(
                "holds {}, which neither kubeadm, a root *.yaml nor the lock's extra images name: \
                 every node imports it all the same; remove it, or add it with `cks-iso build \
                 --image {}` so that the lock, versions.txt and the SBOMs record it",
                record.name, record.name
            ),
        );
    }
    for extra in extras {
        let archived = versions.images.iter().any(|i| {
            cx.entries.contains_key(&i.archive)
                && Reference::parse(&i.name).is_ok_and(|r| r.to_string() == *extra)
        });
        if !archived {
            cx.violation(
                contract::IMAGES_DIR,
                format!(
                    "the lock's extra image {extra} has no archive in docker/: nodes cannot run \
                     it air-gapped; rebuild the ISO (cks-iso build --locked cks-iso.lock) rather \
                     than editing docker/"
                ),
            );
        }
    }
}

/// kubeadm's pause image for the ISO's release, normalised: with the tag the lock records, else
/// the one this cks-iso knows for the release; `None` when neither says.
pub(super) fn kubeadm_pause(versions: &Versions, lock: Option<&Lock>) -> Option<String> {
    let version = versions.kubernetes.parse::<KubeVersion>().ok()?;
    let tag = match lock {
        Some(lock) => lock.kubeadm.pause.clone(),
        None => Extras::embedded(&version)?.pause,
    };
    let name = format!("{}/pause:{tag}", release::kubeadm::registry(&version));
    Reference::parse(&name).ok().map(|r| r.to_string())
}

/// kubeadm's images for the ISO's release: exactly, when the lock records the extras' tags or
/// this cks-iso knows them; else the control-plane images exactly and the extras by repository.
fn kubeadm(versions: &Versions, lock: Option<&Lock>) -> Accounted {
    let mut accounted = Accounted {
        names: BTreeSet::new(),
        kubeadm_repositories: BTreeSet::new(),
    };
    let Ok(version) = versions.kubernetes.parse::<KubeVersion>() else {
        return accounted;
    };
    let extras = match lock {
        Some(lock) => Some(Extras {
            pause: lock.kubeadm.pause.clone(),
            etcd: lock.kubeadm.etcd.clone(),
            coredns: lock.kubeadm.coredns.clone(),
        }),
        None => Extras::embedded(&version),
    };
    // Unknown tags are left empty: those names do not parse and drop out below, leaving the
    // control-plane images, and the extras are taken by repository instead.
    let (extras, known) = match extras {
        Some(extras) => (extras, true),
        None => (
            Extras {
                pause: String::new(),
                etcd: String::new(),
                coredns: String::new(),
            },
            false,
        ),
    };
    let registry = release::kubeadm::registry(&version);
    for name in release::kubeadm::images(&version, &extras) {
        let normalised = Reference::parse(&name).map(|r| r.to_string());
        accounted.names.extend(normalised.ok());
    }
    if !known {
        accounted.kubeadm_repositories = KUBEADM_EXTRAS
            .iter()
            .map(|r| format!("{registry}/{r}"))
            .collect();
    }
    accounted
}

/// The normalised references of the add-on images `lock` records (`extra` set: asked for by
/// reference, or named by an extra manifest); none without a lock.
pub(super) fn extras(lock: Option<&Lock>) -> BTreeSet<String> {
    let images = lock
        .into_iter()
        .flat_map(|l| l.arches.values())
        .flat_map(|a| &a.images);
    images
        .filter(|i| i.extra.is_some())
        .filter_map(|i| Reference::parse(&i.reference).ok())
        .map(|r| r.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(kubernetes: &str) -> Versions {
        Versions {
            kubernetes: kubernetes.into(),
            arch: "amd64".into(),
            cni_plugins: "v1.6.2".into(),
            crictl: "v1.33.0".into(),
            etcd: None,
            autoscaler: "1.33.6".into(),
            ccm: "v1.2.0".into(),
            csi_driver: None,
            cloudstack: None,
            files: Vec::new(),
            images: Vec::new(),
        }
    }

    #[test]
    fn kubeadm_s_images_are_exact_for_a_known_release_and_by_repository_for_an_unknown_one() {
        let known = kubeadm(&versions("v1.33.1"), None);
        for name in [
            "registry.k8s.io/kube-apiserver:v1.33.1",
            "registry.k8s.io/pause:3.10",
            "registry.k8s.io/etcd:3.5.21-0",
            "registry.k8s.io/coredns/coredns:v1.12.0",
        ] {
            assert!(known.covers(name), "{name}");
        }
        for name in [
            "registry.k8s.io/pause:3.9",
            "registry.k8s.io/kube-apiserver:v1.33.0",
            "docker.io/library/busybox:1.36",
        ] {
            assert!(!known.covers(name), "{name}");
        }
        let unknown = kubeadm(&versions("v1.99.0"), None);
        assert!(unknown.covers("registry.k8s.io/kube-proxy:v1.99.0"));
        assert!(unknown.covers("registry.k8s.io/pause:3.99"));
        assert!(unknown.covers("registry.k8s.io/coredns/coredns:v9.0.0"));
        assert!(!unknown.covers("registry.k8s.io/kube-proxy:v1.98.0"));
        assert!(!unknown.covers("ghcr.io/acme/pause:1"));
        // Before 1.25 (and its backports), kubeadm's names are k8s.gcr.io's.
        let old = kubeadm(&versions("v1.24.0"), None);
        assert!(old.covers("k8s.gcr.io/kube-apiserver:v1.24.0"));
        assert!(!old.covers("registry.k8s.io/kube-apiserver:v1.24.0"));
    }
}
