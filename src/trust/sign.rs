//! The ISOs cks-iso writes, signed and judged: `cks-iso sign` and `build --sign-key` sign an
//! ISO's SHA-256 with the operator's key and write, beside it, a Sigstore bundle v0.3
//! (`<iso>.sigstore.json`, a public-key hint, no certificate) and cosign's `<iso>.sig` (base64
//! of the DER ECDSA signature, which `openssl dgst -sha256 -verify` and `cosign verify-blob`
//! accept); `verify --iso-signature` and `register` judge that bundle against the signers the
//! operator trusts ([`Signers`]: public keys, or identity rules in the image signature policy
//! language), offline. A key signature entered in Rekor (`--tlog`) carries its entry in the
//! bundle, and that entry is judged against the trusted root too.
//!
//! Its own module so that building, verifying and registering share one reading of "signed by
//! whom the operator trusts", and so that the build pipeline needs one call after the ISOs exist.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use cks_iso_sigstore::keyed::{self, SigningKey};
use cks_iso_sigstore::rekor::{Evidence, MAX_BUNDLE_SIZE};
use cks_iso_sigstore::{Identity, Issuer};
use cks_iso_sigstore::{Policy, TrustedRoot};

use crate::atomic::AtomicFile;

/// The bundle beside an ISO.
pub const BUNDLE_SUFFIX: &str = ".sigstore.json";
/// cosign's detached signature beside an ISO.
pub const SIG_SUFFIX: &str = ".sig";

/// The largest key or policy file read: a PEM key is a few hundred bytes.
pub(super) const MAX_KEY_SIZE: u64 = 64 * 1024;

/// `<iso><suffix>`.
pub fn beside(iso: &Path, suffix: &str) -> PathBuf {
    let mut name = iso.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The trusted root ISO signatures are judged against (a keyless one's certificate and log
/// entry, a key signature's log entry when it was entered in Rekor with `--tlog`): `flag`, else
/// `file` (the configuration's), else the embedded public-good root; logged only when a rule
/// may need it, so that a check by keys alone says nothing of roots.
pub fn root_for(
    signers: &Signers,
    flag: Option<&Path>,
    file: Option<&Path>,
) -> Result<TrustedRoot, super::TrustError> {
    match signers.rules {
        Some(_) => Ok(super::trusted_root(flag, file)?.0),
        None => Ok(super::read_trusted_root(flag, file)?.0),
    }
}

/// Why an ISO cannot be signed, or signers cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// A key or policy file cannot be read.
    #[error("cannot read {what} {}", path.display())]
    Unreadable {
        /// What it was to hold.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A key file holds no key cks-iso can use.
    #[error("{what} {}: {reason}", path.display())]
    Key {
        /// `the signing key` or `the public key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What it holds instead.
        reason: String,
    },
    /// A cosign encrypted key, and no password for it: `COSIGN_PASSWORD` unset and no terminal
    /// to ask on (`source` none), or the terminal could not be read.
    #[error("the signing key {}: a cosign encrypted key, and {}", path.display(), if source.is_some() { "its password could not be read" } else { "no password to open it: COSIGN_PASSWORD is unset and stdin is not a terminal to ask on" })]
    Password {
        /// The key file.
        path: PathBuf,
        /// Why the terminal could not be read.
        #[source]
        source: Option<std::io::Error>,
    },
    /// The signer policy file is not a policy.
    #[error("signer policy {}: {reason}", path.display())]
    Policy {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The signer flags do not name a signer.
    #[error("{message}")]
    Flags {
        /// What is wrong.
        message: String,
        /// What to pass instead.
        hint: Option<String>,
    },
    /// The ISO cannot be read to be hashed.
    #[error("cannot read {}", path.display())]
    Iso {
        /// The ISO.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Fulcio or Rekor refused, or could not be reached, while signing keyless.
    #[error("{service} at {url} {}: {reason}", status.map_or_else(|| "could not be asked".to_owned(), |s| format!("answered HTTP {s}")))]
    Service {
        /// `Fulcio` or `Rekor`.
        service: &'static str,
        /// Its URL (without credentials).
        url: String,
        /// The status it answered, if it answered.
        status: Option<u16>,
        /// What it said, or why it could not be asked.
        reason: String,
    },
    /// The bundle keyless signing made does not verify against the trusted root: not written.
    #[error("the signature of {} does not verify against the trusted root, so no bundle was written: {reason}", iso.display())]
    Unverifiable {
        /// The ISO.
        iso: PathBuf,
        /// The check that failed.
        reason: String,
    },
    /// The signature files cannot be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// What to do about a cosign encrypted key that could not be opened.
const PASSWORD_HINT: &str = "set COSIGN_PASSWORD to the password the key was made with (`cosign \
     generate-key-pair` asked for it; set and empty for none), or type it when cks-iso asks on a \
     terminal";

impl SignError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Unreadable { path, source, what } => crate::input::hint(source, path, what),
            Self::Password { .. } => Some(PASSWORD_HINT.into()),
            Self::Key { reason, .. } if reason.contains("cosign encrypted key") => {
                Some(PASSWORD_HINT.into())
            }
            Self::Key { what, .. } => Some(format!(
                "pass {what} as PEM: a PKCS #8 (PRIVATE KEY) or SEC 1 (EC PRIVATE KEY) ECDSA \
                 P-256 key to sign with, a PUBLIC KEY to verify with"
            )),
            Self::Policy { .. } => Some(
                "a signer policy has keys: (public key files) and/or rules: (match, identity or \
                 identity-regex, issuer or issuer-regex; see docs/guide/signatures.md)"
                    .into(),
            ),
            Self::Flags { hint, .. } => hint.clone(),
            Self::Service {
                service: "Fulcio",
                status: Some(400 | 401 | 403),
                ..
            } => Some(
                "Fulcio did not accept the identity token: pass a fresh one (audience sigstore)                  from an issuer that Fulcio trusts, with --identity-token or SIGSTORE_ID_TOKEN"
                    .into(),
            ),
            Self::Service { service, .. } => Some(format!(
                "check that {service} is reachable, or name another with --signing-config,                  --fulcio-url or --rekor-url"
            )),
            Self::Unverifiable { .. } => Some(
                "the trusted root (--trusted-root, or the configuration's trusted-root:) must                  name the Fulcio and Rekor that signed: pass the root of that Sigstore instance"
                    .into(),
            ),
            Self::Iso { .. } | Self::Write { .. } => None,
        }
    }

    /// A usage error (a file the user named is not what it should be) rather than a failure.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::Unreadable { .. }
                | Self::Key { .. }
                | Self::Password { .. }
                | Self::Policy { .. }
                | Self::Flags { .. }
        )
    }
}

/// Signs the ISO at `iso` whose SHA-256 is `sha256_hex` (as its writer computed it): writes
/// `<iso>.sig` and `<iso>.sigstore.json`, each complete or not at all. Offline: no log entry
/// (`--tlog` signs through `keyless::KeyLog`).
pub fn sign_iso(iso: &Path, sha256_hex: &str, key: &SigningKey) -> Result<(), SignError> {
    let digest: [u8; 32] = hex::decode(sha256_hex)
        .ok()
        .and_then(|d| d.try_into().ok())
        .expect("the writer's sha256 is 64 hex digits");
    let start = std::time::Instant::now();
    let signature = key.sign_digest(&digest);
    write_signature(iso, &digest, &signature, key.public_spki(), None)?;
    tracing::info!(
        "signed {} with the key {} ({:.3} s)",
        iso.display(),
        keyed::fingerprint(key.public_spki()),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Writes a key signature beside `iso`: cosign's `<iso>.sig` and the bundle, with the Rekor
/// `entry` that logged it when there is one.
pub fn write_signature(
    iso: &Path,
    digest: &[u8; 32],
    signature: &[u8],
    spki: &[u8],
    entry: Option<&cks_iso_sigstore::rekor::Entry>,
) -> Result<(), SignError> {
    let sig_text = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(signature)
    };
    let bundle = keyed::key_bundle(digest, signature, spki, entry);
    for (suffix, bytes) in [(SIG_SUFFIX, sig_text.as_bytes()), (BUNDLE_SUFFIX, &bundle)] {
        write_beside(iso, suffix, bytes)?;
    }
    Ok(())
}

/// Writes `<iso><suffix>` whole or not at all, readable by all as the ISO is (public material,
/// published beside it).
pub fn write_beside(iso: &Path, suffix: &str, bytes: &[u8]) -> Result<(), SignError> {
    let path = beside(iso, suffix);
    let write = |path: &Path| -> std::io::Result<()> {
        let mut file = AtomicFile::create(path)?;
        file.file().write_all(bytes)?;
        file.set_mode(0o644)?;
        file.commit()?;
        Ok(())
    };
    write(&path).map_err(|source| SignError::Write { path, source })
}

/// Signs ISOs already written (`cks-iso sign`): each is read once to be hashed.
pub fn sign_files(isos: &[PathBuf], key: &SigningKey) -> Result<(), SignError> {
    for iso in isos {
        let digest = hash(iso)?;
        sign_iso(iso, &hex::encode(digest), key)?;
    }
    Ok(())
}

/// The SHA-256 of the file at `iso`, read once as it streams.
pub fn hash(iso: &Path) -> Result<[u8; 32], SignError> {
    let err = |source| SignError::Iso {
        path: iso.to_owned(),
        source,
    };
    let file = std::fs::File::open(iso).map_err(err)?;
    cks_iso_oci::image::sha256_of(std::io::BufReader::with_capacity(1 << 20, file)).map_err(err)
}

/// One public key the operator trusts.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    /// Its DER SubjectPublicKeyInfo.
    pub spki: Vec<u8>,
    /// The file it came from, as given.
    pub path: PathBuf,
}

impl TrustedKey {
    /// How messages name it: `the key sha256:… (iso.pub)`.
    pub fn describe(&self) -> String {
        format!(
            "the key {} ({})",
            keyed::fingerprint(&self.spki),
            self.path.display()
        )
    }
}

/// Who may have signed an ISO: any of the keys, or (for a keyless bundle) the identity rule
/// covering the ISO's file name.
#[derive(Debug, Clone)]
pub struct Signers {
    /// Public keys.
    pub keys: Vec<TrustedKey>,
    /// Identity rules, matched against the ISO's file name.
    pub rules: Option<Policy>,
}

/// The signer flags and file, read: `None` when none is given.
#[derive(Debug, Default)]
pub struct SignerFlags<'a> {
    /// `--key`, repeatable.
    pub keys: &'a [PathBuf],
    /// `--certificate-identity`.
    pub identity: Option<&'a str>,
    /// `--certificate-identity-regexp`.
    pub identity_regexp: Option<&'a str>,
    /// `--certificate-oidc-issuer`.
    pub issuer: Option<&'a str>,
    /// `--certificate-oidc-issuer-regexp`.
    pub issuer_regexp: Option<&'a str>,
    /// `--signer-policy` (else the configuration's `iso-signer-policy:`).
    pub policy: Option<&'a Path>,
}

fn public_key(path: &Path) -> Result<TrustedKey, SignError> {
    let text = crate::input::read_private_text(path, MAX_KEY_SIZE).map_err(|source| {
        SignError::Unreadable {
            what: "the public key",
            path: path.to_owned(),
            source,
        }
    })?;
    let spki = keyed::public_key_from_pem(&text).map_err(|e| SignError::Key {
        what: "the public key",
        path: path.to_owned(),
        reason: e.into(),
    })?;
    Ok(TrustedKey {
        spki,
        path: path.to_owned(),
    })
}

/// The signers `flags` name; `None` when they name none. A usage error when an identity comes
/// without its issuer (or the other way round) or a regexp does not compile.
pub fn signers(flags: &SignerFlags<'_>) -> Result<Option<Signers>, SignError> {
    let mut keys = flags
        .keys
        .iter()
        .map(|p| public_key(p))
        .collect::<Result<Vec<_>, _>>()?;
    let identity = match (flags.identity, flags.identity_regexp) {
        (Some(exact), _) => Some(Identity::Exact(exact.to_owned())),
        (None, Some(re)) => Some(Identity::Regex(regex::Regex::new(re).map_err(|e| {
            SignError::Flags {
                message: format!("--certificate-identity-regexp {re:?} is not a regexp: {e}"),
                hint: None,
            }
        })?)),
        (None, None) => None,
    };
    let issuer = Issuer::new(flags.issuer, flags.issuer_regexp)
        .transpose()
        .map_err(|e| SignError::Flags {
            message: format!(
                "--certificate-oidc-issuer-regexp {:?} is not a regexp: {e}",
                flags.issuer_regexp.unwrap_or_default()
            ),
            hint: None,
        })?;
    let mut rules = match (identity, issuer) {
        (Some(identity), Some(issuer)) => Some(Policy::one(identity, issuer)),
        (None, None) => None,
        _ => {
            return Err(SignError::Flags {
                message: "an identity without an issuer, or an issuer without an identity: a \
                          keyless signer is both"
                    .into(),
                hint: Some(
                    "pass --certificate-oidc-issuer (or --certificate-oidc-issuer-regexp) with \
                     --certificate-identity (or --certificate-identity-regexp)"
                        .into(),
                ),
            });
        }
    };
    if let Some(path) = flags.policy {
        let (file_keys, file_rules) = policy_file(path)?;
        keys.extend(file_keys);
        if rules.is_none() && !file_rules.rules().is_empty() {
            rules = Some(file_rules);
        }
    }
    Ok((!keys.is_empty() || rules.is_some()).then_some(Signers { keys, rules }))
}

fn policy_file(path: &Path) -> Result<(Vec<TrustedKey>, Policy), SignError> {
    let text = crate::input::read_private_text(path, MAX_KEY_SIZE).map_err(|source| {
        SignError::Unreadable {
            what: "the signer policy",
            path: path.to_owned(),
            source,
        }
    })?;
    let (key_files, rules) = Policy::for_isos(&text).map_err(|e| SignError::Policy {
        path: path.to_owned(),
        reason: e.into(),
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let keys = key_files
        .iter()
        .map(|k| public_key(&base.join(k)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((keys, rules))
}

/// Who signed an ISO, as its bundle shows once verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// `the key sha256:… (iso.pub)` or `me@example.org via https://issuer`.
    pub signer: String,
    /// When, if something the root trusts vouches for it (a log entry or a timestamp).
    pub when: Option<i64>,
}

/// Why an ISO's signature is refused: what was found, what was expected, why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {reason}; signer found: {found}; expected: {expected}", iso.display())]
pub struct Refused {
    /// The ISO.
    pub iso: PathBuf,
    /// The signer the bundle shows, as far as it can be told.
    pub found: String,
    /// The signers the operator trusts.
    pub expected: String,
    /// Why.
    pub reason: String,
}

impl Signers {
    /// The trusted signers, for messages.
    pub fn describe(&self) -> String {
        let mut all: Vec<String> = self.keys.iter().map(TrustedKey::describe).collect();
        if let Some(p) = &self.rules {
            all.extend(p.rules().iter().map(|r| {
                format!(
                    "{} via {} (for {})",
                    r.identity.describe(),
                    r.issuer.describe(),
                    r.pattern
                )
            }));
        }
        all.join(" or ")
    }

    /// Judges the bundle beside `iso` (whose SHA-256 is `digest`) offline: a key bundle against
    /// the keys, a certificate bundle against the rule covering the ISO's file name and `root`.
    pub fn check(
        &self,
        iso: &Path,
        digest: &[u8; 32],
        root: &TrustedRoot,
        now: i64,
    ) -> Result<Signed, Refused> {
        let refuse = |found: &str, reason: String| Refused {
            iso: iso.to_owned(),
            found: found.to_owned(),
            expected: self.describe(),
            reason,
        };
        let path = beside(iso, BUNDLE_SUFFIX);
        let bytes = match read_bundle(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(refuse(
                    "none",
                    format!("no signature beside it ({} does not exist)", path.display()),
                ));
            }
            Err(e) => {
                return Err(refuse(
                    "none",
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
        };
        if keyed::is_key_bundle(&bytes) {
            let sig = keyed::read_key_bundle(&bytes)
                .map_err(|e| refuse("unknown", format!("{}: {e}", path.display())))?;
            let found = match &sig.hint {
                Some(h) => format!("a key whose SHA-256 is sha256:{}", hex::encode(h)),
                None => "a key (the bundle gives no hint)".into(),
            };
            if self.keys.is_empty() {
                return Err(refuse(
                    &found,
                    "signed with a key, and no key is trusted".into(),
                ));
            }
            let mut reasons = Vec::new();
            for key in &self.keys {
                match keyed::verify_key_signature(&key.spki, digest, &sig) {
                    Ok(()) => {
                        let when = logged_at(root, key, digest, &sig)
                            .map_err(|e| refuse(&key.describe(), e.to_string()))?;
                        return Ok(Signed {
                            signer: key.describe(),
                            when,
                        });
                    }
                    Err(e) => reasons.push(e.to_string()),
                }
            }
            return Err(refuse(&found, reasons.join("; ")));
        }
        let evidence = Evidence::from_bundle(&bytes)
            .map_err(|e| refuse("unknown", format!("{}: {e}", path.display())))?;
        let name = iso
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let found = match keyed::certificate_signer(&evidence.leaf) {
            Some((identity, issuer)) => format!("a Fulcio certificate for {identity} via {issuer}"),
            None => "a Fulcio certificate".to_owned(),
        };
        let Some(rule) = self.rules.as_ref().and_then(|p| p.rule_for(&name)) else {
            return Err(refuse(&found, format!("no identity rule covers {name:?}")));
        };
        match cks_iso_sigstore::rekor::verify_digest(root, rule, digest, &evidence, now) {
            Ok(v) => Ok(Signed {
                signer: format!("{} via {}", v.identity, v.issuer),
                when: Some(v.integrated_time),
            }),
            Err(f) => Err(refuse(
                &found,
                format!("fails the {} check: {}", f.step.name(), f.reason),
            )),
        }
    }
}

/// Why a key signature's Rekor entry is refused: the check of the entry that failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("its Rekor entry (index {index}) fails the {} check: {}", failure.step.name(), failure.reason)]
pub struct EntryRefused {
    /// The entry's log index.
    pub index: i64,
    /// The check that failed, and what it found.
    pub failure: cks_iso_sigstore::verify::Failure,
}

/// When the log entry of a key signature `sig` (verified under `key`) says it was made, once the
/// entry is proven against `root`; `None` for a signature that was never logged. A bundle from a
/// log the root does not name, or whose entry logs another hash, signature or key, is refused.
pub(super) fn logged_at(
    root: &TrustedRoot,
    key: &TrustedKey,
    digest: &[u8; 32],
    sig: &keyed::KeySignature,
) -> Result<Option<i64>, EntryRefused> {
    let Some(entry) = &sig.entry else {
        return Ok(None);
    };
    cks_iso_sigstore::rekor::verify_key_entry(root, &key.spki, digest, &sig.signature, entry)
        .map(Some)
        .map_err(|failure| EntryRefused {
            index: entry.log_index,
            failure,
        })
}

pub(super) fn read_bundle(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_BUNDLE_SIZE as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() > MAX_BUNDLE_SIZE {
        return Err(std::io::Error::other(format!(
            "larger than the {MAX_BUNDLE_SIZE} bytes a bundle may weigh"
        )));
    }
    Ok(bytes)
}

/// A signing time for messages: RFC 3339 UTC, or what stands for it when nothing vouches.
pub fn when(t: Option<i64>) -> String {
    let Some(t) = t else {
        return "at no time vouched for (a key signature with no log entry)".into();
    };
    format!("at {}", cks_iso_io::date::rfc3339(t))
}

#[cfg(test)]
mod tests {
    #[test]
    fn signing_times_read_as_rfc_3339() {
        assert_eq!(super::when(Some(0)), "at 1970-01-01T00:00:00Z");
        assert_eq!(super::when(Some(1_765_000_000)), "at 2025-12-06T05:46:40Z");
        assert!(super::when(None).contains("no time"));
    }
}
