//! The downloaded files' signatures in a build, and the policy that judges them (a Kubernetes
//! binary of v1.26 or later is always signed, so a missing signature fails unless `warn`): the Sigstore bundle a publisher ships beside a
//! file (`<file>.sigstore.json`, as `cosign sign-blob --bundle` writes it: Rekor v2 with RFC 3161
//! timestamps, or Rekor v1 with its SET), else dl.k8s.io's `.sig` and `.cert` beside each
//! Kubernetes binary and its Rekor v1 entry, fetched while the file is hashed and verified as a
//! Sigstore bundle, each file retried on its own when its material arrives damaged.
//!
//! A Rekor v2 log has no search: a client cannot find an entry by the file's hash, so a file
//! signed onto Rekor v2 is verifiable only through the bundle its publisher ships. The bundle is
//! looked for first, the pair fetched meanwhile and used only when the bundle is absent (404); a
//! bundle that is there but does not verify fails the build, whatever the pair says.

use std::path::PathBuf;

use futures_util::{StreamExt, stream};

mod hash;
use hash::FileHash;

use crate::contract::SIGNATURES_DIR as DIR;
use crate::fetch::FetchError;
use crate::plan::IsoFile;
use crate::trust::checker::{Checker, CheckerError};
use crate::trust::{self, now};
use crate::upstream::Fetcher;
use cks_iso_sigstore::rekor;
use cks_iso_sigstore::{
    BUNDLE_SUFFIX, BinaryEvidence, BinaryReport, Mode, PairMaterial, SignatureError, Verdict,
};

/// A downloaded file whose signature could not be judged, or was judged bad.
#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    /// The file itself cannot be read for hashing.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file in the work directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Its signature material cannot be fetched.
    #[error("cannot fetch the signature of {artifact}")]
    Fetch {
        /// The file's URL.
        artifact: String,
        /// Why.
        #[source]
        source: FetchError,
    },
    /// The bundle a lock names is neither published nor cached.
    #[error(
        "{artifact}: the bundle the lock names is gone: expected sha256:{locked} (the lock) at \
         {bundle_url}, which {why}"
    )]
    BundleGone {
        /// The file's URL.
        artifact: String,
        /// The bundle's sha256 in the lock.
        locked: String,
        /// Where it was looked for.
        bundle_url: String,
        /// Not published, or not cached offline.
        why: &'static str,
    },
    /// The signature does not verify (or, enforced or required, is missing), as an image's
    /// would fail.
    #[error(transparent)]
    Untrusted(CheckerError),
}

impl BinaryError {
    /// Whether the user's input (a flag, a policy) is at fault rather than the work.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Untrusted(e) if e.is_usage())
    }

    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Read { .. } => None,
            Self::Fetch { source, .. } => source.hint(),
            Self::BundleGone { .. } => Some(
                "build without --locked to take the signature published now (offline, import \
                 the cache the lock was exported with: cache import --locked)"
                    .into(),
            ),
            Self::Untrusted(e) => e.hint(),
        }
    }
}

/// A binary's signature that does not verify (or, enforced or required, is missing).
fn untrusted(err: SignatureError) -> BinaryError {
    BinaryError::Untrusted(CheckerError::Untrusted(err))
}

/// `err` and its causes on one line, as the retry message tells them.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(next) = cause {
        text.push_str(&format!(": {next}"));
        cause = next.source();
    }
    text
}

/// What a signature lookup found for one file.
enum Found {
    /// `.sig`, `.cert` and the Rekor entry reply.
    Signed(Vec<u8>, Vec<u8>, Vec<u8>),
    /// No `.sig`/`.cert` (404, or offline and never seen): why.
    Unsigned(String),
}

/// The most a `.sig` may hold: base64 of one DER signature, about 96 bytes for dl.k8s.io's
/// P-256 signatures (an RSA-4096 one would take 700).
const SIG_LIMIT: u64 = 4 * 1024;
/// The most a `.cert` may hold: base64 of the leaf's PEM, about 2 KiB for dl.k8s.io's Fulcio
/// leaves, under 30 KiB for a certificate at [`cks_iso_sigstore::MAX_CERT_SIZE`] (refused beyond).
const CERT_LIMIT: u64 = 32 * 1024;
/// The most a published bundle may hold (see [`rekor::MAX_BUNDLE_SIZE`]).
const BUNDLE_LIMIT: u64 = rekor::MAX_BUNDLE_SIZE as u64;

/// The `.sig`, `.cert` or bundle beside a file at `url`: the bytes of `named` (the digest a lock
/// names) when the cache has them, else through the mirrors (offline: what the cache last saw);
/// `None` when there is none.
async fn side_file(
    fetcher: &Fetcher<'_>,
    url: &str,
    named: Option<&str>,
    limit: u64,
) -> Result<Option<Vec<u8>>, FetchError> {
    side_file_or_why(fetcher, url, named, limit)
        .await
        .map(Result::ok)
}

/// [`side_file`], saying why there is none: it is not published, or the client is offline and
/// the cache does not hold it.
async fn side_file_or_why(
    fetcher: &Fetcher<'_>,
    url: &str,
    named: Option<&str>,
    limit: u64,
) -> Result<Result<Vec<u8>, &'static str>, FetchError> {
    if let Some(bytes) = named.and_then(|d| trust::rekor::cached(fetcher.store, d)) {
        return Ok(Ok(bytes));
    }
    match fetcher.text(url, limit).await {
        Ok(text) => Ok(Ok(text.into_bytes())),
        Err(e) if e.status() == Some(404) => Ok(Err("is not published")),
        Err(FetchError::Offline { .. }) => Ok(Err("the cache does not hold (--offline)")),
        Err(e) => Err(e),
    }
}

/// How many covered files are checked at once (each with its own requests and its own hashing
/// thread): the three Kubernetes binaries of an architecture together.
const FILES_AT_ONCE: usize = 4;

/// Checks the signature of every downloaded file a policy rule covers by URL (the dl.k8s.io
/// Kubernetes binaries): `.sig`, `.cert` and the Rekor entry, verified as a Sigstore bundle.
/// The files are checked concurrently, each retried on its own; fails, naming the file's URL,
/// digest and the failed step (the first such file in `files`' order), before anything is
/// written.
pub(crate) async fn check_files(
    checker: &Checker,
    fetcher: &Fetcher<'_>,
    kubernetes: &crate::release::KubeVersion,
    files: &[IsoFile],
    entry: &crate::lock::ArchEntry,
    arch: &str,
) -> Result<(Vec<BinaryReport>, Vec<BinaryEvidence>), BinaryError> {
    let covered = files.iter().filter_map(|file| {
        let rule = checker.policy.rule_for_url(&file.source)?;
        let lock_sig = entry
            .files
            .iter()
            .find(|f| f.path == file.dest)
            .and_then(|f| f.signature.as_ref());
        Some(Covered {
            file,
            rule,
            lock_sig,
        })
    });
    let results: Vec<_> = stream::iter(covered)
        .map(|covered| check_file_retrying(checker, fetcher, kubernetes, covered))
        .buffered(FILES_AT_ONCE)
        .collect()
        .await;
    let mut reports = Vec::new();
    let mut evidence = Vec::new();
    for result in results {
        let (report, found) = result?;
        reports.push(report);
        evidence.extend(found);
    }
    reports.sort_by(|a, b| a.path.cmp(&b.path));
    evidence.sort_by(|a, b| a.path.cmp(&b.path));
    let verified = reports
        .iter()
        .filter(|r| r.verdict == Verdict::Verified)
        .count();
    tracing::info!(
        "linux/{arch}: {verified} of {} covered files' signatures verified",
        reports.len()
    );
    Ok((reports, evidence))
}

/// A downloaded file a policy rule covers, with what the lock says of its signature.
#[derive(Clone, Copy)]
struct Covered<'a> {
    file: &'a IsoFile,
    rule: &'a cks_iso_sigstore::Rule,
    lock_sig: Option<&'a crate::lock::FileSignature>,
}

/// [`check_file`], again while it fails in a way that fetching the material again may mend.
async fn check_file_retrying(
    checker: &Checker,
    fetcher: &Fetcher<'_>,
    kubernetes: &crate::release::KubeVersion,
    covered: Covered<'_>,
) -> Result<(BinaryReport, Option<BinaryEvidence>), BinaryError> {
    // Material that fails verification was damaged on the way until proven otherwise (a
    // flipped byte in a .sig): fetched again, within the budget of a 5xx. The file itself is
    // hashed once, whatever the number of attempts.
    // Offline the material comes from the cache: the client's budget allows no re-fetch.
    let mut refetch = fetcher.download.refetch();
    let mut hash = FileHash::new(&covered.file.path);
    loop {
        match check_file(checker, fetcher, kubernetes, covered, &mut hash).await {
            Ok(done) => return Ok(done),
            Err((err, true))
                if refetch
                    .again(&format_args!("{}", chain(&err)), "fetching its signature")
                    .await => {}
            Err((err, _)) => return Err(err),
        }
    }
}

/// The sha256 of `file` ([`FileHash::get`]), a read error as a failure no re-fetch mends.
async fn digest_of(hash: &mut FileHash, file: &IsoFile) -> Result<[u8; 32], Failed> {
    hash.get().await.map_err(|source| {
        let err = BinaryError::Read {
            path: file.path.clone(),
            source,
        };
        (err, false)
    })
}

/// What checking one file gives: its report and, when verified, the evidence the ISO keeps.
type Checked = (BinaryReport, Option<BinaryEvidence>);

/// Why checking one file failed, and whether fetching the material again may help.
type Failed = (BinaryError, bool);

/// A fetch of `artifact`'s signature material that failed, as [`Failed`].
fn fetch_failed(artifact: &str) -> impl Fn(FetchError) -> Failed + '_ {
    move |source| {
        let err = BinaryError::Fetch {
            artifact: artifact.to_owned(),
            source,
        };
        (err, false)
    }
}

/// The signature material published beside a file.
enum Material {
    /// A Sigstore bundle, from its URL.
    Bundle(String, Vec<u8>),
    /// The `.sig` and the `.cert`, each when there.
    Pair(Option<Vec<u8>>, Option<Vec<u8>>),
}

/// Fetches and verifies one covered file's signature (see [`check_files`]); an error says
/// whether fetching the material again may help.
async fn check_file(
    checker: &Checker,
    fetcher: &Fetcher<'_>,
    kubernetes: &crate::release::KubeVersion,
    covered: Covered<'_>,
    hash: &mut FileHash,
) -> Result<Checked, Failed> {
    let (sig, cert) = match material(fetcher, covered).await? {
        Material::Bundle(url, bytes) => {
            return check_bundle(checker, covered, hash, &url, bytes).await;
        }
        Material::Pair(sig, cert) => (sig, cert),
    };
    let file = covered.file;
    let report = BinaryReport {
        path: file.dest.clone(),
        url: file.source.clone(),
        sha256: file.sha256.clone(),
        verdict: Verdict::Unsigned,
        bundle: None,
        signer: None,
    };
    match look_up(checker, fetcher, covered, sig, cert, hash).await? {
        Found::Signed(sig, cert, entry) => {
            verify_pair(checker, covered, hash, (sig, cert, entry), report).await
        }
        Found::Unsigned(why) => {
            unsigned(checker, kubernetes, file, why)?;
            Ok((report, None))
        }
    }
}

/// The material beside the file: the published bundle first, the pair fetched meanwhile (and
/// dropped when the bundle is there); a lock that names the pair keeps to it, so a locked
/// rebuild writes the same ISO.
async fn material(fetcher: &Fetcher<'_>, covered: Covered<'_>) -> Result<Material, Failed> {
    let Covered { file, lock_sig, .. } = covered;
    let fetch_err = fetch_failed(&file.source);
    // The .sig and the .cert together; a failure of the .sig is told first, as it always was.
    let (sig_url, cert_url) = (
        format!("{}.sig", file.source),
        format!("{}.cert", file.source),
    );
    let pair = futures_util::future::join(
        side_file(
            fetcher,
            &sig_url,
            lock_sig.and_then(|s| s.sig.as_deref()),
            SIG_LIMIT,
        ),
        side_file(
            fetcher,
            &cert_url,
            lock_sig.and_then(|s| s.cert.as_deref()),
            CERT_LIMIT,
        ),
    );
    let (sig, cert) = match lock_sig.is_some_and(|s| s.bundle.is_none()) {
        true => pair.await,
        false => {
            let bundle_url = format!("{}{BUNDLE_SUFFIX}", file.source);
            let locked = lock_sig.and_then(|s| s.bundle.as_deref());
            let bundle = side_file_or_why(fetcher, &bundle_url, locked, BUNDLE_LIMIT);
            let (bundle, pair) =
                match futures_util::future::select(std::pin::pin!(bundle), std::pin::pin!(pair))
                    .await
                {
                    futures_util::future::Either::Left((bundle, pair)) => {
                        match bundle.map_err(&fetch_err)? {
                            Ok(bytes) => (Ok(bytes), None),
                            Err(why) => (Err(why), Some(pair.await)),
                        }
                    }
                    futures_util::future::Either::Right((pair, bundle)) => {
                        (bundle.await.map_err(&fetch_err)?, Some(pair))
                    }
                };
            let why = match bundle {
                Ok(bytes) => return Ok(Material::Bundle(bundle_url, bytes)),
                Err(why) => why,
            };
            if let Some(locked) = locked {
                // The pair would give another ISO than the lock's: as for an image's locked
                // signature manifest, a gone bundle fails the locked build.
                let err = BinaryError::BundleGone {
                    artifact: file.source.clone(),
                    locked: locked.to_owned(),
                    bundle_url,
                    why,
                };
                return Err((err, false));
            }
            pair.expect("fetched when there is no bundle")
        }
    };
    Ok(Material::Pair(
        sig.map_err(&fetch_err)?,
        cert.map_err(&fetch_err)?,
    ))
}

/// With a `.sig` and a `.cert`, the Rekor entry that logs them (the file hashed meanwhile);
/// without, why the file counts as unsigned.
async fn look_up(
    checker: &Checker,
    fetcher: &Fetcher<'_>,
    covered: Covered<'_>,
    sig: Option<Vec<u8>>,
    cert: Option<Vec<u8>>,
    hash: &mut FileHash,
) -> Result<Found, Failed> {
    let Covered { file, lock_sig, .. } = covered;
    Ok(match (sig, cert) {
        (Some(sig), Some(cert)) => {
            // Signed: the file is hashed while its Rekor entry is looked up.
            hash.start();
            let digest = hex::decode(&file.sha256).unwrap_or_default();
            let entry = trust::rekor::entry(
                &checker.rekor_url,
                fetcher,
                &digest,
                &sig,
                &cert,
                lock_sig.and_then(|s| s.rekor.as_deref()),
            )
            .await
            .map_err(fetch_failed(&file.source))?;
            match entry {
                Some(entry) => Found::Signed(sig, cert, entry),
                None => {
                    let err = untrusted(SignatureError::Invalid {
                        artifact: file.source.clone(),
                        digest: format!("sha256:{}", file.sha256),
                        step: cks_iso_sigstore::verify::Step::RekorEntry,
                        reason: format!(
                            "{} has no entry that logs this file, signature and certificate",
                            crate::fetch::redact(&checker.rekor_url)
                        ),
                    });
                    return Err((err, true));
                }
            }
        }
        (None, None) => Found::Unsigned("no .sig or .cert beside it".into()),
        (None, Some(_)) => Found::Unsigned("a .cert but no .sig beside it".into()),
        (Some(_), None) => Found::Unsigned("a .sig but no .cert beside it".into()),
    })
}

/// An unsigned file: refused under `enforce`, or when it is a Kubernetes binary of a release
/// that signs every one (unless `warn`); else recorded as unsigned with a warning.
fn unsigned(
    checker: &Checker,
    kubernetes: &crate::release::KubeVersion,
    file: &IsoFile,
    why: String,
) -> Result<(), Failed> {
    let artifact = &file.source;
    let kube_binary = artifact.starts_with("https://dl.k8s.io/release/");
    let always_signed = kube_binary
        && kubernetes.major == 1
        && kubernetes.minor >= cks_iso_sigstore::ALWAYS_SIGNED_SINCE_MINOR;
    // `warn` lets a withheld signature pass with the warning below.
    let required = always_signed && checker.mode != Mode::Warn;
    if checker.mode == Mode::Enforce || required {
        let why = match required {
            true => format!("{why}, and Kubernetes v{kubernetes} binaries are always signed"),
            false => format!("{why} (--signatures enforce)"),
        };
        let err = untrusted(SignatureError::UnsignedFile {
            artifact: artifact.clone(),
            digest: format!("sha256:{}", file.sha256),
            why,
        });
        return Err((err, false));
    }
    let hint = match always_signed {
        true => "though upstream signs every copy; recorded as unsigned (--signatures warn)",
        false => "recorded as unsigned (--signatures enforce refuses it)",
    };
    tracing::warn!("{artifact}: UNSIGNED: {why}; {hint}");
    Ok(())
}

/// Verifies the file against its `.sig`, `.cert` and Rekor entry (`signed`), offline, and
/// turns them into the bundle the ISO keeps.
async fn verify_pair(
    checker: &Checker,
    covered: Covered<'_>,
    hash: &mut FileHash,
    signed: (Vec<u8>, Vec<u8>, Vec<u8>),
    mut report: BinaryReport,
) -> Result<Checked, Failed> {
    let Covered { file, rule, .. } = covered;
    let (sig, cert, entry) = signed;
    let digest = hex::decode(&file.sha256).unwrap_or_default();
    let invalid = |step, reason| {
        let err = untrusted(SignatureError::Invalid {
            artifact: file.source.clone(),
            digest: format!("sha256:{}", file.sha256),
            step,
            reason,
        });
        (err, true)
    };
    let map = rekor::entries(&entry)
        .map_err(|e| invalid(cks_iso_sigstore::verify::Step::RekorEntry, e.into()))?;
    let logged = map
        .values()
        .find(|e| rekor::Evidence::logged_by(&digest, &sig, &cert, e))
        .ok_or_else(|| {
            invalid(
                cks_iso_sigstore::verify::Step::RekorEntry,
                "the Rekor entry does not log this file, signature and certificate".into(),
            )
        })?;
    let ev = rekor::Evidence::from_rekor(&digest, &sig, &cert, logged)
        .map_err(|e| invalid(cks_iso_sigstore::verify::Step::LayerIntegrity, e.into()))?;
    let file_digest = digest_of(hash, file).await?;
    let verified = rekor::verify_digest(&checker.root, rule, &file_digest, &ev, now())
        .map_err(|f| invalid(f.step, f.reason))?;
    report.verdict = Verdict::Verified;
    report.bundle = Some(format!("{DIR}/{}", BinaryEvidence::bundle_path(&file.dest)));
    report.signer = Some(cks_iso_sigstore::Signer::from(&verified));
    let evidence = BinaryEvidence {
        path: file.dest.clone(),
        bundle: ev.bundle(),
        pair: Some(PairMaterial { sig, cert, entry }),
    };
    Ok((report, Some(evidence)))
}

/// Verifies one covered file against the bundle published beside it at `bundle_url` (offline:
/// an entry of Rekor v2 by its inclusion proof, checkpoint and RFC 3161 timestamps, or of Rekor
/// v1 with its SET), under the file's policy rule. The bundle goes into the ISO byte for byte.
async fn check_bundle(
    checker: &Checker,
    covered: Covered<'_>,
    hash: &mut FileHash,
    bundle_url: &str,
    bytes: Vec<u8>,
) -> Result<(BinaryReport, Option<BinaryEvidence>), (BinaryError, bool)> {
    let Covered { file, rule, .. } = covered;
    hash.start();
    let invalid = |step, reason: String| {
        let err = untrusted(SignatureError::Invalid {
            artifact: file.source.clone(),
            digest: format!("sha256:{}", file.sha256),
            step,
            reason: format!("{reason} (in the bundle {bundle_url})"),
        });
        (err, true)
    };
    let ev = rekor::Evidence::from_bundle(&bytes).map_err(|e| {
        invalid(
            cks_iso_sigstore::verify::Step::LayerIntegrity,
            format!("not a Sigstore bundle cks-iso reads: {e}"),
        )
    })?;
    let file_digest = digest_of(hash, file).await?;
    let verified = rekor::verify_digest(&checker.root, rule, &file_digest, &ev, now())
        .map_err(|f| invalid(f.step, f.reason))?;
    tracing::debug!(
        "{}: verified by the bundle {bundle_url} (hashedrekord {})",
        file.source,
        ev.version.as_str()
    );
    let report = BinaryReport {
        path: file.dest.clone(),
        url: file.source.clone(),
        sha256: file.sha256.clone(),
        verdict: Verdict::Verified,
        bundle: Some(format!("{DIR}/{}", BinaryEvidence::bundle_path(&file.dest))),
        signer: Some(cks_iso_sigstore::Signer::from(&verified)),
    };
    let evidence = BinaryEvidence {
        path: file.dest.clone(),
        pair: None,
        bundle: bytes,
    };
    Ok((report, Some(evidence)))
}
