//! Kubernetes version labels, as kubeadm takes them: `stable-1.33`, `stable`, `stable-1`,
//! `latest-1.33`, `latest-1` (not `latest` alone, which is as often a pre-release as not), each read from `https://dl.k8s.io/release/<label>.txt` (through the mirrors,
//! with retries, kept in the cache, and from the cache with `--offline`).
//!
//! `latest-*` may name a pre-release (`v1.34.0-rc.1`); CloudStack only registers versions of the
//! form `[0-9]+(\.[0-9]+)*`, so a label that names one is refused. `1.33` (a minor alone) means
//! `stable-1.33`: the newest patch release of that minor.

use crate::fetch::FetchError;
use crate::release::KubeVersion;

use super::Fetcher;
// What a label is and where it is published are the domain catalog's.
pub use cks_iso_domain::catalog::label::{label, label_url};

/// A label file holds one line.
const LIMIT: u64 = 4096;

/// Why a label gave no release.
#[derive(Debug, thiserror::Error)]
pub enum LabelError {
    /// The label file could not be read.
    #[error("cannot read the Kubernetes version label {label} from {url}")]
    Fetch {
        /// The label.
        label: String,
        /// Its URL.
        url: String,
        /// Why.
        #[source]
        source: FetchError,
    },
    /// The file does not hold a version.
    #[error("{url} (the label {label}) holds {found:?}, not a Kubernetes release such as v1.33.1")]
    NotAVersion {
        /// The label.
        label: String,
        /// Its URL.
        url: String,
        /// Its first line.
        found: String,
    },
    /// The release named is not of the minor (or major) the label asks for.
    #[error("the label {label} names v{version}, which is not a {wanted} release")]
    OtherMinor {
        /// The label.
        label: String,
        /// What it named.
        version: String,
        /// `1.33` or `1`.
        wanted: String,
    },
    /// A `latest-*` label names a pre-release, which CloudStack cannot register.
    #[error(
        "the label {label} names v{version}, a pre-release; CloudStack registers only final \
         releases (semanticversion [0-9]+(.[0-9]+)*)"
    )]
    PreRelease {
        /// The label.
        label: String,
        /// What it named.
        version: String,
    },
}

impl LabelError {
    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Fetch { source, .. } => source.hint(),
            Self::NotAVersion { .. } | Self::OtherMinor { .. } => Some(
                "the server or a --mirror rule answers with something else: check it, or pass \
                 the release itself, e.g. --kubernetes 1.33.1"
                    .into(),
            ),
            Self::PreRelease { label, .. } => Some(format!(
                "use {} for the newest final release, or pass a release itself",
                label.replacen("latest", "stable", 1)
            )),
        }
    }
}

/// Reads `label` and returns the release it names, checked to be a final release of the minor it
/// asks for.
pub async fn resolve_label(fetcher: &Fetcher<'_>, label: &str) -> Result<KubeVersion, LabelError> {
    let url = label_url(label);
    let text = fetcher
        .text(&url, LIMIT)
        .await
        .map_err(|source| LabelError::Fetch {
            label: label.to_owned(),
            url: url.clone(),
            source,
        })?;
    named(label, &url, &text)
}

/// The release `text`, the body of `label`'s file at `url`, names.
fn named(label: &str, url: &str, text: &str) -> Result<KubeVersion, LabelError> {
    let first = text.lines().next().unwrap_or_default().trim();
    let version: KubeVersion = first
        .strip_prefix('v')
        .filter(|_| !first.is_empty())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| LabelError::NotAVersion {
            label: label.to_owned(),
            url: url.to_owned(),
            found: first.chars().take(80).collect(),
        })?;
    let wanted = label.split_once('-').map(|(_, v)| v.to_owned());
    if let Some(wanted) = wanted {
        let mut parts = wanted
            .split('.')
            .map(|p| p.parse::<u64>().unwrap_or(u64::MAX));
        let ok = parts.next() == Some(version.major)
            && parts.next().is_none_or(|minor| minor == version.minor);
        if !ok {
            return Err(LabelError::OtherMinor {
                label: label.to_owned(),
                version: version.to_string(),
                wanted,
            });
        }
    }
    if version.pre.is_some() || version.build.is_some() {
        return Err(LabelError::PreRelease {
            label: label.to_owned(),
            version: version.to_string(),
        });
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_told_from_versions_and_a_minor_alone_is_its_stable_label() {
        for (text, want) in [
            ("stable", "stable"),
            ("stable-1", "stable-1"),
            ("stable-1.33", "stable-1.33"),
            ("latest-1.33", "latest-1.33"),
            ("latest-1", "latest-1"),
            ("1.33", "stable-1.33"),
            ("v1.33", "stable-1.33"),
        ] {
            assert_eq!(label(text).as_deref(), Some(want), "{text}");
        }
        for text in [
            "1.33.1",
            "v1.33.1",
            "stable-",
            "stable-1.33.1",
            "stabler",
            "1",
            "x.y",
        ] {
            assert_eq!(label(text), None, "{text}");
        }
        assert_eq!(
            label_url("stable-1.33"),
            "https://dl.k8s.io/release/stable-1.33.txt"
        );
    }

    #[test]
    fn a_label_names_a_final_release_of_its_minor() {
        let url = "https://dl.k8s.io/release/x.txt";
        assert_eq!(
            named("stable-1.33", url, "v1.33.4").unwrap().to_string(),
            "1.33.4"
        );
        assert_eq!(
            named("stable", url, "v1.34.2\n").unwrap().to_string(),
            "1.34.2"
        );
        assert_eq!(
            named("latest-1", url, "v1.34.2").unwrap().to_string(),
            "1.34.2"
        );
        let err = named("latest-1.34", url, "v1.34.0-rc.1").unwrap_err();
        assert!(matches!(err, LabelError::PreRelease { .. }), "{err}");
        assert!(err.to_string().contains("v1.34.0-rc.1"), "{err}");
        assert!(err.hint().unwrap().contains("stable-1.34"));
        let err = named("stable-1.33", url, "v1.32.9").unwrap_err();
        assert!(matches!(err, LabelError::OtherMinor { .. }), "{err}");
        let err = named("stable-1.33", url, "<html>404</html>").unwrap_err();
        assert!(matches!(err, LabelError::NotAVersion { .. }), "{err}");
        assert!(err.to_string().contains(url), "{err}");
    }
}
