//! `cks-iso resolve`: prints what a build would use (see [`crate::pipeline::resolve`]), or with
//! `--lock` the lock a build of the same flags resolves ([`crate::pipeline::resolve::resolve_lock`]).

use std::fmt::Write as _;

use super::{AppError, net, request};
use crate::cli::FromEnv;
use crate::cli::{ResolveArgs, VersionArgs};
use crate::config::Settings;
use crate::fetch::build_client;
use crate::image::Arch;
use crate::pipeline::resolve::{self as pipeline_resolve, Resolution, resolve};
use crate::pipeline::{self, Build, RequestOptions, Shared};
use crate::plan::{Given, Partial};
use crate::release::KubeVersion;
use crate::release::check_supported;
use crate::ui::Ui;
use crate::upstream::label;

/// When `text` is a version label, the release it names (`(label, release)`), read through
/// the mirrors of `settings` (not kept in the cache).
fn release_of_label(text: &str, settings: &Settings) -> Result<Option<(String, String)>, AppError> {
    let runtime = net::runtime()?;
    Ok(pipeline::release_of_label(text, settings, None, &runtime)?)
}

/// The version of `resolve --json`'s document (its `format` field), raised when a field changes
/// meaning or goes away.
pub const FORMAT: u32 = 1;

/// Resolves and prints: the table, the JSON summary, or (`--lock`) the lock. Several releases
/// are resolved at once and printed in the order given: the tables one after another, or one
/// JSON document `{"format", "resolutions": [...]}`.
pub fn run(args: ResolveArgs, ui: &Ui) -> Result<(), AppError> {
    let settings = net::settings(args.net.clone())?;
    if args.lock {
        let [kubernetes] = &args.kubernetes[..] else {
            return Err(several_locks(&args.kubernetes));
        };
        let labelled = release_of_label(kubernetes, &settings)?;
        return print_lock(&args, &settings, labelled, ui);
    }
    lock_only(&args)?;
    let arch = one_arch(&args.arch)?;
    let mut partials = Vec::new();
    for text in &args.kubernetes {
        let labelled = release_of_label(text, &settings)?;
        let release = labelled.as_ref().map_or(text.as_str(), |l| l.1.as_str());
        let kube: KubeVersion = release.parse()?;
        check_supported(&kube)?;
        let partial = Partial::new(kube, arch, given(&args.versions))?;
        partials.push((partial, labelled.map(|l| l.0)));
    }
    let runtime = net::runtime()?;
    let resolutions = runtime.block_on(async {
        let client = build_client(&settings.http)?;
        let fetcher = net::fetcher(&client, &settings, None, &());
        let each = partials.into_iter().map(|(partial, label)| {
            let fetcher = &fetcher;
            async move {
                let mut resolution = resolve(partial, fetcher).await?;
                resolution.kubernetes_label = label;
                Ok::<_, AppError>(resolution)
            }
        });
        futures_util::future::try_join_all(each).await
    })?;
    let a = &args.addons;
    let addons = pipeline::addons(&a.images, &a.images_files, &a.manifests)?;
    let addons = addons.after(pipeline::configured(&settings)?)?;
    let mut documents = Vec::new();
    let mut tables = Vec::new();
    for resolution in &resolutions {
        for warning in &resolution.warnings {
            tracing::warn!("{warning}");
        }
        for note in &resolution.notes {
            tracing::info!("{note}");
        }
        let sizes = match addons.is_empty() {
            true => None,
            false => Some(runtime.block_on(sizes(&settings, resolution, &addons))?),
        };
        match args.json {
            true => documents.push(document(resolution, sizes.as_ref())?),
            false => tables.push(table(resolution) + &sizes.map_or(String::new(), |s| s.table())),
        }
    }
    print(documents, tables)
}

/// The tables one after another, or the JSON document: one release's, or
/// `{"format", "resolutions"}` for several.
fn print(mut documents: Vec<serde_json::Value>, tables: Vec<String>) -> Result<(), AppError> {
    if documents.is_empty() {
        crate::out::bytes(tables.join("\n").as_bytes());
        return Ok(());
    }
    let value = match documents.len() {
        1 => documents.pop().expect("one document"),
        _ => {
            for d in &mut documents {
                d.as_object_mut().map(|o| o.remove("format"));
            }
            serde_json::json!({"format": FORMAT, "resolutions": documents})
        }
    };
    let text = serde_json::to_string_pretty(&value)
        .map_err(|e| AppError::failure(anyhow::Error::new(e), None))?;
    crate::outln!("{text}");
    Ok(())
}

/// One release's `--json` document.
fn document(resolution: &Resolution, sizes: Option<&Sizes>) -> Result<serde_json::Value, AppError> {
    let mut value = serde_json::to_value(resolution)
        .map_err(|e| AppError::failure(anyhow::Error::new(e), None))?;
    if let Some(object) = value.as_object_mut() {
        object.insert("format".into(), FORMAT.into());
        if let Some(sizes) = sizes {
            object.insert("addons".into(), serde_json::json!(sizes.addons));
            object.insert("estimate".into(), sizes.estimate());
        }
    }
    Ok(value)
}

/// `resolve --lock` given several releases: it prints one lock, which `build --locked` reads.
fn several_locks(given: &[String]) -> AppError {
    AppError::usage(
        anyhow::anyhow!(
            "resolve --lock prints one lock, and was given --kubernetes {}",
            given.join(" --kubernetes ")
        ),
        Some(
            "run it once per release, or build them all at once and keep each lock: cks-iso \
             build --kubernetes A --kubernetes B … --lock-file 'locks/{kubernetes}.lock'"
                .into(),
        ),
    )
}

/// Without `--lock`, the flags only a lock uses are a usage error naming the first one given
/// (`--cloudstack` from `CKS_ISO_CLOUDSTACK` aside: the environment is not a request).
fn lock_only(args: &ResolveArgs) -> Result<(), AppError> {
    let cloudstack = (args.request.cloudstack.is_some() && !args.request.from_env("cloudstack"))
        .then_some("--cloudstack");
    match args.request.lock_only_flag().or(cloudstack) {
        None => Ok(()),
        Some(flag) => Err(AppError::usage(
            anyhow::anyhow!("{flag} names what the lock records, and resolve was not given --lock"),
            Some(format!(
                "add --lock to print the lock build would write for these flags, or leave {flag} out"
            )),
        )),
    }
}

/// `resolve --lock`: the request of these flags, set up and settled as `build` sets it up, resolved
/// into its lock by the pipeline's resolve step, which `build` runs too ([`Build::resolve`]) and
/// which keeps the manifests it took in the cache; the lock on stdout as `build --lock-file`
/// writes one.
fn print_lock(
    args: &ResolveArgs,
    settings: &Settings,
    labelled: Option<(String, String)>,
    ui: &Ui,
) -> Result<(), AppError> {
    let (label, kubernetes) = match labelled {
        Some((label, version)) => (Some(label), version),
        None => (None, args.kubernetes[0].clone()),
    };
    let asked = request::Asked {
        positional: &[],
        kubernetes: Some(kubernetes),
        versions: &args.versions,
        arches: &args.arch,
        output: None,
        request: &args.request,
        addons: &args.addons,
    };
    let options = RequestOptions {
        kubernetes_label: label,
        ..request::options(&asked)
    };
    let cache = net::writable_cache(None)?;
    let runtime = net::transfer_runtime()?;
    let registry = net::registry(settings, cache)?;
    let shared = Shared {
        settings,
        registry: &registry,
        checker: None,
        runtime: &runtime,
    };
    let build = Build::new(shared, ui);
    let prepared = build.request(&options)?;
    let work = pipeline::work_dir("resolve")?;
    let lock = build.resolve(&prepared, work.path())?;
    drop(work);
    crate::out::bytes(lock.render().as_bytes());
    Ok(())
}

/// The add-on images' lock entries and what every image `resolve` knows weighs.
struct Sizes {
    addons: Vec<crate::lock::ImageEntry>,
    /// The core images' bytes (kubeadm's, the autoscaler's, the CCM's, the CSI driver's).
    core: u64,
}

impl Sizes {
    fn addon_bytes(&self) -> u64 {
        self.addons.iter().map(|i| i.size).sum()
    }

    fn estimate(&self) -> serde_json::Value {
        serde_json::json!({
            "images": self.core + self.addon_bytes(),
            "core_images": self.core,
            "addon_images": self.addon_bytes(),
        })
    }

    fn table(&self) -> String {
        let human = |n: u64| indicatif::HumanBytes(n).to_string();
        let mut out = String::from("\nAdd-on images (compressed, for this arch):\n");
        let width = self.addons.iter().map(|i| i.reference.len()).max();
        for i in &self.addons {
            let size = human(i.size);
            // An image a manifest names says which (`manifest:<name>`); one asked for, nothing.
            let why = i.extra.as_ref().map_or(String::new(), |w| format!("  {w}"));
            let _ = writeln!(
                out,
                "  {:<w$}  {size:>10}  {}{why}",
                i.reference,
                i.digest,
                w = width.unwrap_or(0)
            );
        }
        let _ = writeln!(
            out,
            "\nEstimated ISO size: at least {} of images ({} core, {} add-ons), before the \
             binaries and tarballs",
            human(self.core + self.addon_bytes()),
            human(self.core),
            human(self.addon_bytes())
        );
        out
    }
}

/// The add-on images `addons` asks for by reference, then those its manifests name (each taken
/// as a build takes it), and the core images of `resolution`, sized from their manifests through
/// the registry (its cache the default one); no layer is downloaded.
async fn sizes(
    settings: &Settings,
    resolution: &Resolution,
    addons: &crate::plan::Addons,
) -> Result<Sizes, AppError> {
    let cache = net::writable_cache(None)?;
    // A second pause image is refused here as `build` refuses it.
    let kubeadm: Vec<&str> = resolution.kubeadm_images().collect();
    let named = match addons.manifests.is_empty() {
        true => {
            crate::plan::one_pause(&kubeadm, [], &addons.images)
                .map_err(|e| AppError::from(pipeline::realize::RealizeError::Pause(e)))?;
            Vec::new()
        }
        false => {
            let work = pipeline::work_dir("resolve")?;
            let pause = (&kubeadm[..], &addons.images[..]);
            pipeline_resolve::addon_manifest_images(
                &addons.manifests,
                pause,
                settings,
                &cache,
                work.path(),
            )
            .await?
        }
    };
    let registry = net::registry(settings, cache)?;
    let parse = |text: &String| crate::image::Reference::parse(text);
    let core: Vec<String> = resolution.images.iter().map(|i| i.image.clone()).collect();
    // Why each is there: `None` asked for by reference (as before), else its manifest.
    let mut wanted: Vec<(String, Option<String>)> =
        addons.images.iter().map(|i| (i.clone(), None)).collect();
    for (image, why) in named {
        if !wanted.iter().any(|(i, _)| *i == image) {
            wanted.push((image, Some(why)));
        }
    }
    wanted.retain(|(i, _)| !core.contains(i));
    let extra: Vec<_> = wanted
        .iter()
        .map(|(i, _)| parse(i))
        .collect::<Result<_, _>>()?;
    let core: Vec<_> = core.iter().map(parse).collect::<Result<_, _>>()?;
    let arch = resolution.arch;
    let (core, addons) = tokio::join!(
        pipeline_resolve::size_images(&registry, &core, arch),
        pipeline_resolve::size_images(&registry, &extra, arch),
    );
    let mut addons = addons?;
    for (entry, (_, why)) in addons.iter_mut().zip(wanted) {
        entry.extra = why;
    }
    Ok(Sizes {
        addons,
        core: core?.iter().map(|i| i.size).sum(),
    })
}

/// The one architecture `resolve` lists: `build` takes several `--arch`, so a user may well
/// give `resolve` several too; that is a usage error that says to run once per architecture.
fn one_arch(given: &[String]) -> Result<Arch, AppError> {
    match given {
        [one] => Arch::parse(one).map_err(|_| AppError::unknown_arch(one)),
        _ => Err(AppError::usage(
            anyhow::anyhow!(
                "resolve lists one architecture's URLs and images, and was given --arch {}",
                given.join(" --arch ")
            ),
            Some(format!(
                "run it once per architecture: {}",
                given
                    .iter()
                    .map(|a| format!("cks-iso resolve … --arch {a}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        )),
    }
}

/// The versions the flags (and `AUTOSCALER_VERSION`, `CCM_VERSION`) give.
fn given(versions: &FromEnv<VersionArgs>) -> Given {
    let autoscaler_origin = match versions.from_env("autoscaler_version") {
        true => crate::env::AUTOSCALER_VERSION.name,
        false => "--autoscaler-version",
    };
    let v = (**versions).clone();
    Given {
        autoscaler_origin,
        cni: v.cni,
        crictl: v.crictl,
        etcd: v.etcd,
        csi: v.csi_version,
        ccm: v.ccm_version,
        autoscaler: v.autoscaler_version,
    }
}

/// The human-readable report.
fn table(r: &Resolution) -> String {
    let v = &r.versions;
    let mut out = String::new();
    let mut row = |k: &str, val: String| {
        let _ = writeln!(out, "{k:<16} {val}");
    };
    let from = r.kubernetes_label.as_ref().map_or(String::new(), |l| {
        format!(", from {l} ({})", label::label_url(l))
    });
    row(
        "Kubernetes",
        format!("v{} ({}, {}){from}", r.kubernetes, r.arch, r.arch.uname()),
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
