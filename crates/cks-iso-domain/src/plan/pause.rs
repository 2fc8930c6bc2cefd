//! The one pause image rule: nodes pick their sandbox image with
//! `ctr -n k8s.io images ls -q | grep pause | sort | tail -n 1` ([`super::sandbox`]), a substring
//! match, so an ISO may hold no image whose name contains `pause` but kubeadm's pause image. A
//! build refuses any other, whichever way it arrives (a manifest, `--image`, `--images-file`,
//! `extras:`, a lock), before anything is pulled; `resolve` refuses it the same way.

use std::fmt;

use super::Edited;
use super::sandbox::{self, NODE_RULE, Sandbox};
use crate::manifest;
use cks_iso_oci::image::Reference;

/// The name containerd lists for an image cks-iso bundles: its archive's
/// `io.containerd.image.name`, which is the normalised reference in full (`name:tag`,
/// `name@digest` or both), and which `ctr image import` records as it is.
pub fn listed_name(image: &Reference) -> String {
    image.to_string()
}

/// Whether nodes take `image` for a pause image: `grep pause` selects its listed name.
pub fn is_pause(image: &Reference) -> bool {
    sandbox::names_pause(&listed_name(image))
}

/// Where the other pause image was named; it reads as the start of the error, verb included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PauseSource {
    /// A manifest the ISO carries.
    Manifest {
        /// Its name in the ISO (`network.yaml`).
        dest: String,
        /// Where it came from (URL or `file:…`).
        origin: String,
        /// The 1-based line naming the image, when it is an `image:` line.
        line: Option<usize>,
    },
    /// Asked for by reference: `--image`, `--images-file` or the configuration's `extras: images:`.
    Asked,
    /// A lock's images for one architecture.
    Lock {
        /// `amd64` or `arm64`.
        arch: String,
    },
}

impl fmt::Display for PauseSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Manifest { dest, origin, line } => {
                write!(f, "{dest} ({origin})")?;
                match line {
                    Some(l) => write!(f, " line {l} names"),
                    None => f.write_str(" names"),
                }
            }
            Self::Asked => f.write_str(
                "the add-on images asked for (--image, --images-file, extras: images:) include",
            ),
            Self::Lock { arch } => write!(f, "the lock's images for linux/{arch} include"),
        }
    }
}

/// An image nodes would take for their pause image beside kubeadm's.
#[derive(Debug, thiserror::Error)]
#[error(
    "{named_in} {theirs}, a second pause image: CloudStack's node script sets every pod's \
     sandbox image to the output of `{NODE_RULE}`, which selects every image whose name contains \
     \"pause\", so an ISO must hold none but kubeadm's, {kubeadm}; with both, nodes would run \
     {picked}"
)]
pub struct PauseConflict {
    /// Where it is named.
    pub named_in: PauseSource,
    /// The image, normalised as containerd lists it.
    pub theirs: String,
    /// kubeadm's pause image, normalised.
    pub kubeadm: String,
    /// What `grep pause | sort | tail -n 1` picks of the two.
    pub picked: Sandbox,
}

impl PauseConflict {
    /// What the user can do.
    pub fn hint(&self) -> String {
        let not_pause = "an image that is not a pause image must be published under a name \
                         without \"pause\"";
        match &self.named_in {
            PauseSource::Manifest { dest, .. } => format!(
                "leave {} out of {dest}, or make it name {} if it means kubeadm's pause image; \
                 {not_pause}",
                self.theirs, self.kubeadm
            ),
            PauseSource::Asked => format!(
                "drop {} from --image, --images-file and extras: images:; {not_pause}",
                self.theirs
            ),
            PauseSource::Lock { .. } => {
                "the lock was changed by hand or by someone else: build without --locked, or \
                 from a lock `cks-iso build --lock-file` wrote"
                    .into()
            }
        }
    }
}

/// kubeadm's pause image among `kubeadm` (its image list), normalised.
fn kubeadm_pause(kubeadm: &[&str]) -> Option<String> {
    kubeadm
        .iter()
        .filter_map(|t| Reference::parse(t).ok())
        .find(is_pause)
        .map(|r| listed_name(&r))
}

/// The first of `images` nodes would take for a pause image that is not `want`, normalised.
/// Images that do not parse are left to [`image_set`](super::image_set) to report.
fn intruder<'a>(want: &str, images: impl IntoIterator<Item = &'a String>) -> Option<String> {
    images
        .into_iter()
        .filter_map(|i| Reference::parse(i).ok())
        .map(|r| listed_name(&r))
        .find(|name| sandbox::names_pause(name) && name != want)
}

fn conflict(named_in: PauseSource, theirs: String, kubeadm: String) -> Box<PauseConflict> {
    let picked = sandbox::sandbox([theirs.as_str(), kubeadm.as_str()]).expect("both name pause");
    Box::new(PauseConflict {
        named_in,
        theirs,
        kubeadm,
        picked,
    })
}

/// Refuses, before anything is pulled, an image other than kubeadm's pause that nodes would take
/// for a pause image: named by a manifest (`manifests` yields each one's ISO name, origin and
/// edited text with its images) or asked for by reference (`asked`).
pub fn one_pause<'a>(
    kubeadm: &[&str],
    manifests: impl IntoIterator<Item = (&'a str, &'a str, &'a Edited)>,
    asked: &[String],
) -> Result<(), Box<PauseConflict>> {
    let Some(want) = kubeadm_pause(kubeadm) else {
        return Ok(());
    };
    for (dest, origin, edited) in manifests {
        let Some(theirs) = intruder(&want, &edited.images) else {
            continue;
        };
        let normal = |v: &str| Reference::parse(v).ok().map(|r| listed_name(&r));
        let line = manifest::image_lines(&edited.text)
            .into_iter()
            .find(|(_, v)| normal(v).as_deref() == Some(theirs.as_str()))
            .map(|(n, _)| n);
        let source = PauseSource::Manifest {
            dest: dest.to_owned(),
            origin: origin.to_owned(),
            line,
        };
        return Err(conflict(source, theirs, want));
    }
    match intruder(&want, asked) {
        Some(theirs) => Err(conflict(PauseSource::Asked, theirs, want)),
        None => Ok(()),
    }
}

/// Refuses a lock whose images for `arch` hold another pause image than kubeadm's (a lock written
/// by hand: a build never locks one).
pub fn locked_pause(
    kubeadm: &[&str],
    arch: &str,
    images: &[String],
) -> Result<(), Box<PauseConflict>> {
    let Some(want) = kubeadm_pause(kubeadm) else {
        return Ok(());
    };
    match intruder(&want, images) {
        Some(theirs) => Err(conflict(
            PauseSource::Lock {
                arch: arch.to_owned(),
            },
            theirs,
            want,
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Role, edit};

    const KUBEADM: [&str; 2] = [
        "registry.k8s.io/kube-proxy:v1.33.1",
        "registry.k8s.io/pause:3.10",
    ];

    #[test]
    fn another_pause_tag_in_a_manifest_is_refused_naming_both_and_the_line() {
        let text = "kind: DaemonSet\nspec:\n  template:\n    spec:\n      containers:\n      - image: calico/node:v3\n      - name: sandbox\n        image: \"registry.k8s.io/pause:3.9\"\n";
        let net = edit("network.yaml", text, &Role::Network).unwrap();
        let err = one_pause(&KUBEADM, [("network.yaml", "file:///n.yaml", &net)], &[]).unwrap_err();
        let msg = err.to_string();
        for want in [
            "network.yaml (file:///n.yaml) line 8 names registry.k8s.io/pause:3.9",
            "grep pause | sort | tail -n 1",
            "kubeadm's, registry.k8s.io/pause:3.10",
            "nodes would run registry.k8s.io/pause:3.9",
        ] {
            assert!(msg.contains(want), "{want:?} not in {msg}");
        }
        assert!(err.hint().contains("registry.k8s.io/pause:3.10"));
        // kubeadm's own pause, written short or long, is fine.
        let same = "image: registry.k8s.io/pause:3.10\n---\nimage: k8s.gcr.io/etcd:3\n";
        let same = edit("dashboard.yaml", same, &Role::Dashboard).unwrap();
        assert!(one_pause(&KUBEADM, [("dashboard.yaml", "u", &same)], &[]).is_ok());
    }

    #[test]
    fn any_name_containing_pause_is_refused_from_a_manifest_or_by_reference() {
        // The probe's add-on: a last component that is not `pause` still matches `grep pause`.
        let text = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - image: zz.example.org/evil/pause-sandbox:1\n";
        let addon = edit("addon.yaml", text, &Role::Extra).unwrap();
        let err =
            one_pause(&KUBEADM, [("addon.yaml", "https://x/a.yaml", &addon)], &[]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(
                "addon.yaml (https://x/a.yaml) line 5 names zz.example.org/evil/pause-sandbox:1"
            ),
            "{msg}"
        );
        assert!(
            msg.ends_with("nodes would run zz.example.org/evil/pause-sandbox:1"),
            "{msg}"
        );
        assert!(
            err.hint()
                .contains("leave zz.example.org/evil/pause-sandbox:1 out of addon.yaml")
        );
        for asked in [
            "rancher/mirrored-pause:3.6",
            "quay.io/evil/pause-sandbox:1",
            "quay.io/acme/tool:pause",
        ] {
            let err = one_pause(&KUBEADM, [], &[asked.to_owned()]).unwrap_err();
            let theirs = Reference::parse(asked).unwrap().to_string();
            assert_eq!(err.theirs, theirs);
            let msg = err.to_string();
            assert!(
                msg.starts_with("the add-on images asked for (--image"),
                "{msg}"
            );
            assert!(
                err.hint()
                    .starts_with(&format!("drop {theirs} from --image"))
            );
        }
        // Sorting before kubeadm's in both orders is refused too: the rule is the name.
        let err = one_pause(&KUBEADM, [], &["docker.io/library/pause:3.1".into()]).unwrap_err();
        assert_eq!(err.picked.to_string(), "registry.k8s.io/pause:3.10");
        // Images without `pause`, and kubeadm's own asked for again, pass.
        let fine = [
            "quay.io/acme/PAUSE:1".to_owned(),
            "registry.k8s.io/pause:3.10".into(),
        ];
        assert!(one_pause(&KUBEADM, [], &fine).is_ok());
    }

    #[test]
    fn a_lock_holding_another_pause_is_refused() {
        let images = [
            "registry.k8s.io/pause:3.10".to_owned(),
            "quay.io/evil/pause-sandbox:1".into(),
        ];
        let err = locked_pause(&KUBEADM, "amd64", &images).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "the lock's images for linux/amd64 include quay.io/evil/pause-sandbox:1"
            ),
            "{err}"
        );
        assert!(locked_pause(&KUBEADM, "amd64", &images[..1]).is_ok());
    }
}
