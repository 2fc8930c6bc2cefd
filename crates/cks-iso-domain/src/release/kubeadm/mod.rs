//! The images `kubeadm config images list` prints, computed without running kubeadm.
//!
//! The upstream script ran the target's `kubeadm` on the build host, which breaks cross-arch
//! builds. kubeadm's list is four control-plane images tagged with the Kubernetes version plus
//! three "extras" (pause, etcd, coredns) whose versions live in kubeadm's
//! `cmd/kubeadm/app/constants/constants.go` and change within a minor. [`Extras::from_constants`]
//! reads them from that file at the release tag (so releases newer than this tool work);
//! [`Extras::embedded`] is the offline fallback and the test oracle. [`images`] then applies
//! kubeadm's naming rules (`docs/reference/upstream.md` §2). Pure: fetching the file is the
//! caller's business.

mod constants;
mod table;

pub use constants::Unreadable;
use constants::{Constants, string_const};

use super::VersionError;
use super::version::KubeVersion;

/// Registry of kubeadm's images from 1.25.0 (and late patches of 1.22–1.24).
pub const REGISTRY: &str = "registry.k8s.io";
/// Registry of kubeadm's images before.
pub const OLD_REGISTRY: &str = "k8s.gcr.io";

/// Where kubeadm's constants live, relative to a checkout at the release tag.
pub const CONSTANTS_PATH: &str = "cmd/kubeadm/app/constants/constants.go";

/// Where kubeadm 1.20 keeps `PauseVersion` instead: the Linux-only file beside `constants.go`.
pub const CONSTANTS_UNIX_PATH: &str = "cmd/kubeadm/app/constants/constants_unix.go";

/// The versions of kubeadm's non-Kubernetes images for one release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extras {
    /// CoreDNS tag, e.g. `v1.12.0` (`1.7.0` in 1.20).
    pub coredns: String,
    /// etcd tag, e.g. `3.5.21-0`.
    pub etcd: String,
    /// pause tag, e.g. `3.10`.
    pub pause: String,
}

impl Extras {
    /// The values observed upstream for exactly this release, if this tool knows them.
    pub fn embedded(version: &KubeVersion) -> Option<Self> {
        if version.major != 1 || version.pre.is_some() {
            return None;
        }
        let (minor, patch) = (version.minor, version.patch);
        table::ROWS
            .iter()
            .find(|r| r.0 == minor && (r.1..=r.2).contains(&patch))
            .map(|&(_, _, _, coredns, etcd, pause)| Self {
                coredns: coredns.into(),
                etcd: etcd.into(),
                pause: pause.into(),
            })
    }

    /// Reads `PauseVersion`, `CoreDNSVersion` and the etcd tag kubeadm of release minor `minor`
    /// lists from kubeadm's `constants.go`, in any form kubeadm has used (literal or skew keys,
    /// constant names). For a release that keeps `PauseVersion` in `constants_unix.go` (see
    /// [`declares_pause`]), pass both files' text, one after the other.
    pub fn from_constants(src: &str, minor: u64) -> Result<Self, VersionError> {
        let unreadable = |what| VersionError::Constants { minor, what };
        let constants = Constants::new(src);
        Ok(Self {
            pause: constants.string("PauseVersion").map_err(unreadable)?,
            coredns: constants.string("CoreDNSVersion").map_err(unreadable)?,
            etcd: constants.etcd_for(minor).map_err(unreadable)?,
        })
    }
}

/// `registry.k8s.io` or `k8s.gcr.io`, as kubeadm of `version` names its images.
pub fn registry(version: &KubeVersion) -> &'static str {
    let switched = match (version.major, version.minor) {
        (1, 22) => version.patch >= 17,
        (1, 23) => version.patch >= 15,
        (1, 24) => version.patch >= 9,
        (major, minor) => (major, minor) >= (1, 25),
    };
    if switched { REGISTRY } else { OLD_REGISTRY }
}

/// kubeadm's constants file at the release tag (a download mirror rewrites the prefix).
pub fn constants_url(version: &KubeVersion) -> String {
    format!("https://raw.githubusercontent.com/kubernetes/kubernetes/v{version}/{CONSTANTS_PATH}")
}

/// kubeadm's Linux constants file at the release tag, where 1.20 declares `PauseVersion`.
pub fn constants_unix_url(version: &KubeVersion) -> String {
    format!(
        "https://raw.githubusercontent.com/kubernetes/kubernetes/v{version}/{CONSTANTS_UNIX_PATH}"
    )
}

/// Whether a `constants.go` declares `PauseVersion`; when it does not (kubeadm 1.20), the value is
/// in `constants_unix.go` ([`constants_unix_url`]).
pub fn declares_pause(src: &str) -> bool {
    string_const(src, "PauseVersion").is_some()
}

/// The list `kubeadm config images list --kubernetes-version v<version>` prints, in its order.
pub fn images(version: &KubeVersion, extras: &Extras) -> Vec<String> {
    let repo = registry(version);
    let tag = version.image_tag();
    let mut out: Vec<String> = [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kube-proxy",
    ]
    .iter()
    .map(|name| format!("{repo}/{name}:{tag}"))
    .collect();
    // Before 1.21 kubeadm named CoreDNS without its organisation sub-path.
    let coredns = match (version.major, version.minor) {
        (1, ..=20) => format!("{repo}/coredns:{}", extras.coredns),
        _ => format!("{repo}/coredns/coredns:{}", extras.coredns),
    };
    let pause = format!("{repo}/pause:{}", extras.pause);
    let etcd = format!("{repo}/etcd:{}", extras.etcd);
    if (version.major, version.minor) >= (1, 29) {
        out.extend([coredns, pause, etcd]);
    } else {
        out.extend([pause, etcd, coredns]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> KubeVersion {
        s.parse().unwrap()
    }

    #[test]
    fn registry_switches_at_the_backported_patches() {
        for (version, want) in [
            ("1.22.16", OLD_REGISTRY),
            ("1.22.17", REGISTRY),
            ("1.23.14", OLD_REGISTRY),
            ("1.23.15", REGISTRY),
            ("1.24.8", OLD_REGISTRY),
            ("1.24.9", REGISTRY),
            ("1.24.17", REGISTRY),
            ("1.21.14", OLD_REGISTRY),
            ("1.25.0", REGISTRY),
            ("1.36.0", REGISTRY),
        ] {
            assert_eq!(registry(&v(version)), want, "{version}");
        }
    }

    #[test]
    fn constants_url_names_the_release_tag() {
        assert_eq!(
            constants_url(&v("1.33.1")),
            "https://raw.githubusercontent.com/kubernetes/kubernetes/v1.33.1/cmd/kubeadm/app/constants/constants.go"
        );
    }

    #[test]
    fn etcd_key_nearest_to_a_missing_minor_is_used() {
        let src = "var SupportedEtcdVersion = map[uint8]string{\n\t31: \"a\",\n\t33: \"b\",\n}\n\
                   PauseVersion = \"p\"\nCoreDNSVersion = \"c\"\n";
        let pick = |minor| Extras::from_constants(src, minor).unwrap().etcd;
        assert_eq!(pick(31), "a");
        assert_eq!(pick(30), "a");
        assert_eq!(pick(33), "b");
        assert_eq!(pick(40), "b");
        assert_eq!(pick(32), "a", "a tie goes to the lower minor");
    }

    #[test]
    fn commented_out_entries_and_similar_names_are_ignored() {
        let src = "\t// PauseVersion = \"wrong\"\n\tDefaultPauseVersion = \"wrong\"\n\
                   \tPauseVersion = \"3.10\" // pause\n\tCoreDNSVersion string = \"v1.12.0\"\n\
                   \tSupportedEtcdVersion = map[uint8]string{\n\t\t// 33: \"3.5.17-0\",\n\t\t33: \"3.5.21-0\",\n\t}\n";
        let extras = Extras::from_constants(src, 33).unwrap();
        assert_eq!(extras.pause, "3.10");
        assert_eq!(extras.coredns, "v1.12.0");
        assert_eq!(extras.etcd, "3.5.21-0");
    }

    #[test]
    fn a_file_without_the_constants_names_what_is_missing() {
        let err = Extras::from_constants("package constants\n", 33).unwrap_err();
        assert!(err.to_string().contains("PauseVersion"), "{err}");
        let no_map = "PauseVersion = \"3.10\"\nCoreDNSVersion = \"v1\"\n";
        let err = Extras::from_constants(no_map, 33).unwrap_err();
        assert!(err.to_string().contains("SupportedEtcdVersion"), "{err}");
    }

    #[test]
    fn embedded_table_has_no_overlapping_rows() {
        for (i, a) in table::ROWS.iter().enumerate() {
            assert!(a.1 <= a.2, "{a:?}");
            for b in &table::ROWS[i + 1..] {
                assert!(a.0 != b.0 || a.2 < b.1 || b.2 < a.1, "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn embedded_table_does_not_guess_unobserved_patches() {
        assert!(Extras::embedded(&v("1.24.5")).is_none());
        assert!(Extras::embedded(&v("1.36.4")).is_none());
        assert!(Extras::embedded(&v("1.33.0-rc.1")).is_none());
        assert!(Extras::embedded(&v("1.19.16")).is_none());
    }
}
