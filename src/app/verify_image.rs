//! `cks-iso verify-image IMAGE...`: each image's cosign signature judged the way `build` judges
//! it, without pulling the image ([`crate::trust::standalone`]); a line per image (or one JSON
//! object) on stdout, each failure on stderr.

use serde::Serialize;

use super::{AppError, net};
use crate::cli::VerifyImageArgs;
use crate::image::{Arch, Reference};
use crate::trust;
use crate::trust::standalone::{Checked, Entry, Judging, StandaloneError};
use crate::ui::Ui;

/// The version of `verify-image --json`'s object, bumped on any change that breaks a reader.
pub const FORMAT: u32 = 1;

/// `verify-image --json`: one entry per image, in the order named.
#[derive(Serialize)]
struct Report {
    format: u32,
    /// `linux/<arch>` with `--arch`, else null.
    arch: Option<String>,
    images: Vec<Entry>,
}

impl From<StandaloneError> for AppError {
    fn from(err: StandaloneError) -> Self {
        let hint = err.hint();
        match err.is_usage() {
            true => Self::usage(err, hint),
            false => Self::failure(err, hint),
        }
    }
}

/// Judges every image, prints a line (or the JSON object) on stdout, and fails when one failed
/// (with `--enforce`, or is unsigned).
pub fn run(args: VerifyImageArgs, ui: &Ui) -> Result<(), AppError> {
    let arch = match args.arch.as_deref() {
        Some(text) => Some(Arch::parse(text).map_err(|_| AppError::unknown_arch(text))?),
        None => None,
    };
    let mut references: Vec<Reference> = Vec::new();
    for text in &args.images {
        let reference = Reference::parse(text)?;
        if !references.contains(&reference) {
            references.push(reference);
        }
    }
    let mut settings = net::settings(args.net.clone())?;
    settings.http.offline = args.offline;
    let signer = (args.certificate_oidc_issuer.is_some()
        || args.certificate_oidc_issuer_regexp.is_some())
    .then_some(trust::standalone::SignerFlags {
        issuer: args.certificate_oidc_issuer.as_deref(),
        issuer_regexp: args.certificate_oidc_issuer_regexp.as_deref(),
        identity: args.certificate_identity.as_deref(),
        regexp: args.certificate_identity_regexp.as_deref(),
    });
    let policy = (args.trust.signature_policy.as_deref()).or(settings.signature_policy.as_deref());
    let rules = trust::standalone::rules(signer, policy, &references)?;
    let (root, _) = trust::trusted_root(
        args.trust.trusted_root.as_deref(),
        settings.trusted_root.as_deref(),
    )?;
    let cache = net::writable_cache(args.cache_dir.clone())?;
    let registry = net::registry(&settings, cache)?;
    let runtime = net::runtime()?;
    let how = Judging {
        root: &root,
        arch,
        enforce: args.enforce,
    };
    let checked = runtime.block_on(trust::standalone::check_all(
        &registry,
        &references,
        &rules,
        how,
    ));
    let failed = print(checked, arch, args.json, ui);
    match failed.is_empty() {
        true => Ok(()),
        false => Err(AppError::failure(
            anyhow::anyhow!(
                "{} of {} image(s) failed the signature check{}: {}",
                failed.len(),
                references.len(),
                match args.enforce {
                    true => " (unsigned ones fail under --enforce)",
                    false => "",
                },
                failed.join(", ")
            ),
            Some("each error above names its image, the digest and the failed check".into()),
        )),
    }
}

/// Prints each image's line (or the JSON object) and each failure on stderr; the images that
/// failed.
fn print(checked: Vec<Checked>, arch: Option<Arch>, json: bool, ui: &Ui) -> Vec<String> {
    let mut failed = Vec::new();
    let mut entries = Vec::new();
    for c in checked {
        if let Some(err) = c.error() {
            let (top, causes) = crate::failure::lines(err);
            ui.error(
                &top,
                &causes,
                crate::failure::advice(err, err.hint()).as_deref(),
            );
            failed.push(c.reference.to_string());
        }
        match json {
            true => entries.push(c.entry()),
            false => crate::outln!("{}", c.line()),
        }
    }
    if json {
        let report = Report {
            format: FORMAT,
            arch: arch.map(|a| format!("linux/{a}")),
            images: entries,
        };
        let text = serde_json::to_string_pretty(&report).expect("the report serialises");
        crate::outln!("{text}");
    }
    failed
}
