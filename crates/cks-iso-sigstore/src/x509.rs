//! The parts of an X.509 certificate a Fulcio chain check needs, read with [`super::der`]:
//! validity, names (as raw DER, compared byte for byte), the public key, the signature, CA and
//! EKU flags, the SAN identity, Fulcio's OIDC issuer extensions, and the embedded SCT list with
//! the TBS re-encoded without it.

use super::der::{self, Reader, Tlv};

/// `1.3.6.1.4.1.11129.2.4.2`: the embedded SCT list (RFC 6962 §3.3).
pub(crate) const OID_SCT_LIST: &[u8] = &[0x2b, 6, 1, 4, 1, 0xd6, 0x79, 2, 4, 2];
/// `1.3.6.1.4.1.57264.1.1`: Fulcio's OIDC issuer, raw bytes (deprecated form).
pub(crate) const OID_ISSUER_V1: &[u8] = &[0x2b, 6, 1, 4, 1, 0x83, 0xbf, 0x30, 1, 1];
/// `1.3.6.1.4.1.57264.1.8`: Fulcio's OIDC issuer, DER UTF8String.
pub(crate) const OID_ISSUER_V2: &[u8] = &[0x2b, 6, 1, 4, 1, 0x83, 0xbf, 0x30, 1, 8];
const OID_SAN: &[u8] = &[0x55, 0x1d, 0x11];
const OID_BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
const OID_EKU: &[u8] = &[0x55, 0x1d, 0x25];
const OID_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
const OID_SUBJECT_KEY_ID: &[u8] = &[0x55, 0x1d, 0x0e];
const OID_AUTHORITY_KEY_ID: &[u8] = &[0x55, 0x1d, 0x23];
/// The extensions whose meaning these checks know, and so may be critical: any other that is
/// marked critical makes a certificate unusable (RFC 5280 §4.2).
const UNDERSTOOD: &[&[u8]] = &[
    OID_SAN,
    OID_BASIC_CONSTRAINTS,
    OID_EKU,
    OID_KEY_USAGE,
    OID_SUBJECT_KEY_ID,
    OID_AUTHORITY_KEY_ID,
];
/// `1.3.6.1.5.5.7.3.3`: id-kp-codeSigning.
const OID_CODE_SIGNING: &[u8] = &[0x2b, 6, 1, 5, 5, 7, 3, 3];
const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 2, 1];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 3, 1, 7];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0, 0x22];
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];
const OID_ECDSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 4, 3, 2];
const OID_ECDSA_SHA384: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 4, 3, 3];

/// A public key from a SubjectPublicKeyInfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PublicKey {
    pub(crate) kind: KeyKind,
    /// The key's bits (an uncompressed EC point, or 32 Ed25519 bytes).
    pub(crate) bits: Vec<u8>,
}

/// The key algorithms Sigstore's public instances use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyKind {
    P256,
    P384,
    Ed25519,
}

/// The hash an ECDSA signature was made over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hash {
    Sha256,
    Sha384,
}

impl PublicKey {
    /// Parses a DER SubjectPublicKeyInfo.
    pub(crate) fn from_spki(spki: &[u8]) -> Result<Self, String> {
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
            _ => return Err("a key that is neither ECDSA nor Ed25519".into()),
        };
        Ok(Self {
            kind,
            bits: der::bits(&key)?.to_vec(),
        })
    }

    /// Checks the DER signature `sig` over `message`, hashed with `hash` (ignored for Ed25519).
    pub(crate) fn verify(&self, hash: Hash, message: &[u8], sig: &[u8]) -> Result<(), String> {
        use ring::signature as s;
        let alg: &dyn s::VerificationAlgorithm = match (self.kind, hash) {
            (KeyKind::P256, Hash::Sha256) => &s::ECDSA_P256_SHA256_ASN1,
            (KeyKind::P256, Hash::Sha384) => &s::ECDSA_P256_SHA384_ASN1,
            (KeyKind::P384, Hash::Sha256) => &s::ECDSA_P384_SHA256_ASN1,
            (KeyKind::P384, Hash::Sha384) => &s::ECDSA_P384_SHA384_ASN1,
            (KeyKind::Ed25519, _) => &s::ED25519,
        };
        s::UnparsedPublicKey::new(alg, &self.bits)
            .verify(message, sig)
            .map_err(|_| "the signature does not verify".to_owned())
    }

    /// Checks the DER ECDSA signature `sig` over a message whose `hash` is `digest` (the message
    /// itself is never needed: a file is hashed once, while it streams). Ed25519 refuses: pure
    /// EdDSA signs the message itself, not a digest of it.
    pub(crate) fn verify_prehash(
        &self,
        hash: Hash,
        digest: &[u8],
        sig: &[u8],
    ) -> Result<(), String> {
        use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
        let len = match hash {
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
        };
        if digest.len() != len {
            return Err(format!(
                "a {}-byte digest, not the {len} bytes of its hash",
                digest.len()
            ));
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

/// One extension.
#[derive(Debug, Clone, Copy)]
struct Extension<'a> {
    oid: &'a [u8],
    critical: bool,
    /// The contents of its `extnValue` OCTET STRING.
    value: &'a [u8],
    /// The whole `Extension` element.
    raw: &'a [u8],
}

/// A parsed certificate, borrowing its DER.
#[derive(Debug, Clone)]
pub(crate) struct Cert<'a> {
    /// The TBSCertificate element, as signed.
    pub(crate) tbs: &'a [u8],
    sig_hash: Hash,
    signature: &'a [u8],
    /// The issuer and subject Names, raw.
    pub(crate) issuer: &'a [u8],
    pub(crate) subject: &'a [u8],
    pub(crate) not_before: i64,
    pub(crate) not_after: i64,
    /// The SubjectPublicKeyInfo element.
    pub(crate) spki: &'a [u8],
    /// The elements of the TBS before the extensions field, raw (to rebuild it without one).
    tbs_head: Vec<&'a [u8]>,
    extensions: Vec<Extension<'a>>,
}

impl<'a> Cert<'a> {
    /// Parses a DER certificate.
    pub(crate) fn parse(der_bytes: &'a [u8]) -> Result<Self, String> {
        let cert = der::one(der_bytes, der::SEQUENCE)?;
        let mut r = Reader::new(cert.value);
        let tbs = r.expect(der::SEQUENCE)?;
        let alg = r.expect(der::SEQUENCE)?;
        let sig = r.expect(der::BIT_STRING)?;
        if !r.is_empty() {
            return Err("bytes after the certificate's signature".into());
        }
        let sig_hash = sig_hash(&alg)?;
        let mut t = Reader::new(tbs.value);
        let mut head = Vec::new();
        // Fulcio, CT and every CA of a trusted root issue v3 certificates only.
        let version = t
            .optional(0xa0)?
            .ok_or("a certificate of version 1, not 3")?;
        if version.value != [der::INTEGER, 1, 2] {
            return Err("a certificate whose version is not 3".into());
        }
        head.push(version.raw);
        let serial = t.expect(der::INTEGER)?;
        let inner_alg = t.expect(der::SEQUENCE)?;
        if inner_alg.value != alg.value {
            return Err("the TBS and the certificate name different signature algorithms".into());
        }
        let issuer = t.expect(der::SEQUENCE)?;
        let validity = t.expect(der::SEQUENCE)?;
        let subject = t.expect(der::SEQUENCE)?;
        let spki = t.expect(der::SEQUENCE)?;
        head.extend([
            serial.raw,
            inner_alg.raw,
            issuer.raw,
            validity.raw,
            subject.raw,
            spki.raw,
        ]);
        let mut v = Reader::new(validity.value);
        let not_before = der::time(&v.any()?)?;
        let not_after = der::time(&v.any()?)?;
        if !v.is_empty() {
            return Err("bytes after a certificate's validity".into());
        }
        let mut extensions: Vec<Extension<'a>> = Vec::new();
        while !t.is_empty() {
            let field = t.any()?;
            match field.tag {
                // issuerUniqueID, subjectUniqueID: kept as they are.
                0x81 | 0x82 => head.push(field.raw),
                0xa3 if extensions.is_empty() => {
                    let list = der::one(field.value, der::SEQUENCE)?;
                    let mut e = Reader::new(list.value);
                    while !e.is_empty() {
                        let ext = extension(e.expect(der::SEQUENCE)?)?;
                        if extensions.iter().any(|x| x.oid == ext.oid) {
                            return Err(format!(
                                "the extension {} appears twice in a certificate",
                                oid_text(ext.oid)
                            ));
                        }
                        extensions.push(ext);
                    }
                    if extensions.is_empty() {
                        return Err("a certificate with an empty extension list".into());
                    }
                }
                _ => return Err("unexpected field in the TBS certificate".into()),
            }
        }
        Ok(Self {
            tbs: tbs.raw,
            sig_hash,
            signature: der::bits(&sig)?,
            issuer: issuer.raw,
            subject: subject.raw,
            not_before,
            not_after,
            spki: spki.raw,
            tbs_head: head,
            extensions,
        })
    }

    fn extension(&self, oid: &[u8]) -> Option<&Extension<'a>> {
        self.extensions.iter().find(|e| e.oid == oid)
    }

    /// Whether `issuer`'s key signed this certificate (names are checked too).
    pub(crate) fn signed_by(&self, issuer: &Cert<'_>) -> Result<(), String> {
        if self.issuer != issuer.subject {
            return Err("its issuer name is not the CA's subject".into());
        }
        PublicKey::from_spki(issuer.spki)?
            .verify(self.sig_hash, self.tbs, self.signature)
            .map_err(|_| "the CA's signature on it does not verify".into())
    }

    /// The first extension marked critical whose meaning these checks do not know (dotted).
    pub(crate) fn unknown_critical(&self) -> Option<String> {
        self.extensions
            .iter()
            .find(|e| e.critical && !UNDERSTOOD.contains(&e.oid))
            .map(|e| oid_text(e.oid))
    }

    /// Whether the key usage extension allows digitalSignature (false when it is absent: Fulcio
    /// always writes it).
    pub(crate) fn digital_signature(&self) -> Result<bool, String> {
        let Some(ext) = self.extension(OID_KEY_USAGE) else {
            return Ok(false);
        };
        let bits = der::one(ext.value, der::BIT_STRING)?;
        // The first content octet counts the unused bits; digitalSignature is bit 0, the
        // first octet's high bit.
        Ok(bits.value.get(1).is_some_and(|b| b & 0x80 != 0))
    }

    /// Basic constraints `cA: TRUE`.
    pub(crate) fn is_ca(&self) -> Result<bool, String> {
        let Some(ext) = self.extension(OID_BASIC_CONSTRAINTS) else {
            return Ok(false);
        };
        let seq = der::one(ext.value, der::SEQUENCE)?;
        let flag = Reader::new(seq.value).optional(der::BOOLEAN)?;
        Ok(flag.is_some_and(|b| b.value == [0xff]))
    }

    /// Whether the extended key usage lists code signing.
    pub(crate) fn code_signing(&self) -> Result<bool, String> {
        let Some(ext) = self.extension(OID_EKU) else {
            return Ok(false);
        };
        let seq = der::one(ext.value, der::SEQUENCE)?;
        let mut r = Reader::new(seq.value);
        while !r.is_empty() {
            if r.expect(der::OID)?.value == OID_CODE_SIGNING {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The SAN identities: e-mail addresses and URIs.
    pub(crate) fn identities(&self) -> Result<Vec<String>, String> {
        let Some(ext) = self.extension(OID_SAN) else {
            return Ok(Vec::new());
        };
        let seq = der::one(ext.value, der::SEQUENCE)?;
        let mut r = Reader::new(seq.value);
        let mut out = Vec::new();
        while !r.is_empty() {
            let name = r.any()?;
            // [1] rfc822Name, [6] uniformResourceIdentifier (both IA5String, implicit).
            if name.tag == 0x81 || name.tag == 0x86 {
                out.push(String::from_utf8_lossy(name.value).into_owned());
            }
        }
        Ok(out)
    }

    /// The OIDC issuer: the `.1.8` extension when present, else the deprecated `.1.1`.
    pub(crate) fn oidc_issuer(&self) -> Result<Option<String>, String> {
        if let Some(ext) = self.extension(OID_ISSUER_V2) {
            let text = der::one(ext.value, der::UTF8_STRING)?;
            return Ok(Some(String::from_utf8_lossy(text.value).into_owned()));
        }
        Ok(self
            .extension(OID_ISSUER_V1)
            .map(|ext| String::from_utf8_lossy(ext.value).into_owned()))
    }

    /// The TLS-encoded SCT list, if the certificate embeds one.
    pub(crate) fn sct_list(&self) -> Result<Option<&'a [u8]>, String> {
        match self.extension(OID_SCT_LIST) {
            Some(ext) => Ok(Some(der::one(ext.value, der::OCTET_STRING)?.value)),
            None => Ok(None),
        }
    }

    /// The TBS as the precertificate had it: the same, without the SCT list extension.
    pub(crate) fn precert_tbs(&self) -> Vec<u8> {
        let mut contents: Vec<u8> = self.tbs_head.concat();
        let kept: Vec<u8> = self
            .extensions
            .iter()
            .filter(|e| e.oid != OID_SCT_LIST)
            .flat_map(|e| e.raw.iter().copied())
            .collect();
        if !kept.is_empty() {
            contents.extend(der::encode(0xa3, &der::encode(der::SEQUENCE, &kept)));
        }
        der::encode(der::SEQUENCE, &contents)
    }
}

fn extension(seq: Tlv<'_>) -> Result<Extension<'_>, String> {
    let mut r = Reader::new(seq.value);
    let oid = r.expect(der::OID)?.value;
    let critical = match r.optional(der::BOOLEAN)? {
        None => false,
        Some(flag) => match flag.value {
            [0xff] => true,
            [0x00] => false,
            _ => return Err("an extension's critical flag is not a DER BOOLEAN".into()),
        },
    };
    let value = r.expect(der::OCTET_STRING)?.value;
    if !r.is_empty() {
        return Err("bytes after an extension's value".into());
    }
    Ok(Extension {
        oid,
        critical,
        value,
        raw: seq.raw,
    })
}

/// An OID's dotted text, e.g. `1.3.6.1.4.1.57264.1.8`.
pub(crate) fn oid_text(oid: &[u8]) -> String {
    let mut parts: Vec<u64> = Vec::new();
    let mut acc: u64 = 0;
    for &b in oid {
        acc = (acc << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if parts.is_empty() {
                let first = acc.min(80) / 40;
                parts.extend([first, acc - first * 40]);
            } else {
                parts.push(acc);
            }
            acc = 0;
        }
    }
    parts
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

fn sig_hash(alg: &Tlv<'_>) -> Result<Hash, String> {
    let oid = Reader::new(alg.value).expect(der::OID)?;
    match oid.value {
        OID_ECDSA_SHA256 => Ok(Hash::Sha256),
        OID_ECDSA_SHA384 => Ok(Hash::Sha384),
        _ => Err("a certificate signature that is not ECDSA with SHA-256 or SHA-384".into()),
    }
}

/// The DER of every `CERTIFICATE` block of a PEM text, in order.
pub(crate) fn pem_certificates(text: &str) -> Result<Vec<Vec<u8>>, String> {
    use base64::Engine as _;
    let mut out = Vec::new();
    let mut body: Option<String> = None;
    for line in text.lines().map(str::trim) {
        match (line, &mut body) {
            ("-----BEGIN CERTIFICATE-----", None) => body = Some(String::new()),
            ("-----END CERTIFICATE-----", Some(b64)) => {
                let der = base64::engine::general_purpose::STANDARD
                    .decode(b64.as_bytes())
                    .map_err(|_| "a PEM certificate that is not base64".to_owned())?;
                out.push(der);
                body = None;
            }
            (line, Some(b64)) => b64.push_str(line),
            _ => {}
        }
    }
    match body {
        Some(_) => Err("a PEM certificate without its END line".into()),
        None => Ok(out),
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
        assert_eq!(err, "the signature does not verify");
        let mut flipped = digest;
        flipped[31] ^= 1;
        assert!(key.verify_prehash(Hash::Sha256, &flipped, &sig).is_err());
        // Another key of the same curve.
        let (stranger, _) = ecdsa(&s::ECDSA_P256_SHA256_ASN1_SIGNING, KeyKind::P256);
        let err = stranger
            .verify_prehash(Hash::Sha256, &digest, &sig)
            .unwrap_err();
        assert_eq!(err, "the signature does not verify");
        // A digest of the wrong length for its hash, a signature that is not DER, a bad point.
        let err = key.verify_prehash(Hash::Sha384, &digest, &sig).unwrap_err();
        assert!(err.contains("32-byte digest"), "{err}");
        let err = key
            .verify_prehash(Hash::Sha256, &digest, &sig[1..])
            .unwrap_err();
        assert!(err.contains("not DER"), "{err}");
        let bad = PublicKey {
            kind: KeyKind::P256,
            bits: vec![4; 65],
        };
        let err = bad.verify_prehash(Hash::Sha256, &digest, &sig).unwrap_err();
        assert!(err.contains("not a valid EC point"), "{err}");
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
        assert!(err.contains("Ed25519"), "{err}");
        assert!(err.contains("not its digest"), "{err}");
    }
}
