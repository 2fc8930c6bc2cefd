//! The typed parts of CloudStack's answers that registration reads, each as the management
//! server's response class names its fields (`KubernetesSupportedVersionResponse`,
//! `TemplateResponse` for `listIsos`, `ZoneResponse`, `KubernetesClusterResponse`,
//! `AsyncJobResponse`). Read leniently (`serde(default)`): a field a release does not send
//! (`arch` before 4.20.1) is empty rather than an error.

use serde::Deserialize;
use serde_json::Value;

/// `listCapabilities`' answer, the part registration reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    /// `4.20.1.0`.
    pub cloudstackversion: String,
    /// Whether CKS is enabled.
    pub kubernetesserviceenabled: bool,
}

impl Capabilities {
    /// Whether `addKubernetesSupportedVersion` takes `arch` (4.20.1 on): an older server ignores
    /// it and registers x86_64.
    pub fn has_arch(&self) -> bool {
        let parts: Vec<u32> = self
            .cloudstackversion
            .split(['.', '-'])
            .map_while(|p| p.parse().ok())
            .collect();
        let at = |i: usize| parts.get(i).copied().unwrap_or(0);
        (at(0), at(1), at(2)) >= (4, 20, 1)
    }
}

/// One supported Kubernetes version as `listKubernetesSupportedVersions` shows it.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(default)]
pub struct SupportedVersion {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// `1.33.1`.
    pub semanticversion: String,
    /// `x86_64` or `aarch64`; empty before 4.20.1.
    pub arch: String,
    /// `Enabled` or `Disabled`.
    pub state: String,
    /// The ISO's id.
    pub isoid: String,
    /// The ISO's name.
    pub isoname: String,
    /// The ISO's state (`Creating`, `Ready`, `Allocated`…).
    pub isostate: String,
    /// The zone, when registered for one.
    pub zoneid: String,
    /// The zone's name.
    pub zonename: String,
    /// Minimum CPUs.
    pub mincpunumber: u32,
    /// Minimum memory (MB).
    pub minmemory: u32,
}

/// One zone's copy of an ISO as `listIsos` shows it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct IsoZone {
    /// The zone.
    pub zoneid: String,
    /// Its name.
    pub zonename: String,
    /// Whether the zone's copy is downloaded and checked.
    pub isready: bool,
    /// The secondary storage's words: `45% Downloaded`, `Failed to download …`.
    pub status: String,
    /// The checksum it was registered with.
    pub checksum: String,
}

/// Each zone's copy of an ISO in one line, `zone-a: Ready, zone-b: 45% Downloaded`: what
/// `register` shows while it waits and `versions list` shows per version (`isostate` where a
/// zone says nothing, or where there is no zone yet).
pub fn zones_line(isostate: &str, zones: &[IsoZone]) -> String {
    if zones.is_empty() {
        return isostate.to_owned();
    }
    zones
        .iter()
        .map(|z| {
            let state = if z.isready {
                "Ready"
            } else if z.status.is_empty() {
                isostate
            } else {
                z.status.as_str()
            };
            format!("{}: {state}", z.zonename)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A zone.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Zone {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
}

/// A Kubernetes cluster, the part that says which version it runs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Cluster {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The supported version it runs.
    pub kubernetesversionid: String,
}

/// `queryAsyncJobResult`'s answer.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Job {
    /// 0 pending, 1 succeeded, 2 failed.
    pub jobstatus: i64,
    /// 0, or the error code (530).
    pub jobresultcode: i64,
    /// The result (on failure `{errorcode, errortext}`).
    pub jobresult: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_is_taken_from_4_20_1_on() {
        for (v, has) in [
            ("4.19.1.0", false),
            ("4.20.0.0", false),
            ("4.20.1.0", true),
            ("4.21.0.0-SNAPSHOT", true),
            ("24.0.0", true),
            ("", false),
        ] {
            let c = Capabilities {
                cloudstackversion: v.into(),
                kubernetesserviceenabled: true,
            };
            assert_eq!(c.has_arch(), has, "{v}");
        }
    }
}
