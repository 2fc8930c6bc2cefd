//! Add-on content: the images and manifests an operator carries in the ISO beside what CloudStack
//! needs (a backup tool, metrics-server, another CNI's operator). Nodes import every archive of
//! `docker/` and the control node copies every root `*.yaml`, so in an air-gapped zone the ISO is
//! the only way such an add-on's images reach the cluster. Here the user's words become a plan:
//! references normalised as containerd normalises them, each manifest given a root name that no
//! file of cks-iso or CloudStack has. `realize` takes them as it takes the core content. Pure.

use std::collections::BTreeSet;

use super::{PlanError, Source};
use crate::contract;
use cks_iso_oci::image::Reference;

/// What a build carries beyond the core content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Addons {
    /// Extra images, normalised (`nginx` → `docker.io/library/nginx:latest`), each once, in the
    /// order given.
    pub images: Vec<String>,
    /// Extra manifests: the name at the ISO's root and where the manifest comes from, in the
    /// order given.
    pub manifests: Vec<(String, Source)>,
}

impl Addons {
    /// Whether nothing beyond the core content is asked for.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty() && self.manifests.is_empty()
    }

    /// `first` (the configuration's) and then these (the flags'), each image once; two manifests
    /// of one name are a usage error.
    pub fn after(self, first: Addons) -> Result<Addons, PlanError> {
        let mut out = first;
        for image in self.images {
            if !out.images.contains(&image) {
                out.images.push(image);
            }
        }
        for (name, source) in self.manifests {
            if out.manifests.iter().any(|(n, _)| *n == name) {
                return Err(PlanError::AddonName {
                    given: name.clone(),
                    name,
                    reason: "the configuration's extras already have a manifest of that name",
                });
            }
            out.manifests.push((name, source));
        }
        Ok(out)
    }
}

/// The references of an images file: one a line; blank lines and `#` comments (whole lines or
/// after a reference) are skipped.
pub fn image_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The add-ons `images` (references as written) and `manifests` (`[NAME=]URL|FILE`) ask for.
pub fn addons(images: &[String], manifests: &[String]) -> Result<Addons, PlanError> {
    let mut out = Addons::default();
    for given in images {
        let normalised = normalise(given)?;
        if !out.images.contains(&normalised) {
            out.images.push(normalised);
        }
    }
    let mut names = BTreeSet::new();
    for given in manifests {
        let (name, source) = extra_manifest(given)?;
        if !names.insert(name.clone()) {
            return Err(PlanError::AddonName {
                given: given.clone(),
                name,
                reason: "another --manifest already has that name",
            });
        }
        out.manifests.push((name, source));
    }
    Ok(out)
}

/// `given` normalised as containerd does; a usage error naming it when it is no reference.
pub fn normalise(given: &str) -> Result<String, PlanError> {
    Reference::parse(given.trim())
        .map(|r| r.to_string())
        .map_err(|e| PlanError::AddonImage {
            given: given.to_owned(),
            reason: e.to_string(),
        })
}

/// `[NAME=]URL|FILE`: the root name (NAME, else the URL's or file's last path component) and the
/// source. A `=` counts as `NAME=` only before any `/` or `:`, so a URL's query keeps its own.
fn extra_manifest(given: &str) -> Result<(String, Source), PlanError> {
    let split = given
        .split_once('=')
        .filter(|(name, _)| !name.contains(['/', ':']));
    let (name, source) = match split {
        Some((name, source)) => (Some(name.to_owned()), Source::parse(source)),
        None => (None, Source::parse(given)),
    };
    let name = match (name, &source) {
        (Some(name), _) => name,
        (None, Source::Url(url)) => {
            let path = url.split(['?', '#']).next().unwrap_or_default();
            path.rsplit('/').next().unwrap_or_default().to_owned()
        }
        (None, Source::File(path)) => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    check_name(&name, given)?;
    Ok((name, source))
}

/// Why `name` cannot be an extra manifest's root name, if it cannot: it must be one plain file
/// name ending in `.yaml` (what the control node copies) that no file of cks-iso or CloudStack
/// has.
pub fn check_name(name: &str, given: &str) -> Result<(), PlanError> {
    let reason = if let Some(reason) = super::name::problem(name) {
        Some(reason)
    } else if contract::owned(name) {
        Some("cks-iso or CloudStack owns that name at the ISO's root")
    } else if !name.ends_with(".yaml") || name == ".yaml" {
        Some("a manifest's root name ends in .yaml, the files the control node copies")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(PlanError::AddonName {
            given: given.to_owned(),
            name: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_normalise_as_containerd_does_and_manifests_get_their_names() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let images = [
            "nginx".to_owned(),
            "docker.io/library/nginx:latest".to_owned(),
            format!("quay.io/x/y:1.0@{digest}"),
            format!("ghcr.io/x/z@{digest}"),
        ];
        let manifests = [
            "velero.yaml=https://example.org/v1/install.yaml?x=1".to_owned(),
            "https://example.org/metrics/components.yaml".to_owned(),
            "./rendered/chart.yaml".to_owned(),
        ];
        let got = addons(&images, &manifests).unwrap();
        assert_eq!(
            got.images,
            [
                "docker.io/library/nginx:latest".to_owned(),
                format!("quay.io/x/y:1.0@{digest}"),
                format!("ghcr.io/x/z@{digest}"),
            ]
        );
        let names: Vec<&str> = got.manifests.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["velero.yaml", "components.yaml", "chart.yaml"]);
        assert_eq!(
            got.manifests[0].1,
            Source::Url("https://example.org/v1/install.yaml?x=1".into())
        );
        assert_eq!(
            image_lines("# tools\n\nnginx  # web\n  busybox:1.36\n"),
            ["nginx", "busybox:1.36"]
        );
    }

    #[test]
    fn the_configuration_s_addons_come_first_and_a_name_twice_is_refused() {
        let configured = addons(&["nginx".into()], &["a.yaml=/etc/a.yaml".into()]).unwrap();
        let flags = addons(&["busybox".into(), "nginx".into()], &["b.yaml".into()]).unwrap();
        let both = flags.after(configured.clone()).unwrap();
        assert_eq!(
            both.images,
            [
                "docker.io/library/nginx:latest",
                "docker.io/library/busybox:latest"
            ]
        );
        let names: Vec<&str> = both.manifests.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a.yaml", "b.yaml"]);
        let again = addons(&[], &["a.yaml=https://x/a.yaml".into()]).unwrap();
        assert!(again.after(configured).is_err());
        assert!(Addons::default().is_empty() && !both.is_empty());
    }

    #[test]
    fn owned_and_unusable_names_are_refused() {
        for given in [
            "autoscaler.yaml=https://x/a.yaml",
            "https://x/network.yaml",
            "versions.txt=x.yaml",
            ".yaml=https://x/a.yaml",
            "x.yml",
            "dup.yaml=a.yaml",
        ] {
            let manifests = match given {
                "dup.yaml=a.yaml" => vec![given.to_owned(), given.to_owned()],
                _ => vec![given.to_owned()],
            };
            let err = addons(&[], &manifests).unwrap_err();
            assert!(matches!(err, PlanError::AddonName { .. }), "{given}: {err}");
        }
        let err = addons(&["nginx@sha256:short".into()], &[]).unwrap_err();
        assert!(err.to_string().contains("nginx@sha256:short"), "{err}");
    }
}
