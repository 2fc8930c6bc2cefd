//! Whether a Kubernetes release was ever published, asked only once something at its tag was
//! missing (kubeadm's constants, an autoscaler for its minor).
//!
//! A mistyped release (`1.33.99`, `1.99.0`) otherwise fails on the first file it lacks, with a
//! hint about mirrors and reachability that sends the user to debug the network. dl.k8s.io's
//! labels say what exists: `stable-1.33` names the newest release of 1.33 (so `1.33.99` past it
//! is no release), a minor without that label has none, and `stable` names the newest of all.
//! These become the error's first line and its suggestions; when the labels cannot be read (no
//! network, `--offline`), nothing is claimed and the original error stands.

use crate::release::KubeVersion;
use crate::upstream::Fetcher;
use crate::upstream::label::{LabelError, resolve_label};

/// A published release near the one asked for, and the label that names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nearest {
    /// The release, e.g. `1.33.1`.
    pub version: String,
    /// The label read, e.g. `stable-1.33`.
    pub label: String,
}

/// The releases near `kube` when the labels show that `kube` was never published; `None` when
/// it may exist (its minor's newest release is as new or newer) or the labels cannot tell.
pub async fn nearest_if_unpublished(
    kube: &KubeVersion,
    fetcher: &Fetcher<'_>,
) -> Option<Vec<Nearest>> {
    let minor = format!("stable-{}.{}", kube.major, kube.minor);
    let mut nearest = Vec::new();
    match resolve_label(fetcher, &minor).await {
        Ok(newest) if older(&newest, kube) => nearest.push(Nearest {
            version: newest.to_string(),
            label: minor,
        }),
        Ok(_) => return None,
        // No label for the minor: no release of it either.
        Err(LabelError::Fetch { source, .. }) if source.status() == Some(404) => {}
        Err(_) => return None,
    }
    if let Ok(stable) = resolve_label(fetcher, "stable").await
        && nearest.iter().all(|n| n.version != stable.to_string())
    {
        nearest.push(Nearest {
            version: stable.to_string(),
            label: "stable".into(),
        });
    }
    Some(nearest)
}

/// Whether `a` comes before `b` (pre-releases and builds aside: a final release of the minor
/// newer than a pre-release leaves the pre-release undecided, as it should).
fn older(a: &KubeVersion, b: &KubeVersion) -> bool {
    (a.major, a.minor, a.patch) < (b.major, b.minor, b.patch)
}

/// `v1.33.1 (stable-1.33), v1.34.2 (stable)`.
pub fn list(nearest: &[Nearest]) -> String {
    nearest
        .iter()
        .map(|n| format!("v{} ({})", n.version, n.label))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_patch_past_the_newest_of_its_minor_counts_as_unpublished() {
        let v = |s: &str| s.parse::<KubeVersion>().unwrap();
        assert!(older(&v("1.33.1"), &v("1.33.99")));
        assert!(!older(&v("1.33.1"), &v("1.33.1")));
        assert!(!older(&v("1.33.2"), &v("1.33.1")));
        assert!(!older(&v("1.34.0"), &v("1.34.0-rc.1")));
        let near = [
            Nearest {
                version: "1.33.1".into(),
                label: "stable-1.33".into(),
            },
            Nearest {
                version: "1.34.2".into(),
                label: "stable".into(),
            },
        ];
        assert_eq!(list(&near), "v1.33.1 (stable-1.33), v1.34.2 (stable)");
    }
}
