//! Image references, normalised the way Docker and the CRI do.
//!
//! The stored name of an image is the fully qualified one, because that is the name kubelet asks
//! containerd for: `pause:3.10` is `docker.io/library/pause:3.10`, `foo/bar` is
//! `docker.io/foo/bar:latest`. A first component with a `.` or `:` or equal to `localhost` is a
//! registry host (with an optional port); `index.docker.io` is `docker.io`. A reference may carry
//! a tag, an `@sha256:` digest, or both; with neither it means `:latest`. Bracketed IPv6 hosts
//! are not supported.

use std::fmt;

use super::{Digest, ImageError};

/// The registry a reference without a host names.
pub const DOCKER_HUB: &str = "docker.io";

/// Longest repository name (`host/path`) Docker accepts.
const MAX_NAME: usize = 255;

/// A parsed, normalised image reference.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reference {
    domain: String,
    path: String,
    tag: Option<String>,
    digest: Option<Digest>,
}

impl Reference {
    /// Parses and normalises `text`; a malformed reference is an error saying what is wrong.
    pub fn parse(text: &str) -> Result<Self, ImageError> {
        let invalid = |reason: String| ImageError::InvalidReference {
            reference: text.to_owned(),
            reason,
        };
        if text.is_empty() {
            return Err(invalid("it is empty".into()));
        }
        let (rest, digest) = match text.split_once('@') {
            Some((rest, digest)) => (
                rest,
                Some(Digest::parse(digest).map_err(|e| invalid(e.to_string()))?),
            ),
            None => (text, None),
        };
        let (name, tag) = match rest.rsplit_once(':') {
            Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
            _ => (rest, None),
        };
        if let Some(tag) = tag {
            check_tag(tag).map_err(|p| invalid(p.to_string()))?;
        }
        let (domain, path) = split_domain(name);
        check_domain(domain).map_err(|p| invalid(p.to_string()))?;
        let path = match (domain, path.contains('/')) {
            (DOCKER_HUB, false) => format!("library/{path}"),
            _ => path.to_owned(),
        };
        for component in path.split('/') {
            check_component(component).map_err(|p| invalid(p.to_string()))?;
        }
        if domain.len() + 1 + path.len() > MAX_NAME {
            return Err(invalid(format!(
                "the name is longer than {MAX_NAME} characters"
            )));
        }
        let tag = match (tag, &digest) {
            (None, None) => Some("latest".to_owned()),
            (tag, _) => tag.map(str::to_owned),
        };
        Ok(Self {
            domain: domain.to_owned(),
            path,
            tag,
            digest,
        })
    }

    /// The registry host, with its port if any (`docker.io`, `localhost:5000`).
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The repository path within the registry (`library/pause`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// `host/path`, without tag or digest.
    pub fn repository(&self) -> String {
        format!("{}/{}", self.domain, self.path)
    }

    /// The tag, if any (`latest` when the reference had neither tag nor digest).
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The pinned digest, if any.
    pub fn digest(&self) -> Option<&Digest> {
        self.digest.as_ref()
    }

    /// `host/path:tag`, the name `docker load` tags the image with, when there is a tag.
    pub fn tagged(&self) -> Option<String> {
        self.tag
            .as_ref()
            .map(|tag| format!("{}:{tag}", self.repository()))
    }

    /// What follows the repository, as containerd's exporter writes it into
    /// `org.opencontainers.image.ref.name`: `tag`, `tag@sha256:…` or `@sha256:…`.
    pub fn object(&self) -> String {
        let full = self.to_string();
        full[self.repository().len()..]
            .trim_start_matches(':')
            .to_owned()
    }

    /// The last `/`-separated component of the full name, as upstream names archives
    /// (`kube-apiserver:v1.33.1`).
    pub fn last_component(&self) -> String {
        let full = self.to_string();
        full.rsplit('/').next().unwrap_or(&full).to_owned()
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.domain, self.path)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Reference {
    type Err = ImageError;
    fn from_str(text: &str) -> Result<Self, ImageError> {
        Self::parse(text)
    }
}

/// Docker's rule: the first component is a host if it looks like one.
fn split_domain(name: &str) -> (&str, &str) {
    match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.chars().any(|c| c.is_ascii_uppercase()) =>
        {
            (
                if first == "index.docker.io" {
                    DOCKER_HUB
                } else {
                    first
                },
                rest,
            )
        }
        _ => (DOCKER_HUB, name),
    }
}

/// What is wrong with one part of a reference; the end of "invalid image reference …: …".
#[derive(Debug, thiserror::Error)]
enum PartProblem {
    #[error("the port of {0:?} is not a number")]
    Port(String),
    #[error("{0:?} is not a valid registry host name")]
    Host(String),
    #[error("path component {component:?} {why}")]
    Component { component: String, why: String },
    #[error("tag {0:?} is not 1-128 of A-Z a-z 0-9 _ . - starting with a letter, digit or _")]
    Tag(String),
}

fn check_domain(domain: &str) -> Result<(), PartProblem> {
    let (host, port) = match domain.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (domain, None),
    };
    if let Some(port) = port
        && (port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(PartProblem::Port(domain.to_owned()));
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if !host.split('.').all(label_ok) {
        return Err(PartProblem::Host(host.to_owned()));
    }
    Ok(())
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
fn check_component(component: &str) -> Result<(), PartProblem> {
    let bad = |why: &str| {
        Err(PartProblem::Component {
            component: component.to_owned(),
            why: why.to_owned(),
        })
    };
    if component.is_empty() {
        return bad("is empty (a doubled or trailing `/`?)");
    }
    if component.bytes().any(|b| b.is_ascii_uppercase()) {
        return bad("has upper-case letters; repository names must be lower case");
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = component.as_bytes();
    if !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return bad("must start and end with a letter or digit");
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let sep = &component[start..i];
        let ok = matches!(sep, "." | "_" | "__") || sep.bytes().all(|b| b == b'-');
        if !ok {
            return bad(&format!(
                "has the separator {sep:?}; only ., _, __ and - are allowed"
            ));
        }
    }
    Ok(())
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`
fn check_tag(tag: &str) -> Result<(), PartProblem> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let ok = !tag.is_empty()
        && tag.len() <= 128
        && word(tag.as_bytes()[0])
        && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-');
    match ok {
        true => Ok(()),
        false => Err(PartProblem::Tag(tag.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn norm(text: &str) -> String {
        Reference::parse(text).unwrap().to_string()
    }

    #[test]
    fn references_normalise_like_docker() {
        assert_eq!(norm("pause"), "docker.io/library/pause:latest");
        assert_eq!(norm("pause:3.10"), "docker.io/library/pause:3.10");
        assert_eq!(norm("foo/bar"), "docker.io/foo/bar:latest");
        assert_eq!(norm("index.docker.io/foo/bar:1"), "docker.io/foo/bar:1");
        assert_eq!(
            norm("docker.io/busybox"),
            "docker.io/library/busybox:latest"
        );
        assert_eq!(
            norm("registry.k8s.io/kube-apiserver:v1.33.1"),
            "registry.k8s.io/kube-apiserver:v1.33.1"
        );
        assert_eq!(norm("localhost/a"), "localhost/a:latest");
        assert_eq!(norm("127.0.0.1:5000/a/b:c"), "127.0.0.1:5000/a/b:c");
        assert_eq!(norm("localhost:5000/a"), "localhost:5000/a:latest");
        assert_eq!(
            norm(&format!("pause@{D}")),
            format!("docker.io/library/pause@{D}")
        );
        assert_eq!(
            norm(&format!("quay.io/x/y:1.0@{D}")),
            format!("quay.io/x/y:1.0@{D}")
        );
    }

    #[test]
    fn parts_feed_archive_names_and_annotations() {
        let r = Reference::parse(&format!("registry.k8s.io/sig/csi:v1@{D}")).unwrap();
        assert_eq!(r.repository(), "registry.k8s.io/sig/csi");
        assert_eq!(r.tagged().unwrap(), "registry.k8s.io/sig/csi:v1");
        assert_eq!(r.object(), format!("v1@{D}"));
        assert_eq!(r.last_component(), format!("csi:v1@{D}"));
        let pinned = Reference::parse(&format!("k8s.gcr.io/pause@{D}")).unwrap();
        assert_eq!(pinned.object(), format!("@{D}"));
        assert_eq!(pinned.tagged(), None);
        assert_eq!(Reference::parse("a:1").unwrap().object(), "1");
    }

    #[test]
    fn malformed_references_say_what_is_wrong() {
        for (bad, why) in [
            ("", "empty"),
            ("foo/Bar", "upper-case"),
            ("docker.io/Foo", "upper-case"),
            ("foo//bar", "empty"),
            ("foo/bar/", "empty"),
            ("foo:", "tag"),
            ("foo:.x", "tag"),
            ("foo@sha256:abc", "64 hex"),
            ("foo@md5:abc", "sha256"),
            ("host:port/foo", "port"),
            ("-bad.io/foo", "host"),
            ("foo/-bar", "start and end"),
            ("foo/b..ar", "separator"),
            ("foo bar", "separator"),
        ] {
            let err = Reference::parse(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }
}
