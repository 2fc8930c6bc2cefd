//! The network checks before the registries' and after: every upstream host through its mirror
//! rule, the Rekor server, the git endpoint of the autoscaler's tags, then each registry with
//! authentication as configured.

use reqwest::Method;
use reqwest::header::HeaderMap;

use super::{Problem, Sink, chained, report};
use crate::config::Settings;
use crate::fetch::{Download, probe, redact};
use crate::image::Reference;
use crate::registry::Registry;
use crate::release::git::ls_remote;
use crate::release::{AUTOSCALER_REF_PREFIX, AUTOSCALER_REPO};

/// The upstream hosts a build downloads from, each checked through its mirror rule.
const UPSTREAMS: &[&str] = &[
    "https://github.com",
    "https://dl.k8s.io",
    "https://raw.githubusercontent.com",
];

/// The registries a build pulls from, with one repository of each that builds use (a token is
/// asked for a repository).
const REGISTRIES: &[(&str, &str)] = &[
    ("registry.k8s.io", "registry.k8s.io/pause"),
    (
        "docker.io",
        "docker.io/apache/cloudstack-kubernetes-provider",
    ),
    ("quay.io", "quay.io/tigera/operator"),
    ("ghcr.io", "ghcr.io/cloudstack/cloudstack-csi-driver"),
];

/// Reports every upstream host (and each mirror rule's own source) through its mirror, the Rekor
/// server when one is configured, and the git endpoint, on `client`.
pub async fn upstreams(sink: Sink<'_>, settings: &Settings, client: &reqwest::Client) {
    let download = Download {
        client,
        retry: settings.http.retry,
        progress: &(),
        offline: false,
        budget: None,
    };
    let mut sources: Vec<String> = UPSTREAMS.iter().map(|s| (*s).to_owned()).collect();
    for rule in settings.mirrors.rules() {
        if !sources.contains(&rule.from) {
            sources.push(rule.from.clone());
        }
    }
    for source in &sources {
        let target = settings.mirrors.rewrite(source);
        let (what, hint) = match target == *source {
            true => (
                format!("upstream {source}"),
                "check the network and HTTPS_PROXY/NO_PROXY, or point --mirror at a reachable copy (--mirror FROM=TO)"
                    .to_owned(),
            ),
            false => (
                format!("mirror {} (for {source})", redact(&target)),
                format!(
                    "check the mirror rule for {source} (--mirror, or `mirrors:` in the configuration file)"
                ),
            ),
        };
        let result = match probe(&download, Method::GET, &target, &HeaderMap::new()).await {
            Ok(p) if p.status.is_server_error() => {
                Err(Problem::new(format!("answers HTTP {}", p.status), hint))
            }
            Ok(p) => Ok(super::answered(p.status.as_u16())),
            Err(e) => Err(Problem::new(chained(&e), hint)),
        };
        report(sink, &what, result);
    }

    super::trust::rekor(sink, settings, &download).await;

    let repo = settings.mirrors.rewrite(AUTOSCALER_REPO);
    let what = match repo == AUTOSCALER_REPO {
        true => format!("git {repo}"),
        false => format!("git {} (for {AUTOSCALER_REPO})", redact(&repo)),
    };
    let listed = ls_remote(client, &repo, AUTOSCALER_REF_PREFIX)
        .await
        .map(|listing| format!("{} cluster-autoscaler tags listed", listing.refs.len()))
        .map_err(|e| Problem::of(&e, e.hint()));
    report(sink, &what, listed);
}

/// Reports each registry a build pulls from, and each the settings give a mirror for: a token
/// asked for one of its repositories, with the credentials as configured.
pub async fn registries(
    sink: Sink<'_>,
    settings: &Settings,
    registry: &Registry,
) -> Result<(), crate::image::ImageError> {
    let mut hosts: Vec<(String, String)> = REGISTRIES
        .iter()
        .map(|(h, r)| ((*h).to_owned(), (*r).to_owned()))
        .collect();
    for host in settings.registry_mirrors.keys() {
        if !hosts.iter().any(|(h, _)| h == host) {
            hosts.push((host.clone(), format!("{host}/cks-iso/doctor")));
        }
    }
    for (host, repository) in &hosts {
        let reference = Reference::parse(repository)?;
        let result = registry
            .check_access(&reference)
            .await
            .map_err(|e| Problem::of(&e, e.hint()));
        report(sink, &format!("registry {host}"), result);
    }
    Ok(())
}
