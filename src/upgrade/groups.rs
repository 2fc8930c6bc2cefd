//! What changes in an upgrade, as `diff` says it, sorted into the groups an operator weighs
//! separately: Kubernetes itself, kubeadm's pause/etcd/CoreDNS, CNI and crictl, the autoscaler and
//! CCM (the management server redeploys the autoscaler from the new ISO's `autoscaler.yaml` after
//! an upgrade), CSI, the other manifests, and the add-ons (CNI, dashboard and Headlamp images).
//! Pure.

use serde::Serialize;

use crate::diff::{self, ChangeKind};

/// The groups, in the order they are printed.
pub const GROUPS: [&str; 7] = [
    "kubernetes",
    "pause-etcd-coredns",
    "cni-crictl",
    "autoscaler-ccm",
    "csi",
    "manifests",
    "add-ons",
];

/// One thing that changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// `version`, `file`, `image` or `manifest`.
    pub kind: &'static str,
    /// The version's name, the file's or manifest's path, the image's reference.
    pub name: String,
    /// `added`, `removed` or `changed`.
    pub change: ChangeKind,
    /// FROM's value (version, sha256 or digest); `null` where FROM lacks it.
    pub a: Option<String>,
    /// TO's value.
    pub b: Option<String>,
}

/// One group and its changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    /// One of [`GROUPS`].
    pub group: &'static str,
    /// What changes in it.
    pub changes: Vec<Item>,
    /// What follows for the cluster (the autoscaler's redeploy), when anything changes.
    pub note: Option<String>,
}

fn version_group(name: &str) -> &'static str {
    match name {
        "kubernetes" => "kubernetes",
        "etcd" | "kubeadm-pause" | "kubeadm-etcd" | "kubeadm-coredns" | "kubeadm-source" => {
            "pause-etcd-coredns"
        }
        "cni" | "crictl" => "cni-crictl",
        "autoscaler" | "autoscaler-commit" | "ccm" => "autoscaler-ccm",
        "csi" => "csi",
        _ => "add-ons",
    }
}

fn file_group(path: &str) -> &'static str {
    match path.split('/').next().unwrap_or_default() {
        "k8s" => "kubernetes",
        "etcd" => "pause-etcd-coredns",
        "cni" | "cri-tools" => "cni-crictl",
        _ => "add-ons",
    }
}

fn image_group(reference: &str) -> &'static str {
    let repo = reference.split(['@']).next().unwrap_or(reference);
    let path = repo
        .rsplit_once(':')
        .map_or(repo, |(p, tag)| match tag.contains('/') {
            true => repo,
            false => p,
        });
    let last = path.rsplit('/').next().unwrap_or(path);
    match last {
        "kube-apiserver" | "kube-controller-manager" | "kube-scheduler" | "kube-proxy" => {
            "kubernetes"
        }
        "pause" | "etcd" | "coredns" => "pause-etcd-coredns",
        "cluster-autoscaler" | "cloudstack-kubernetes-provider" => "autoscaler-ccm",
        _ if path.contains("csi") => "csi",
        _ => "add-ons",
    }
}

fn manifest_group(path: &str) -> &'static str {
    match path {
        "autoscaler.yaml" | "provider.yaml" => "autoscaler-ccm",
        // The CSI driver's release assets, under their upstream names.
        "manifest.yaml" | "snapshot-crds.yaml" => "csi",
        _ => "manifests",
    }
}

/// `diff`'s report as groups; an empty group is left out.
pub fn of(report: &diff::Report) -> Vec<Group> {
    let mut items: Vec<(&'static str, Item)> = Vec::new();
    let item = |kind, c: &diff::Change<String>| Item {
        kind,
        name: c.name.clone(),
        change: c.change,
        a: c.a.clone(),
        b: c.b.clone(),
    };
    for c in &report.versions {
        items.push((version_group(&c.name), item("version", c)));
    }
    for arch in &report.arches {
        for f in &arch.files {
            let c = diff::Change {
                name: f.name.clone(),
                change: f.change,
                a: f.a.as_ref().map(|x| x.sha256.clone()),
                b: f.b.as_ref().map(|x| x.sha256.clone()),
            };
            items.push((file_group(&f.name), item("file", &c)));
        }
        for i in &arch.images {
            let c = diff::Change {
                name: i.name.clone(),
                change: i.change,
                a: i.a.as_ref().map(|x| x.digest.clone()),
                b: i.b.as_ref().map(|x| x.digest.clone()),
            };
            items.push((image_group(&i.name), item("image", &c)));
        }
    }
    for m in &report.manifests {
        let c = diff::Change {
            name: m.change.name.clone(),
            change: m.change.change,
            a: m.change.a.as_ref().map(|x| x.sha256.clone()),
            b: m.change.b.as_ref().map(|x| x.sha256.clone()),
        };
        items.push((manifest_group(&m.change.name), item("manifest", &c)));
    }
    GROUPS
        .iter()
        .filter_map(|group| {
            let changes: Vec<Item> = items
                .iter()
                .filter(|(g, _)| g == group)
                .map(|(_, i)| i.clone())
                .collect();
            if changes.is_empty() {
                return None;
            }
            let autoscaler = changes
                .iter()
                .any(|i| i.name == "autoscaler" || i.name == "autoscaler.yaml");
            let note = (*group == "autoscaler-ccm" && autoscaler).then(|| {
                "after the upgrade the management server redeploys the autoscaler (where enabled) \
                 from TO's autoscaler.yaml, filling its placeholders again"
                    .to_owned()
            });
            Some(Group {
                group,
                changes,
                note,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_files_and_manifests_land_in_the_group_an_operator_weighs() {
        assert_eq!(
            image_group("registry.k8s.io/kube-proxy:v1.33.1"),
            "kubernetes"
        );
        assert_eq!(
            image_group("registry.k8s.io/coredns/coredns:v1.12.0"),
            "pause-etcd-coredns"
        );
        assert_eq!(
            image_group("registry.k8s.io/pause:3.10"),
            "pause-etcd-coredns"
        );
        assert_eq!(
            image_group("registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.1"),
            "autoscaler-ccm"
        );
        assert_eq!(
            image_group("docker.io/apache/cloudstack-kubernetes-provider:v1.2.0"),
            "autoscaler-ccm"
        );
        assert_eq!(
            image_group("ghcr.io/leaseweb/cloudstack-csi-driver:v3.0.0"),
            "csi"
        );
        assert_eq!(image_group("localhost:5000/calico/node:v3.29.1"), "add-ons");
        assert_eq!(file_group("k8s/kubelet"), "kubernetes");
        assert_eq!(
            file_group("cri-tools/crictl-linux-amd64.tar.gz"),
            "cni-crictl"
        );
        assert_eq!(manifest_group("autoscaler.yaml"), "autoscaler-ccm");
        assert_eq!(manifest_group("network.yaml"), "manifests");
        assert_eq!(manifest_group("snapshot-crds.yaml"), "csi");
        assert_eq!(version_group("kubeadm-coredns"), "pause-etcd-coredns");
    }
}
