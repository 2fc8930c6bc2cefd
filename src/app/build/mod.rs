//! `cks-iso build`: the whole CKS binaries ISO, one per `--arch`, for one Kubernetes release or
//! several at once. The arguments become [`BuildOptions`] (one per release or lock) and what the
//! builds borrow (settings, signature checker, cache and registry client, runtime); [`Build`]
//! does the rest (resolve, realize, author: see [`crate::pipeline`]), [`Matrix`] for several;
//! this module prints the summary and registers the ISOs if asked.

mod summary;

use super::request::{self, Asked};
use super::{AppError, net};
use crate::cli::BuildArgs;
use crate::pipeline::matrix::{self, Matrix};
use crate::pipeline::{Build, BuildOptions, Built, Setup};
use crate::trust::checker;
use crate::ui::Ui;

/// Builds the ISOs and prints a summary (or JSON) on stdout.
pub fn run(args: BuildArgs, ui: &Ui) -> Result<(), AppError> {
    let base = options(&args);
    // No release named by a flag: the configuration's list, read first.
    let named =
        !(args.kubernetes.is_empty() && args.positional.is_empty() && args.locked.is_empty());
    let early = match named {
        true => None,
        false => Some(net::settings(args.net.clone())?),
    };
    let listed = early.as_ref().map_or(&[][..], |s| &s.kubernetes[..]);
    let kubernetes = if named { &args.kubernetes[..] } else { listed };
    let asked = matrix::options_for(&base, kubernetes, &args.locked)?;
    // A wrong flag or lock is said before anything about the configuration or the network.
    let mut setups = Vec::new();
    for (name, options) in asked {
        setups.push((name, Setup::new(&options)?));
    }
    let publish = summary::publish(args.publish_url.as_deref())?;
    let mut settings = match early {
        Some(settings) => settings,
        None => net::settings(args.net.clone())?,
    };
    settings.http.offline = args.offline;
    net::registry_mirrors(&settings)?;
    for (_, setup) in &mut setups {
        setup.settle(&settings)?;
    }
    let signing = &args.signing;
    let flags = checker::Flags {
        mode: signing.signatures.as_deref(),
        trusted_root: signing.trust.trusted_root.as_deref(),
        policy: signing.trust.signature_policy.as_deref(),
        rekor_url: args.rekor_url.as_deref(),
    };
    let tools = net::BuildTools::open(&settings, flags, args.cache_dir.clone())?;
    let shared = tools.shared(&settings);
    let built: Vec<Built> = match setups.len() {
        1 => {
            let (_, setup) = setups.pop().expect("one setup");
            let build = Build::new(shared, ui);
            let built = build.run(build.prepare_setup(setup)?)?;
            summary::one(&built, publish.as_deref(), args.json);
            vec![built]
        }
        _ => {
            let outcomes = Matrix::new(shared, ui).build(setups);
            summary::several(&outcomes, publish.as_deref(), args.json);
            let (built, failed) = summary::split(outcomes, ui);
            register(&built, publish.as_deref(), &args, &settings)?;
            return failed.map_or(Ok(()), Err);
        }
    };
    register(&built, publish.as_deref(), &args, &settings)
}

/// `--register`: every ISO of `built` registered with CloudStack.
fn register(
    built: &[Built],
    publish: Option<&str>,
    args: &BuildArgs,
    settings: &crate::config::Settings,
) -> Result<(), AppError> {
    if !args.registering.register || built.is_empty() {
        return Ok(());
    }
    let isos = (built.iter().flat_map(|b| &b.isos)).map(crate::cloudstack::IsoToRegister::from);
    let publish = publish.unwrap_or_default();
    super::cloudstack_api::after_build(isos.collect(), publish, &args.registering, settings)
}

/// Where keyless signing and `--tlog` find Fulcio and Rekor, and the root they check against.
fn services(args: &BuildArgs) -> crate::trust::keyless::KeylessOptions {
    (args.keyless).options(
        args.rekor_url.as_deref(),
        args.signing.trust.trusted_root.as_deref(),
    )
}

/// What `args` ask the build for (the first `--kubernetes` and `--locked`: see
/// [`matrix::options_for`] for several).
fn options(args: &BuildArgs) -> BuildOptions {
    let asked = Asked {
        positional: &args.positional,
        kubernetes: args.kubernetes.first().cloned(),
        versions: &args.versions,
        arches: &args.arches,
        output: args.output.clone(),
        request: &args.request,
        addons: &args.addons,
    };
    BuildOptions {
        request: request::options(&asked),
        locked: args.locked.first().cloned(),
        from_iso: args.from_iso.clone(),
        lock_file: args.lock_file.clone(),
        sign_key: args.sign_key.clone(),
        keyless: args.sign.then(|| services(args)),
        tlog: args.tlog.then(|| services(args)),
    }
}
