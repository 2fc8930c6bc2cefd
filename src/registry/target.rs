//! Where `cks-iso push` puts an image: `--to REGISTRY[/PREFIX]` parsed, and each image's name under
//! it, `PREFIX/<its registry>/<its path>`, as namespaced mirrors hold images, so one seeded
//! registry serves several upstream registries without their names colliding.

use super::Endpoint;
use crate::image::Reference;

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
        })
    }

    /// The repository `reference` goes to: `PREFIX/<host>/<path>`. A port in the host becomes
    /// `_<port>` (`localhost:5000` → `localhost_5000`): a repository name has no `:`.
    pub fn repository(&self, reference: &Reference) -> String {
        let host = reference.domain().to_ascii_lowercase().replace(':', "_");
        let name = format!("{host}/{}", reference.path());
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
        }
    }

    /// `host[:port]/<repository>`: the pushed copy's name without tag or digest.
    pub fn name(&self, reference: &Reference) -> String {
        format!("{}/{}", self.host, self.repository(reference))
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
        for bad in ["https://reg/x", "reg/Upper", "reg//x", "", "u@reg"] {
            let err = Target::parse(bad, &[]).unwrap_err();
            assert!(err.to_string().contains("e.g."), "{bad}: {err}");
        }
    }
}
