//! The one pause image rule: nodes pick their sandbox image with `ctr images ls -q | grep pause |
//! sort | tail -1`, so a manifest naming another pause image than kubeadm's is refused before
//! anything is pulled.

use super::Edited;
use crate::manifest;
use cks_iso_oci::image::Reference;

/// Whether `image` is a pause image by the rule `verify` applies: the last component of its
/// repository is `pause`. Nodes choose their sandbox image with `ctr images ls -q | grep pause |
/// sort | tail -1`, so an ISO must hold exactly one.
pub fn is_pause(image: &Reference) -> bool {
    image.path().rsplit('/').next() == Some("pause")
}

/// A bundled manifest names another pause image than kubeadm's.
#[derive(Debug, thiserror::Error)]
#[error(
    "{manifest} ({origin}){} names the pause image {theirs}, but kubeadm's is {kubeadm}: an ISO \
     must hold exactly one pause image, and nodes pick their sandbox image with \
     `ctr images ls -q | grep pause | sort | tail -1`, which would run {picked}",
    line.map_or(String::new(), |l| format!(" line {l}"))
)]
pub struct PauseConflict {
    /// The manifest's name in the ISO (`network.yaml`).
    pub manifest: String,
    /// Where it came from (URL or `file://…`).
    pub origin: String,
    /// The 1-based line naming the other pause image, when it is an `image:` line.
    pub line: Option<usize>,
    /// The manifest's pause image, normalised.
    pub theirs: String,
    /// kubeadm's pause image, normalised.
    pub kubeadm: String,
    /// The one `sort | tail -1` picks of the two.
    pub picked: String,
}

impl PauseConflict {
    /// What the user can do.
    pub fn hint(&self) -> String {
        format!(
            "make {} name {} (kubeadm's for this Kubernetes release) or leave that image out of it",
            self.manifest, self.kubeadm
        )
    }
}

/// Refuses a manifest that names a pause image other than kubeadm's, before anything is pulled.
/// `manifests` yields each manifest's ISO name, origin and edited text with its images. Images
/// that do not parse are left to [`image_set`](super::image_set) to report.
pub fn one_pause<'a>(
    kubeadm: &[&str],
    manifests: impl IntoIterator<Item = (&'a str, &'a str, &'a Edited)>,
) -> Result<(), Box<PauseConflict>> {
    let normal = |text: &str| Reference::parse(text).ok();
    let Some(want) = kubeadm.iter().filter_map(|t| normal(t)).find(is_pause) else {
        return Ok(());
    };
    let want = want.to_string();
    for (manifest, origin, edited) in manifests {
        for image in &edited.images {
            let Some(theirs) = normal(image).filter(is_pause).map(|r| r.to_string()) else {
                continue;
            };
            if theirs == want {
                continue;
            }
            let line = manifest::image_lines(&edited.text)
                .into_iter()
                .find(|(_, v)| normal(v).is_some_and(|r| r.to_string() == theirs))
                .map(|(n, _)| n);
            return Err(Box::new(PauseConflict {
                manifest: manifest.to_owned(),
                origin: origin.to_owned(),
                line,
                picked: want.clone().max(theirs.clone()),
                theirs,
                kubeadm: want,
            }));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Role, edit};

    #[test]
    fn another_pause_tag_in_a_manifest_is_refused_naming_both_and_the_line() {
        let kubeadm = [
            "registry.k8s.io/kube-proxy:v1.33.1",
            "registry.k8s.io/pause:3.10",
        ];
        let text = "kind: DaemonSet\nspec:\n  template:\n    spec:\n      containers:\n      - image: calico/node:v3\n      - name: sandbox\n        image: \"registry.k8s.io/pause:3.9\"\n";
        let net = edit("network.yaml", text, &Role::Network).unwrap();
        let err = one_pause(&kubeadm, [("network.yaml", "file:///n.yaml", &net)]).unwrap_err();
        let msg = err.to_string();
        for want in [
            "network.yaml (file:///n.yaml) line 8",
            "registry.k8s.io/pause:3.9",
            "kubeadm's is registry.k8s.io/pause:3.10",
            "which would run registry.k8s.io/pause:3.9",
        ] {
            assert!(msg.contains(want), "{want:?} not in {msg}");
        }
        assert!(err.hint().contains("registry.k8s.io/pause:3.10"));
        // kubeadm's own pause, written short or long, and other images named like it are fine.
        let same = "image: registry.k8s.io/pause:3.10\n---\nimage: rancher/mirrored-pause:3.6\n";
        let same = edit("dashboard.yaml", same, &Role::Dashboard).unwrap();
        assert!(one_pause(&kubeadm, [("dashboard.yaml", "u", &same)]).is_ok());
    }
}
