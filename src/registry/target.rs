//! Where `cks-iso push` puts an image: `--to REGISTRY[/PREFIX]` parsed, and each image's name under
//! it. By default (`--map nested`) `PREFIX/<its registry>/<its path>`, as namespaced mirrors hold
//! images (skopeo sync `--scoped`, containerd's `hosts.toml` with `override_path`), so one seeded
//! registry serves several upstream registries without their names colliding. Registries whose
//! projects hold one level of names (a Harbor project, a Quay organisation) take `--map flat`:
//! `PREFIX/<the last component of its path>`, as `skopeo sync` names images without `--scoped` and
//! Harbor's replication does when it flattens all levels; two images that would land on one name
//! are refused before anything is uploaded ([`Target::check_names`]).

use std::collections::BTreeMap;

use super::Endpoint;
use crate::image::Reference;

/// How an image's name is mapped under the target's prefix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mapping {
    /// `PREFIX/<host>/<path>`: nothing of the name is lost.
    #[default]
    Nested,
    /// `PREFIX/<last path component>`: one level, for flat project namespaces.
    Flat,
}

impl Mapping {
    /// `nested` or `flat`, as `--map` takes them.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "nested" => Some(Self::Nested),
            "flat" => Some(Self::Flat),
            _ => None,
        }
    }
}

/// Where pushed images go: `REGISTRY[/PREFIX]`; each image under `PREFIX/<its host>/<its path>`,
/// as namespaced mirrors hold them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `https://host[:port]`, or `http://` for a host named with `--insecure-registry`.
    pub base: String,
    /// `host[:port]`.
    pub host: String,
    /// The repository prefix, without slashes at either end; empty for none.
    pub prefix: String,
    /// How names are mapped under the prefix.
    pub mapping: Mapping,
}

/// A `--to` that names no registry cks-iso can push to.
#[derive(Debug, thiserror::Error)]
#[error("--to {given:?}: {why} (e.g. --to registry.example:5000/cks)")]
pub struct TargetError {
    /// The text given.
    pub given: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// Two images of different repositories that one name of the target would hold.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{first} and {second} would both be pushed to {name}")]
pub struct NameClash {
    /// The image that took the name first.
    pub first: String,
    /// The image that would take it too.
    pub second: String,
    /// The target's repository both map to.
    pub name: String,
}

impl Target {
    /// Parses `--to REGISTRY[/PREFIX]`; plain HTTP when the host is among `insecure`.
    pub fn parse(text: &str, insecure: &[String]) -> Result<Self, TargetError> {
        let bad = |why: &'static str| TargetError {
            given: text.to_owned(),
            why,
        };
        let text = text.trim().trim_end_matches('/');
        if text.contains("://") {
            return Err(bad(
                "give HOST[:PORT][/PREFIX] without a scheme; plain HTTP is --insecure-registry HOST",
            ));
        }
        let (host, prefix) = text.split_once('/').unwrap_or((text, ""));
        if host.is_empty() || host.contains(['@', '?', '#', ' ']) {
            return Err(bad("REGISTRY must be a host[:port]"));
        }
        let valid = |part: &str| {
            !part.is_empty()
                && part.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
                })
        };
        if !prefix.is_empty() && !prefix.split('/').all(valid) {
            return Err(bad(
                "the prefix must be lowercase path components (a-z, 0-9, '.', '_', '-')",
            ));
        }
        let scheme = match insecure.iter().any(|h| h == host) {
            true => "http",
            false => "https",
        };
        Ok(Self {
            base: format!("{scheme}://{host}"),
            host: host.to_owned(),
            prefix: prefix.to_owned(),
            mapping: Mapping::Nested,
        })
    }

    /// This target with names mapped as `mapping` says.
    pub fn with_mapping(self, mapping: Mapping) -> Self {
        Self { mapping, ..self }
    }

    /// The repository `reference` goes to: `PREFIX/<host>/<path>` (nested), or
    /// `PREFIX/<last component of path>` (flat). A port in the host becomes `_<port>`
    /// (`localhost:5000` → `localhost_5000`): a repository name has no `:`.
    pub fn repository(&self, reference: &Reference) -> String {
        let name = match self.mapping {
            Mapping::Nested => {
                let host = reference.domain().to_ascii_lowercase().replace(':', "_");
                format!("{host}/{}", reference.path())
            }
            Mapping::Flat => (reference.path().rsplit('/').next())
                .unwrap_or_default()
                .to_owned(),
        };
        match self.prefix.is_empty() {
            true => name,
            false => format!("{}/{name}", self.prefix),
        }
    }

    /// The endpoint `reference` is pushed to.
    pub fn endpoint(&self, reference: &Reference) -> Endpoint {
        Endpoint {
            base: self.base.clone(),
            name: self.repository(reference),
            mount_from: None,
        }
    }

    /// `host[:port]/<repository>`: the pushed copy's name without tag or digest.
    pub fn name(&self, reference: &Reference) -> String {
        format!("{}/{}", self.host, self.repository(reference))
    }

    /// Refuses two images of different repositories mapped to one repository of the target,
    /// naming both and where they would go; one repository under several tags is fine.
    pub fn check_names<'a>(
        &self,
        references: impl IntoIterator<Item = &'a Reference>,
    ) -> Result<(), NameClash> {
        let mut taken: BTreeMap<String, &Reference> = BTreeMap::new();
        for reference in references {
            let name = self.name(reference);
            match taken.get(&name) {
                Some(other) if other.repository() != reference.repository() => {
                    return Err(NameClash {
                        first: other.to_string(),
                        second: reference.to_string(),
                        name,
                    });
                }
                Some(_) => {}
                None => {
                    taken.insert(name, reference);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::Digest;

    #[test]
    fn targets_map_names_like_namespaced_mirrors() {
        let t = Target::parse("reg.example:5000/cks/mirror/", &[]).unwrap();
        assert_eq!(t.base, "https://reg.example:5000");
        let r = Reference::parse("registry.k8s.io/pause:3.10").unwrap();
        assert_eq!(
            t.name(&r),
            "reg.example:5000/cks/mirror/registry.k8s.io/pause"
        );
        let local = Reference::parse("127.0.0.1:5000/bench/img:v1").unwrap();
        assert_eq!(t.repository(&local), "cks/mirror/127.0.0.1_5000/bench/img");
        let hub = Reference::parse("busybox").unwrap();
        assert_eq!(t.repository(&hub), "cks/mirror/docker.io/library/busybox");
        let plain = Target::parse("127.0.0.1:5000", &["127.0.0.1:5000".into()]).unwrap();
        assert_eq!(
            plain.endpoint(&r).blob_url(&Digest::of(b"")),
            format!(
                "http://127.0.0.1:5000/v2/registry.k8s.io/pause/blobs/{}",
                Digest::of(b"")
            )
        );
        let flat = t.clone().with_mapping(Mapping::Flat);
        let csi = Reference::parse("registry.k8s.io/sig-storage/csi-provisioner:v5.2.0").unwrap();
        assert_eq!(
            flat.name(&csi),
            "reg.example:5000/cks/mirror/csi-provisioner"
        );
        assert_eq!(flat.repository(&hub), "cks/mirror/busybox");
        for bad in ["https://reg/x", "reg/Upper", "reg//x", "", "u@reg"] {
            let err = Target::parse(bad, &[]).unwrap_err();
            assert!(err.to_string().contains("e.g."), "{bad}: {err}");
        }
    }

    #[test]
    fn two_images_on_one_flat_name_are_refused_naming_both() {
        let parse = |r: &str| Reference::parse(r).unwrap();
        let refs = [
            parse("registry.k8s.io/pause:3.10"),
            parse("registry.k8s.io/pause:3.9"),
            parse("docker.io/rancher/mirrored-pause:3.6"),
            parse("quay.io/other/pause:1"),
        ];
        let nested = Target::parse("reg:5000/p", &[]).unwrap();
        assert_eq!(nested.check_names(&refs), Ok(()));
        let flat = nested.with_mapping(Mapping::Flat);
        let err = flat.check_names(&refs).unwrap_err();
        assert_eq!(
            err.to_string(),
            "registry.k8s.io/pause:3.10 and quay.io/other/pause:1 would both be pushed to \
             reg:5000/p/pause"
        );
        assert_eq!(
            flat.check_names(&refs[..3]),
            Ok(()),
            "tags of one repository"
        );
    }
}
