//! `cks-iso sign ISO... --key FILE` (`build --sign-key` signs in the pipeline: `pipeline::Build::run`).

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
    let key = sign::load_key(&args.key)?;
    sign::sign_files(&args.isos, &key)?;
    for iso in &args.isos {
        for suffix in [sign::SIG_SUFFIX, sign::BUNDLE_SUFFIX] {
            crate::outln!("{}", sign::beside(iso, suffix).display());
        }
    }
    Ok(())
}
