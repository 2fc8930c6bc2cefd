//! Which supported versions `versions retire --keep N` retires: per architecture and Kubernetes
//! minor, every enabled version older than the newest N patch releases. Pure; [`super::run`]
//! carries it out (a version a cluster uses is skipped and named, not fatal).

use std::collections::BTreeMap;

use super::api::SupportedVersion;
use super::plan::listed_arch;

/// (arch, major, minor) → the versions of that minor with their parsed release.
type Groups<'a> = BTreeMap<(String, u64, u64), Vec<(&'a SupportedVersion, (u64, u64, u64))>>;

/// `1.33.1` → (1, 33, 1); `None` for anything else.
pub fn semver(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.trim_start_matches('v').split('.');
    let mut next = || parts.next()?.parse().ok();
    let v = (next()?, next()?, next()?);
    parts.next().is_none().then_some(v)
}

/// The enabled versions to retire so that each (arch, minor) keeps its newest `keep` patch
/// releases (every version of a kept release stays, e.g. one per zone). Oldest first.
pub fn select(versions: &[SupportedVersion], keep: usize) -> Vec<SupportedVersion> {
    let mut groups: Groups = BTreeMap::new();
    for v in versions {
        if v.state.eq_ignore_ascii_case("Disabled") {
            continue;
        }
        let Some(s) = semver(&v.semanticversion) else {
            continue;
        };
        groups
            .entry((listed_arch(v).to_owned(), s.0, s.1))
            .or_default()
            .push((v, s));
    }
    let mut out = Vec::new();
    for members in groups.values() {
        let mut releases: Vec<(u64, u64, u64)> = members.iter().map(|(_, s)| *s).collect();
        releases.sort_unstable();
        releases.dedup();
        let kept: Vec<_> = releases.iter().rev().take(keep).collect();
        let mut old: Vec<_> = members.iter().filter(|(_, s)| !kept.contains(&s)).collect();
        old.sort_by_key(|(v, s)| (*s, v.id.clone()));
        out.extend(old.into_iter().map(|(v, _)| (*v).clone()));
    }
    out
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
        assert_eq!(semver("1.33"), None);
    }
}
