//! Which supported versions `versions retire --keep N` retires: per zone, architecture and
//! Kubernetes minor, every enabled version older than the newest N patch releases. A version is
//! registered for one zone or for all (no `zoneid`), so each zone's choice is among its own
//! versions and the all-zone ones: a newer patch in zone B does not retire zone A's only 1.33, and
//! an all-zone version goes only when no zone still needs it. Pure; [`super::run`] carries it out
//! (a version a cluster uses is skipped and named, not fatal).

use std::collections::BTreeSet;

use super::api::SupportedVersion;
use super::plan::listed_arch;

type Release = (u64, u64, u64);

/// `1.33.1` → (1, 33, 1); `None` for anything else.
pub fn semver(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.trim_start_matches('v').split('.');
    let mut next = || parts.next()?.parse().ok();
    let v = (next()?, next()?, next()?);
    parts.next().is_none().then_some(v)
}

/// The enabled versions to retire so that, in every zone, each (arch, minor) keeps its newest
/// `keep` patch releases (every version of a kept release stays). Ordered by arch, release, id.
pub fn select(versions: &[SupportedVersion], keep: usize) -> Vec<SupportedVersion> {
    let enabled: Vec<(&SupportedVersion, Release)> = versions
        .iter()
        .filter(|v| !v.state.eq_ignore_ascii_case("Disabled"))
        .filter_map(|v| Some((v, semver(&v.semanticversion)?)))
        .collect();
    // "" stands for the zones with no version of their own: only all-zone versions are there.
    let zones: BTreeSet<&str> = enabled
        .iter()
        .map(|(v, _)| v.zoneid.as_str())
        .chain([""])
        .collect();
    let kept_in = |zone: &str, v: &SupportedVersion, release: Release| {
        let mut releases: Vec<Release> = enabled
            .iter()
            .filter(|(w, _)| w.zoneid.is_empty() || w.zoneid == zone)
            .filter(|(w, r)| {
                listed_arch(w) == listed_arch(v) && (r.0, r.1) == (release.0, release.1)
            })
            .map(|(_, r)| *r)
            .collect();
        releases.sort_unstable();
        releases.dedup();
        releases.iter().rev().take(keep).any(|r| *r == release)
    };
    let mut out: Vec<(&SupportedVersion, Release)> = enabled
        .iter()
        .filter(|(v, release)| {
            let mut places = zones
                .iter()
                .filter(|z| v.zoneid.is_empty() || **z == v.zoneid);
            !places.any(|z| kept_in(z, v, *release))
        })
        .copied()
        .collect();
    out.sort_by(|(a, ra), (b, rb)| {
        (listed_arch(a), ra.0, ra.1, ra, &a.id).cmp(&(listed_arch(b), rb.0, rb.1, rb, &b.id))
    });
    out.into_iter().map(|(v, _)| v.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(id: &str, semver: &str, arch: &str, state: &str) -> SupportedVersion {
        SupportedVersion {
            id: id.into(),
            semanticversion: semver.into(),
            arch: arch.into(),
            state: state.into(),
            ..SupportedVersion::default()
        }
    }

    #[test]
    fn each_arch_and_minor_keeps_its_newest_patches() {
        let all = [
            v("a", "1.33.1", "x86_64", "Enabled"),
            v("b", "1.33.10", "x86_64", "Enabled"),
            v("c", "1.33.2", "x86_64", "Enabled"),
            v("d", "1.33.1", "aarch64", "Enabled"),
            v("e", "1.32.9", "x86_64", "Enabled"),
            v("f", "1.33.0", "x86_64", "Disabled"),
            v("g", "1.33.1", "", "Enabled"),
        ];
        let ids = |keep| {
            select(&all, keep)
                .iter()
                .map(|v| v.id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(1), ["a", "g", "c"]);
        assert_eq!(ids(2), ["a", "g"]);
        assert!(ids(3).is_empty());
        assert_eq!(semver("v1.33.1"), Some((1, 33, 1)));
    }

    #[test]
    fn each_zone_decides_for_itself() {
        let zoned = |id: &str, semver: &str, zone: &str| SupportedVersion {
            zoneid: zone.into(),
            ..v(id, semver, "x86_64", "Enabled")
        };
        // Zone A's only 1.33 stays although zone B has a newer patch.
        let all = [zoned("a", "1.33.1", "A"), zoned("b", "1.33.2", "B")];
        assert!(select(&all, 1).is_empty());
        // An all-zone 1.33.3 supersedes both; zone B's own 1.33.4 does not touch zone A's.
        let all = [
            zoned("a", "1.33.1", "A"),
            zoned("b", "1.33.2", "B"),
            zoned("c", "1.33.3", ""),
            zoned("d", "1.33.4", "B"),
        ];
        let ids: Vec<String> = select(&all, 1).iter().map(|v| v.id.clone()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(semver("1.33"), None);
    }
}
