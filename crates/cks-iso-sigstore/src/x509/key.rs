//! Public keys and the signatures they verify, on `ring` (and RustCrypto's `p256`/`p384` for a
//! digest signed while a file streamed): the ECDSA P-256/P-384 and Ed25519 keys of Sigstore's
//! logs and Fulcio, and the RSA keys some certificate authorities and timestamp authorities use.
//! A signature is checked under the algorithm its signer names, never under another.

use super::der::{self, Reader};
use crate::Invalid;

const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 2, 1];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 3, 1, 7];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0, 0x22];
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];
/// `1.2.840.113549.1.1.1`: rsaEncryption.
pub(crate) const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 1, 1];
const OID_ECDSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 4, 3, 2];
const OID_ECDSA_SHA384: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 4, 3, 3];
const OID_RSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 1, 11];
const OID_RSA_SHA384: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 1, 12];
const OID_RSA_SHA512: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 1, 13];

/// A signature algorithm as a certificate or a CMS signer names it: its scheme and hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SigAlg {
    /// ECDSA (DER signature) over the hash.
    Ecdsa(Hash),
    /// RSA PKCS #1 v1.5 over the hash.
    Rsa(Hash),
}

impl SigAlg {
    /// The algorithm an AlgorithmIdentifier's OID names, if cks-iso verifies it.
    pub(crate) fn from_oid(oid: &[u8]) -> Option<Self> {
        Some(match oid {
            OID_ECDSA_SHA256 => Self::Ecdsa(Hash::Sha256),
            OID_ECDSA_SHA384 => Self::Ecdsa(Hash::Sha384),
            OID_RSA_SHA256 => Self::Rsa(Hash::Sha256),
            OID_RSA_SHA384 => Self::Rsa(Hash::Sha384),
            OID_RSA_SHA512 => Self::Rsa(Hash::Sha512),
            _ => return None,
        })
    }
}

/// A public key from a SubjectPublicKeyInfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PublicKey {
    pub(crate) kind: KeyKind,
    /// The key's bits (an uncompressed EC point, or 32 Ed25519 bytes).
    pub(crate) bits: Vec<u8>,
}

/// The key algorithms Sigstore's public instances (and the CAs beside them) use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyKind {
    P256,
    P384,
    Ed25519,
    /// RSA; `bits` holds the PKCS #1 RSAPublicKey DER.
    Rsa,
}

impl KeyKind {
    /// How messages name it: `an ECDSA P-256 key`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::P256 => "an ECDSA P-256 key",
            Self::P384 => "an ECDSA P-384 key",
            Self::Ed25519 => "an Ed25519 key",
            Self::Rsa => "an RSA key",
        }
    }
}

/// The hash a signature was made over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hash {
    Sha256,
    Sha384,
    /// RSA signatures only: no ECDSA key of Sigstore's pairs a curve with it.
    Sha512,
}

impl PublicKey {
    /// Parses a DER SubjectPublicKeyInfo.
    pub(crate) fn from_spki(spki: &[u8]) -> Result<Self, Invalid> {
        let seq = der::one(spki, der::SEQUENCE)?;
        let mut r = Reader::new(seq.value);
        let alg = r.expect(der::SEQUENCE)?;
        let key = r.expect(der::BIT_STRING)?;
        if !r.is_empty() {
            return Err("bytes after a public key".into());
        }
        let mut a = Reader::new(alg.value);
        let oid = a.expect(der::OID)?;
        let kind = match oid.value {
            OID_EC_PUBLIC_KEY => match a.expect(der::OID)?.value {
                OID_P256 => KeyKind::P256,
                OID_P384 => KeyKind::P384,
                _ => return Err("an EC key on a curve other than P-256 or P-384".into()),
            },
            OID_ED25519 => KeyKind::Ed25519,
            OID_RSA => KeyKind::Rsa,
            _ => return Err("a key that is neither ECDSA, Ed25519 nor RSA".into()),
        };
        Ok(Self {
            kind,
            bits: der::bits(&key)?.to_vec(),
        })
    }

    /// Checks the signature `sig` over `message` with this key's own scheme (DER ECDSA, RSA
    /// PKCS #1 v1.5, Ed25519), hashed with `hash` (ignored for Ed25519).
    pub(crate) fn verify(&self, hash: Hash, message: &[u8], sig: &[u8]) -> Result<(), Invalid> {
        use ring::signature as s;
        let alg: &dyn s::VerificationAlgorithm = match (self.kind, hash) {
            (KeyKind::P256, Hash::Sha256) => &s::ECDSA_P256_SHA256_ASN1,
            (KeyKind::P256, Hash::Sha384) => &s::ECDSA_P256_SHA384_ASN1,
            (KeyKind::P384, Hash::Sha256) => &s::ECDSA_P384_SHA256_ASN1,
            (KeyKind::P384, Hash::Sha384) => &s::ECDSA_P384_SHA384_ASN1,
            (KeyKind::P256 | KeyKind::P384, Hash::Sha512) => {
                return Err("ECDSA with SHA-512 is not verified here".into());
            }
            (KeyKind::Rsa, Hash::Sha256) => &s::RSA_PKCS1_2048_8192_SHA256,
            (KeyKind::Rsa, Hash::Sha384) => &s::RSA_PKCS1_2048_8192_SHA384,
            (KeyKind::Rsa, Hash::Sha512) => &s::RSA_PKCS1_2048_8192_SHA512,
            (KeyKind::Ed25519, _) => &s::ED25519,
        };
        s::UnparsedPublicKey::new(alg, &self.bits)
            .verify(message, sig)
            .map_err(|_| "the signature does not verify".into())
    }

    /// Checks `sig` under the algorithm `alg` its signer names, which must be this key's
    /// scheme: an RSA signature is never checked with an EC key, nor the other way round.
    pub(crate) fn verify_as(&self, alg: SigAlg, message: &[u8], sig: &[u8]) -> Result<(), Invalid> {
        match (alg, self.kind) {
            (SigAlg::Ecdsa(hash), KeyKind::P256 | KeyKind::P384)
            | (SigAlg::Rsa(hash), KeyKind::Rsa) => self.verify(hash, message, sig),
            _ => Err("the signature's algorithm is not that of the signer's key".into()),
        }
    }

    /// Checks the DER ECDSA signature `sig` over a message whose `hash` is `digest` (the message
    /// itself is never needed: a file is hashed once, while it streams). Ed25519 refuses: pure
    /// EdDSA signs the message itself, not a digest of it.
    pub(crate) fn verify_prehash(
        &self,
        hash: Hash,
        digest: &[u8],
        sig: &[u8],
    ) -> Result<(), Invalid> {
        use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
        let len = match hash {
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
            Hash::Sha512 => 64,
        };
        if digest.len() != len {
            return Err(format!(
                "a {}-byte digest, not the {len} bytes of its hash",
                digest.len()
            )
            .into());
        }
        let bad_key = |_| "the key is not a valid EC point".to_owned();
        let bad_sig = |_| "the signature is not DER ECDSA".to_owned();
        let verified = match self.kind {
            KeyKind::P256 => {
                let key =
                    p256::ecdsa::VerifyingKey::from_sec1_bytes(&self.bits).map_err(bad_key)?;
                let sig = p256::ecdsa::Signature::from_der(sig).map_err(bad_sig)?;
                key.verify_prehash(digest, &sig).is_ok()
            }
            KeyKind::P384 => {
                let key =
                    p384::ecdsa::VerifyingKey::from_sec1_bytes(&self.bits).map_err(bad_key)?;
                let sig = p384::ecdsa::Signature::from_der(sig).map_err(bad_sig)?;
                key.verify_prehash(digest, &sig).is_ok()
            }
            KeyKind::Rsa => {
                return Err(
                    "an RSA key (Fulcio issues EC keys; only ECDSA P-256 and P-384 \
                            keys can sign files here)"
                        .into(),
                );
            }
            KeyKind::Ed25519 => {
                return Err(
                    "an Ed25519 key (pure EdDSA signs the whole file, not its digest, so \
                            a file verified while it streams cannot be checked with it; only \
                            ECDSA P-256 and P-384 keys can sign files)"
                        .into(),
                );
            }
        };
        match verified {
            true => Ok(()),
            false => Err("the signature does not verify".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use ring::rand::SystemRandom;
    use ring::signature::{self as s, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
    use sha2::{Digest as _, Sha256, Sha384};

    use super::{Hash, KeyKind, PublicKey};

    const MESSAGE: &[u8] = b"kubeadm, or any file too large to hold";

    /// A fresh ECDSA key (ring's, so the signatures come from another implementation than the
    /// one that checks them): its public key and a DER signature over `MESSAGE`.
    fn ecdsa(alg: &'static s::EcdsaSigningAlgorithm, kind: KeyKind) -> (PublicKey, Vec<u8>) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap();
        let sig = pair.sign(&rng, MESSAGE).unwrap().as_ref().to_vec();
        let key = PublicKey {
            kind,
            bits: pair.public_key().as_ref().to_vec(),
        };
        (key, sig)
    }

    #[test]
    fn an_ecdsa_signature_verifies_over_the_digest_as_over_the_message() {
        let sha256 = Sha256::digest(MESSAGE);
        let sha384 = Sha384::digest(MESSAGE);
        let cases = [
            (
                &s::ECDSA_P256_SHA256_ASN1_SIGNING,
                KeyKind::P256,
                Hash::Sha256,
            ),
            (
                &s::ECDSA_P384_SHA384_ASN1_SIGNING,
                KeyKind::P384,
                Hash::Sha384,
            ),
        ];
        for (alg, kind, hash) in cases {
            let (key, sig) = ecdsa(alg, kind);
            let digest = match hash {
                Hash::Sha256 => sha256.to_vec(),
                Hash::Sha384 => sha384.to_vec(),
                Hash::Sha512 => unreachable!("no such case"),
            };
            assert_eq!(key.verify(hash, MESSAGE, &sig), Ok(()), "{kind:?} {hash:?}");
            assert_eq!(
                key.verify_prehash(hash, &digest, &sig),
                Ok(()),
                "{kind:?} {hash:?}"
            );
        }
    }

    #[test]
    fn a_wrong_digest_key_or_signature_fails_the_prehash_check() {
        let (key, sig) = ecdsa(&s::ECDSA_P256_SHA256_ASN1_SIGNING, KeyKind::P256);
        let digest: [u8; 32] = Sha256::digest(MESSAGE).into();
        assert!(key.verify_prehash(Hash::Sha256, &digest, &sig).is_ok());
        // Another file's digest.
        let other: [u8; 32] = Sha256::digest(b"another file").into();
        let err = key.verify_prehash(Hash::Sha256, &other, &sig).unwrap_err();
        assert_eq!(err.reason(), "the signature does not verify");
        let mut flipped = digest;
        flipped[31] ^= 1;
        assert!(key.verify_prehash(Hash::Sha256, &flipped, &sig).is_err());
        // Another key of the same curve.
        let (stranger, _) = ecdsa(&s::ECDSA_P256_SHA256_ASN1_SIGNING, KeyKind::P256);
        let err = stranger
            .verify_prehash(Hash::Sha256, &digest, &sig)
            .unwrap_err();
        assert_eq!(err.reason(), "the signature does not verify");
        // A digest of the wrong length for its hash, a signature that is not DER, a bad point.
        let err = key.verify_prehash(Hash::Sha384, &digest, &sig).unwrap_err();
        assert!(err.reason().contains("32-byte digest"), "{err}");
        let err = key
            .verify_prehash(Hash::Sha256, &digest, &sig[1..])
            .unwrap_err();
        assert!(err.reason().contains("not DER"), "{err}");
        let bad = PublicKey {
            kind: KeyKind::P256,
            bits: vec![4; 65],
        };
        let err = bad.verify_prehash(Hash::Sha256, &digest, &sig).unwrap_err();
        assert!(err.reason().contains("not a valid EC point"), "{err}");
    }

    #[test]
    fn an_ed25519_key_cannot_verify_a_digest_and_says_why() {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let sig = pair.sign(MESSAGE).as_ref().to_vec();
        let key = PublicKey {
            kind: KeyKind::Ed25519,
            bits: pair.public_key().as_ref().to_vec(),
        };
        // Over the message it verifies (checkpoints, SETs); over a digest it cannot, even a
        // right one: pure EdDSA signs the message itself.
        assert_eq!(key.verify(Hash::Sha256, MESSAGE, &sig), Ok(()));
        let digest = Sha256::digest(MESSAGE);
        let err = key.verify_prehash(Hash::Sha256, &digest, &sig).unwrap_err();
        assert!(err.reason().contains("Ed25519"), "{err}");
        assert!(err.reason().contains("not its digest"), "{err}");
    }

    /// The RSA-4096 root (sha256WithRSAEncryption, self-signed) of the Fulcio instance a
    /// conformance-suite case was signed by.
    fn rsa_root() -> Vec<u8> {
        let root: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../tests/sigstore-conformance/bundle-verify/bundle-with-sct-with-extensions/trusted_root.json"
        ))
        .unwrap();
        let text = root["certificateAuthorities"][0]["certChain"]["certificates"][0]["rawBytes"]
            .as_str()
            .unwrap();
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap()
    }

    #[test]
    fn an_rsa_certificate_verifies_under_its_own_algorithm_only() {
        use super::super::der;
        use super::SigAlg;
        let der_bytes = rsa_root();
        // The root signs itself: its TBS, under its own key, is what its signature covers.
        let cert = der::one(&der_bytes, der::SEQUENCE).unwrap();
        let mut r = der::Reader::new(cert.value);
        let tbs = r.expect(der::SEQUENCE).unwrap().raw;
        r.expect(der::SEQUENCE).unwrap();
        let sig = der::bits(&r.expect(der::BIT_STRING).unwrap()).unwrap();
        let spki = crate::x509::Cert::parse(&der_bytes).unwrap().spki;
        let key = PublicKey::from_spki(spki).unwrap();
        assert_eq!(key.kind, KeyKind::Rsa);
        // The same key and bytes under an ECDSA algorithm: refused, not tried as RSA.
        let err = key
            .verify_as(SigAlg::Ecdsa(Hash::Sha256), tbs, sig)
            .unwrap_err();
        assert!(
            err.reason().contains("not that of the signer's key"),
            "{err}"
        );
        assert_eq!(key.verify_as(SigAlg::Rsa(Hash::Sha256), tbs, sig), Ok(()));
        // Another hash, or one changed byte of what it signed, does not verify.
        assert!(key.verify_as(SigAlg::Rsa(Hash::Sha384), tbs, sig).is_err());
        let mut spoiled = tbs.to_vec();
        spoiled[20] ^= 1;
        assert!(
            key.verify_as(SigAlg::Rsa(Hash::Sha256), &spoiled, sig)
                .is_err()
        );
        // An RSA key cannot check a file's digest.
        let digest = Sha256::digest(MESSAGE);
        let err = key.verify_prehash(Hash::Sha256, &digest, sig).unwrap_err();
        assert!(err.reason().contains("RSA"), "{err}");
    }
}
