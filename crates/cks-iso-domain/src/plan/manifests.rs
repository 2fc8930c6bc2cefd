//! Which manifests an ISO takes, what each is for and which image it is pinned to, decided in one
//! place from the request and the resolved versions: the role decides a manifest's edits
//! ([`super::edit`]) and is the name the lock records, and `realize` only carries the list out.

// The image names of releases live with the releases (`resolve` needs them without `plan`).

use super::{Request, Source};
use crate::catalog::{Content, Pins, catalog};
use crate::contract;
use crate::lock::Lock;
use crate::release::{autoscaler_image, provider_image};

/// What a manifest of the ISO is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The CNI manifest (`network.yaml`): only the pull policy changes.
    Network,
    /// The dashboard manifest (`dashboard.yaml`): only the pull policy changes.
    Dashboard,
    /// The optional Headlamp manifest (`headlamp.yaml`): only the pull policy changes.
    Headlamp,
    /// A Headlamp release's own manifest (`headlamp.yaml`): its one image, `:latest` upstream,
    /// pinned to the release's tag.
    HeadlampRelease {
        /// [`super::headlamp_image`].
        image: String,
    },
    /// The autoscaler example: its one image pinned to this image, extra RBAC appended.
    Autoscaler {
        /// [`autoscaler_image`].
        image: String,
    },
    /// The CCM deployment: its one image set to this image.
    Provider {
        /// [`provider_image`].
        image: String,
    },
    /// One of the CSI driver's manifests: only the pull policy changes.
    Csi,
    /// A kubelet unit cks-iso carries (`kubelet.service`, `10-kubeadm.conf`): not edited here.
    Unit,
    /// An add-on manifest ([`super::Addons`]): only the pull policy changes, as for the network
    /// manifest; the control node copies it but applies none, the operator does.
    Extra,
}

impl Role {
    /// The name the lock records (`role`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Network => "network",
            Self::Dashboard => "dashboard",
            Self::Headlamp | Self::HeadlampRelease { .. } => "headlamp",
            Self::Autoscaler { .. } => "autoscaler",
            Self::Provider { .. } => "provider",
            Self::Csi => "csi",
            Self::Unit => "unit",
            Self::Extra => crate::lock::EXTRA_ROLE,
        }
    }
}

/// One manifest a build takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// Its path in the ISO.
    pub dest: String,
    /// Where it comes from.
    pub source: Source,
    /// What it is for.
    pub role: Role,
}

/// Every manifest a build of `request` takes, in order: upstream's for `pins` (autoscaler,
/// provider, the CSI driver's), then the network, dashboard and Headlamp manifests given, then the
/// add-on manifests.
pub fn manifests(request: &Request, pins: &Pins) -> Vec<Taken> {
    let mut out: Vec<Taken> = catalog(pins, request.arches[0])
        .into_iter()
        .filter(|a| matches!(a.content, Content::Yaml))
        .map(|a| {
            let role = match a.dest.as_str() {
                contract::AUTOSCALER => Role::Autoscaler {
                    image: autoscaler_image(&pins.autoscaler),
                },
                contract::PROVIDER => Role::Provider {
                    image: provider_image(&pins.ccm_tag),
                },
                _ => Role::Csi,
            };
            Taken {
                dest: a.dest,
                source: Source::Url(a.url),
                role,
            }
        })
        .collect();
    let headlamp = match (&request.headlamp_image, &request.headlamp_version) {
        (Some(image), _) => Role::HeadlampRelease {
            image: image.clone(),
        },
        (None, Some(version)) => Role::HeadlampRelease {
            image: super::headlamp_image(version),
        },
        (None, None) => Role::Headlamp,
    };
    let given = [
        (contract::NETWORK, Some(&request.network), Role::Network),
        (
            contract::DASHBOARD,
            request.dashboard.as_ref(),
            Role::Dashboard,
        ),
        (contract::HEADLAMP, request.headlamp.as_ref(), headlamp),
    ];
    for (dest, source, role) in given {
        if let Some(source) = source {
            out.push(Taken {
                dest: dest.into(),
                source: source.clone(),
                role,
            });
        }
    }
    out.extend(request.addons.manifests.iter().map(|(dest, source)| Taken {
        dest: dest.clone(),
        source: source.clone(),
        role: Role::Extra,
    }));
    out
}

/// A manifest `lock` holds (other than a unit) that `taking` leaves out: the lock was written by
/// another cks-iso.
pub fn not_taken<'a>(lock: &'a Lock, taking: &[Taken]) -> Option<&'a str> {
    lock.manifests
        .iter()
        .find(|m| m.role != Role::Unit.name() && !taking.iter().any(|t| t.dest == m.path))
        .map(|m| m.path.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Flags, request};
    use crate::release::AutoscalerVersion;

    #[test]
    fn upstream_manifests_then_the_given_ones_each_with_its_role_and_image() {
        let request = request(
            &[],
            Flags {
                kubernetes: Some("1.33.1".into()),
                network: Some("net.yaml".into()),
                dashboard: Some("https://x/d.yaml".into()),
                ..Flags::default()
            },
        )
        .unwrap();
        let pins = Pins {
            kubernetes: "1.33.1".parse().unwrap(),
            cni: "1.6.2".into(),
            crictl: "1.33.0".into(),
            etcd: None,
            etcd_own_name: false,
            autoscaler: AutoscalerVersion {
                major: 1,
                minor: 33,
                patch: 4,
            },
            ccm_tag: "v1.2.0".into(),
            csi: Some("v3.0.0".into()),
        };
        let taken = manifests(&request, &pins);
        let got: Vec<(&str, &str)> = taken
            .iter()
            .map(|t| (t.dest.as_str(), t.role.name()))
            .collect();
        assert_eq!(
            got,
            [
                ("autoscaler.yaml", "autoscaler"),
                ("provider.yaml", "provider"),
                ("manifest.yaml", "csi"),
                ("snapshot-crds.yaml", "csi"),
                ("network.yaml", "network"),
                ("dashboard.yaml", "dashboard"),
            ]
        );
        assert_eq!(
            taken[0].role,
            Role::Autoscaler {
                image: "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.4".into()
            }
        );
        assert_eq!(
            taken[1].role,
            Role::Provider {
                image: "apache/cloudstack-kubernetes-provider:v1.2.0".into()
            }
        );
        assert_eq!(taken[4].source, Source::File("net.yaml".into()));
    }
}
