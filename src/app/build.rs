//! `cks-iso build`: the whole CKS binaries ISO, one per `--arch`. The arguments become
//! [`BuildOptions`] and what the build borrows (settings, signature checker, cache and registry
//! client, runtime); [`Build`] does the rest (resolve, realize, author: see
//! [`crate::pipeline`]); this module prints the summary and registers the ISOs if asked.

use serde_json::json;

use super::request::{self, Asked};
use super::{AppError, net};
use crate::cli::BuildArgs;
use crate::pipeline::{Build, BuildOptions, Built, Setup, Shared};
use crate::registration::line::{Registration, publish_base};
use crate::trust::checker;
use crate::ui::Ui;

/// The version of `build --json`'s document (its `format` field).
pub const FORMAT: u32 = 1;

/// Builds the ISOs and prints a summary (or JSON) on stdout.
pub fn run(args: BuildArgs, ui: &Ui) -> Result<(), AppError> {
    // A wrong flag or lock is said before anything about the configuration or the network.
    let mut setup = Setup::new(&options(&args))?;
    let publish = publish_base(args.publish_url.as_deref())?;
    let mut settings = net::settings(args.net.clone())?;
    settings.http.offline = args.offline;
    net::registry_mirrors(&settings)?;
    setup.settle(&settings)?;
    let signing = &args.signing;
    let flags = checker::Flags {
        mode: signing.signatures.as_deref(),
        trusted_root: signing.trust.trusted_root.as_deref(),
        policy: signing.trust.signature_policy.as_deref(),
        rekor_url: args.rekor_url.as_deref(),
    };
    let checker = checker::select(flags, &settings)?;
    let cache = net::writable_cache(args.cache_dir.clone())?;
    let runtime = net::transfer_runtime()?;
    let registry = net::registry(&settings, cache)?;
    let shared = Shared {
        settings: &settings,
        registry: &registry,
        checker: checker.as_ref(),
        runtime: &runtime,
    };
    let build = Build::new(shared, ui);
    let built = build.run(build.prepare_setup(setup)?)?;
    summary(&built, publish.as_deref(), args.json);
    if args.registering.register {
        let isos = built
            .isos
            .iter()
            .map(crate::registration::IsoToRegister::from);
        let publish = publish.as_deref().unwrap_or_default();
        super::register::after_build(isos.collect(), publish, &args.registering, &settings)?;
    }
    Ok(())
}

/// What `args` ask the build for.
fn options(args: &BuildArgs) -> BuildOptions {
    let asked = Asked {
        positional: &args.positional,
        kubernetes: args.kubernetes.clone(),
        versions: &args.versions,
        arches: &args.arches,
        output: args.output.clone(),
        request: &args.request,
        addons: &args.addons,
    };
    BuildOptions {
        request: request::options(&asked),
        locked: args.locked.clone(),
        from_iso: args.from_iso.clone(),
        lock_file: args.lock_file.clone(),
        sign_key: args.sign_key.clone(),
    }
}

/// stdout's summary of what was `built`, with each ISO's registration line: the text, or the
/// `--json` document.
fn summary(built: &Built, publish: Option<&str>, json: bool) {
    let registrations: Vec<Registration> = (built.isos.iter())
        .map(|b| Registration::of(b, publish))
        .collect();
    let (versions, fields) = built.versions();
    if json {
        let isos: Vec<_> = (built.isos.iter().zip(&registrations))
            .map(|(b, r)| {
                json!({
                    "iso": b.path, "arch": b.arch.k8s(), "size": b.size, "sha256": b.sha256,
                    "images": b.images, "files": b.files, "registration": r.json(),
                })
            })
            .collect();
        let value = json!({
            "format": FORMAT, "isos": isos, "versions": fields, "summary": versions,
        });
        let text = serde_json::to_string_pretty(&value).expect("plain JSON");
        crate::outln!("{text}");
        return;
    }
    for b in &built.isos {
        let size = indicatif::HumanBytes(b.size);
        let (arch, sha) = (b.arch.k8s(), &b.sha256[..16]);
        let counts = format!("{} images, {} files", b.images, b.files);
        crate::outln!(
            "{}  {size} ({arch}, {counts}, sha256 {sha})",
            b.path.display()
        );
    }
    crate::outln!("{versions}");
    crate::outln!("register each ISO with CloudStack (addKubernetesSupportedVersion):");
    for r in registrations {
        crate::outln!("  {}", r.cmk());
    }
}
