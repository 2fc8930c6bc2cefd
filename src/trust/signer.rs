//! Who signed an ISO, as `diff` and `upgrade-check` show it: the signature beside the ISO
//! (`<iso>.sigstore.json`, else cosign's `<iso>.sig`) read and checked with the verifier `verify
//! --iso-signature` uses, but against no expected signer. A certificate bundle is checked
//! against the trusted root for the identity and issuer its own certificate names (chain, SCT,
//! log entry, signature over the ISO's SHA-256); a key signature under the public keys given
//! (`--key`), else only its digest is compared with the ISO's and its key named by the
//! fingerprint the bundle carries.
//!
//! Its own module beside [`super::sign`] so that showing a signer never becomes a second way of
//! accepting one: nothing here decides that an ISO may be registered ([`super::sign::Signers`]
//! does); it says what the signature shows, and that a signature which does not verify does not.

use std::cell::OnceCell;
use std::path::Path;

use cks_iso_sigstore::keyed::{self, KeySignature};
use cks_iso_sigstore::rekor::Evidence;
use cks_iso_sigstore::{Identity, Issuer};
use cks_iso_sigstore::{Rule, TrustedRoot};

use super::sign::{self, BUNDLE_SUFFIX, SIG_SUFFIX, SignError, TrustedKey};
use crate::diff::{Signature, SignatureStatus, SignerKind};

/// The largest `.sig` read: base64 of a DER ECDSA signature is under 100 bytes.
const MAX_SIG_SIZE: u64 = 64 * 1024;

/// What an ISO's signature is checked with: the public keys given and the trusted root.
#[derive(Debug)]
pub struct SignerView {
    keys: Vec<TrustedKey>,
    root: OnceCell<TrustedRoot>,
}

impl SignerView {
    /// Keys to check key signatures with, and the root for certificate bundles (`None`: the
    /// embedded public-good root, read when a certificate bundle is first met).
    pub fn new(keys: Vec<TrustedKey>, root: Option<TrustedRoot>) -> Self {
        let cell = OnceCell::new();
        if let Some(root) = root {
            let _ = cell.set(root);
        }
        Self { keys, root: cell }
    }

    fn root(&self) -> Result<&TrustedRoot, super::TrustError> {
        if let Some(root) = self.root.get() {
            return Ok(root);
        }
        let (root, _) = super::trusted_root(None, None)?;
        Ok(self.root.get_or_init(|| root))
    }

    /// The signature beside `iso`, checked; an error only when the ISO cannot be read to be
    /// hashed (a signature that cannot be read is [`SignatureStatus::Invalid`]).
    pub fn of(&self, iso: &Path) -> Result<Signature, SignError> {
        let bundle = sign::beside(iso, BUNDLE_SUFFIX);
        let sig = sign::beside(iso, SIG_SUFFIX);
        let (path, is_sig, bytes) = match sign::read_bundle(&bundle) {
            Ok(bytes) => (bundle, false, Ok(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match read_sig(&sig) {
                Ok(text) => (sig, true, Ok(text)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(Signature::unsigned());
                }
                Err(e) => (sig, true, Err(e)),
            },
            Err(e) => (bundle, false, Err(e)),
        };
        let file = path.display().to_string();
        let bytes = match bytes {
            Ok(bytes) => bytes,
            Err(e) => return Ok(invalid(&file, None, None, format!("cannot read it: {e}"))),
        };
        let digest = sign::hash(iso)?;
        if !is_sig && let Err(e) = serde_json::from_slice::<serde_json::Value>(&bytes) {
            return Ok(invalid(&file, None, None, format!("not JSON: {e}")));
        }
        Ok(match is_sig {
            true => self.detached(&file, &bytes, &digest),
            false if keyed::is_key_bundle(&bytes) => self.key_bundle(&file, &bytes, &digest),
            false => self.certificate_bundle(&file, &bytes, &digest),
        })
    }

    /// A key bundle: verified under a key given, else its digest and key hint read.
    fn key_bundle(&self, file: &str, bytes: &[u8], digest: &[u8; 32]) -> Signature {
        let sig = match keyed::read_key_bundle(bytes) {
            Ok(sig) => sig,
            Err(e) => return invalid(file, Some(SignerKind::Key), None, e.to_string()),
        };
        let named = sig
            .hint
            .as_ref()
            .map(|h| format!("sha256:{}", hex::encode(h)));
        if let Some(key) = self.verifying_key(digest, &sig) {
            let mut found = verified_key(file, key);
            if sig.entry.is_some() {
                let logged = match self.root() {
                    Ok(root) => sign::logged_at(root, key, digest, &sig).map_err(|e| e.to_string()),
                    Err(why) => Err(why.to_string()),
                };
                match logged {
                    Ok(t) => found.time = t.map(cks_iso_io::date::rfc3339),
                    Err(why) => {
                        found.status = SignatureStatus::Invalid;
                        found.reason = Some(why);
                    }
                }
            }
            return found;
        }
        let mut found = key_signature(file, named.clone());
        let hinted = self
            .keys
            .iter()
            .find(|k| Some(keyed::fingerprint(&k.spki)) == named);
        if let Some(key) = hinted {
            let why = keyed::verify_key_signature(&key.spki, digest, &sig)
                .expect_err("no key verified it");
            found.status = SignatureStatus::Invalid;
            found.reason = Some(why.to_string());
            return found;
        }
        if sig.digest != digest {
            found.status = SignatureStatus::Invalid;
            found.reason = Some(format!(
                "it signs sha256:{}, the ISO hashes to sha256:{}",
                hex::encode(&sig.digest),
                hex::encode(digest)
            ));
            return found;
        }
        found.reason = Some(self.no_key_words(named.is_some()));
        found
    }

    /// cosign's `.sig` alone: it names no key, so only a key given can check it.
    fn detached(&self, file: &str, bytes: &[u8], digest: &[u8; 32]) -> Signature {
        use base64::Engine as _;
        let text = String::from_utf8_lossy(bytes);
        let Ok(signature) = base64::engine::general_purpose::STANDARD.decode(text.trim()) else {
            return invalid(file, Some(SignerKind::Key), None, "it is not base64".into());
        };
        let sig = KeySignature {
            digest: digest.to_vec(),
            signature,
            hint: None,
            entry: None,
        };
        if let Some(key) = self.verifying_key(digest, &sig) {
            return verified_key(file, key);
        }
        let mut found = key_signature(file, None);
        found.reason = Some(self.no_key_words(false));
        found
    }

    fn verifying_key(&self, digest: &[u8; 32], sig: &KeySignature) -> Option<&TrustedKey> {
        (self.keys.iter()).find(|k| keyed::verify_key_signature(&k.spki, digest, sig).is_ok())
    }

    fn no_key_words(&self, named: bool) -> String {
        match (self.keys.is_empty(), named) {
            (true, _) => "no public key was given to check it with (pass --key PUB)".into(),
            (false, true) => format!(
                "it is not one of the keys given ({}): pass its public key with --key",
                self.key_list()
            ),
            (false, false) => format!(
                "it verifies under none of the keys given ({}): another key signed it, or it \
                 was altered",
                self.key_list()
            ),
        }
    }

    fn key_list(&self) -> String {
        let all: Vec<String> = self.keys.iter().map(TrustedKey::describe).collect();
        all.join(", ")
    }

    /// A certificate bundle: checked against the root for the signer its certificate names.
    fn certificate_bundle(&self, file: &str, bytes: &[u8], digest: &[u8; 32]) -> Signature {
        let kind = Some(SignerKind::Certificate);
        let evidence = match Evidence::from_bundle(bytes) {
            Ok(e) => e,
            Err(e) => return invalid(file, kind, None, e.to_string()),
        };
        let Some((identity, issuer)) = keyed::certificate_signer(&evidence.leaf) else {
            return invalid(
                file,
                kind,
                None,
                "its certificate names no identity or no OIDC issuer".into(),
            );
        };
        let mut found = Signature {
            file: Some(file.to_owned()),
            kind,
            signer: Some(format!("{identity} via {issuer}")),
            identity: Some(identity.clone()),
            issuer: Some(issuer.clone()),
            ..Signature::unsigned()
        };
        let root = match self.root() {
            Ok(root) => root,
            Err(why) => {
                found.status = SignatureStatus::Invalid;
                found.reason = Some(why.to_string());
                return found;
            }
        };
        let rule = Rule {
            pattern: "**".into(),
            identity: Identity::Exact(identity),
            issuer: Issuer::Exact(issuer),
        };
        match cks_iso_sigstore::rekor::verify_digest(root, &rule, digest, &evidence, super::now()) {
            Ok(v) => {
                found.status = SignatureStatus::Verified;
                found.time = Some(cks_iso_io::date::rfc3339(v.integrated_time));
            }
            Err(f) => {
                found.status = SignatureStatus::Invalid;
                found.reason = Some(format!("fails the {} check: {}", f.step.name(), f.reason));
            }
        }
        found
    }
}

fn read_sig(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_SIG_SIZE + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SIG_SIZE {
        return Err(std::io::Error::other(format!(
            "larger than the {MAX_SIG_SIZE} bytes a .sig may weigh"
        )));
    }
    Ok(bytes)
}

/// A key signature not (yet) checked: the key it names, if any.
fn key_signature(file: &str, key: Option<String>) -> Signature {
    Signature {
        status: SignatureStatus::Unverified,
        file: Some(file.to_owned()),
        kind: Some(SignerKind::Key),
        signer: Some(match &key {
            Some(k) => format!("the key {k}"),
            None => "a key (a .sig names none)".to_owned(),
        }),
        key,
        ..Signature::unsigned()
    }
}

fn verified_key(file: &str, key: &TrustedKey) -> Signature {
    Signature {
        status: SignatureStatus::Verified,
        file: Some(file.to_owned()),
        kind: Some(SignerKind::Key),
        signer: Some(key.describe()),
        key: Some(keyed::fingerprint(&key.spki)),
        ..Signature::unsigned()
    }
}

fn invalid(file: &str, kind: Option<SignerKind>, signer: Option<String>, why: String) -> Signature {
    Signature {
        status: SignatureStatus::Invalid,
        file: Some(file.to_owned()),
        kind,
        signer,
        reason: Some(why),
        ..Signature::unsigned()
    }
}
