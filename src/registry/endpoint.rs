//! Where the bytes of a reference come from: the registry's own API host, a mirror, plain HTTP
//! for registries the user names insecure. The image keeps its name whatever serves it.

use std::fmt;
use std::str::FromStr;

use crate::image::{DOCKER_HUB, Reference};

/// Docker Hub serves its API from another host than its name.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// Where kubeadm before 1.25 names its images. The old registry is frozen and being shut down;
/// [`K8S_REGISTRY`] serves the same content under the same paths.
pub const OLD_K8S_REGISTRY: &str = "k8s.gcr.io";
/// The Kubernetes project's registry, which also serves everything [`OLD_K8S_REGISTRY`] held.
pub const K8S_REGISTRY: &str = "registry.k8s.io";

/// `--registry-mirror REGISTRY=URL`: fetch images of `REGISTRY` from `URL`. A path in `URL` is a
/// repository prefix, as Harbor proxy projects and namespaced mirrors use:
/// `registry.k8s.io=http://127.0.0.1:5000/k8s` fetches `registry.k8s.io/pause:3.10` as
/// `http://127.0.0.1:5000/v2/k8s/pause/manifests/3.10`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryMirror {
    /// The registry mirrored (`registry.k8s.io`, `docker.io`, `localhost:5000`).
    pub registry: String,
    /// `http://host[:port]` or `https://host[:port]`.
    pub base: String,
    /// Repository prefix without slashes at either end; empty for none.
    pub prefix: String,
}

impl FromStr for RegistryMirror {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Never the password of a URL with a user in it, whatever else is wrong.
        let shown = match s.split_once('=') {
            Some((registry, url)) => format!("{registry}={}", crate::fetch::redact(url.trim())),
            None => s.to_owned(),
        };
        let bad = |why: &str| {
            format!(
                "--registry-mirror {shown:?}: {why} (e.g. registry.k8s.io=http://127.0.0.1:5000/k8s)"
            )
        };
        let (registry, url) = s.split_once('=').ok_or_else(|| bad("not REGISTRY=URL"))?;
        let registry = registry.trim().trim_end_matches('/');
        let registry = match registry {
            "index.docker.io" | DOCKER_HUB_API => DOCKER_HUB,
            other => other,
        };
        if registry.is_empty() || registry.contains(['/', ' ']) {
            return Err(bad("REGISTRY must be a host[:port]"));
        }
        let (scheme, rest) = url
            .trim()
            .split_once("://")
            .filter(|(scheme, _)| matches!(*scheme, "http" | "https"))
            .ok_or_else(|| bad("URL must start with http:// or https://"))?;
        let (host, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if host.is_empty() || host.contains(['?', '#', '@']) {
            return Err(bad("URL needs a host and no query or user"));
        }
        let prefix = prefix.trim_matches('/');
        if prefix.split('/').any(|p| p.is_empty()) && !prefix.is_empty() {
            return Err(bad("the URL path has an empty component"));
        }
        Ok(Self {
            registry: registry.to_owned(),
            base: format!("{scheme}://{host}"),
            prefix: prefix.to_owned(),
        })
    }
}

impl fmt::Display for RegistryMirror {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.registry, self.base)?;
        match self.prefix.is_empty() {
            true => Ok(()),
            false => write!(f, "/{}", self.prefix),
        }
    }
}

/// Where to send the API requests for one repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// `scheme://host[:port]`.
    pub base: String,
    /// The repository name in API paths (`library/pause`, or `k8s/pause` behind a mirror).
    pub name: String,
    /// For a push's cross-repository mount: the repository of the same registry the blob is
    /// mounted from, on which its bearer token must grant `pull` too (distribution refuses the
    /// mount otherwise); `None` for every other request.
    pub mount_from: Option<String>,
}

impl Endpoint {
    /// `scheme://host[:port]/name`: where a blob of this repository comes from.
    pub fn scope(&self) -> String {
        format!("{}/{}", self.base, self.name)
    }

    /// What its bearer token is kept under: the repository, and the one a mount reads from.
    pub fn token_key(&self) -> String {
        match &self.mount_from {
            Some(from) => format!("{} from {from}", self.name),
            None => self.name.clone(),
        }
    }

    /// `host[:port]` of the base, for credentials lookup and messages.
    pub fn host(&self) -> &str {
        self.base
            .split_once("://")
            .map_or(self.base.as_str(), |(_, host)| host)
    }

    /// `…/v2/<name>/manifests/<tag or digest>`
    pub fn manifest_url(&self, object: &str) -> String {
        format!("{}/v2/{}/manifests/{object}", self.base, self.name)
    }

    /// `…/v2/<name>/blobs/<digest>`
    pub fn blob_url(&self, digest: &crate::image::Digest) -> String {
        format!("{}/v2/{}/blobs/{digest}", self.base, self.name)
    }

    /// `…/v2/`, where a registry says how it wants to be authenticated.
    pub fn ping_url(&self) -> String {
        format!("{}/v2/", self.base)
    }
}

/// Mirrors and insecure registries.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    /// `--registry-mirror` rules (one per registry; the last given wins).
    pub mirrors: Vec<RegistryMirror>,
    /// `--insecure-registry HOST[:PORT]`: spoken to over plain HTTP.
    pub insecure: Vec<String>,
}

impl Routes {
    /// The endpoint serving `reference`. An image named on `k8s.gcr.io` without a mirror of its
    /// own is fetched from `registry.k8s.io` (or that registry's mirror); it keeps its name.
    pub fn endpoint(&self, reference: &Reference) -> Endpoint {
        let mirror_of = |domain: &str| self.mirrors.iter().rev().find(|m| m.registry == domain);
        let domain = match reference.domain() {
            OLD_K8S_REGISTRY if mirror_of(OLD_K8S_REGISTRY).is_none() => K8S_REGISTRY,
            other => other,
        };
        if let Some(mirror) = mirror_of(domain) {
            let name = match mirror.prefix.is_empty() {
                true => reference.path().to_owned(),
                false => format!("{}/{}", mirror.prefix, reference.path()),
            };
            return Endpoint {
                base: mirror.base.clone(),
                name,
                mount_from: None,
            };
        }
        let host = match domain {
            DOCKER_HUB => DOCKER_HUB_API,
            other => other,
        };
        let scheme = match self.insecure.iter().any(|h| h == domain) {
            true => "http",
            false => "https",
        };
        Endpoint {
            base: format!("{scheme}://{host}"),
            name: reference.path().to_owned(),
            mount_from: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> Reference {
        Reference::parse(text).unwrap()
    }

    #[test]
    fn mirror_keeps_the_name_and_prefixes_the_repository() {
        let routes = Routes {
            mirrors: vec![
                "registry.k8s.io=http://127.0.0.1:5000/k8s/"
                    .parse()
                    .unwrap(),
            ],
            insecure: vec![],
        };
        let ep = routes.endpoint(&r("registry.k8s.io/pause:3.10"));
        assert_eq!(
            ep.manifest_url("3.10"),
            "http://127.0.0.1:5000/v2/k8s/pause/manifests/3.10"
        );
        assert_eq!(ep.host(), "127.0.0.1:5000");
        let other = routes.endpoint(&r("quay.io/a/b:1"));
        assert_eq!(other.base, "https://quay.io");
    }

    #[test]
    fn k8s_gcr_io_comes_from_registry_k8s_io_unless_it_has_its_own_mirror() {
        let pause = r("k8s.gcr.io/pause:3.4.1");
        let direct = Routes::default().endpoint(&pause);
        assert_eq!(
            direct.manifest_url("3.4.1"),
            "https://registry.k8s.io/v2/pause/manifests/3.4.1"
        );
        let k8s: RegistryMirror = "registry.k8s.io=http://m:5000/k8s".parse().unwrap();
        let mut routes = Routes {
            mirrors: vec![k8s],
            insecure: vec![],
        };
        assert_eq!(
            routes.endpoint(&pause).manifest_url("3.4.1"),
            "http://m:5000/v2/k8s/pause/manifests/3.4.1"
        );
        routes
            .mirrors
            .push("k8s.gcr.io=http://m:5000/gcr".parse().unwrap());
        assert_eq!(
            routes.endpoint(&pause).manifest_url("3.4.1"),
            "http://m:5000/v2/gcr/pause/manifests/3.4.1"
        );
        assert_eq!(
            pause.to_string(),
            "k8s.gcr.io/pause:3.4.1",
            "the name stays"
        );
    }

    #[test]
    fn docker_hub_api_host_and_insecure_registries() {
        let routes = Routes {
            mirrors: vec![],
            insecure: vec!["localhost:5000".into()],
        };
        let hub = routes.endpoint(&r("busybox"));
        assert_eq!(hub.base, "https://registry-1.docker.io");
        assert_eq!(hub.name, "library/busybox");
        let local = routes.endpoint(&r("localhost:5000/a:1"));
        assert_eq!(local.base, "http://localhost:5000");
        assert_eq!(
            routes.endpoint(&r("localhost:5001/a:1")).base,
            "https://localhost:5001"
        );
    }

    #[test]
    fn malformed_mirrors_are_refused_with_an_example() {
        for bad in ["registry.k8s.io", "a=ftp://x", "a=http://", "a/b=http://x"] {
            let err = bad.parse::<RegistryMirror>().unwrap_err();
            assert!(err.contains("e.g."), "{err}");
        }
        let err = "a=http://user:pw-secret@m:5000"
            .parse::<RegistryMirror>()
            .unwrap_err();
        assert!(
            !err.contains("pw-secret") && err.contains("http://***@m:5000"),
            "{err}"
        );
        let hub: RegistryMirror = "index.docker.io=https://m.example".parse().unwrap();
        assert_eq!(hub.registry, "docker.io");
    }
}
