//! What each CloudStack release's nodes read from the ISO (the ISO contract's section 8), so that
//! `build --cloudstack X` makes what that release can use and `verify --cloudstack X` checks it.
//!
//! Releases differ in the ISO name their script writes, in which dashboard manifest the
//! management server applies (`dashboard.yaml` up to 4.22; 4.23 prefers `headlamp.yaml`), in
//! whether etcd nodes read `etcd/etcd-linux-amd64.tar.gz` (4.21 on) and in whether the CSI pair is
//! copied to `/opt/csi` (4.22 on). 24.0, the release after 4.23, reads it as 4.23 does.
//! Pure: no network, no file system.

use std::fmt;

/// A CloudStack release line (`4.22`, `24.0`) whose nodes read the ISO one way. A line newer than
/// any cks-iso knows is kept as given and read with the newest known line's rules
/// ([`CloudStack::is_known`]): nothing in upstream's sources shows a newer line reading the ISO
/// differently, and refusing it would stop operators on the day of a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CloudStack {
    major: u16,
    minor: u16,
}

/// A `--cloudstack` value that names no release cks-iso knows.
#[derive(Debug, thiserror::Error)]
#[error(
    "--cloudstack {given:?} is not a CloudStack release cks-iso knows; use 4.20, 4.21, 4.22, 4.23 \
     or 24 (a later release is read with 24's rules)"
)]
pub struct UnknownRelease {
    /// What was given.
    pub given: String,
}

impl CloudStack {
    /// 4.20 (4.20.0 and 4.20.1+ read the ISO alike).
    pub const V4_20: Self = Self::line(4, 20);
    /// 4.21.
    pub const V4_21: Self = Self::line(4, 21);
    /// 4.22.
    pub const V4_22: Self = Self::line(4, 22);
    /// 4.23.
    pub const V4_23: Self = Self::line(4, 23);
    /// 24.0, the release after 4.23 (apache/cloudstack PR #14041 set main to `24.0.0-SNAPSHOT`;
    /// from 24 on versions are major.minor.security). Read like 4.23 until a difference is known.
    pub const V24_0: Self = Self::line(24, 0);

    /// Every release line cks-iso knows, oldest first.
    pub const ALL: [Self; 5] = [
        Self::V4_20,
        Self::V4_21,
        Self::V4_22,
        Self::V4_23,
        Self::V24_0,
    ];

    const fn line(major: u16, minor: u16) -> Self {
        Self { major, minor }
    }

    /// `4.22`, `4.22.0`, `4.22.1` or `v4.22` → 4.22; 4.20.0 is 4.20; `24`, `24.0` and `24.0.0` →
    /// 24.0; a line after 24.0 (`24.1`, `25`) is taken as given (see [`CloudStack::is_known`]).
    /// 4.24 and later 4.x, 5 to 23 and anything before 4.20 never existed and are refused.
    pub fn parse(text: &str) -> Result<Self, UnknownRelease> {
        let unknown = || UnknownRelease {
            given: text.to_owned(),
        };
        let bare = text.trim().trim_start_matches('v');
        let mut parts = bare.split('.');
        let number = |part: Option<&str>| -> Result<Option<u16>, UnknownRelease> {
            match part {
                None => Ok(None),
                Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                    p.parse().map(Some).map_err(|_| unknown())
                }
                Some(_) => Err(unknown()),
            }
        };
        let major = number(parts.next())?.ok_or_else(unknown)?;
        let minor = number(parts.next())?;
        let rest_ok = parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        if !rest_ok {
            return Err(unknown());
        }
        match (major, minor) {
            (4, Some(minor @ 20..=23)) => Ok(Self::line(4, minor)),
            (24.., minor) => Ok(Self::line(major, minor.unwrap_or(0))),
            _ => Err(unknown()),
        }
    }

    /// Whether cks-iso knows this line's rules; a newer line is read with the newest known one's.
    pub fn is_known(self) -> bool {
        Self::ALL.contains(&self)
    }

    /// The newest line cks-iso knows.
    pub fn newest_known() -> Self {
        Self::ALL[Self::ALL.len() - 1]
    }

    /// Whether the management server applies `dashboard.yaml` whatever else the ISO holds (and
    /// waits for its pod): up to 4.22. 4.23 applies it only when there is no `headlamp.yaml`.
    pub fn dashboard_required(self) -> bool {
        self < Self::V4_23
    }

    /// Whether the management server applies `headlamp.yaml`: 4.23 on.
    pub fn reads_headlamp(self) -> bool {
        self >= Self::V4_23
    }

    /// Whether etcd nodes read `etcd/etcd-linux-amd64.tar.gz`: 4.21 on.
    pub fn reads_etcd(self) -> bool {
        self >= Self::V4_21
    }

    /// Whether the CSI pair is copied to `/opt/csi`: 4.22 on.
    pub fn reads_csi(self) -> bool {
        self >= Self::V4_22
    }

    /// Whether the release's script names the ISO `NAME-<x86_64|aarch64>.iso` (4.21 on) rather
    /// than `NAME.iso`.
    pub fn arch_in_iso_name(self) -> bool {
        self >= Self::V4_21
    }
}

impl fmt::Display for CloudStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_with_or_without_patch_and_unknown_ones_are_named() {
        for (text, want) in [
            ("4.20", CloudStack::V4_20),
            ("4.20.0", CloudStack::V4_20),
            ("4.20.1", CloudStack::V4_20),
            ("v4.22", CloudStack::V4_22),
            ("4.23.0", CloudStack::V4_23),
            ("24", CloudStack::V24_0),
            ("24.0", CloudStack::V24_0),
            ("24.0.0", CloudStack::V24_0),
            ("v24.0.1", CloudStack::V24_0),
        ] {
            assert_eq!(CloudStack::parse(text).unwrap(), want, "{text}");
            assert!(want.is_known());
        }
        for bad in [
            "4.19", "4.24", "5.0", "23", "4", "4.22.x", "24.x", "", "99999",
        ] {
            let err = CloudStack::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains(&format!("{bad:?}")) && err.contains("4.23"),
                "{err}"
            );
        }
    }

    #[test]
    fn each_release_reads_what_its_node_scripts_read() {
        let table: Vec<(String, [bool; 5])> = CloudStack::ALL
            .iter()
            .map(|c| {
                (
                    c.to_string(),
                    [
                        c.dashboard_required(),
                        c.reads_headlamp(),
                        c.reads_etcd(),
                        c.reads_csi(),
                        c.arch_in_iso_name(),
                    ],
                )
            })
            .collect();
        assert_eq!(
            table,
            [
                ("4.20".into(), [true, false, false, false, false]),
                ("4.21".into(), [true, false, true, false, true]),
                ("4.22".into(), [true, false, true, true, true]),
                ("4.23".into(), [false, true, true, true, true]),
                ("24.0".into(), [false, true, true, true, true]),
            ]
        );
    }

    #[test]
    fn a_line_newer_than_any_known_is_kept_as_given_with_the_newest_rules() {
        for (text, shown) in [("24.1", "24.1"), ("25", "25.0"), ("25.2.0", "25.2")] {
            let c = CloudStack::parse(text).unwrap();
            assert!(!c.is_known(), "{text}");
            assert_eq!(c.to_string(), shown);
            assert!(c > CloudStack::newest_known());
            assert!(c.reads_headlamp() && c.reads_etcd() && c.reads_csi());
            assert!(!c.dashboard_required() && c.arch_in_iso_name());
        }
    }
}
