//! The suite cannot reach the internet by accident. Every `cks-iso` it runs sends the traffic for
//! hosts other than loopback to a proxy nobody listens on (`support::no_internet`), so a regression
//! that would contact a real upstream — a mirror rule not applied, a URL built past the fetch
//! layer — fails at that proxy instead of passing on a machine that happens to have a network.

use crate::support::{DEAD_PROXY, cks_iso, stderr};

/// `resolve` with no mirror configured asks dl.k8s.io for the stable version: under the test
/// environment that request must end at the dead proxy (connection refused), not at a name server
/// or the real host, and the user sees the URL it could not reach.
#[test]
fn an_upstream_without_its_mirror_ends_at_the_dead_proxy() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = cks_iso();
    let envs: Vec<_> = cmd
        .get_envs()
        .map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned())))
        .collect();
    for var in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"] {
        assert!(
            envs.iter()
                .any(|(k, v)| k == var && v.as_deref() == Some(DEAD_PROXY.as_ref())),
            "{var} is not the dead proxy in {envs:?}"
        );
    }
    let out = cmd
        .env("TMPDIR", tmp.path())
        .env_remove("CKS_ISO_CONFIG")
        .args([
            "--no-progress",
            "resolve",
            "--kubernetes",
            "1.33",
            "--retries",
            "1",
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("https://dl.k8s.io/"),
        "the URL is not named:\n{err}"
    );
    assert!(
        err.to_lowercase().contains("refused"),
        "the request did not end at the dead proxy {DEAD_PROXY}:\n{err}"
    );
}
