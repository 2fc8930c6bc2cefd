//! The CloudStack release a build is for, and what that decides (the ISO contract's section 8):
//! the ISO name, which dashboard manifest is required, whether etcd and the CSI pair are of use.
//!
//! Given with `--cloudstack` (or `CKS_ISO_CLOUDSTACK`, or the configuration file), or implied by a
//! request without `dashboard.yaml` (a Headlamp version alone, CloudStack 4.23's form), which only
//! 4.23 can use. With neither, the build is what 4.22 and 4.23 both read, and records no release.

use super::{PlanError, Request};
use crate::cloudstack::CloudStack;
use cks_iso_oci::image::Arch;

/// What the release changes in a build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// The release, given or implied; recorded in `versions.txt`, the lock and the SBOMs.
    pub cloudstack: Option<CloudStack>,
    /// Leave the CSI pair out: the release does not copy it and no `--csi-version` was given.
    pub csi_off: bool,
    /// What the user may want to change, each naming the consequence.
    pub warnings: Vec<String>,
}

/// The profile of `request` for `given`; `csi_given` says whether `--csi-version` was given
/// (other than `none`).
pub fn profile(
    request: &Request,
    given: Option<CloudStack>,
    csi_given: bool,
) -> Result<Profile, PlanError> {
    let implied = request.dashboard.is_none().then_some(CloudStack::V4_23);
    let Some(c) = given.or(implied) else {
        return Ok(Profile::default());
    };
    if c.dashboard_required() && request.dashboard.is_none() {
        return Err(PlanError::DashboardRequired { cloudstack: c });
    }
    if !c.arch_in_iso_name() && request.arches.len() > 1 {
        return Err(PlanError::OneIsoName {
            cloudstack: c,
            name: request.name.clone(),
        });
    }
    let mut warnings = Vec::new();
    if request.headlamp.is_some() && !c.reads_headlamp() {
        warnings.push(format!(
            "CloudStack {c} does not apply headlamp.yaml (4.23 does): the ISO carries it unused"
        ));
    }
    if request.etcd.is_some() && !c.reads_etcd() {
        warnings.push(format!(
            "CloudStack {c} etcd nodes do not read the ISO (4.21 and later do): the ISO carries \
             etcd unused"
        ));
    }
    if csi_given && !c.reads_csi() {
        warnings.push(format!(
            "CloudStack {c} does not copy the CSI manifests to /opt/csi (4.22 and later do): the \
             ISO carries them unused"
        ));
    }
    Ok(Profile {
        cloudstack: Some(c),
        csi_off: !csi_given && !c.reads_csi(),
        warnings,
    })
}

/// Settles the release a build is for and what it implies: with a lock (`from_lock`), the
/// lock's, which a release `given` may only repeat; else the release given (or implied), whose
/// profile may leave the CSI pair out and decides where an arm64 etcd goes. Logs what the user
/// may want to know.
pub fn settle(
    request: &mut Request,
    partial: &mut super::Partial,
    given: Option<CloudStack>,
    from_lock: bool,
    csi_given: bool,
) -> Result<(), PlanError> {
    match from_lock {
        // The lock decides; a release given may only repeat it.
        true => {
            if let Some(given) = given.filter(|g| Some(*g) != request.cloudstack) {
                return Err(PlanError::Contradicts {
                    flag: "--cloudstack",
                    given: given.to_string(),
                    locked: request
                        .cloudstack
                        .map_or("no release".into(), |c| c.to_string()),
                });
            }
        }
        false => {
            let profile = profile(request, given, csi_given)?;
            for warning in &profile.warnings {
                tracing::warn!("{warning}");
            }
            if profile.csi_off {
                tracing::info!(
                    "CloudStack {} does not copy the CSI manifests: leaving them out (--csi-version \
                     bundles them anyway)",
                    profile
                        .cloudstack
                        .map(|c| c.to_string())
                        .unwrap_or_default()
                );
                partial.csi = None;
            }
            request.cloudstack = profile.cloudstack;
        }
    }
    if let Some(c) = request.cloudstack.filter(|c| !c.is_known()) {
        tracing::warn!(
            "CloudStack {c} is newer than any release cks-iso knows: the ISO follows {}'s rules",
            CloudStack::newest_known()
        );
    }
    if !from_lock {
        partial.etcd_own_name = etcd_own_name(request.cloudstack);
    }
    etcd_note(request, partial);
    Ok(())
}

/// Says where the arm64 etcd tarball goes, and warns when etcd nodes would not read it.
fn etcd_note(request: &Request, partial: &super::Partial) {
    let Some(etcd) = partial
        .etcd
        .as_deref()
        .filter(|_| request.arches.contains(&Arch::Arm64))
    else {
        return;
    };
    match partial.etcd_own_name {
        false => tracing::info!(
            "linux/arm64: etcd nodes extract only {}, whatever their architecture: \
             etcd-v{etcd}-linux-arm64.tar.gz goes under that name",
            crate::contract::ETCD_TARBALL
        ),
        // CloudStack 4.20 (its warning says etcd goes unused), or a lock that recorded it so.
        true if request.cloudstack.is_none_or(|c| c.reads_etcd()) => tracing::warn!(
            "the lock puts the arm64 etcd under etcd/etcd-linux-arm64.tar.gz, which etcd \
             nodes do not read (they extract only {}); build without --locked to fix it",
            crate::contract::ETCD_TARBALL
        ),
        true => {}
    }
}

/// Whether an arm64 etcd keeps its own name, `etcd/etcd-linux-arm64.tar.gz`, rather than going
/// under `etcd/etcd-linux-amd64.tar.gz`, the one name etcd nodes read whatever their
/// architecture (apache/cloudstack's `etcd-node.yml`, 4.21 on). Only for a release whose etcd
/// nodes read no ISO (4.20), whose arm64 ISOs keep the name they always had; without a release
/// the build follows the newest known one, whose etcd nodes read the amd64 name.
pub fn etcd_own_name(cloudstack: Option<CloudStack>) -> bool {
    cloudstack.is_some_and(|c| !c.reads_etcd())
}

/// The ISO's file name for `request` and `arch`: `<name>-<x86_64|aarch64>.iso`, or `<name>.iso`
/// for CloudStack 4.20, whose script names it so.
pub fn iso_name(request: &Request, arch: Arch) -> String {
    match request.cloudstack {
        Some(c) if !c.arch_in_iso_name() => format!("{}.iso", request.name),
        _ => super::iso_file_name(&request.name, arch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Flags, Source, request_in};

    fn req(flags: Flags) -> Request {
        request_in(
            &[],
            Flags {
                kubernetes: Some("1.33.1".into()),
                network: Some("n.yaml".into()),
                ..flags
            },
            &|_| false,
        )
        .unwrap()
    }

    fn dash(flags: Flags) -> Request {
        req(Flags {
            dashboard: Some("d.yaml".into()),
            ..flags
        })
    }

    #[test]
    fn no_release_records_none_and_changes_nothing() {
        assert_eq!(
            profile(&dash(Flags::default()), None, false).unwrap(),
            Profile::default()
        );
    }

    #[test]
    fn a_headlamp_version_alone_implies_4_23_and_older_releases_want_a_dashboard() {
        let headlamp = req(Flags {
            headlamp_version: Some("0.40.1".into()),
            ..Flags::default()
        });
        assert_eq!(headlamp.dashboard, None::<Source>);
        let p = profile(&headlamp, None, false).unwrap();
        assert_eq!(p.cloudstack, Some(CloudStack::V4_23));
        for old in [CloudStack::V4_20, CloudStack::V4_22] {
            let err = profile(&headlamp, Some(old), false).unwrap_err();
            assert!(matches!(err, PlanError::DashboardRequired { .. }), "{err}");
            assert!(
                err.to_string().contains(&format!("CloudStack {old}")),
                "{err}"
            );
        }
    }

    #[test]
    fn each_release_names_the_iso_and_says_what_it_leaves_unused() {
        let mut r = dash(Flags {
            headlamp: Some("h.yaml".into()),
            etcd: Some("3.5.21".into()),
            ..Flags::default()
        });
        let p = profile(&r, Some(CloudStack::V4_20), true).unwrap();
        assert_eq!(p.warnings.len(), 3, "{:?}", p.warnings);
        assert!(!p.csi_off, "given, kept");
        r.cloudstack = p.cloudstack;
        assert_eq!(iso_name(&r, Arch::Amd64), "setup-v1.33.1.iso");
        let p = profile(&r, Some(CloudStack::V4_21), false).unwrap();
        assert!(
            p.csi_off,
            "4.21 does not copy the CSI pair: left out when not asked for"
        );
        assert_eq!(p.warnings.len(), 1, "headlamp only: {:?}", p.warnings);
        r.cloudstack = p.cloudstack;
        assert_eq!(iso_name(&r, Arch::Arm64), "setup-v1.33.1-aarch64.iso");
        let p = profile(&r, Some(CloudStack::V4_23), false).unwrap();
        assert_eq!((p.csi_off, p.warnings.len()), (false, 0));
    }

    #[test]
    fn two_arches_for_4_20_are_refused_and_etcd_on_arm64_goes_where_etcd_nodes_read() {
        let two = dash(Flags {
            arches: vec!["amd64".into(), "arm64".into()],
            ..Flags::default()
        });
        let err = profile(&two, Some(CloudStack::V4_20), false).unwrap_err();
        assert!(matches!(err, PlanError::OneIsoName { .. }), "{err}");
        assert!(profile(&two, Some(CloudStack::V4_21), false).is_ok());
        let etcd = dash(Flags {
            arches: vec!["arm64".into()],
            etcd: Some("3.5.21".into()),
            ..Flags::default()
        });
        // 4.21 on: built, the arm64 etcd under the amd64 name their etcd nodes read.
        for c in [CloudStack::V4_21, CloudStack::V4_22, CloudStack::V4_23] {
            let p = profile(&etcd, Some(c), false).unwrap();
            assert!(p.warnings.is_empty(), "{c}: {:?}", p.warnings);
            assert!(!etcd_own_name(p.cloudstack), "{c}");
        }
        // Without a release: the newest known release's rule.
        let p = profile(&etcd, None, false).unwrap();
        assert!(!etcd_own_name(p.cloudstack));
        // 4.20 etcd nodes read no ISO: the arm64 ISO keeps the name it always had.
        let p = profile(&etcd, Some(CloudStack::V4_20), false).unwrap();
        assert!(etcd_own_name(p.cloudstack));
    }
}
