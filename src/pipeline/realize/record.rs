//! The run's lock: the lock that was realized, with what realizing it judged and staged (the
//! signatures verified, the manifests as this cks-iso edits them, every file and image as
//! taken) and this run's epoch, name and volume ID. Written into every ISO (its own arch) and,
//! with `--lock-file`, beside them (every arch). Pure.

use super::Realized;
use crate::image::Image;
use crate::lock::{self, ArchEntry, FileEntry, ImageEntry, Lock, LockedRequest};
use crate::plan;

impl Realized {
    /// The lock of this run: `realized` (the lock this run realized) with what it judged.
    pub fn lock(
        &self,
        realized: &Lock,
        request: &plan::Request,
        volume_id: &str,
        epoch: i64,
    ) -> Lock {
        let fetched = self;
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
                            let hex =
                                |bytes: &[u8]| Some(cks_iso_io::Sha256Sum::of(bytes).to_string());
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
                        signature: a
                            .signatures
                            .as_ref()
                            .and_then(|s| super::signatures::lock_signature(s, i)),
                        extra: extra_of(realized, a.arch.k8s(), &i.reference.to_string()),
                        ..image_entry(i)
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
            // Where the realized lock's date came from, while this run keeps that date.
            epoch_from: realized
                .epoch_from
                .clone()
                .filter(|_| epoch == realized.epoch),
            request: LockedRequest {
                arches: fetched
                    .arches
                    .iter()
                    .map(|a| a.arch.k8s().to_owned())
                    .collect(),
                ..locked_request(realized.request.clone(), request, volume_id)
            },
            autoscaler: realized.autoscaler.clone(),
            kubeadm: realized.kubeadm.clone(),
            manifests: fetched.manifests.clone(),
            arches,
        };
        lock.normalise();
        lock
    }
}

/// Why the add-on image `reference` of `arch` is in the ISO: the realized lock's word.
fn extra_of(realized: &Lock, arch: &str, reference: &str) -> Option<String> {
    let locked = realized.arches.get(arch)?;
    let entry = locked.images.iter().find(|i| i.reference == reference)?;
    entry.extra.clone()
}

/// `versions` (what a lock records of the versions) with what `request` decides of the content
/// beside them: the label, Headlamp, the CloudStack release, the volume ID and the name.
pub(in crate::pipeline) fn locked_request(
    versions: LockedRequest,
    request: &plan::Request,
    volume_id: &str,
) -> LockedRequest {
    LockedRequest {
        kubernetes_label: request.kubernetes_label.clone(),
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
        ..versions
    }
}

/// The lock's entry for a resolved image, its signature not yet judged: what the lock resolved
/// from a request records, and what the run's lock records before the verdict.
pub(in crate::pipeline) fn image_entry(image: &Image) -> ImageEntry {
    let size = image.manifest.bytes.len() as u64
        + image.config.size
        + image.layers.iter().map(|l| l.size).sum::<u64>();
    ImageEntry::new(
        image.reference.to_string(),
        image.top.digest.to_string(),
        image.manifest.digest.to_string(),
        size,
    )
}
