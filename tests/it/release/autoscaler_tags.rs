//! The autoscaler release is chosen from tags listed over git's smart HTTP, against real
//! `git http-backend` serving a bare repository whose tags are shaped like kubernetes/autoscaler's
//! (`upstream.md` §1, `docs/reference/iso-contract.md` §4): over protocol v2 and over a v0-only
//! server, with and without the discovery preamble; pins, the warning and the errors.

use cks_iso::release::VersionError;
use cks_iso::release::git::{Listing, Protocol, ls_remote};
use cks_iso::release::version::{AUTOSCALER_REF_PREFIX, KubeVersion, choose_autoscaler};
use cks_iso::release::{AutoscalerChoice, ResolveError};
use cks_iso_testworld::git::{GitServer, Mode, Repo, Tag};

const PREFIX: &str = AUTOSCALER_REF_PREFIX;

/// Made-up numbers with upstream's traps: 1.2/1.20 and 1.3/1.30 side by side, 1.30.9 < 1.30.10,
/// no 1.31.0, pre-releases newer than the newest release, chart and other components' tags, and
/// 1.32 with only a pre-release.
fn autoscaler_repo() -> Repo {
    use Tag::{Annotated, Light};
    Repo::with_tags(
        "kubernetes/autoscaler.git",
        &[
            Annotated("cluster-autoscaler-1.20.0"),
            Light("cluster-autoscaler-1.20.3"),
            Light("cluster-autoscaler-1.20.4-rc.1"),
            Light("cluster-autoscaler-1.2.50"),
            Light("cluster-autoscaler-1.3.7"),
            Light("cluster-autoscaler-1.3.99"),
            Light("cluster-autoscaler-1.30.9"),
            Annotated("cluster-autoscaler-1.30.10"),
            Annotated("cluster-autoscaler-1.30.11-rc.1"),
            Light("cluster-autoscaler-chart-1.30.12"),
            Annotated("cluster-autoscaler-1.31.1"),
            Light("cluster-autoscaler-1.31.2"),
            Light("cluster-autoscaler-1.31.3-beta.1"),
            Light("cluster-autoscaler-1.32.0-alpha.1"),
            Light("cluster-autoscaler-chart-9.46.0"),
            Annotated("vertical-pod-autoscaler-1.31.9"),
            Light("addon-resizer-1.8.20"),
        ],
    )
}

fn client() -> reqwest::Client {
    // reqwest is built without a default crypto provider (cks-iso's is ring).
    cks_iso::fetch::install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn list(server: &GitServer, repo: &Repo) -> Listing {
    ls_remote(&client(), &server.url(repo), PREFIX)
        .await
        .unwrap()
}

fn choose(
    listing: &Listing,
    kube: &str,
    pin: Option<&str>,
) -> Result<AutoscalerChoice, ResolveError> {
    let kube: KubeVersion = kube.parse().unwrap();
    Ok(choose_autoscaler(
        &kube,
        pin,
        cks_iso::env::AUTOSCALER_VERSION.name,
        &listing.refs,
    )?)
}

fn assert_picks(listing: &Listing) {
    for (kube, want) in [
        ("1.20.5", "1.20.3"),
        ("v1.30.2", "1.30.10"),
        ("1.31.0", "1.31.2"),
    ] {
        let choice = choose(listing, kube, None).unwrap();
        assert_eq!(choice.version.to_string(), want, "Kubernetes {kube}");
        assert!(!choice.pinned && choice.warning.is_none());
    }
}

#[tokio::test]
async fn newest_release_per_minor_over_protocol_v2() {
    let repo = autoscaler_repo();
    let server = GitServer::start(repo.project_root(), Mode::Backend);
    let listing = list(&server, &repo).await;
    assert_eq!(listing.protocol, Protocol::V2);
    assert_picks(&listing);
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1].method, "POST");
    assert!(
        seen[1]
            .url
            .ends_with("/kubernetes/autoscaler.git/git-upload-pack")
    );
    assert_eq!(seen[1].git_protocol.as_deref(), Some("version=2"));
}

#[tokio::test]
async fn newest_release_per_minor_from_a_v0_only_server() {
    let repo = autoscaler_repo();
    let server = GitServer::start(repo.project_root(), Mode::V0Only);
    let listing = list(&server, &repo).await;
    assert_eq!(listing.protocol, Protocol::V0);
    assert_picks(&listing);
    // The whole advertisement came in the discovery reply: no second request.
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn discovery_with_and_without_the_service_preamble() {
    let repo = autoscaler_repo();
    for (mode, protocol, preamble) in [
        (Mode::Backend, Protocol::V2, false),
        (Mode::PreambleAlways, Protocol::V2, true),
        (Mode::V0Only, Protocol::V0, true),
        (Mode::V0NoPreamble, Protocol::V0, false),
    ] {
        let server = GitServer::start(repo.project_root(), mode);
        // The raw discovery reply really has the shape this case is about.
        let url = format!("{}/info/refs?service=git-upload-pack", server.url(&repo));
        let req = client().get(url).header("Git-Protocol", "version=2");
        let raw = req.send().await.unwrap().bytes().await.unwrap();
        let has = raw.starts_with(b"001e# service=git-upload-pack\n0000");
        assert_eq!(
            has,
            preamble,
            "{mode:?}: {:?}",
            String::from_utf8_lossy(&raw[..40])
        );
        let listing = list(&server, &repo).await;
        assert_eq!(listing.protocol, protocol, "{mode:?}");
        assert_picks(&listing);
    }
}

#[tokio::test]
async fn refs_are_filtered_on_the_client_when_the_server_ignores_ref_prefix() {
    let repo = autoscaler_repo();
    let server = GitServer::start(repo.project_root(), Mode::IgnoresRefPrefix);
    // A trailing slash on the repository URL is tolerated too.
    let url = format!("{}/", server.url(&repo));
    let listing = ls_remote(&client(), &url, PREFIX).await.unwrap();
    assert_eq!(listing.protocol, Protocol::V2);
    assert!(
        listing.refs.iter().all(|r| r.name.starts_with(PREFIX)),
        "{:?}",
        listing.refs
    );
    assert_eq!(listing.refs.len(), 15);
    assert_picks(&listing);
}

#[tokio::test]
async fn listing_is_filtered_and_peeled_the_same_over_v0_and_v2() {
    let repo = autoscaler_repo();
    let v2 = list(&GitServer::start(repo.project_root(), Mode::Backend), &repo).await;
    let v0 = list(&GitServer::start(repo.project_root(), Mode::V0Only), &repo).await;
    let mut names: Vec<_> = v2.refs.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names.len(), 15, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with(PREFIX) && !n.ends_with("^{}")),
        "{names:?}"
    );
    let sorted = |l: &Listing| {
        let mut refs = l.refs.clone();
        refs.sort_by(|a, b| a.name.cmp(&b.name));
        refs
    };
    assert_eq!(sorted(&v0), sorted(&v2));
    let find = |name: &str| {
        v2.refs
            .iter()
            .find(|r| r.name == format!("{PREFIX}{name}"))
            .unwrap()
    };
    let (annotated, light) = (find("1.30.10"), find("1.30.9"));
    assert_eq!(
        annotated.peeled.as_deref(),
        Some(light.oid.as_str()),
        "tag object peels to the commit"
    );
    assert_eq!(light.peeled, None);
}

#[tokio::test]
async fn pin_picks_an_exact_release_and_warns_for_another_minor() {
    let repo = autoscaler_repo();
    let server = GitServer::start(repo.project_root(), Mode::Backend);
    let listing = list(&server, &repo).await;
    let same = choose(&listing, "1.30.2", Some("1.30.9")).unwrap();
    assert_eq!(same.version.to_string(), "1.30.9");
    assert!(same.pinned && same.warning.is_none());
    let other = choose(&listing, "1.30.2", Some("v1.31.1")).unwrap();
    assert_eq!(other.version.tag(), "cluster-autoscaler-1.31.1");
    let warning = other.warning.expect("a warning for another minor");
    assert!(
        warning.contains("1.31") && warning.contains("1.30"),
        "{warning}"
    );
    let err = choose(&listing, "1.30.2", Some("1.30.5")).unwrap_err();
    assert!(
        matches!(
            err,
            ResolveError::Version(VersionError::UnknownAutoscalerRelease { .. })
        ),
        "{err}"
    );
    assert!(err.hint().unwrap().contains("1.30.10"), "{:?}", err.hint());
}

#[tokio::test]
async fn minor_without_a_release_is_an_error_naming_autoscaler_version() {
    let repo = autoscaler_repo();
    let server = GitServer::start(repo.project_root(), Mode::Backend);
    let listing = list(&server, &repo).await;
    let err = choose(&listing, "1.32.0", None).unwrap_err();
    assert!(
        matches!(
            err,
            ResolveError::Version(VersionError::NoAutoscalerRelease { .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("1.32"), "{err}");
    assert!(
        err.hint().unwrap().contains("AUTOSCALER_VERSION"),
        "{:?}",
        err.hint()
    );
    let err = choose(&listing, "1.19.16", None).unwrap_err();
    assert!(
        matches!(err, ResolveError::Version(VersionError::TooOld { .. })),
        "{err}"
    );
}

#[tokio::test]
async fn missing_repository_names_the_url_and_status() {
    let repo = autoscaler_repo();
    let server = GitServer::start(repo.project_root(), Mode::Backend);
    let url = format!("{}/kubernetes/nothing.git", server.base);
    let err = ls_remote(&client(), &url, PREFIX).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&format!("{url}/info/refs")) && text.contains("404"),
        "{text}"
    );
}

#[tokio::test]
async fn a_plain_web_server_is_not_taken_for_git() {
    let repo = autoscaler_repo();
    let server = GitServer::start(repo.project_root(), Mode::Dumb);
    let err = ls_remote(&client(), &server.url(&repo), PREFIX)
        .await
        .unwrap_err();
    assert!(matches!(err, ResolveError::NotSmart { .. }), "{err}");
    assert!(err.to_string().contains(&server.base), "{err}");
}
