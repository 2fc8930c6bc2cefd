//! What to do for one ISO in one zone, decided from what CloudStack already has, before anything
//! is sent: `addKubernetesSupportedVersion` registers a second copy of anything it is given twice
//! (nothing is unique, not even the name), so the client must look first. Pure.

use super::IsoToRegister;
use super::api::SupportedVersion;

/// A version CloudStack has, with its ISO's checksum (from `listIsos`).
#[derive(Debug, Clone)]
pub struct Existing {
    /// The version.
    pub version: SupportedVersion,
    /// Its ISO's `checksum` as `listIsos` shows it: bare hex from current releases, which strip
    /// the algorithm, or `{SHA-256}hex` as registered from older ones (see [`same_checksum`]).
    pub checksum: String,
}

/// A checksum as CloudStack reads one (`DigestHelper`/`ChecksumValue`): `{ALGORITHM}hex` when it
/// starts with `{` and has a `}` after it, else bare hex with no algorithm named.
pub fn split_checksum(text: &str) -> (Option<&str>, &str) {
    match text.strip_prefix('{').and_then(|rest| rest.split_once('}')) {
        Some((algorithm, hex)) => (Some(algorithm), hex),
        None => (None, text),
    }
}

/// Whether the checksum CloudStack lists for an ISO is the SHA-256 `sha256` (lowercase hex) that
/// cks-iso registers as `{SHA-256}<hex>`, comparing (algorithm, hex) as CloudStack does and
/// accepting both forms it answers with: `listIsos` sets its `checksum` through
/// `DigestHelper.getHashValueFromChecksumValue`, which drops the `{SHA-256}` (current releases),
/// while older ones answered the stored value. Bare hex counts only at SHA-256's 64 digits (bare
/// hex is MD5 to CloudStack, 32 digits); the hex's case does not matter (the same digest).
pub fn same_checksum(listed: &str, sha256: &str) -> bool {
    let (algorithm, hex) = split_checksum(listed.trim());
    let algorithm_ok = match algorithm {
        Some(a) => a.eq_ignore_ascii_case("SHA-256"),
        None => hex.len() == 64,
    };
    algorithm_ok && hex.eq_ignore_ascii_case(sha256)
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The same name, version, arch, zone and checksum is there: send nothing (but `retire`, with
    /// `--replace`, the same name's other versions).
    Already {
        /// The registered version.
        version: Box<SupportedVersion>,
        /// Same-name versions with another ISO, to retire (`--replace` only).
        retire: Vec<SupportedVersion>,
    },
    /// Register it, then retire `retire` (`--replace`: the same name with another ISO).
    Add {
        /// Same-name versions to retire once the new one is Ready.
        retire: Vec<SupportedVersion>,
    },
}

/// The name is taken by a version with another ISO, and `--replace` was not given.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "CloudStack already has a version named {name:?} ({id}{zone}) with {theirs}; this ISO is {ours}"
)]
pub struct Conflict {
    /// The name.
    pub name: String,
    /// The existing version's id.
    pub id: String,
    /// ` in zone X`, or empty.
    pub zone: String,
    /// What it has.
    pub theirs: String,
    /// What the ISO is.
    pub ours: String,
}

/// `arch` as listed: empty (before 4.20.1) is x86_64, what such a server registers.
pub fn listed_arch(v: &SupportedVersion) -> &str {
    if v.arch.is_empty() { "x86_64" } else { &v.arch }
}

/// Decides for `iso` in `zone` (`None`: every zone) given the `existing` versions.
pub fn decide(
    iso: &IsoToRegister,
    zone: Option<&str>,
    existing: &[Existing],
    replace: bool,
) -> Result<Action, Conflict> {
    let ours = iso.checksum();
    let same_place: Vec<&Existing> = existing
        .iter()
        .filter(|e| e.version.name == iso.name)
        .filter(|e| !e.version.state.eq_ignore_ascii_case("Disabled"))
        .filter(|e| zone.unwrap_or_default() == e.version.zoneid)
        .collect();
    let is_same = |e: &Existing| {
        e.version.semanticversion == iso.semver
            && listed_arch(&e.version) == iso.cloudstack_arch()
            && same_checksum(&e.checksum, &iso.sha256)
    };
    let others: Vec<SupportedVersion> = same_place
        .iter()
        .filter(|e| !is_same(e))
        .map(|e| e.version.clone())
        .collect();
    if let Some(same) = same_place.iter().find(|e| is_same(e)) {
        return Ok(Action::Already {
            version: Box::new(same.version.clone()),
            retire: if replace { others } else { Vec::new() },
        });
    }
    match same_place.first() {
        Some(e) if !replace => Err(Conflict {
            name: iso.name.clone(),
            id: e.version.id.clone(),
            zone: if e.version.zonename.is_empty() {
                String::new()
            } else {
                format!(" in zone {}", e.version.zonename)
            },
            theirs: format!(
                "Kubernetes {} {} checksum {}",
                e.version.semanticversion,
                listed_arch(&e.version),
                if e.checksum.is_empty() {
                    "none"
                } else {
                    &e.checksum
                }
            ),
            ours: format!(
                "Kubernetes {} {} checksum {ours}",
                iso.semver,
                iso.cloudstack_arch()
            ),
        }),
        _ => Ok(Action::Add { retire: others }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::Arch;

    fn iso(sha: &str) -> IsoToRegister {
        IsoToRegister {
            path: "/o/setup-v1.33.1-x86_64.iso".into(),
            semver: "1.33.1".into(),
            name: "setup-v1.33.1-x86_64".into(),
            arch: Arch::Amd64,
            sha256: sha.repeat(64),
            size: 1,
        }
    }

    fn existing(id: &str, sha: &str, state: &str) -> Existing {
        Existing {
            version: SupportedVersion {
                id: id.into(),
                name: "setup-v1.33.1-x86_64".into(),
                semanticversion: "1.33.1".into(),
                arch: "x86_64".into(),
                state: state.into(),
                ..SupportedVersion::default()
            },
            checksum: format!("{{SHA-256}}{}", sha.repeat(64)),
        }
    }

    #[test]
    fn the_same_iso_is_already_registered_and_another_one_is_a_conflict() {
        let have = [existing("v1", "a", "Enabled")];
        assert!(matches!(
            decide(&iso("a"), None, &have, false),
            Ok(Action::Already { ref retire, .. }) if retire.is_empty()
        ));
        let err = decide(&iso("b"), None, &have, false).unwrap_err();
        assert!(err.to_string().contains("v1"), "{err}");
        let Ok(Action::Add { retire }) = decide(&iso("b"), None, &have, true) else {
            panic!()
        };
        assert_eq!(retire[0].id, "v1");
    }

    #[test]
    fn the_stripped_and_the_prefixed_checksum_are_the_same_iso() {
        let mut stripped = existing("v1", "a", "Enabled");
        stripped.checksum = "a".repeat(64);
        assert!(matches!(
            decide(&iso("a"), None, &[stripped.clone()], false),
            Ok(Action::Already { .. })
        ));
        stripped.checksum = "A".repeat(64);
        assert!(matches!(
            decide(&iso("a"), None, &[stripped], false),
            Ok(Action::Already { .. })
        ));
        let sha = "a".repeat(64);
        assert!(same_checksum(&format!("{{SHA-256}}{sha}"), &sha));
        assert!(same_checksum(&format!("{{sha-256}}{sha}"), &sha));
        assert!(!same_checksum(&format!("{{MD5}}{sha}"), &sha));
        assert!(
            !same_checksum(&"a".repeat(32), &sha),
            "bare 32 digits is MD5"
        );
        assert!(!same_checksum("", &sha));
        assert!(!same_checksum(&"b".repeat(64), &sha));
        assert_eq!(split_checksum("{SHA-1}ab"), (Some("SHA-1"), "ab"));
        assert_eq!(split_checksum("ab}"), (None, "ab}"));
    }

    #[test]
    fn disabled_versions_and_other_zones_do_not_count() {
        let have = [existing("v1", "b", "Disabled")];
        assert_eq!(
            decide(&iso("a"), None, &have, false).unwrap(),
            Action::Add { retire: vec![] }
        );
        let mut zoned = existing("v2", "b", "Enabled");
        zoned.version.zoneid = "z1".into();
        assert_eq!(
            decide(&iso("a"), Some("z2"), &[zoned.clone()], false).unwrap(),
            Action::Add { retire: vec![] }
        );
        assert!(decide(&iso("a"), Some("z1"), &[zoned], false).is_err());
    }

    #[test]
    fn an_arch_less_listing_is_x86_64() {
        let mut old = existing("v1", "a", "Enabled");
        old.version.arch.clear();
        assert!(matches!(
            decide(&iso("a"), None, &[old], false),
            Ok(Action::Already { .. })
        ));
    }
}
