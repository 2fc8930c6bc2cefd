//! `cks-iso sign ISO... --key FILE [--tlog]` and `cks-iso sign ISO... --identity-token TOKEN` (keyless;
//! `build --sign-key` and `build --sign` sign in the pipeline: `pipeline::Build::run`).

use super::AppError;
use crate::cli::SignArgs;
use crate::trust::sign::{self, SignError};

impl From<SignError> for AppError {
    fn from(err: SignError) -> Self {
        let hint = err.hint();
        match err.is_usage() {
            true => Self::usage(err, hint),
            false => Self::failure(err, hint),
        }
    }
}

/// Signs each ISO given; prints the files written on stdout.
pub fn run(args: SignArgs) -> Result<(), AppError> {
    let suffixes: &[&str] = match &args.key {
        Some(path) if args.tlog => {
            let key = crate::trust::key::load_key(path)?;
            let settings = super::net::settings(args.net.clone())?;
            let log = crate::trust::keyless::KeyLog::new(
                &options(&args),
                &crate::pipeline::keyless_defaults(&settings),
            )?;
            let runtime = super::net::runtime()?;
            crate::trust::keyless::sign_files_logged(&args.isos, &key, &log, &runtime)?;
            &[sign::SIG_SUFFIX, sign::BUNDLE_SUFFIX]
        }
        Some(path) => {
            let key = crate::trust::key::load_key(path)?;
            sign::sign_files(&args.isos, &key)?;
            &[sign::SIG_SUFFIX, sign::BUNDLE_SUFFIX]
        }
        None => {
            let settings = super::net::settings(args.net.clone())?;
            let signer = crate::trust::keyless::KeylessSigner::new(
                &options(&args),
                &crate::pipeline::keyless_defaults(&settings),
            )?;
            let runtime = super::net::runtime()?;
            crate::trust::keyless::sign_files(&args.isos, &signer, &runtime)?;
            &[sign::BUNDLE_SUFFIX]
        }
    };
    for iso in &args.isos {
        for suffix in suffixes {
            crate::outln!("{}", sign::beside(iso, suffix).display());
        }
    }
    Ok(())
}

/// Where the services are, as the flags say.
fn options(args: &SignArgs) -> crate::trust::keyless::KeylessOptions {
    (args.keyless).options(args.rekor_url.as_deref(), args.trusted_root.as_deref())
}
