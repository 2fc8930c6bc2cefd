//! `cks-iso verify-bundle`: one file's Sigstore signature judged for a signer by
//! [`crate::trust::material`], with the command line of the Sigstore conformance suite's
//! clients: exit 0 and one line on stdout when verified; exit 1 naming the failed check
//! otherwise.

use super::{AppError, net};
use crate::cli::VerifyBundleArgs;
use crate::image::Digest;
use crate::trust::material::{self, MaterialError};
use cks_iso_io::Sha256Sum;
use cks_iso_sigstore::rekor;

impl From<MaterialError> for AppError {
    fn from(err: MaterialError) -> Self {
        let hint = err.hint();
        match err.is_usage() {
            true => Self::usage(err, hint),
            false => Self::failure(err, hint),
        }
    }
}

/// Runs `cks-iso verify-bundle`.
pub fn run(args: VerifyBundleArgs) -> Result<(), AppError> {
    let rule = material::rule(
        args.kubernetes_binary,
        args.certificate_identity.as_deref().unwrap_or_default(),
        args.certificate_oidc_issuer.as_deref().unwrap_or_default(),
    );
    let mut settings = net::settings(args.net.clone())?;
    let (root, _) = crate::trust::trusted_root(
        args.trusted_root.as_deref(),
        settings.trusted_root.as_deref(),
    )
    .map_err(|e| {
        let hint = e.hint();
        AppError::failure(e, hint)
    })?;
    let (digest, shown) = material::artifact(&args.artifact)?;
    let evidence = match (&args.bundle, &args.signature, &args.certificate) {
        (Some(path), _, _) => material::from_bundle(path)?,
        (None, Some(sig), Some(cert)) => {
            let (sig, cert) = material::read_pair(sig, cert)?;
            settings.http.offline = args.offline;
            let rekor_url = (args.rekor_url.clone())
                .or_else(|| settings.rekor_url.clone())
                .unwrap_or_else(|| crate::trust::rekor::DEFAULT_REKOR_URL.to_owned());
            let rekor_url = rekor_url.trim_end_matches('/');
            let cache = net::writable_cache(args.cache_dir.clone())?;
            let client = crate::fetch::build_client(&settings.http)?;
            let fetcher = net::fetcher(&client, &settings, Some(&cache), &());
            let lookup = material::looked_up(rekor_url, &fetcher, &digest, (&sig, &cert));
            net::runtime()?.block_on(lookup)?
        }
        _ => unreachable!("clap requires --bundle or --signature with --certificate"),
    };
    let verified = material::verify(&root, &rule, (&digest, &shown), &evidence)?;
    // A Rekor v2 entry has no integrated time: its signing time is an RFC 3161 timestamp's.
    let when = match evidence.version {
        rekor::EntryVersion::V001 => "integrated",
        rekor::EntryVersion::V002 => "timestamped",
    };
    crate::outln!(
        "verified {shown} ({}): signed by {} via {}, Rekor log index {}, {when} at {}",
        Digest::sha256(Sha256Sum::from(digest)),
        verified.identity,
        verified.issuer,
        verified.log_index,
        verified.integrated_time
    );
    Ok(())
}
