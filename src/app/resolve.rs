//! `cks-iso resolve`: what a build would use — versions, every download URL, every image — with
//! only small metadata fetched (tag listing, kubeadm's constants, the CSI manifest).

use std::fmt::Write as _;

use serde::Serialize;

use super::{AppError, net};
use crate::cli::ResolveArgs;
use crate::env;
use crate::fetch::{build_client, retrying};
use crate::image::Reference;
use crate::resolve::version::{
    AUTOSCALER_REF_PREFIX, AUTOSCALER_REPO, autoscaler_pin, check_supported,
};
use crate::resolve::{Extras, KubeVersion, ccm_tag, choose_autoscaler, images, ls_remote};
use crate::ui::Ui;
use crate::upstream::content::{check_yaml, images_in_yaml};
use crate::upstream::{
    Arch, DEFAULT_CNI, DEFAULT_CSI, Fetcher, Pins, bare_version, catalog, default_crictl,
};

/// Manifests and constants files are small; more than this is not one.
const TEXT_LIMIT: u64 = 8 << 20;

/// Everything `resolve` prints.
#[derive(Debug, Serialize)]
pub struct Resolution {
    /// Kubernetes release, without `v`.
    pub kubernetes: String,
    /// Target architecture.
    pub arch: Arch,
    /// The resolved versions.
    pub versions: Versions,
    /// Every file a build downloads.
    pub downloads: Vec<DownloadRow>,
    /// Every image a build bundles, fully qualified, each once.
    pub images: Vec<ImageRow>,
    /// Things the user should read.
    pub warnings: Vec<String>,
    /// The pins the URLs were derived from, for `build`.
    #[serde(skip)]
    pub pins: Pins,
}

/// Resolved versions and where the choices came from.
#[derive(Debug, Serialize)]
pub struct Versions {
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
    /// Who names it: `kubeadm`, `autoscaler`, `ccm`, `csi`.
    pub source: String,
}

/// Resolves and prints.
pub fn run(args: ResolveArgs, _ui: &Ui) -> Result<(), AppError> {
    let kube: KubeVersion = args.kubernetes.parse()?;
    check_supported(&kube)?;
    let arch = Arch::parse(&args.arch).map_err(|_| {
        AppError::usage(
            anyhow::anyhow!(
                "--arch {:?} is not an architecture cks-iso builds for",
                args.arch
            ),
            Some("use amd64 (x86_64) or arm64 (aarch64)".into()),
        )
    })?;
    let ccm = ccm_tag(
        args.ccm_version
            .clone()
            .or_else(|| env::CCM_VERSION.get())
            .as_deref(),
    )?;
    let pin = args
        .autoscaler_version
        .clone()
        .or_else(|| env::AUTOSCALER_VERSION.get());
    let json = args.json;
    let partial = Partial {
        cni: args
            .cni
            .as_deref()
            .map_or(DEFAULT_CNI.to_owned(), bare_version),
        crictl: args
            .crictl
            .as_deref()
            .map_or_else(|| default_crictl(&kube), bare_version),
        etcd: args.etcd.as_deref().map(bare_version),
        csi: csi_tag(args.csi_version.as_deref()),
        kube,
        arch,
        ccm,
        pin,
        locked: None,
    };
    let settings = net::settings(args.net)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            AppError::failure(
                anyhow::Error::new(e).context("cannot start the async runtime"),
                None,
            )
        })?;
    let resolution = runtime.block_on(async {
        let client = build_client(&settings.http)?;
        let fetcher = net::fetcher(&client, &settings, None, &());
        resolve(partial, &client, &fetcher).await
    })?;
    for warning in &resolution.warnings {
        tracing::warn!("{warning}");
    }
    if json {
        let text = serde_json::to_string_pretty(&resolution)
            .map_err(|e| AppError::failure(anyhow::Error::new(e), None))?;
        println!("{text}");
    } else {
        print!("{}", table(&resolution));
    }
    Ok(())
}

/// What the arguments decided before anything was fetched.
pub(super) struct Partial {
    pub(super) kube: KubeVersion,
    pub(super) arch: Arch,
    pub(super) ccm: String,
    pub(super) pin: Option<String>,
    pub(super) cni: String,
    pub(super) crictl: String,
    pub(super) etcd: Option<String>,
    /// `None` leaves the CSI manifests out.
    pub(super) csi: Option<String>,
    /// What a lock already settled: nothing is listed or read for it.
    pub(super) locked: Option<Locked>,
}

/// The parts of a resolution a lock records.
pub(super) struct Locked {
    pub(super) extras: Extras,
    pub(super) extras_source: String,
    pub(super) commit: Option<String>,
    /// Whether the locked build had the autoscaler pinned.
    pub(super) pinned: bool,
}

/// Resolves versions, URLs and images; shared by `resolve` and `build`.
pub(super) async fn resolve(
    p: Partial,
    client: &reqwest::Client,
    fetcher: &Fetcher<'_>,
) -> Result<Resolution, AppError> {
    let mut warnings = Vec::new();
    let offline = fetcher.download.offline;
    // A pinned release needs no tag listing (upstream's script only downloads its manifest, and
    // a build that cannot reach git must still work); a wrong pin fails on that download.
    let (choice, commit) = match (&p.locked, p.pin.as_deref()) {
        (Some(locked), Some(pin)) => (autoscaler_pin(&p.kube, pin)?, locked.commit.clone()),
        (None, Some(pin)) => (autoscaler_pin(&p.kube, pin)?, None),
        (_, None) if offline => {
            return Err(AppError::failure(
                anyhow::anyhow!(
                    "offline: cannot list the autoscaler releases at {AUTOSCALER_REPO} to choose one"
                ),
                Some("pass --autoscaler-version (or AUTOSCALER_VERSION), or build --locked".into()),
            ));
        }
        (_, None) => {
            let repo = fetcher.mirrors.rewrite(AUTOSCALER_REPO);
            let listing = retrying(
                fetcher.download.retry,
                || ls_remote(client, &repo, AUTOSCALER_REF_PREFIX),
                |e: &crate::resolve::ResolveError| e.is_transient().then_some(None),
            )
            .await?;
            let choice = choose_autoscaler(&p.kube, None, &listing.refs)?;
            let name = format!("refs/tags/{}", choice.version.tag());
            let commit = listing
                .refs
                .iter()
                .find(|r| r.name == name)
                .map(|r| r.peeled.clone().unwrap_or_else(|| r.oid.clone()));
            (choice, commit)
        }
    };
    warnings.extend(choice.warning.clone());
    let pinned = p.locked.as_ref().map_or(choice.pinned, |l| l.pinned);
    let autoscaler_source = match pinned {
        true => "pinned".to_owned(),
        false => format!("newest of {}.{}", p.kube.major, p.kube.minor),
    };

    let (extras, extras_source) = match &p.locked {
        Some(locked) => (locked.extras.clone(), locked.extras_source.clone()),
        None => kubeadm_extras(&p.kube, fetcher, &mut warnings).await?,
    };

    let pins = Pins {
        kubernetes: p.kube.clone(),
        cni: p.cni.clone(),
        crictl: p.crictl.clone(),
        etcd: p.etcd.clone(),
        autoscaler: choice.version,
        ccm_tag: p.ccm.clone(),
        csi: p.csi.clone(),
    };
    let artifacts = catalog(&pins, p.arch);

    let mut image_rows: Vec<ImageRow> = Vec::new();
    let mut add = |image: &str, source: &str| -> Result<(), AppError> {
        let normalised = Reference::parse(image)?.to_string();
        if !image_rows.iter().any(|r| r.image == normalised) {
            image_rows.push(ImageRow {
                image: normalised,
                source: source.to_owned(),
            });
        }
        Ok(())
    };
    for image in images(&p.kube, &extras) {
        add(&image, "kubeadm")?;
    }
    add(
        &format!(
            "registry.k8s.io/autoscaling/cluster-autoscaler:v{}",
            choice.version
        ),
        "autoscaler",
    )?;
    add(
        &format!("apache/cloudstack-kubernetes-provider:{}", p.ccm),
        "ccm",
    )?;
    if let Some(csi) = artifacts
        .iter()
        .find(|a| a.dest == "manifest.yaml")
        .filter(|_| p.locked.is_none())
    {
        let text = fetcher.text(&csi.url, TEXT_LIMIT).await?;
        let bad = |reason: String| {
            AppError::failure(
                anyhow::anyhow!(
                    "the CSI manifest {} is not a YAML manifest: {reason}",
                    csi.url
                ),
                Some("check --csi-version and the --mirror rules".into()),
            )
        };
        for note in check_yaml(text.as_bytes()).map_err(bad)? {
            warnings.push(format!("CSI manifest: {note}"));
        }
        for image in images_in_yaml(&text).map_err(bad)? {
            add(&image, "csi")?;
        }
    }

    let downloads = artifacts
        .iter()
        .map(|a| DownloadRow {
            name: a.name.clone(),
            dest: a.dest.clone(),
            fetch_url: crate::fetch::redact(&fetcher.mirrors.rewrite(&a.url)),
            url: a.url.clone(),
            checksum_url: a.checksum.as_ref().map(|c| c.url().to_owned()),
            legacy_url: a.legacy.as_ref().map(|l| l.url.clone()),
        })
        .collect();
    Ok(Resolution {
        kubernetes: p.kube.to_string(),
        arch: p.arch,
        versions: Versions {
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
        pins,
    })
}

/// kubeadm's extras from its constants at the tag (through the mirrors), else the embedded table.
async fn kubeadm_extras(
    kube: &KubeVersion,
    fetcher: &Fetcher<'_>,
    warnings: &mut Vec<String>,
) -> Result<(Extras, String), AppError> {
    use crate::resolve::kubeadm::{constants_unix_url, constants_url, declares_pause};
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
                    Err(err) => err.to_string(),
                },
                Err(err) => format!("constants.go has no PauseVersion and {err}"),
            }
        }
        Ok(src) => match Extras::from_constants(&src, kube.minor) {
            Ok(extras) => return Ok((extras, format!("kubeadm constants.go at v{kube}"))),
            Err(err) => err.to_string(),
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
        None => Err(AppError::failure(
            anyhow::anyhow!(
                "cannot tell kubeadm's pause, etcd and CoreDNS versions for v{kube}: {reason}, \
                 and the embedded table does not know this release"
            ),
            Some(format!(
                "make {url} reachable, directly or through --mirror https://raw.githubusercontent.com=…"
            )),
        )),
    }
}

/// The human-readable report.
fn table(r: &Resolution) -> String {
    let v = &r.versions;
    let mut out = String::new();
    let mut row = |k: &str, val: String| {
        let _ = writeln!(out, "{k:<16} {val}");
    };
    row(
        "Kubernetes",
        format!("v{} ({}, {})", r.kubernetes, r.arch, r.arch.uname()),
    );
    row(
        "autoscaler",
        format!("{} ({})", v.autoscaler, v.autoscaler_source),
    );
    row("CCM", v.ccm.clone());
    row("CNI plugins", v.cni.clone());
    row("crictl", v.crictl.clone());
    row("etcd", v.etcd.clone().unwrap_or_else(|| "-".into()));
    row("CSI driver", v.csi.clone());
    row(
        "kubeadm extras",
        format!(
            "coredns {}, etcd {}, pause {} (from {})",
            v.coredns, v.etcd_image, v.pause, v.kubeadm_extras_source
        ),
    );
    let _ = writeln!(out, "\nDownloads:");
    let width = r.downloads.iter().map(|d| d.dest.len()).max().unwrap_or(0);
    for d in &r.downloads {
        let _ = writeln!(out, "  {:<width$}  {}", d.dest, d.url);
        if d.fetch_url != d.url {
            let _ = writeln!(out, "  {:<width$}    via {}", "", d.fetch_url);
        }
    }
    let _ = writeln!(out, "\nImages:");
    let width = r.images.iter().map(|i| i.image.len()).max().unwrap_or(0);
    for i in &r.images {
        let _ = writeln!(out, "  {:<width$}  {}", i.image, i.source);
    }
    out
}

/// The CSI driver tag: the default, the given one with a `v`, or `None` for `none`.
pub(super) fn csi_tag(given: Option<&str>) -> Option<String> {
    match given.map(str::trim) {
        Some("none") => None,
        other => Some(format!("v{}", bare_version(other.unwrap_or(DEFAULT_CSI)))),
    }
}
