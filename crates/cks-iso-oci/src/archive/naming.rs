//! File names for image archives in `docker/`.
//!
//! Upstream names an archive after the last `/`-separated component of the reference
//! (`kube-apiserver:v1.33.1.tar`). Two different images can share that component
//! (`registry.k8s.io/pause:3.10` and `docker.io/library/pause:3.10`); writing both under one name
//! would silently drop one. Every image of such a group is named
//! `<component>-<first 8 hex of sha256(full reference)>.tar` instead: the name depends only on the
//! reference itself, not on which other images are in the set or in what order they came, and
//! every rename is reported so the caller can say so.

use std::collections::BTreeMap;

use crate::image::{Digest, Reference};

/// An image that did not get its plain name because another image shares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renamed {
    /// The image.
    pub reference: Reference,
    /// The name it would have had.
    pub plain: String,
    /// The name it got.
    pub file: String,
}

/// File names for a set of images.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Naming {
    /// Each distinct image's file name, all different.
    pub files: BTreeMap<Reference, String>,
    /// The images whose plain name collided, in reference order.
    pub renamed: Vec<Renamed>,
}

/// The plain archive name of one image: its last path component and `.tar`.
pub fn plain_name(reference: &Reference) -> String {
    format!("{}.tar", reference.last_component())
}

/// Names the archives of `references` (duplicates count once).
pub fn assign<'a>(references: impl IntoIterator<Item = &'a Reference>) -> Naming {
    let mut groups: BTreeMap<String, Vec<&Reference>> = BTreeMap::new();
    for reference in references {
        let group = groups.entry(plain_name(reference)).or_default();
        if !group.contains(&reference) {
            group.push(reference);
        }
    }
    let mut naming = Naming::default();
    for (plain, group) in groups {
        if let [only] = group[..] {
            naming.files.insert(only.clone(), plain);
            continue;
        }
        for reference in group {
            let tag = Digest::of(reference.to_string().as_bytes());
            let file = format!("{}-{}.tar", reference.last_component(), tag.short(8));
            naming.renamed.push(Renamed {
                reference: reference.clone(),
                plain: plain.clone(),
                file: file.clone(),
            });
            naming.files.insert(reference.clone(), file);
        }
    }
    naming.renamed.sort_by(|a, b| a.reference.cmp(&b.reference));
    naming
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(texts: &[&str]) -> Vec<Reference> {
        texts.iter().map(|t| Reference::parse(t).unwrap()).collect()
    }

    #[test]
    fn archive_is_named_after_the_last_component() {
        let set = refs(&["registry.k8s.io/kube-apiserver:v1.33.1", "quay.io/a/b/c"]);
        let naming = assign(&set);
        assert_eq!(naming.files[&set[0]], "kube-apiserver:v1.33.1.tar");
        assert_eq!(naming.files[&set[1]], "c:latest.tar");
        assert!(naming.renamed.is_empty());
    }

    #[test]
    fn colliding_images_get_distinct_stable_names_and_are_reported() {
        let set = refs(&[
            "registry.k8s.io/pause:3.10",
            "pause:3.10",
            "pause:3.10",
            "x/y:1",
        ]);
        let naming = assign(&set);
        assert_eq!(naming.files.len(), 3);
        let (a, b) = (&naming.files[&set[0]], &naming.files[&set[1]]);
        assert_ne!(a, b);
        assert!(a.starts_with("pause:3.10-") && a.ends_with(".tar"), "{a}");
        assert_eq!(naming.files[&set[3]], "y:1.tar");
        assert_eq!(naming.renamed.len(), 2);
        assert!(naming.renamed.iter().all(|r| r.plain == "pause:3.10.tar"));
        // Order and the rest of the set do not change a name.
        let reversed = assign(set.iter().rev());
        assert_eq!(reversed, naming);
        let alone = assign(&set[..2]);
        assert_eq!(&alone.files[&set[0]], a);
    }

    #[test]
    fn no_reference_yields_an_archive_name_outside_docker() {
        let long_tag = format!("registry.k8s.io/pause:{}", "a".repeat(128));
        let long_name = format!("registry.k8s.io/{}:1", "a".repeat(300));
        let hostile = [
            "registry.k8s.io/../../etc/passwd:1",
            "registry.k8s.io/pause:../x",
            "registry.k8s.io/pause:x/y",
            "registry.k8s.io/..:1",
            "registry.k8s.io/.:1",
            "registry.k8s.io/pause\0:1",
            "registry.k8s.io/pause:3.10\0",
            "registry.k8s.io/pau\u{0}se:1",
            "registry.k8s.io/a%2f..:1",
            "/absolute:1",
            "registry.k8s.io//pause:1",
            long_tag.as_str(),
            long_name.as_str(),
        ];
        for text in hostile {
            let Ok(reference) = Reference::parse(text) else {
                continue;
            };
            for name in assign([&reference]).files.values() {
                assert!(
                    !name.contains('/') && !name.contains('\0') && !name.starts_with('.'),
                    "{text:?} gives {name:?}"
                );
                assert!(
                    name.len() <= 255,
                    "{text:?} gives a {}-byte name",
                    name.len()
                );
            }
        }
    }
}
