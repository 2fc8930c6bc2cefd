//! `cks-iso sign ISO... --key FILE`, and the hook `build --sign-key` calls once the ISOs exist.

use super::AppError;
use crate::author::BuiltIso;
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

/// `build --sign-key`: the key, read before anything is fetched, so that a wrong path or format
/// stops the build at once.
pub(crate) fn build_key(
    path: Option<&std::path::Path>,
) -> Result<Option<cks_iso_sigstore::keyed::SigningKey>, AppError> {
    Ok(path.map(sign::load_key).transpose()?)
}

/// Signs the ISOs a build just wrote, with the SHA-256 their writer computed (no second read).
pub(crate) fn built(
    built: &[BuiltIso],
    key: &cks_iso_sigstore::keyed::SigningKey,
) -> Result<(), AppError> {
    for b in built {
        sign::sign_iso(&b.path, &b.sha256, key)?;
    }
    Ok(())
}

/// Removes what a failed `build --sign-key` wrote: the ISOs and their companions, signatures
/// included.
pub(crate) fn remove(built: &[BuiltIso]) {
    crate::author::remove(built);
    for b in built {
        for suffix in [sign::SIG_SUFFIX, sign::BUNDLE_SUFFIX] {
            let _ = std::fs::remove_file(sign::beside(&b.path, suffix));
        }
    }
}
