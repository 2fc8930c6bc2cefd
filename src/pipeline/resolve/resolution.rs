//! What a build would use, resolved: the versions (the autoscaler release from its tags, kubeadm's
//! pause/etcd/CoreDNS from its constants), every file it downloads and every image it bundles —
//! with only small metadata fetched. `cks-iso resolve` prints it and `build` starts from it; a
//! lock or `--offline` settles what would otherwise be fetched. Lives between the pure parts
//! (`release`, the upstream catalog) and the network ones (`fetch`, `upstream`), which it is the one to combine.

use serde::Serialize;

use crate::fetch::FetchError;
use crate::image::Arch;
use crate::image::{ImageError, Reference};
use crate::plan::Partial;
use crate::release::kubeadm::{self, Extras};
use crate::release::{
    AUTOSCALER_REF_PREFIX, AUTOSCALER_REPO, AutoscalerChoice, AutoscalerVersion, KubeVersion,
    ResolveError, VersionError, autoscaler_image, autoscaler_pin, choose_autoscaler,
    provider_image,
};
use crate::upstream::{Artifact, Fetcher, Pins, catalog};
use crate::upstream::{check_yaml, images_in_yaml};

/// Manifests and constants files are small; more than this is not one.
const TEXT_LIMIT: u64 = 8 << 20;

impl From<VersionError> for ResolutionError {
    fn from(err: VersionError) -> Self {
        Self::Resolve(err.into())
    }
}

/// Why a resolution failed.
#[derive(Debug, thiserror::Error)]
pub enum ResolutionError {
    /// Versions, tags or the git listing.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// A reference a source named does not parse.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// The CSI manifest could not be read.
    #[error("cannot read the CSI manifest")]
    CsiFetch(#[source] FetchError),
    /// The CSI manifest is not one.
    #[error("the CSI manifest {url} is not a YAML manifest: {reason}")]
    CsiManifest {
        /// Its URL.
        url: String,
        /// Why.
        reason: crate::upstream::WrongContent,
    },
    /// Offline, with nothing to choose the autoscaler release from.
    #[error(
        "cannot list the autoscaler releases at {AUTOSCALER_REPO} with --offline to choose one"
    )]
    OfflineUnpinned,
    /// kubeadm's extras cannot be told.
    #[error(
        "cannot tell kubeadm's pause, etcd and CoreDNS versions for v{version}: {reason}, and the \
         embedded table does not know this release"
    )]
    NoExtras {
        /// The Kubernetes release.
        version: String,
        /// Why the constants were unusable.
        reason: String,
        /// Where they were looked for.
        url: String,
    },
    /// The release was never published (dl.k8s.io's labels say so), which is why `source`
    /// happened.
    #[error(
        "Kubernetes v{version} is not a published release{}",
        match nearest.is_empty() {
            true => String::new(),
            false => format!("; the nearest that exist: {}", super::published::list(nearest)),
        }
    )]
    Unpublished {
        /// The release asked for.
        version: String,
        /// Published releases near it, with the labels that name them.
        nearest: Vec<super::published::Nearest>,
        /// What failed for want of it.
        #[source]
        source: Box<ResolutionError>,
    },
}

impl ResolutionError {
    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Resolve(e) => e.hint(),
            Self::Image(e) => e.hint(),
            Self::CsiFetch(e) => e.hint(),
            Self::CsiManifest { .. } => Some("check --csi-version and the --mirror rules".into()),
            Self::OfflineUnpinned => {
                Some("pass --autoscaler-version (or AUTOSCALER_VERSION), or build --locked".into())
            }
            Self::NoExtras { url, .. } => Some(format!(
                "make {url} reachable, directly or through --mirror https://raw.githubusercontent.com=…"
            )),
            Self::Unpublished {
                version, nearest, ..
            } => Some(match nearest.first() {
                Some(n) => format!(
                    "pass a published release, e.g. --kubernetes {} (or the label {}); if \
                     v{version} came out just now, a --mirror may not have it yet",
                    n.version, n.label
                ),
                None => "pass a published release, or a label such as stable".into(),
            }),
        }
    }
}

/// Everything a resolution found (what `cks-iso resolve` prints).
#[derive(Debug, Serialize)]
pub struct Resolution {
    /// Kubernetes release, without `v`.
    pub kubernetes: String,
    /// The version label (`stable-1.33`) the release was read from, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes_label: Option<String>,
    /// Target architecture.
    pub arch: Arch,
    /// The resolved versions.
    pub versions: ResolvedVersions,
    /// Every file a build downloads.
    pub downloads: Vec<DownloadRow>,
    /// Every image a build bundles, fully qualified, each once.
    pub images: Vec<ImageRow>,
    /// Things the user should read, and may need to act on.
    pub warnings: Vec<String>,
    /// Upstream defects a build repairs (a CSI manifest's joined `---`): information only; a
    /// build says it when it makes the repair.
    pub notes: Vec<String>,
    /// The pins the URLs were derived from, for `build`.
    #[serde(skip)]
    pub pins: Pins,
}

impl Resolution {
    /// The images kubeadm names (pause, etcd, coredns, the control plane), as resolved.
    pub fn kubeadm_images(&self) -> impl Iterator<Item = &str> {
        self.images
            .iter()
            .filter(|row| row.source == ImageSource::Kubeadm)
            .map(|row| row.image.as_str())
    }
}

/// Resolved versions and where the choices came from.
#[derive(Debug, Serialize)]
pub struct ResolvedVersions {
    /// cluster-autoscaler release.
    pub autoscaler: String,
    /// The commit its tag pointed at, when the tags were listed.
    pub autoscaler_commit: Option<String>,
    /// `pinned` or `newest of <minor>`.
    pub autoscaler_source: String,
    /// CCM tag.
    pub ccm: String,
    /// CNI plugins.
    pub cni: String,
    /// crictl.
    pub crictl: String,
    /// etcd, when bundled.
    pub etcd: Option<String>,
    /// CSI driver tag.
    pub csi: String,
    /// kubeadm's CoreDNS tag.
    pub coredns: String,
    /// kubeadm's etcd image tag.
    pub etcd_image: String,
    /// kubeadm's pause tag.
    pub pause: String,
    /// Where the three above came from.
    pub kubeadm_extras_source: String,
}

/// One download.
#[derive(Debug, Serialize)]
pub struct DownloadRow {
    /// Short name.
    pub name: String,
    /// Path in the ISO.
    pub dest: String,
    /// Upstream URL.
    pub url: String,
    /// The URL requested after mirror rewriting.
    pub fetch_url: String,
    /// Where its checksum is published.
    pub checksum_url: Option<String>,
    /// The legacy name tried on 404.
    pub legacy_url: Option<String>,
}

/// One image.
#[derive(Debug, Serialize)]
pub struct ImageRow {
    /// Fully qualified reference.
    pub image: String,
    /// Who names it.
    pub source: ImageSource,
}

/// Who names an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageSource {
    /// kubeadm's own list for the release.
    Kubeadm,
    /// The autoscaler example, pinned.
    Autoscaler,
    /// The CCM deployment, pinned.
    Ccm,
    /// The CSI driver's manifest.
    Csi,
}

impl std::fmt::Display for ImageSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Kubeadm => "kubeadm",
            Self::Autoscaler => "autoscaler",
            Self::Ccm => "ccm",
            Self::Csi => "csi",
        })
    }
}

/// Resolves versions, URLs and images; shared by `resolve` and `build`. A failure that a
/// never-published release explains (no kubeadm constants at its tag, no autoscaler for its
/// minor) is reported as that, with the nearest releases that exist
/// ([`ResolutionError::Unpublished`]).
pub async fn resolve(p: Partial, fetcher: &Fetcher<'_>) -> Result<Resolution, ResolutionError> {
    let kube = p.kube.clone();
    let err = match resolve_as_given(p, fetcher).await {
        Ok(resolution) => return Ok(resolution),
        Err(err) => err,
    };
    let explained = matches!(
        &err,
        ResolutionError::NoExtras { .. }
            | ResolutionError::Resolve(ResolveError::Version(
                VersionError::NoAutoscalerRelease { .. },
            ))
    );
    if explained
        && let Some(nearest) = super::published::nearest_if_unpublished(&kube, fetcher).await
    {
        return Err(ResolutionError::Unpublished {
            version: kube.to_string(),
            nearest,
            source: Box::new(err),
        });
    }
    Err(err)
}

/// The autoscaler release for the Kubernetes minor, with its tag's commit when read from the tag
/// listing.
async fn autoscaler_choice(
    p: &Partial,
    fetcher: &Fetcher<'_>,
) -> Result<(AutoscalerChoice, Option<String>), ResolutionError> {
    // A pinned release needs no tag listing (upstream's script only downloads its manifest, and
    // a build that cannot reach git must still work); a wrong pin fails on that download.
    Ok(match p.pin.as_deref() {
        Some(pin) => (autoscaler_pin(&p.kube, pin, p.pin_origin)?, None),
        None => {
            let listing = match fetcher
                .git_refs(AUTOSCALER_REPO, AUTOSCALER_REF_PREFIX)
                .await
            {
                Err(ResolveError::Refused(_)) => return Err(ResolutionError::OfflineUnpinned),
                listed => listed?,
            };
            let choice = choose_autoscaler(&p.kube, None, p.pin_origin, &listing.refs)?;
            let name = format!("refs/tags/{}", choice.version.tag());
            let commit = listing
                .refs
                .iter()
                .find(|r| r.name == name)
                .map(|r| r.peeled.clone().unwrap_or_else(|| r.oid.clone()));
            (choice, commit)
        }
    })
}

/// The images a build pulls, each once, with why: kubeadm's, the autoscaler's, the CCM's and
/// the CSI driver's (read from its manifest, whose notes go to `notes`).
async fn image_rows(
    p: &Partial,
    fetcher: &Fetcher<'_>,
    extras: &Extras,
    autoscaler: &AutoscalerVersion,
    artifacts: &[Artifact],
    notes: &mut Vec<String>,
) -> Result<Vec<ImageRow>, ResolutionError> {
    let mut image_rows: Vec<ImageRow> = Vec::new();
    let mut add = |image: &str, source: ImageSource| -> Result<(), ResolutionError> {
        let normalised = Reference::parse(image)?.to_string();
        if !image_rows.iter().any(|r| r.image == normalised) {
            image_rows.push(ImageRow {
                image: normalised,
                source,
            });
        }
        Ok(())
    };
    for image in kubeadm::images(&p.kube, extras) {
        add(&image, ImageSource::Kubeadm)?;
    }
    add(&autoscaler_image(autoscaler), ImageSource::Autoscaler)?;
    add(&provider_image(&p.ccm), ImageSource::Ccm)?;
    if let Some(csi) = artifacts.iter().find(|a| a.dest == "manifest.yaml") {
        let text = fetcher
            .text(&csi.url, TEXT_LIMIT)
            .await
            .map_err(ResolutionError::CsiFetch)?;
        let bad = |reason| ResolutionError::CsiManifest {
            url: csi.url.clone(),
            reason,
        };
        for note in check_yaml(text.as_bytes()).map_err(bad)? {
            notes.push(format!("CSI manifest: {note}"));
        }
        for image in images_in_yaml(&text).map_err(bad)? {
            add(&image, ImageSource::Csi)?;
        }
    }
    Ok(image_rows)
}

async fn resolve_as_given(
    p: Partial,
    fetcher: &Fetcher<'_>,
) -> Result<Resolution, ResolutionError> {
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let (choice, commit) = autoscaler_choice(&p, fetcher).await?;
    warnings.extend(choice.warning.clone());
    let autoscaler_source = autoscaler_source(choice.pinned, &p.kube.to_string());
    let (extras, extras_source) = kubeadm_extras(&p.kube, fetcher, &mut warnings).await?;

    let pins = Pins {
        kubernetes: p.kube.clone(),
        cni: p.cni.clone(),
        crictl: p.crictl.clone(),
        etcd: p.etcd.clone(),
        etcd_own_name: p.etcd_own_name,
        autoscaler: choice.version,
        ccm_tag: p.ccm.clone(),
        csi: p.csi.clone(),
    };
    let artifacts = catalog(&pins, p.arch);

    let image_rows = image_rows(
        &p,
        fetcher,
        &extras,
        &choice.version,
        &artifacts,
        &mut notes,
    )
    .await?;

    let downloads = artifacts
        .iter()
        .map(|a| DownloadRow {
            name: a.name.clone(),
            dest: a.dest.clone(),
            fetch_url: fetcher.fetch_url(&a.url),
            url: a.url.clone(),
            checksum_url: a.checksum.as_ref().map(|c| c.url().to_owned()),
            legacy_url: a.legacy.as_ref().map(|l| l.url.clone()),
        })
        .collect();
    Ok(Resolution {
        kubernetes: p.kube.to_string(),
        kubernetes_label: None,
        arch: p.arch,
        versions: ResolvedVersions {
            autoscaler: choice.version.to_string(),
            autoscaler_commit: commit,
            autoscaler_source,
            ccm: p.ccm,
            cni: p.cni,
            crictl: p.crictl,
            etcd: p.etcd,
            csi: p.csi.unwrap_or_else(|| "none".into()),
            coredns: extras.coredns,
            etcd_image: extras.etcd,
            pause: extras.pause,
            kubeadm_extras_source: extras_source,
        },
        downloads,
        images: image_rows,
        warnings,
        notes,
        pins,
    })
}

/// How the autoscaler release was chosen: `pinned`, or `newest of 1.33` for Kubernetes
/// `kubernetes` (`1.33.1`).
fn autoscaler_source(pinned: bool, kubernetes: &str) -> String {
    match pinned {
        true => "pinned".to_owned(),
        false => {
            let minor: Vec<&str> = kubernetes.splitn(3, '.').take(2).collect();
            format!("newest of {}", minor.join("."))
        }
    }
}

impl ResolvedVersions {
    /// The versions `lock` records, as a resolution reports them (`build --json`'s `versions`).
    pub fn of_lock(lock: &crate::lock::Lock) -> Self {
        let r = &lock.request;
        Self {
            autoscaler: r.autoscaler.clone(),
            autoscaler_commit: lock.autoscaler.commit.clone(),
            autoscaler_source: autoscaler_source(lock.autoscaler.pinned, &r.kubernetes),
            ccm: r.ccm.clone(),
            cni: r.cni.clone(),
            crictl: r.crictl.clone(),
            etcd: r.etcd.clone(),
            csi: r.csi.clone().unwrap_or_else(|| "none".into()),
            coredns: lock.kubeadm.coredns.clone(),
            etcd_image: lock.kubeadm.etcd.clone(),
            pause: lock.kubeadm.pause.clone(),
            kubeadm_extras_source: lock.kubeadm.source.clone(),
        }
    }
}

/// kubeadm's extras from its constants at the tag (through the mirrors), else the embedded table.
async fn kubeadm_extras(
    kube: &KubeVersion,
    fetcher: &Fetcher<'_>,
    warnings: &mut Vec<String>,
) -> Result<(kubeadm::Extras, String), ResolutionError> {
    use crate::release::kubeadm::{Extras, constants_unix_url, constants_url, declares_pause};
    let url = constants_url(kube);
    let reason = match fetcher.text(&url, TEXT_LIMIT).await {
        // kubeadm 1.20 declares PauseVersion in constants_unix.go, beside constants.go.
        Ok(src) if !declares_pause(&src) => {
            let unix = constants_unix_url(kube);
            match fetcher.text(&unix, TEXT_LIMIT).await {
                Ok(more) => match Extras::from_constants(&format!("{src}\n{more}"), kube.minor) {
                    Ok(extras) => {
                        let from = format!("kubeadm constants.go and constants_unix.go at v{kube}");
                        return Ok((extras, from));
                    }
                    Err(err) => format!("{err}, in {url} and {unix}"),
                },
                Err(err) => format!("constants.go has no PauseVersion and {err}"),
            }
        }
        Ok(src) => match Extras::from_constants(&src, kube.minor) {
            Ok(extras) => return Ok((extras, format!("kubeadm constants.go at v{kube}"))),
            Err(err) => format!("{err}, in {url}"),
        },
        Err(err) => format!("{err}"),
    };
    match Extras::embedded(kube) {
        Some(extras) => {
            warnings.push(format!(
                "cannot read kubeadm's constants ({reason}); using the embedded table for v{kube}"
            ));
            Ok((extras, "embedded table".into()))
        }
        None => Err(ResolutionError::NoExtras {
            version: kube.to_string(),
            reason,
            url,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_reports_the_versions_a_resolution_of_it_reported() {
        let mut lock = crate::lock::sample::sample();
        let v = ResolvedVersions::of_lock(&lock);
        assert_eq!(v.autoscaler_source, "pinned");
        assert_eq!(
            (v.csi.as_str(), v.etcd_image.as_str()),
            ("v3.0.0", "3.5.21-0")
        );
        lock.autoscaler.pinned = false;
        lock.request.csi = None;
        lock.request.kubernetes = "1.34.0-rc.1".into();
        let v = ResolvedVersions::of_lock(&lock);
        assert_eq!(v.autoscaler_source, "newest of 1.34");
        assert_eq!(v.csi, "none");
    }
}
