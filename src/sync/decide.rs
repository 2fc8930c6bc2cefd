//! What a sync does, decided before it does anything, from three readings: what the desired state
//! resolves to (each minor's patch, each arch's ISO name and request), what the publish directory
//! holds (each ISO's embedded lock says the request it was built from) and what CloudStack lists
//! (each version's name, arch, zone and ISO checksum). Pure, so `sync --plan` and `sync` decide
//! alike and the unit tests judge every case without a server.
//!
//! A reproducible build makes "same request" mean "same bytes": an ISO published for the same
//! request is never rebuilt, and a version registered with its checksum is never sent again.

use std::collections::BTreeSet;

use crate::cloudstack::api::SupportedVersion;
use crate::cloudstack::plan::{Existing, listed_arch, same_checksum};
use crate::cloudstack::retire::{self, semver};
use crate::image::Arch;
use crate::lock::{EXTRA_ASKED, EXTRA_ROLE, Lock};
use crate::plan::{Request, Source};

/// What an ISO is built from, as far as the desired state says it: two ISOs of one name with the
/// same fingerprint are the same request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// `1.33.1`.
    pub kubernetes: String,
    /// The CloudStack release profile (`4.22`).
    pub cloudstack: Option<String>,
    /// The ISO name before the arch.
    pub name: String,
    /// `(role, source)` of the network, dashboard, Headlamp and add-on manifests given as URLs.
    pub manifests: BTreeSet<(String, String)>,
    /// The Headlamp release.
    pub headlamp: Option<String>,
    /// The add-on images asked for, normalised.
    pub images: BTreeSet<String>,
}

impl Fingerprint {
    /// What `request` (set up and settled) asks for.
    pub fn of_request(request: &Request) -> Self {
        let mut manifests = BTreeSet::new();
        let mut url = |role: &str, source: &Source| {
            if let Source::Url(u) = source {
                manifests.insert((role.to_owned(), u.clone()));
            }
        };
        url("network", &request.network);
        if let Some(d) = &request.dashboard {
            url("dashboard", d);
        }
        if request.headlamp_version.is_none()
            && let Some(h) = &request.headlamp
        {
            url("headlamp", h);
        }
        for (_, source) in &request.addons.manifests {
            url(EXTRA_ROLE, source);
        }
        Self {
            kubernetes: request.kubernetes.trim_start_matches('v').to_owned(),
            cloudstack: request.cloudstack.map(|c| c.to_string()),
            name: request.name.clone(),
            manifests,
            headlamp: request.headlamp_version.clone(),
            images: request.addons.images.iter().cloned().collect(),
        }
    }

    /// What `lock` (an ISO's embedded lock) was built from, for `arch`.
    pub fn of_lock(lock: &Lock, arch: Arch) -> Self {
        let roles = ["network", "dashboard", "headlamp", EXTRA_ROLE];
        let headlamp = lock.request.headlamp.clone();
        let manifests = (lock.manifests.iter())
            .filter(|m| roles.contains(&m.role.as_str()))
            .filter(|m| !(m.role == "headlamp" && headlamp.is_some()))
            .filter(|m| m.source.starts_with("http://") || m.source.starts_with("https://"))
            .map(|m| (m.role.clone(), m.source.clone()))
            .collect();
        let images = (lock.arches.get(arch.k8s()).into_iter())
            .flat_map(|a| &a.images)
            .filter(|i| i.extra.as_deref() == Some(EXTRA_ASKED))
            .map(|i| i.reference.clone())
            .collect();
        Self {
            kubernetes: lock.request.kubernetes.trim_start_matches('v').to_owned(),
            cloudstack: lock.request.cloudstack.clone(),
            name: lock.request.name.clone(),
            manifests,
            headlamp,
            images,
        }
    }
}

/// One minor × arch the desired state asks for, resolved.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// `1.33`.
    pub minor: String,
    /// The arch.
    pub arch: Arch,
    /// The patch release it resolves to (`1.33.1`).
    pub version: String,
    /// The ISO's file name (`setup-v1.33.1-x86_64.iso`).
    pub file: String,
    /// What it is built from.
    pub fingerprint: Fingerprint,
    /// The lock it is built from exactly (`sync --locks DIR`); `None`: from the request.
    pub locked: Option<std::path::PathBuf>,
}

impl Wanted {
    /// The version's name in CloudStack: the file name without `.iso`.
    pub fn name(&self) -> &str {
        self.file.strip_suffix(".iso").unwrap_or(&self.file)
    }
}

/// An ISO of the publish directory at a wanted name.
#[derive(Debug, Clone)]
pub struct Published {
    /// What its embedded lock says it was built from (`None`: no readable lock).
    pub fingerprint: Option<Fingerprint>,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
}

/// What the publish directory holds at a wanted name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnDisk {
    /// Nothing.
    Absent,
    /// The ISO of this request.
    Same,
    /// An ISO of another request (or none cks-iso can read): rebuilt and replaced.
    Different,
}

/// What one minor × arch needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// What the publish directory holds.
    pub on_disk: OnDisk,
    /// The zones (ids; `""` for the all-zone registration) where this ISO is registered, enabled,
    /// with its checksum.
    pub registered_in: Vec<String>,
    /// Build it (absent, or another request at its name).
    pub build: bool,
    /// Register it (not in every zone with this checksum).
    pub register: bool,
}

/// Decides for `wanted`, given what is `published` at its name and the `existing` versions with
/// their checksums; `zones`: the zone ids it must be registered in (empty: one registration for
/// every zone).
pub fn decide(
    wanted: &Wanted,
    published: Option<&Published>,
    existing: &[Existing],
    zones: &[String],
) -> Decision {
    let on_disk = match published {
        None => OnDisk::Absent,
        Some(p) if p.fingerprint.as_ref() == Some(&wanted.fingerprint) => OnDisk::Same,
        Some(_) => OnDisk::Different,
    };
    let places: Vec<String> = match zones.is_empty() {
        true => vec![String::new()],
        false => zones.to_vec(),
    };
    let sha = published
        .filter(|_| on_disk == OnDisk::Same)
        .map(|p| &p.sha256);
    let registered_in: Vec<String> = (places.iter())
        .filter(|zone| {
            sha.is_some_and(|sha| {
                existing.iter().any(|e| {
                    let v = &e.version;
                    v.name == wanted.name()
                        && v.zoneid == **zone
                        && !v.state.eq_ignore_ascii_case("Disabled")
                        && v.semanticversion == wanted.version
                        && listed_arch(v) == wanted.arch.uname()
                        && same_checksum(&e.checksum, sha)
                })
            })
        })
        .cloned()
        .collect();
    Decision {
        on_disk,
        build: on_disk != OnDisk::Same,
        register: registered_in.len() < places.len(),
        registered_in,
    }
}

/// The enabled versions to retire so each (minor, arch) of `carried` keeps its newest `keep`
/// patches ([`retire::select`]), among `versions` and, for a plan, the `planned` registrations
/// counted as if done. Versions of other minors or arches are never touched.
pub fn retirements(
    versions: &[SupportedVersion],
    planned: &[SupportedVersion],
    keep: usize,
    carried: &[(String, Arch)],
) -> Vec<SupportedVersion> {
    let all: Vec<SupportedVersion> = versions.iter().chain(planned).cloned().collect();
    (retire::select(&all, keep).into_iter())
        .filter(|v| !planned.iter().any(|p| p.id == v.id))
        .filter(|v| {
            let Some((major, minor, _)) = semver(&v.semanticversion) else {
                return false;
            };
            let minor = format!("{major}.{minor}");
            (carried.iter()).any(|(m, a)| *m == minor && a.uname() == listed_arch(v))
        })
        .collect()
}

/// Whether a cluster running `from` may be offered `to` (same minor and newer, or the next minor),
/// as CloudStack's upgrade rule allows.
pub fn may_upgrade(from: &str, to: &str) -> bool {
    match (semver(from), semver(to)) {
        (Some(f), Some(t)) => f.0 == t.0 && (t.1 == f.1 && t.2 > f.2 || t.1 == f.1 + 1),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print() -> Fingerprint {
        Fingerprint {
            kubernetes: "1.33.1".into(),
            cloudstack: Some("4.22".into()),
            name: "setup-v1.33.1".into(),
            manifests: BTreeSet::new(),
            headlamp: None,
            images: BTreeSet::new(),
        }
    }

    fn wanted() -> Wanted {
        Wanted {
            minor: "1.33".into(),
            arch: Arch::Amd64,
            version: "1.33.1".into(),
            file: "setup-v1.33.1-x86_64.iso".into(),
            fingerprint: print(),
            locked: None,
        }
    }

    fn listed(id: &str, zone: &str, sha: &str, state: &str) -> Existing {
        Existing {
            version: SupportedVersion {
                id: id.into(),
                name: "setup-v1.33.1-x86_64".into(),
                semanticversion: "1.33.1".into(),
                arch: "x86_64".into(),
                state: state.into(),
                zoneid: zone.into(),
                ..SupportedVersion::default()
            },
            checksum: sha.into(),
        }
    }

    #[test]
    fn an_absent_iso_is_built_and_registered() {
        let d = decide(&wanted(), None, &[], &[]);
        assert_eq!(
            (d.on_disk, d.build, d.register),
            (OnDisk::Absent, true, true)
        );
    }

    #[test]
    fn the_same_request_registered_everywhere_needs_nothing() {
        let sha = "ab".repeat(32);
        let p = Published {
            fingerprint: Some(print()),
            sha256: sha.clone(),
        };
        let zones = ["za".to_owned(), "zb".to_owned()];
        let both = [
            listed("1", "za", &sha, "Enabled"),
            listed("2", "zb", &sha, "Enabled"),
        ];
        let d = decide(&wanted(), Some(&p), &both, &zones);
        assert_eq!((d.build, d.register), (false, false), "{d:?}");
        // One zone missing, or disabled, or with another checksum: register (not build).
        for existing in [
            vec![listed("1", "za", &sha, "Enabled")],
            vec![both[0].clone(), listed("2", "zb", &sha, "Disabled")],
            vec![
                both[0].clone(),
                listed("2", "zb", &"cd".repeat(32), "Enabled"),
            ],
        ] {
            let d = decide(&wanted(), Some(&p), &existing, &zones);
            assert_eq!((d.build, d.register), (false, true), "{existing:?}");
            assert_eq!(d.registered_in, ["za"]);
        }
        // The all-zone registration answers for "every zone".
        let d = decide(
            &wanted(),
            Some(&p),
            &[listed("1", "", &sha, "Enabled")],
            &[],
        );
        assert!(!d.register);
    }

    #[test]
    fn another_request_at_the_name_is_rebuilt_and_registered_again() {
        let sha = "ab".repeat(32);
        let mut other = print();
        other.images.insert("docker.io/library/busybox:1.36".into());
        let p = Published {
            fingerprint: Some(other),
            sha256: sha.clone(),
        };
        let d = decide(
            &wanted(),
            Some(&p),
            &[listed("1", "", &sha, "Enabled")],
            &[],
        );
        assert_eq!(
            (d.on_disk, d.build, d.register),
            (OnDisk::Different, true, true)
        );
    }

    #[test]
    fn retirement_keeps_the_newest_and_touches_only_what_is_carried() {
        let v = |id: &str, semver: &str, arch: &str| SupportedVersion {
            id: id.into(),
            semanticversion: semver.into(),
            arch: arch.into(),
            state: "Enabled".into(),
            ..SupportedVersion::default()
        };
        let versions = [
            v("a", "1.33.0", "x86_64"),
            v("b", "1.32.1", "x86_64"),
            v("c", "1.32.2", "x86_64"),
        ];
        let planned = [v("new", "1.33.1", "x86_64")];
        let carried = [("1.33".to_owned(), Arch::Amd64)];
        let ids = |keep| {
            (retirements(&versions, &planned, keep, &carried).iter())
                .map(|v| v.id.clone())
                .collect::<Vec<_>>()
        };
        // 1.32 is not carried: its older patch stays however many there are.
        assert_eq!(ids(1), ["a"]);
        assert!(ids(2).is_empty());
    }

    #[test]
    fn upgrades_go_to_a_newer_patch_or_the_next_minor() {
        assert!(may_upgrade("1.33.0", "1.33.1"));
        assert!(may_upgrade("1.32.4", "1.33.1"));
        assert!(!may_upgrade("1.33.1", "1.33.1"));
        assert!(!may_upgrade("1.31.4", "1.33.1"));
        assert!(!may_upgrade("1.33.1", "1.32.9"));
    }
}
