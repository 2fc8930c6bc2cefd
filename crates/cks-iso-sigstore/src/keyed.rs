//! Signatures made with a key the operator holds (cosign's `--key` signatures): reading the
//! private key (PKCS #8 or SEC 1 PEM, ECDSA P-256), signing a file's SHA-256 while nothing but the
//! digest is at hand, and the Sigstore bundle v0.3 that carries such a signature (a public-key
//! hint instead of a certificate, and the Rekor entry when it was logged), read back and judged
//! against a public key (the entry, against the trusted root: [`crate::rekor::verify_key_entry`]).
//!
//! A module of this crate so that the bundle written is read by the same reader family that reads
//! every other bundle, and so that signing stays as network-free as verifying: an ISO is signed
//! right after it is written, on the build host, with the digest the writer computed.
//!
//! cosign's encrypted keys (`ENCRYPTED SIGSTORE PRIVATE KEY`: scrypt and NaCl secretbox) are
//! opened with the password given (see `cosign_key`), so that `cosign generate-key-pair`'s keys
//! sign as they are.

use base64::Engine as _;
use p256::ecdsa::signature::hazmat::PrehashSigner as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::Invalid;
use crate::rekor::{BUNDLE_MEDIA_TYPE, BUNDLE_MEDIA_TYPES, Entry};
use crate::x509::der::{self, Reader};
use crate::x509::{Hash, KeyKind, PublicKey, pem_block};

const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 2, 1];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 3, 1, 7];

pub use crate::cosign_key::LABELS as COSIGN_ENCRYPTED_LABELS;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A private ECDSA P-256 key to sign with.
pub struct SigningKey {
    key: p256::ecdsa::SigningKey,
    spki: Vec<u8>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret: the public key's fingerprint only.
        write!(f, "SigningKey({})", fingerprint(&self.spki))
    }
}

/// The scalar of an SEC 1 `ECPrivateKey` (and its public point, when it carries one).
fn ec_private_key(der_bytes: &[u8]) -> Result<(Vec<u8>, Option<Vec<u8>>), Invalid> {
    let seq = der::one(der_bytes, der::SEQUENCE)?;
    let mut r = Reader::new(seq.value);
    if r.expect(der::INTEGER)?.value != [1] {
        return Err("an ECPrivateKey whose version is not 1".into());
    }
    let scalar = r.expect(der::OCTET_STRING)?.value.to_vec();
    let mut public = None;
    while !r.is_empty() {
        let field = r.any()?;
        match field.tag {
            0xa0 => {
                if der::one(field.value, der::OID)?.value != OID_P256 {
                    return Err("an EC key on a curve other than P-256".into());
                }
            }
            0xa1 => public = Some(der::bits(&der::one(field.value, der::BIT_STRING)?)?.to_vec()),
            _ => return Err("an ECPrivateKey field cks-iso does not know".into()),
        }
    }
    Ok((scalar, public))
}

/// The `ECPrivateKey` inside a PKCS #8 `PrivateKeyInfo` of an ECDSA P-256 key.
fn pkcs8_ec(der_bytes: &[u8]) -> Result<&[u8], Invalid> {
    let seq = der::one(der_bytes, der::SEQUENCE)?;
    let mut r = Reader::new(seq.value);
    r.expect(der::INTEGER)?;
    let alg = r.expect(der::SEQUENCE)?;
    let mut a = Reader::new(alg.value);
    if a.expect(der::OID)?.value != OID_EC_PUBLIC_KEY {
        return Err("not an EC key (only ECDSA P-256 keys sign here)".into());
    }
    if a.expect(der::OID)?.value != OID_P256 {
        return Err("an EC key on a curve other than P-256".into());
    }
    Ok(r.expect(der::OCTET_STRING)?.value)
}

fn spki_of(point: &[u8]) -> Vec<u8> {
    let alg = [
        der::encode(der::OID, OID_EC_PUBLIC_KEY),
        der::encode(der::OID, OID_P256),
    ]
    .concat();
    let bits = [&[0u8][..], point].concat();
    let body = [
        der::encode(der::SEQUENCE, &alg),
        der::encode(der::BIT_STRING, &bits),
    ];
    der::encode(der::SEQUENCE, &body.concat())
}

impl SigningKey {
    /// Reads a PEM private key: PKCS #8 (`PRIVATE KEY`, as `openssl genpkey` writes it), SEC 1
    /// (`EC PRIVATE KEY`, as `openssl ecparam -genkey` writes it) or cosign's encrypted key
    /// (opened with `password`), ECDSA P-256. A public point the key carries must be the one its
    /// scalar gives.
    pub fn from_pem(text: &str, password: Option<&[u8]>) -> Result<Self, Invalid> {
        let (label, der_bytes) = pem_block(text)?;
        let (scalar, public) = match label.as_str() {
            "PRIVATE KEY" => ec_private_key(pkcs8_ec(&der_bytes)?)?,
            "EC PRIVATE KEY" => ec_private_key(&der_bytes)?,
            l if COSIGN_ENCRYPTED_LABELS.contains(&l) => {
                let Some(password) = password else {
                    return Err("a cosign encrypted key, and no password to open it".into());
                };
                let der = crate::cosign_key::open(&der_bytes, password)
                    .map_err(|e| format!("a cosign encrypted key: {e}"))?;
                ec_private_key(pkcs8_ec(&der)?)?
            }
            "ENCRYPTED PRIVATE KEY" => {
                return Err("an encrypted PKCS #8 key, which cks-iso does not decrypt".into());
            }
            other => {
                return Err(
                    format!("a PEM {other:?} block, not a PRIVATE KEY or EC PRIVATE KEY").into(),
                );
            }
        };
        let key = p256::ecdsa::SigningKey::from_slice(&scalar)
            .map_err(|_| "a P-256 private scalar that is out of range")?;
        let point = key.verifying_key().to_sec1_point(false).as_bytes().to_vec();
        if public.is_some_and(|p| p != point) {
            return Err("the key's public point is not the one its private scalar gives".into());
        }
        Ok(Self {
            key,
            spki: spki_of(&point),
        })
    }

    /// A fresh key (keyless signing's ephemeral one), from the system's randomness through ring;
    /// it lives in memory only, for one signature.
    pub fn generate() -> Self {
        use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
        let rng = ring::rand::SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            .expect("the system's randomness");
        let (scalar, _) = pkcs8_ec(doc.as_ref())
            .and_then(ec_private_key)
            .expect("ring's own PKCS #8");
        let key = p256::ecdsa::SigningKey::from_slice(&scalar).expect("ring's own scalar");
        let point = key.verifying_key().to_sec1_point(false).as_bytes().to_vec();
        Self {
            key,
            spki: spki_of(&point),
        }
    }

    /// The public key, DER SubjectPublicKeyInfo.
    pub fn public_spki(&self) -> &[u8] {
        &self.spki
    }

    /// The public key as PEM (`PUBLIC KEY`), as `cosign public-key` and `openssl pkey -pubout`
    /// write it.
    pub fn public_pem(&self) -> String {
        public_pem(&self.spki)
    }

    /// A DER ECDSA signature over a message whose SHA-256 is `digest` (RFC 6979, deterministic):
    /// what `openssl dgst -sha256 -sign` makes of the message itself.
    pub fn sign_digest(&self, digest: &[u8; 32]) -> Vec<u8> {
        let sig: p256::ecdsa::DerSignature = self
            .key
            .sign_prehash(digest)
            .expect("a 32-byte prehash always signs");
        sig.as_bytes().to_vec()
    }
}

/// `spki` as a PEM `PUBLIC KEY`.
pub fn public_pem(spki: &[u8]) -> String {
    let text = b64(spki);
    let mut out = String::from("-----BEGIN PUBLIC KEY-----\n");
    for chunk in text.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).expect("ASCII"));
        out.push('\n');
    }
    out.push_str("-----END PUBLIC KEY-----\n");
    out
}

/// `der` as a PEM `CERTIFICATE`, as Fulcio and Rekor exchange certificates.
pub fn certificate_pem(der: &[u8]) -> String {
    public_pem(der).replace("PUBLIC KEY", "CERTIFICATE")
}

/// Reads a PEM public key (`PUBLIC KEY`, as `cosign generate-key-pair` and `openssl pkey -pubout`
/// write it): its DER SubjectPublicKeyInfo, an ECDSA P-256 or P-384 key.
pub fn public_key_from_pem(text: &str) -> Result<Vec<u8>, Invalid> {
    let (label, der_bytes) = pem_block(text)?;
    if label != "PUBLIC KEY" {
        return Err(format!("a PEM {label:?} block, not a PUBLIC KEY").into());
    }
    let key = PublicKey::from_spki(&der_bytes)?;
    match key.kind {
        KeyKind::P256 | KeyKind::P384 => Ok(der_bytes),
        other => Err(format!("{}, not an ECDSA P-256 or P-384 key", other.name()).into()),
    }
}

/// The key's fingerprint as cks-iso names a key: `sha256:<hex of the DER SubjectPublicKeyInfo's
/// SHA-256>` (the hash cosign puts, base64, in a bundle's public-key hint).
pub fn fingerprint(spki: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(spki)))
}

/// The bundle v0.3 of a key signature over a file hashing to `digest` (JSON, pretty, newline):
/// a message signature with the public-key hint cosign writes (base64 of the key's SHA-256), and
/// the Rekor v1 entry that logged it when it was entered in a log (`--tlog`), else none.
pub fn key_bundle(
    digest: &[u8; 32],
    signature: &[u8],
    spki: &[u8],
    entry: Option<&Entry>,
) -> Vec<u8> {
    let entries: Vec<Value> = entry
        .map(|e| e.bundle_entry("hashedrekord", "0.0.1", true))
        .into_iter()
        .collect();
    let value = json!({
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {
            "publicKey": {"hint": b64(&Sha256::digest(spki))},
            "tlogEntries": entries,
        },
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": b64(digest)},
            "signature": b64(signature),
        },
    });
    let mut out = serde_json::to_vec_pretty(&value).expect("plain JSON");
    out.push(b'\n');
    out
}

/// A key signature read from a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySignature {
    /// The digest the bundle says it signs.
    pub digest: Vec<u8>,
    /// The DER ECDSA signature.
    pub signature: Vec<u8>,
    /// The public-key hint, decoded (the SHA-256 of the signer's key, as cosign writes it).
    pub hint: Option<Vec<u8>>,
    /// The Rekor v1 entry that logged it, when it was entered in a log.
    pub entry: Option<Entry>,
}

/// Whether a bundle carries a key signature (a public-key hint and no certificate) rather than a
/// Fulcio certificate: how a reader picks [`read_key_bundle`] or `Evidence::from_bundle`.
pub fn is_key_bundle(input: &[u8]) -> bool {
    serde_json::from_slice::<Value>(input).is_ok_and(|v| {
        let vm = &v["verificationMaterial"];
        vm.get("publicKey").is_some() && vm.get("certificate").is_none()
    })
}

/// Reads a bundle holding a key signature (message signature, public-key hint).
pub fn read_key_bundle(input: &[u8]) -> Result<KeySignature, Invalid> {
    let v: Value = serde_json::from_slice(input).map_err(|e| format!("not JSON: {e}"))?;
    let media = v["mediaType"].as_str().unwrap_or_default();
    if !BUNDLE_MEDIA_TYPES.contains(&media) {
        return Err(
            format!("media type {media:?} is not a Sigstore bundle version cks-iso reads").into(),
        );
    }
    let ms = &v["messageSignature"];
    if ms["messageDigest"]["algorithm"] != "SHA2_256" {
        return Err("the bundle holds no SHA2_256 messageSignature".into());
    }
    let field = |value: &Value, name: &str| -> Result<Vec<u8>, Invalid> {
        value
            .as_str()
            .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok())
            .ok_or_else(|| format!("the bundle's {name} is missing or not base64").into())
    };
    let hint = match &v["verificationMaterial"]["publicKey"]["hint"] {
        Value::Null => None,
        h => Some(field(h, "publicKey.hint")?),
    };
    let entry = match v["verificationMaterial"]["tlogEntries"]
        .as_array()
        .map(Vec::as_slice)
    {
        None | Some([]) => None,
        Some([e]) => {
            Some(Entry::from_bundle_entry(e).map_err(|e| format!("the bundle's tlog entry: {e}"))?)
        }
        Some(more) => {
            return Err(
                format!("the bundle holds {} tlog entries, expected one", more.len()).into(),
            );
        }
    };
    Ok(KeySignature {
        digest: field(&ms["messageDigest"]["digest"], "messageDigest.digest")?,
        signature: field(&ms["signature"], "signature")?,
        hint,
        entry,
    })
}

/// Checks that `sig` signs a file hashing to `digest` with the key `spki`: the bundle's digest
/// is the file's, and the signature verifies under the key.
pub fn verify_key_signature(
    spki: &[u8],
    digest: &[u8; 32],
    sig: &KeySignature,
) -> Result<(), Invalid> {
    if sig.digest != digest {
        return Err(format!(
            "the bundle signs sha256:{}, the file hashes to sha256:{}",
            hex::encode(&sig.digest),
            hex::encode(digest)
        )
        .into());
    }
    let key = PublicKey::from_spki(spki)?;
    let hash = match key.kind {
        KeyKind::P256 | KeyKind::P384 => Hash::Sha256,
        other => return Err(format!("{}, not an ECDSA key", other.name()).into()),
    };
    key.verify_prehash(hash, digest, &sig.signature)
        .map_err(|e| match e.reason() {
            "the signature does not verify" => format!(
                "the signature does not verify under the key {}",
                fingerprint(spki)
            ),
            other => format!(
                "the signature does not verify under the key {}: {other}",
                fingerprint(spki)
            ),
        })
        .map_err(Invalid::from)
}

/// The identity (the first SAN) and OIDC issuer a Fulcio leaf (DER) names, read without
/// verifying anything: what a certificate bundle's signer is checked as, by `verify_digest` with
/// a rule of exactly these, when no rule is expected (`diff`, `upgrade-check`), and who a refused
/// one claims to be (a refusal's "signer found"). `None` when the certificate does not read or
/// names no identity or no issuer.
pub fn certificate_signer(leaf: &[u8]) -> Option<(String, String)> {
    let cert = crate::x509::Cert::parse(leaf).ok()?;
    let identity = cert.identities().ok()?.into_iter().next()?;
    let issuer = cert.oidc_issuer().ok().flatten()?;
    Some((identity, issuer))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A P-256 key as `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256` writes
    /// it (made with ring here, which writes the same PKCS #8 v1 form with the public point).
    fn pkcs8_pem() -> String {
        use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
        let rng = ring::rand::SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let text = b64(doc.as_ref());
        format!("-----BEGIN PRIVATE KEY-----\n{text}\n-----END PRIVATE KEY-----\n")
    }

    #[test]
    fn a_signed_digest_verifies_under_the_public_key_ring_reads_and_nothing_else() {
        let key = SigningKey::from_pem(&pkcs8_pem(), None).unwrap();
        let digest: [u8; 32] = Sha256::digest(b"an ISO").into();
        let sig = key.sign_digest(&digest);
        // ring, an independent verifier, hashing the message itself.
        let point = &PublicKey::from_spki(key.public_spki()).unwrap().bits;
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_ASN1, point)
            .verify(b"an ISO", &sig)
            .unwrap();
        let bundle = key_bundle(&digest, &sig, key.public_spki(), None);
        assert!(is_key_bundle(&bundle));
        let read = read_key_bundle(&bundle).unwrap();
        let spki = public_key_from_pem(&key.public_pem()).unwrap();
        verify_key_signature(&spki, &digest, &read).unwrap();
        assert_eq!(read.hint.clone().unwrap(), Sha256::digest(&spki).to_vec());
        let other: [u8; 32] = Sha256::digest(b"another ISO").into();
        let err = verify_key_signature(&spki, &other, &read).unwrap_err();
        assert!(err.reason().contains("the bundle signs sha256:"), "{err}");
        let stranger = SigningKey::from_pem(&pkcs8_pem(), None).unwrap();
        let err = verify_key_signature(stranger.public_spki(), &digest, &read).unwrap_err();
        assert!(
            err.reason().contains(&fingerprint(stranger.public_spki())),
            "{err}"
        );
    }

    #[test]
    fn a_key_bundle_carries_its_log_entry_and_reads_it_back() {
        let key = SigningKey::from_pem(&pkcs8_pem(), None).unwrap();
        let digest: [u8; 32] = Sha256::digest(b"an ISO").into();
        let sig = key.sign_digest(&digest);
        let entry = Entry {
            body: b64(b"{}"),
            integrated_time: 1_765_000_000,
            log_id: vec![7; 32],
            log_index: 42,
            set: vec![1, 2, 3],
            proof: crate::rekor::Proof {
                log_index: 42,
                root_hash: vec![9; 32],
                tree_size: 43,
                hashes: vec![vec![8; 32]],
                checkpoint: "a note\n".into(),
            },
        };
        let bundle = key_bundle(&digest, &sig, key.public_spki(), Some(&entry));
        assert!(is_key_bundle(&bundle));
        let read = read_key_bundle(&bundle).unwrap();
        assert_eq!(read.entry.as_ref(), Some(&entry));
        assert_eq!(read.signature, sig);
        // Two entries, or an entry of another kind: refused, naming what was found.
        let mut v: Value = serde_json::from_slice(&bundle).unwrap();
        let one = v["verificationMaterial"]["tlogEntries"][0].clone();
        v["verificationMaterial"]["tlogEntries"] = json!([one.clone(), one.clone()]);
        let err = read_key_bundle(v.to_string().as_bytes()).unwrap_err();
        assert!(err.reason().contains("2 tlog entries"), "{err}");
        let mut dsse = one;
        dsse["kindVersion"] = json!({"kind": "dsse", "version": "0.0.1"});
        v["verificationMaterial"]["tlogEntries"] = json!([dsse]);
        let err = read_key_bundle(v.to_string().as_bytes()).unwrap_err();
        assert!(err.reason().contains("the bundle's tlog entry"), "{err}");
        assert!(err.reason().contains("dsse 0.0.1"), "{err}");
    }

    #[test]
    fn keys_that_cannot_sign_here_are_refused_saying_what_they_are() {
        let cosign = "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n";
        let err = SigningKey::from_pem(cosign, None).unwrap_err();
        assert!(err.reason().contains("no password"), "{err}");
        let err = SigningKey::from_pem(cosign, Some(b"")).unwrap_err();
        assert!(err.reason().contains("not cosign's JSON"), "{err}");
        let err = SigningKey::from_pem("no key", None).unwrap_err();
        assert!(err.reason().contains("no PEM block"), "{err}");
        let pem = pkcs8_pem();
        let public = SigningKey::from_pem(&pem, None).unwrap().public_pem();
        assert!(SigningKey::from_pem(&public, None).is_err());
        assert!(public_key_from_pem(&pem).is_err());
        assert!(!format!("{:?}", SigningKey::from_pem(&pem, None).unwrap()).contains("PRIVATE"));
    }

    /// A key `cosign generate-key-pair` wrote with an empty password (N 65536), published as a
    /// test key in conforma/cli's `internal/validate/vsa` tests: opened, it is a P-256 key that
    /// signs; with another password, refused.
    const COSIGN_KEY: &str = "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----
eyJrZGYiOnsibmFtZSI6InNjcnlwdCIsInBhcmFtcyI6eyJOIjo2NTUzNiwiciI6
OCwicCI6MX0sInNhbHQiOiJLYU9OQzduQVJLOVgxM1FoaWFucjAwTTBGYys2Sitr
dnAxN1FuanpiVk9nPSJ9LCJjaXBoZXIiOnsibmFtZSI6Im5hY2wvc2VjcmV0Ym94
Iiwibm9uY2UiOiJVOHZqWWtqMlZOUFZGdlZFZWZ3bXZ5VGloUERrelBoaCJ9LCJj
aXBoZXJ0ZXh0IjoidWNWMnQ4TTZVNFJvb29FOXc0d3dkc3E1RDYrS2RKY245dERT
KzFwRDRGN040SVJOWEgzSTBua3h1a3NackFOUHR1emIvTkVYQ201dUp3Zjh3Qzl1
VlprbXdwNU5jRUZ6b3ZNS3JCZmNvdXdjaEkrMzkrQ0NhbVZPbzBucmRnZjhvcmpK
dXdrWDBYL1phY0RUTERGaUxyc1laMWVMMmlqMGU1MVRpZmVQNTl4WXNPK1FnM1Jv
OURRVjNQMk9ndDFDaVFHeGg1VXhUZytGc3c9PSJ9
-----END ENCRYPTED SIGSTORE PRIVATE KEY-----
";

    #[test]
    fn a_key_cosign_wrote_opens_with_its_password_and_signs() {
        let key = SigningKey::from_pem(COSIGN_KEY, Some(b"")).unwrap();
        let digest: [u8; 32] = Sha256::digest(b"an ISO").into();
        let sig = key.sign_digest(&digest);
        let point = &PublicKey::from_spki(key.public_spki()).unwrap().bits;
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_ASN1, point)
            .verify(b"an ISO", &sig)
            .unwrap();
        let err = SigningKey::from_pem(COSIGN_KEY, Some(b"wrong")).unwrap_err();
        assert!(err.reason().contains("password does not open it"), "{err}");
        // One flipped bit of the sealed key: the tag refuses it.
        let mut flipped = COSIGN_KEY.to_owned();
        flipped.replace_range(
            560..561,
            if &COSIGN_KEY[560..561] == "A" {
                "B"
            } else {
                "A"
            },
        );
        assert!(SigningKey::from_pem(&flipped, Some(b"")).is_err());
    }
}
