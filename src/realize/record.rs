//! The run's lock, from what was realized: written into every ISO (its own arch) and, with
//! `--lock-file`, beside them (every arch).

use super::Realized;
use crate::lock::{
    self, ArchEntry, Autoscaler, FileEntry, ImageEntry, Kubeadm, Lock, LockedRequest,
};
use crate::plan;

impl Realized {
    /// The lock of this run.
    pub fn lock(&self, request: &plan::Request, volume_id: &str, epoch: i64) -> Lock {
        let fetched = self;
        let r = &fetched.resolution;
        let v = &r.versions;
        let manifests: Vec<&str> = fetched.manifests.iter().map(|m| m.path.as_str()).collect();
        let arches = fetched
            .arches
            .iter()
            .map(|a| {
                let files = a
                    .files
                    .iter()
                    .filter(|f| !manifests.contains(&f.dest.as_str()))
                    .map(|f| FileEntry {
                        path: f.dest.clone(),
                        url: f.source.clone(),
                        size: f.size,
                        sha256: f.sha256.clone(),
                        signature: a.signatures.as_ref().and_then(|s| {
                            let b = s.binaries.iter().find(|b| b.path == f.dest)?;
                            let hex = |bytes: &[u8]| {
                                Some(crate::image::Digest::of(bytes).hex().to_owned())
                            };
                            Some(match &b.pair {
                                Some(pair) => lock::FileSignature {
                                    bundle: None,
                                    sig: hex(&pair.sig),
                                    cert: hex(&pair.cert),
                                    rekor: hex(&pair.entry),
                                },
                                None => lock::FileSignature {
                                    bundle: hex(&b.bundle),
                                    sig: None,
                                    cert: None,
                                    rekor: None,
                                },
                            })
                        }),
                    })
                    .collect();
                let images = a
                    .images
                    .iter()
                    .map(|i| ImageEntry {
                        reference: i.reference.to_string(),
                        digest: i.top.digest.to_string(),
                        manifest: i.manifest.digest.to_string(),
                        size: i.manifest.bytes.len() as u64
                            + i.config.size
                            + i.layers.iter().map(|l| l.size).sum::<u64>(),
                        signature: a
                            .signatures
                            .as_ref()
                            .and_then(|s| super::signatures::lock_signature(s, i)),
                    })
                    .collect();
                let entry = ArchEntry {
                    iso: plan::iso_name(request, a.arch),
                    files,
                    images,
                };
                (a.arch.k8s().to_owned(), entry)
            })
            .collect();
        let mut lock = Lock {
            version: lock::VERSION,
            cks_iso: env!("CARGO_PKG_VERSION").to_owned(),
            epoch,
            request: LockedRequest {
                kubernetes: r.kubernetes.clone(),
                kubernetes_label: request.kubernetes_label.clone(),
                arches: fetched
                    .arches
                    .iter()
                    .map(|a| a.arch.k8s().to_owned())
                    .collect(),
                cni: v.cni.clone(),
                crictl: v.crictl.clone(),
                etcd: v.etcd.clone(),
                csi: (v.csi != "none").then(|| v.csi.clone()),
                ccm: v.ccm.clone(),
                autoscaler: v.autoscaler.clone(),
                headlamp: request.headlamp_version.clone(),
                headlamp_image: request.headlamp_image.clone().filter(|image| {
                    request
                        .headlamp_version
                        .as_deref()
                        .is_none_or(|v| *image != crate::plan::headlamp_ghcr_image(v))
                }),
                cloudstack: request.cloudstack.map(|c| c.to_string()),
                volume_id: volume_id.to_owned(),
                name: request.name.clone(),
            },
            autoscaler: Autoscaler {
                version: v.autoscaler.clone(),
                tag: format!("cluster-autoscaler-{}", v.autoscaler),
                commit: v.autoscaler_commit.clone(),
                pinned: v.autoscaler_source == "pinned",
            },
            kubeadm: Kubeadm {
                pause: v.pause.clone(),
                etcd: v.etcd_image.clone(),
                coredns: v.coredns.clone(),
                source: v.kubeadm_extras_source.clone(),
            },
            manifests: fetched.manifests.clone(),
            arches,
        };
        lock.normalise();
        lock
    }
}
