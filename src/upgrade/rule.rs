//! CloudStack's upgrade rule, restated from `KubernetesVersionManagerImpl.canUpgradeKubernetesVersion`
//! (apache/cloudstack, plugins/integrations/kubernetes-service): the management server refuses an
//! upgrade to the same version ("can not be upgraded"), to a lower one ("can not be downgraded"),
//! to another major or past the next minor ("can be upgraded between next minor or patch version
//! releases"). Versions compare part by part as numbers. Pure.

use crate::release::KubeVersion;

/// What kind of upgrade CloudStack allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    /// A later patch of the same minor.
    Patch,
    /// The next minor.
    Minor,
}

/// Why CloudStack refuses the pair, in its own terms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// FROM and TO are the same release.
    #[error("same version: CloudStack refuses to upgrade {from} to itself")]
    Same {
        /// The cluster's version.
        from: String,
    },
    /// TO is older.
    #[error("downgrade: CloudStack refuses {from} → {to} (TO is older)")]
    Downgrade {
        /// The cluster's version.
        from: String,
        /// The ISO's.
        to: String,
    },
    /// Another major, or a minor skipped.
    #[error(
        "skipped minor: CloudStack upgrades only to a later patch or the next minor, {from} → {to} \
         skips {skipped} minor(s)"
    )]
    Skipped {
        /// The cluster's version.
        from: String,
        /// The ISO's.
        to: String,
        /// How many minors lie between (for another major, the count is not meaningful: 0).
        skipped: u64,
    },
}

/// Whether CloudStack lets a cluster on `from` upgrade to `to`, and as which kind of step.
pub fn check(from: &KubeVersion, to: &KubeVersion) -> Result<Step, Refused> {
    let (fm, fi, fp) = from.release();
    let (tm, ti, tp) = to.release();
    let (f, t) = (format!("{fm}.{fi}.{fp}"), format!("{tm}.{ti}.{tp}"));
    match (tm, ti, tp).cmp(&(fm, fi, fp)) {
        std::cmp::Ordering::Equal => return Err(Refused::Same { from: f }),
        std::cmp::Ordering::Less => return Err(Refused::Downgrade { from: f, to: t }),
        std::cmp::Ordering::Greater => {}
    }
    match (tm == fm, ti - fi.min(ti)) {
        (true, 0) => Ok(Step::Patch),
        (true, 1) => Ok(Step::Minor),
        (same_major, diff) => Err(Refused::Skipped {
            from: f,
            to: t,
            skipped: if same_major { diff - 1 } else { 0 },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> KubeVersion {
        s.parse().unwrap()
    }

    #[test]
    fn patches_and_the_next_minor_pass_and_everything_else_is_refused_as_cloudstack_does() {
        assert_eq!(check(&v("1.33.0"), &v("1.33.1")), Ok(Step::Patch));
        assert_eq!(check(&v("1.33.1"), &v("1.33.12")), Ok(Step::Patch));
        assert_eq!(check(&v("1.32.4"), &v("1.33.0")), Ok(Step::Minor));
        assert_eq!(check(&v("1.32.9"), &v("1.33.1")), Ok(Step::Minor));
        assert!(matches!(
            check(&v("1.33.1"), &v("1.33.1")),
            Err(Refused::Same { .. })
        ));
        assert!(matches!(
            check(&v("1.33.1"), &v("1.33.0")),
            Err(Refused::Downgrade { .. })
        ));
        assert!(matches!(
            check(&v("1.33.1"), &v("1.32.9")),
            Err(Refused::Downgrade { .. })
        ));
        assert_eq!(
            check(&v("1.31.2"), &v("1.33.1")),
            Err(Refused::Skipped {
                from: "1.31.2".into(),
                to: "1.33.1".into(),
                skipped: 1
            })
        );
        assert!(matches!(
            check(&v("1.33.1"), &v("2.0.0")),
            Err(Refused::Skipped { .. })
        ));
        // Versions compare as numbers, not text: 1.9 → 1.10 is the next minor.
        assert_eq!(check(&v("1.9.3"), &v("1.10.0")), Ok(Step::Minor));
    }
}
