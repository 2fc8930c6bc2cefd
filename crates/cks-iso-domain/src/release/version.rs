//! Kubernetes versions and the autoscaler/CCM pins derived from them
//! (`docs/reference/iso-contract.md` §4).
//!
//! The upstream script took the autoscaler manifest from `master` and so shipped one old alpha
//! autoscaler in every ISO. Here the autoscaler is the newest `cluster-autoscaler-X.Y.Z` tag of the
//! ISO's minor, chosen from a tag listing by numbers (1.3 is not 1.30, 1.30.10 beats 1.30.9), or
//! exactly what the user pinned. Pure: the listing comes from the network side (`cks_iso::release::git`).

use std::fmt;
use std::str::FromStr;

use super::GitRef;
use super::VersionError;

/// The first Kubernetes minor whose CloudStack autoscaler example exists.
pub const FIRST_MINOR: u64 = 20;
/// The CCM tag when `CCM_VERSION` is not set.
pub const DEFAULT_CCM_TAG: &str = "v1.2.0";
/// Tags of `kubernetes/autoscaler` that name a cluster-autoscaler release start with this.
pub const AUTOSCALER_TAG_PREFIX: &str = "cluster-autoscaler-";
/// The ref prefix to list (`ls-refs` `ref-prefix`, and the client-side filter).
pub const AUTOSCALER_REF_PREFIX: &str = "refs/tags/cluster-autoscaler-";
/// The repository whose tags are listed (a git mirror rewrites the prefix).
pub const AUTOSCALER_REPO: &str = "https://github.com/kubernetes/autoscaler";

/// A Kubernetes release such as `v1.33.1`, `1.33.1`, `v1.34.0-rc.1` or `v1.33.1+vendor.2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeVersion {
    /// Major, 1 for every release so far.
    pub major: u64,
    /// Minor.
    pub minor: u64,
    /// Patch.
    pub patch: u64,
    /// Pre-release after `-`, e.g. `rc.1`.
    pub pre: Option<String>,
    /// Build metadata after `+`.
    pub build: Option<String>,
}

impl KubeVersion {
    /// `major.minor.patch` without pre-release or metadata.
    pub fn release(&self) -> (u64, u64, u64) {
        (self.major, self.minor, self.patch)
    }

    /// The tag kubeadm gives the control-plane images: `v` + version, `+` written as `_`.
    pub fn image_tag(&self) -> String {
        format!("v{self}").replace('+', "_")
    }
}

impl FromStr for KubeVersion {
    type Err = VersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || VersionError::BadVersion {
            value: s.to_owned(),
        };
        let trimmed = s.trim();
        let rest = trimmed.strip_prefix('v').unwrap_or(trimmed);
        let (rest, build) = split_once_opt(rest, '+');
        let (core, pre) = split_once_opt(rest, '-');
        let (major, minor, patch) = parse_triple(core).ok_or_else(bad)?;
        let ident_ok = |p: &Option<&str>| {
            p.is_none_or(|p| {
                !p.is_empty()
                    && p.split('.').all(|id| {
                        !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    })
            })
        };
        if !ident_ok(&pre) || !ident_ok(&build) {
            return Err(bad());
        }
        Ok(Self {
            major,
            minor,
            patch,
            pre: pre.map(str::to_owned),
            build: build.map(str::to_owned),
        })
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(pre) = &self.pre {
            write!(f, "-{pre}")?;
        }
        if let Some(build) = &self.build {
            write!(f, "+{build}")?;
        }
        Ok(())
    }
}

fn split_once_opt(s: &str, sep: char) -> (&str, Option<&str>) {
    match s.split_once(sep) {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    }
}

/// `X.Y.Z` of plain decimal numbers, no sign, no leading `+`, no empty part.
fn parse_triple(s: &str) -> Option<(u64, u64, u64)> {
    let mut parts = s.split('.').map(|p| {
        (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<u64>().ok())
            .flatten()
    });
    let triple = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(triple)
}

/// A cluster-autoscaler release, `X.Y.Z`, ordered numerically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AutoscalerVersion {
    /// Major.
    pub major: u64,
    /// Minor, matching the Kubernetes minor it is built for.
    pub minor: u64,
    /// Patch.
    pub patch: u64,
}

impl AutoscalerVersion {
    /// The git tag: `cluster-autoscaler-X.Y.Z`.
    pub fn tag(&self) -> String {
        format!("{AUTOSCALER_TAG_PREFIX}{self}")
    }

    /// Reads a full ref name; only `refs/tags/cluster-autoscaler-X.Y.Z` is a release.
    pub fn from_ref_name(name: &str) -> Option<Self> {
        let rest = name
            .strip_prefix("refs/tags/")?
            .strip_prefix(AUTOSCALER_TAG_PREFIX)?;
        let (major, minor, patch) = parse_triple(rest)?;
        Some(Self {
            major,
            minor,
            patch,
        })
    }
}

impl fmt::Display for AutoscalerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// How the autoscaler version was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoscalerChoice {
    /// The release.
    pub version: AutoscalerVersion,
    /// Whether `AUTOSCALER_VERSION` picked it rather than the listing.
    pub pinned: bool,
    /// Something the user should read, e.g. a pin for another minor than the ISO's.
    pub warning: Option<String>,
}

/// Every `cluster-autoscaler-X.Y.Z` release among `refs`, newest first, each once.
///
/// Peeled (`^{}`) names, chart tags, other components and pre-releases do not parse as a release.
pub fn autoscaler_releases(refs: &[GitRef]) -> Vec<AutoscalerVersion> {
    let mut out: Vec<_> = refs
        .iter()
        .filter_map(|r| AutoscalerVersion::from_ref_name(&r.name))
        .collect();
    out.sort_unstable_by(|a, b| b.cmp(a));
    out.dedup();
    out
}

/// The newest release for `major.minor`, compared by numbers.
pub fn newest_for_minor(
    releases: &[AutoscalerVersion],
    major: u64,
    minor: u64,
) -> Option<AutoscalerVersion> {
    releases
        .iter()
        .filter(|v| v.major == major && v.minor == minor)
        .max()
        .copied()
}

/// Refuses Kubernetes versions before the CloudStack autoscaler example existed.
pub fn check_supported(kube: &KubeVersion) -> Result<(), VersionError> {
    if kube.major < 1 || (kube.major == 1 && kube.minor < FIRST_MINOR) {
        return Err(VersionError::TooOld {
            version: kube.to_string(),
        });
    }
    Ok(())
}

/// Reads an autoscaler pin (`1.33.4` or `v1.33.4`) for an ISO of `kube`, given by `origin` (the
/// flag or variable, named in the messages).
///
/// Pure: it does not check that the tag exists; [`choose_autoscaler`] does when it has a listing.
pub fn autoscaler_pin(
    kube: &KubeVersion,
    value: &str,
    origin: &'static str,
) -> Result<AutoscalerChoice, VersionError> {
    check_supported(kube)?;
    let bad = || VersionError::BadAutoscalerPin {
        value: value.to_owned(),
        origin,
    };
    let trimmed = value.trim();
    let (major, minor, patch) =
        parse_triple(trimmed.strip_prefix('v').unwrap_or(trimmed)).ok_or_else(bad)?;
    let version = AutoscalerVersion {
        major,
        minor,
        patch,
    };
    if (major, minor) < (1, FIRST_MINOR) {
        return Err(bad());
    }
    let warning = ((major, minor) != (kube.major, kube.minor)).then(|| {
        format!(
            "{} is a {major}.{minor} autoscaler; the ISO is for Kubernetes {kube}, whose own \
             autoscaler minor is {}.{}",
            shown(origin, value),
            kube.major,
            kube.minor
        )
    });
    Ok(AutoscalerChoice {
        version,
        pinned: true,
        warning,
    })
}

/// A value as the user wrote it: `--flag 1.2.3`, `VAR=1.2.3`, or `the lock's autoscaler 1.2.3`.
pub fn shown(origin: &str, value: &str) -> String {
    let variable = !origin.is_empty()
        && origin
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    match variable {
        true => format!("{origin}={value}"),
        false => format!("{origin} {value}"),
    }
}

/// Picks the autoscaler for `kube`: the pin if given (it must be a listed release), else the newest
/// release of the ISO's minor among `refs`.
pub fn choose_autoscaler(
    kube: &KubeVersion,
    pin: Option<&str>,
    pin_origin: &'static str,
    refs: &[GitRef],
) -> Result<AutoscalerChoice, VersionError> {
    check_supported(kube)?;
    let releases = autoscaler_releases(refs);
    if let Some(pin) = pin {
        let choice = autoscaler_pin(kube, pin, pin_origin)?;
        if !releases.contains(&choice.version) {
            return Err(VersionError::UnknownAutoscalerRelease {
                version: choice.version.to_string(),
                newest: newest_for_minor(&releases, choice.version.major, choice.version.minor)
                    .map(|v| v.to_string()),
            });
        }
        return Ok(choice);
    }
    let version = newest_for_minor(&releases, kube.major, kube.minor).ok_or_else(|| {
        VersionError::NoAutoscalerRelease {
            minor: format!("{}.{}", kube.major, kube.minor),
            newest: releases.first().map(|v| v.to_string()),
        }
    })?;
    Ok(AutoscalerChoice {
        version,
        pinned: false,
        warning: None,
    })
}

/// The CCM image tag: `CCM_VERSION` (`v1.3.0-rc1` or `1.3.0-rc1`) or [`DEFAULT_CCM_TAG`].
pub fn ccm_tag(value: Option<&str>) -> Result<String, VersionError> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(DEFAULT_CCM_TAG.to_owned());
    };
    let tag = match value.strip_prefix('v') {
        Some(_) => value.to_owned(),
        None => format!("v{value}"),
    };
    // A Docker tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; the CCM's all start with `v<digit>`.
    let ok = tag.len() <= 128
        && tag.as_bytes().get(1).is_some_and(u8::is_ascii_digit)
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if !ok {
        return Err(VersionError::BadCcmTag {
            value: value.to_owned(),
        });
    }
    Ok(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> KubeVersion {
        s.parse().unwrap()
    }

    fn refs(names: &[&str]) -> Vec<GitRef> {
        names
            .iter()
            .map(|n| GitRef {
                name: format!("refs/tags/{n}"),
                oid: "0".repeat(40),
                peeled: None,
            })
            .collect()
    }

    #[test]
    fn kubernetes_versions_parse_with_or_without_v() {
        assert_eq!(v("v1.33.1"), v("1.33.1"));
        assert_eq!(v(" v1.33.1\n"), v("1.33.1"));
        assert_eq!(v("1.33.1").release(), (1, 33, 1));
        let rc = v("v1.34.0-rc.1");
        assert_eq!(rc.pre.as_deref(), Some("rc.1"));
        assert_eq!(rc.to_string(), "1.34.0-rc.1");
        let meta = v("1.33.1+vendor.2");
        assert_eq!(meta.build.as_deref(), Some("vendor.2"));
        assert_eq!(meta.image_tag(), "v1.33.1_vendor.2");
    }

    #[test]
    fn malformed_kubernetes_versions_are_refused() {
        for bad in [
            "", "v", "1.33", "1.33.1.2", "1.x.1", "v1.33.1-", "1.33.1+", "1.-3.1", "1.33.+1",
        ] {
            assert!(bad.parse::<KubeVersion>().is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn release_tags_are_compared_as_numbers_not_strings() {
        let list = refs(&[
            "cluster-autoscaler-1.30.9",
            "cluster-autoscaler-1.30.10",
            "cluster-autoscaler-1.3.99",
        ]);
        let releases = autoscaler_releases(&list);
        assert_eq!(
            newest_for_minor(&releases, 1, 30).unwrap().to_string(),
            "1.30.10"
        );
        assert_eq!(
            newest_for_minor(&releases, 1, 3).unwrap().to_string(),
            "1.3.99"
        );
    }

    #[test]
    fn only_plain_release_tags_count() {
        let mut list = refs(&[
            "cluster-autoscaler-1.31.1^{}",
            "cluster-autoscaler-1.31.2-rc.1",
            "cluster-autoscaler-1.31.3-beta.1",
            "cluster-autoscaler-1.31.4-alpha.2",
            "cluster-autoscaler-chart-1.31.9",
            "vertical-pod-autoscaler-1.31.9",
            "cluster-autoscaler-1.31",
            "cluster-autoscaler-1.31.1",
        ]);
        list.push(GitRef {
            name: "refs/heads/cluster-autoscaler-1.31.8".into(),
            oid: "0".repeat(40),
            peeled: None,
        });
        assert_eq!(
            autoscaler_releases(&list),
            [AutoscalerVersion {
                major: 1,
                minor: 31,
                patch: 1
            }]
        );
    }

    #[test]
    fn default_is_the_newest_release_of_the_iso_minor() {
        let list = refs(&[
            "cluster-autoscaler-1.30.2",
            "cluster-autoscaler-1.31.1",
            "cluster-autoscaler-1.30.4",
        ]);
        let choice = choose_autoscaler(&v("1.30.0"), None, "AUTOSCALER_VERSION", &list).unwrap();
        assert_eq!(choice.version.tag(), "cluster-autoscaler-1.30.4");
        assert!(!choice.pinned && choice.warning.is_none());
    }

    #[test]
    fn missing_minor_names_the_newest_release() {
        let list = refs(&["cluster-autoscaler-1.30.2", "cluster-autoscaler-1.31.1"]);
        let err = choose_autoscaler(&v("1.32.1"), None, "AUTOSCALER_VERSION", &list).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no cluster-autoscaler release for Kubernetes 1.32 upstream; the newest release is 1.31.1"
        );
    }

    #[test]
    fn the_warning_names_where_the_pin_was_given() {
        let flag = autoscaler_pin(&v("1.37.0"), "1.36.1", "--autoscaler-version").unwrap();
        let warning = flag.warning.unwrap();
        assert!(
            warning.starts_with("--autoscaler-version 1.36.1 is a 1.36 autoscaler"),
            "{warning}"
        );
        let var = autoscaler_pin(&v("1.37.0"), "1.36.1", "AUTOSCALER_VERSION").unwrap();
        assert!(
            var.warning
                .unwrap()
                .starts_with("AUTOSCALER_VERSION=1.36.1 is")
        );
        let bad = autoscaler_pin(&v("1.37.0"), "latest", "--autoscaler-version").unwrap_err();
        assert!(
            bad.to_string()
                .starts_with("--autoscaler-version \"latest\""),
            "{bad}"
        );
    }

    #[test]
    fn pin_with_or_without_v_and_warning_for_another_minor() {
        let list = refs(&["cluster-autoscaler-1.30.2", "cluster-autoscaler-1.31.1"]);
        let same =
            choose_autoscaler(&v("1.30.5"), Some("v1.30.2"), "AUTOSCALER_VERSION", &list).unwrap();
        assert_eq!(same.version.to_string(), "1.30.2");
        assert!(same.pinned && same.warning.is_none());
        let other =
            choose_autoscaler(&v("1.30.5"), Some("1.31.1"), "AUTOSCALER_VERSION", &list).unwrap();
        assert_eq!(other.version.to_string(), "1.31.1");
        assert!(other.warning.unwrap().contains("1.31"));
    }

    #[test]
    fn pin_that_is_not_a_release_is_refused() {
        let list = refs(&["cluster-autoscaler-1.30.2"]);
        let err = choose_autoscaler(&v("1.30.5"), Some("1.30.3"), "AUTOSCALER_VERSION", &list)
            .unwrap_err();
        assert!(
            matches!(err, VersionError::UnknownAutoscalerRelease { .. }),
            "{err}"
        );
        for bad in ["1.30", "latest", "1.30.2-rc.1", "1.19.0"] {
            assert!(
                autoscaler_pin(&v("1.30.5"), bad, "--autoscaler-version").is_err(),
                "{bad} accepted"
            );
        }
    }

    #[test]
    fn kubernetes_before_1_20_is_a_clear_error() {
        let err = choose_autoscaler(&v("1.19.16"), None, "AUTOSCALER_VERSION", &[]).unwrap_err();
        assert!(matches!(err, VersionError::TooOld { .. }));
        assert!(err.to_string().contains("1.19.16"), "{err}");
        assert!(check_supported(&v("1.20.0")).is_ok());
    }

    #[test]
    fn ccm_tag_defaults_and_takes_a_v_or_not() {
        assert_eq!(ccm_tag(None).unwrap(), "v1.2.0");
        assert_eq!(ccm_tag(Some("")).unwrap(), "v1.2.0");
        assert_eq!(ccm_tag(Some("1.3.0-rc1")).unwrap(), "v1.3.0-rc1");
        assert_eq!(ccm_tag(Some("v1.3.0-rc1")).unwrap(), "v1.3.0-rc1");
        for bad in ["v", "vx", "1.3 0", "1.3.0/evil", "v1:2"] {
            assert!(ccm_tag(Some(bad)).is_err(), "{bad} accepted");
        }
    }
}
