//! `cks-iso verify-bundle`: one file's Sigstore signature judged for a signer, with the command
//! line of the Sigstore conformance suite's clients, so that the verifier `build` relies on can be
//! run on material the real public-good Sigstore produced (and on any file a user holds).
//!
//! The material is a Sigstore bundle, or dl.k8s.io's `.sig` and `.cert` pair, whose Rekor entry
//! is looked up the way `build` does (mirrors, cache, `--offline`). Either way it is judged by
//! [`rekor::verify_digest`], the very checks `build` and `verify --signatures` run.

use std::path::{Path, PathBuf};

use super::{AppError, net};
use crate::cli::VerifyBundleArgs;
use crate::signature::{Policy, Rule, SignatureError, Step, rekor};

/// The most a bundle, `.sig` or `.cert` file may hold: real ones are a few KiB.
const MATERIAL_LIMIT: u64 = 1 << 20;

/// Why the material could not even be judged.
#[derive(Debug, thiserror::Error)]
enum MaterialError {
    /// The file cannot be read, or is too large.
    #[error("cannot read {what} {path}: {reason}")]
    Unreadable {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
    /// A bundle cks-iso does not read.
    #[error("the bundle {path} is refused: {reason}")]
    Bundle { path: PathBuf, reason: String },
    /// `.sig` or `.cert` are not what dl.k8s.io publishes.
    #[error("the signature material is refused: {reason}")]
    Pair { reason: String },
    /// No Rekor entry logs this file, signature and certificate.
    #[error("{rekor} has no entry that logs sha256:{digest} with this signature and certificate")]
    NoEntry { rekor: String, digest: String },
}

/// Runs `cks-iso verify-bundle`: exit 0 and one line on stdout when verified; exit 1 naming the
/// failed check otherwise.
pub fn run(args: VerifyBundleArgs) -> Result<(), AppError> {
    let rule = rule(&args);
    let settings = net::settings(args.net.clone())?;
    let (root, _) = crate::trust::trusted_root(
        args.trusted_root.as_deref(),
        settings.trusted_root.as_deref(),
    )
    .map_err(|e| {
        let hint = e.hint();
        AppError::failure(e, hint)
    })?;
    let (digest, shown) = artifact(&args.artifact)?;
    let evidence = match (&args.bundle, &args.signature, &args.certificate) {
        (Some(path), _, _) => {
            let bytes = read(path, "the bundle")?;
            rekor::Evidence::from_bundle(&bytes).map_err(|e| {
                refused(MaterialError::Bundle {
                    path: path.clone(),
                    reason: e.to_string(),
                })
            })?
        }
        (None, Some(sig), Some(cert)) => looked_up(&args, settings, &digest, sig, cert)?,
        _ => unreachable!("clap requires --bundle or --signature with --certificate"),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let verified = rekor::verify_digest(&root, &rule, &digest, &evidence, now).map_err(|f| {
        let hint = match f.step {
            Step::Identity | Step::Issuer => {
                "it is signed, but not by the signer given: check --certificate-identity and \
                 --certificate-oidc-issuer (or --kubernetes-binary)"
            }
            _ => {
                "the file or its signature material was altered, or the trusted root \
                 (--trusted-root) is not the one that signed it"
            }
        };
        let err = SignatureError::Invalid {
            artifact: shown.clone(),
            digest: format!("sha256:{}", hex::encode(digest)),
            step: f.step,
            reason: f.reason,
        };
        AppError::failure(anyhow::Error::new(err), Some(hint.into()))
    })?;
    // A Rekor v2 entry has no integrated time: its signing time is an RFC 3161 timestamp's.
    let when = match evidence.version {
        rekor::EntryVersion::V001 => "integrated",
        rekor::EntryVersion::V002 => "timestamped",
    };
    crate::outln!(
        "verified {shown} (sha256:{}): signed by {} via {}, Rekor log index {}, {when} at {}",
        hex::encode(digest),
        verified.identity,
        verified.issuer,
        verified.log_index,
        verified.integrated_time
    );
    Ok(())
}

/// The signer the certificate must name: the flags', or the built-in dl.k8s.io rule.
fn rule(args: &VerifyBundleArgs) -> Rule {
    if args.kubernetes_binary {
        let builtin = Policy::builtin();
        return builtin
            .rule_for_url("https://dl.k8s.io/release/v1.33.0/bin/linux/amd64/kubeadm")
            .cloned()
            .expect("the built-in policy covers dl.k8s.io");
    }
    Rule::exact(
        "**",
        args.certificate_identity.as_deref().unwrap_or_default(),
        args.certificate_oidc_issuer.as_deref().unwrap_or_default(),
    )
}

/// The artifact's sha256 and how errors name it: `sha256:HEX` when it is a digest's form and no
/// such file exists (the conformance suite's rule), else the file's, hashed as it streams.
fn artifact(arg: &str) -> Result<([u8; 32], String), AppError> {
    let path = Path::new(arg);
    if let Some(hex_text) = arg.strip_prefix("sha256:")
        && !path.exists()
        && let Ok(bytes) = hex::decode(hex_text)
        && let Ok(digest) = <[u8; 32]>::try_from(bytes)
    {
        return Ok((digest, arg.to_owned()));
    }
    let file = std::fs::File::open(path).map_err(|e| {
        AppError::usage(
            anyhow::Error::new(e).context(format!("cannot read the artifact {arg}")),
            Some("pass the signed file, or its digest as sha256:<64 hex digits>".into()),
        )
    })?;
    let digest = crate::image::sha256_of(file).map_err(|e| {
        AppError::failure(
            anyhow::Error::new(e).context(format!("cannot read the artifact {arg}")),
            None,
        )
    })?;
    Ok((digest, arg.to_owned()))
}

/// A material file's bytes, at most [`MATERIAL_LIMIT`].
fn read(path: &Path, what: &'static str) -> Result<Vec<u8>, AppError> {
    use std::io::Read as _;
    let unreadable = |reason: String| {
        AppError::usage(
            anyhow::Error::new(MaterialError::Unreadable {
                what,
                path: path.to_owned(),
                reason,
            }),
            None,
        )
    };
    let file = std::fs::File::open(path).map_err(|e| unreadable(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MATERIAL_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(e.to_string()))?;
    if bytes.len() as u64 > MATERIAL_LIMIT {
        return Err(unreadable(format!(
            "larger than {MATERIAL_LIMIT} bytes, no real one is"
        )));
    }
    Ok(bytes)
}

fn refused(err: MaterialError) -> AppError {
    AppError::failure(
        anyhow::Error::new(err),
        Some(
            "the material was altered, or is not a Sigstore signature of a kind cks-iso \
             verifies (see README, Signatures)"
                .into(),
        ),
    )
}

/// The evidence of a `.sig`/`.cert` pair: the Rekor entry that logs them, looked up as `build`
/// does.
fn looked_up(
    args: &VerifyBundleArgs,
    mut settings: crate::config::Settings,
    digest: &[u8; 32],
    sig_path: &Path,
    cert_path: &Path,
) -> Result<rekor::Evidence, AppError> {
    let sig = read(sig_path, "the signature")?;
    let cert = read(cert_path, "the certificate")?;
    rekor::read_pair(&sig, &cert).map_err(|reason| {
        refused(MaterialError::Pair {
            reason: reason.into(),
        })
    })?;
    settings.http.offline = args.offline;
    let rekor_url = args
        .rekor_url
        .clone()
        .or_else(|| settings.rekor_url.clone())
        .unwrap_or_else(|| crate::trust::rekor::DEFAULT_REKOR_URL.to_owned());
    let rekor_url = rekor_url.trim_end_matches('/').to_owned();
    let cache = net::writable_cache(args.cache_dir.clone())?;
    let client = crate::fetch::build_client(&settings.http)?;
    let fetcher = net::fetcher(&client, &settings, Some(&cache), &());
    let runtime = net::runtime()?;
    let reply = runtime
        .block_on(crate::trust::rekor::entry(
            &rekor_url, &fetcher, digest, &sig, &cert, None,
        ))
        .map_err(|e| {
            let hint = e.hint();
            AppError::failure(
                anyhow::Error::new(e).context("cannot look the signature up in Rekor"),
                hint,
            )
        })?;
    let no_entry = || {
        refused(MaterialError::NoEntry {
            rekor: crate::fetch::redact(&rekor_url),
            digest: hex::encode(digest),
        })
    };
    let reply = reply.ok_or_else(no_entry)?;
    let entries = rekor::entries(&reply).map_err(|_| no_entry())?;
    let entry = entries
        .values()
        .find(|e| rekor::Evidence::logged_by(digest, &sig, &cert, e))
        .ok_or_else(no_entry)?;
    rekor::Evidence::from_rekor(digest, &sig, &cert, entry).map_err(|reason| {
        refused(MaterialError::Pair {
            reason: reason.into(),
        })
    })
}
