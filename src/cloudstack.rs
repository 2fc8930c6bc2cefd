//! What each CloudStack release's nodes read from the ISO (the ISO contract's section 8), so that
//! `build --cloudstack X` makes what that release can use and `verify --cloudstack X` checks it.
//!
//! Releases differ in the ISO name their script writes, in which dashboard manifest the
//! management server applies (`dashboard.yaml` up to 4.22; 4.23 prefers `headlamp.yaml`), in
//! whether etcd nodes read `etcd/etcd-linux-amd64.tar.gz` (4.21 on) and in whether the CSI pair is
//! copied to `/opt/csi` (4.22 on). Pure: no network, no file system.

use std::fmt;

/// A CloudStack release line whose nodes read the ISO one way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CloudStack {
    /// 4.20 (4.20.0 and 4.20.1+ read the ISO alike).
    V4_20,
    /// 4.21.
    V4_21,
    /// 4.22.
    V4_22,
    /// 4.23 (main).
    V4_23,
}

/// A `--cloudstack` value that names no release cks-iso knows.
#[derive(Debug, thiserror::Error)]
#[error(
    "--cloudstack {given:?} is not a CloudStack release cks-iso knows; use 4.20, 4.21, 4.22 or 4.23"
)]
pub struct UnknownRelease {
    /// What was given.
    pub given: String,
}

impl CloudStack {
    /// Every release, oldest first.
    pub const ALL: [Self; 4] = [Self::V4_20, Self::V4_21, Self::V4_22, Self::V4_23];

    /// `4.22`, `4.22.0`, `4.22.1` or `v4.22` → 4.22; 4.20.0 is 4.20.
    pub fn parse(text: &str) -> Result<Self, UnknownRelease> {
        let bare = text.trim().trim_start_matches('v');
        let mut parts = bare.split('.');
        let (major, minor) = (parts.next(), parts.next());
        let rest_ok = parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        let found = match (major, minor) {
            (Some("4"), Some("20")) => Some(Self::V4_20),
            (Some("4"), Some("21")) => Some(Self::V4_21),
            (Some("4"), Some("22")) => Some(Self::V4_22),
            (Some("4"), Some("23")) => Some(Self::V4_23),
            _ => None,
        };
        found.filter(|_| rest_ok).ok_or_else(|| UnknownRelease {
            given: text.to_owned(),
        })
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
        f.write_str(match self {
            Self::V4_20 => "4.20",
            Self::V4_21 => "4.21",
            Self::V4_22 => "4.22",
            Self::V4_23 => "4.23",
        })
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
        ] {
            assert_eq!(CloudStack::parse(text).unwrap(), want, "{text}");
        }
        for bad in ["4.19", "4.24", "5.0", "4", "4.22.x", ""] {
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
            ]
        );
    }
}
