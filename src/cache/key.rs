//! The names the cache's index files entries under: one type, so every place that writes or
//! reads an entry spells a key the same way, and what kind of entry a key names is a `match`,
//! not a string prefix.
//!
//! On disk a key is one line of text (see [`super::index`]); [`Key`]'s `Display` writes exactly
//! the spellings earlier versions wrote, so existing caches keep working:
//!
//! ```text
//! url:<upstream URL>                          a download, checksum, manifest or small text
//! tag:<reference>                             what an image tag resolved to
//! sig:<registry>/<path>:sha256-<hex>.sig      a cosign signature tag's manifest
//! referrers:<registry>/<path>@sha256:<hex>    the cosign 3 referrers of an image digest
//! rekor:<server>:sha256:<hex>                 the Rekor entry chosen for a file's sha256
//! ```

use std::fmt;

use crate::image::{Digest, Reference};

/// `registry/path` of `reference`, as signature keys name a repository.
fn repository(reference: &Reference) -> String {
    format!("{}/{}", reference.domain(), reference.path())
}

/// An index key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// A download, a published checksum, a manifest or a small text, by its upstream URL
    /// (credentials already stripped by the caller).
    Url(String),
    /// What an image tag resolved to, by the reference as normalised (`registry.k8s.io/pause:3.10`).
    Tag(String),
    /// The manifest of a cosign signature tag (`sha256-<hex>.sig`) of `repository`
    /// (`registry/path`).
    Signature {
        /// `registry/path`.
        repository: String,
        /// The tag.
        tag: String,
    },
    /// The cosign 3 referrers (an image index) of the image digest `subject` in `repository`.
    Referrers {
        /// `registry/path`.
        repository: String,
        /// `sha256:<hex>`.
        subject: String,
    },
    /// The Rekor entry reply chosen at `server` for a file whose sha256 is `sha256` (hex).
    Rekor {
        /// The Rekor server's base URL.
        server: String,
        /// The file's sha256, lowercase hex.
        sha256: String,
    },
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Url(url) => write!(f, "url:{url}"),
            Key::Tag(reference) => write!(f, "tag:{reference}"),
            Key::Signature { repository, tag } => write!(f, "sig:{repository}:{tag}"),
            Key::Referrers {
                repository,
                subject,
            } => write!(f, "referrers:{repository}@{subject}"),
            Key::Rekor { server, sha256 } => write!(f, "rekor:{server}:sha256:{sha256}"),
        }
    }
}

impl Key {
    /// The key an index line spells, if it is one this cks-iso writes.
    pub fn parse(text: &str) -> Option<Key> {
        let (kind, rest) = text.split_once(':')?;
        let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Some(match kind {
            "url" => Key::Url(nonempty(rest)?),
            "tag" => Key::Tag(nonempty(rest)?),
            // A registry may carry a port (`host:5000/path`): the tag is after the last colon.
            "sig" => {
                let (repository, tag) = rest.rsplit_once(':')?;
                Key::Signature {
                    repository: nonempty(repository)?,
                    tag: nonempty(tag)?,
                }
            }
            "referrers" => {
                let (repository, subject) = rest.rsplit_once('@')?;
                Key::Referrers {
                    repository: nonempty(repository)?,
                    subject: nonempty(subject)?,
                }
            }
            "rekor" => {
                let (server, sha256) = rest.rsplit_once(":sha256:")?;
                Key::Rekor {
                    server: nonempty(server)?,
                    sha256: nonempty(sha256)?,
                }
            }
            _ => return None,
        })
    }

    /// What the tag of `reference` resolved to.
    pub fn tag(reference: &Reference) -> Key {
        Key::Tag(reference.to_string())
    }

    /// The signature tag `tag` (`sha256-<hex>.sig`) of `reference`'s repository.
    pub fn signature(reference: &Reference, tag: &str) -> Key {
        Key::Signature {
            repository: repository(reference),
            tag: tag.to_owned(),
        }
    }

    /// The cosign 3 referrers of `subject` in `reference`'s repository.
    pub fn referrers(reference: &Reference, subject: &Digest) -> Key {
        Key::Referrers {
            repository: repository(reference),
            subject: subject.to_string(),
        }
    }

    /// The upstream URL of a [`Key::Url`].
    pub fn url(&self) -> Option<&str> {
        match self {
            Key::Url(url) => Some(url),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_reads_back_as_written_in_the_spelling_older_caches_hold() {
        for (key, text) in [
            (
                Key::Url("https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm".into()),
                "url:https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm",
            ),
            (
                Key::Tag("registry.k8s.io/pause:3.10".into()),
                "tag:registry.k8s.io/pause:3.10",
            ),
            (
                Key::Signature {
                    repository: "127.0.0.1:5000/registry.k8s.io/pause".into(),
                    tag: "sha256-00.sig".into(),
                },
                "sig:127.0.0.1:5000/registry.k8s.io/pause:sha256-00.sig",
            ),
            (
                Key::Referrers {
                    repository: "registry.k8s.io/pause".into(),
                    subject: "sha256:00".into(),
                },
                "referrers:registry.k8s.io/pause@sha256:00",
            ),
            (
                Key::Rekor {
                    server: "http://127.0.0.1:8080".into(),
                    sha256: "ab".into(),
                },
                "rekor:http://127.0.0.1:8080:sha256:ab",
            ),
        ] {
            assert_eq!(key.to_string(), text);
            assert_eq!(Key::parse(text), Some(key), "{text}");
        }
    }

    #[test]
    fn text_that_is_no_key_of_this_cks_iso_is_none() {
        for text in [
            "",
            "url:",
            "blob:x",
            "sig:nocolon",
            "referrers:x",
            "rekor:x",
            "tag",
        ] {
            assert_eq!(Key::parse(text), None, "{text:?}");
        }
    }
}
