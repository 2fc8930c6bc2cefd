//! cosign's encrypted private keys (`cosign generate-key-pair`: PEM `ENCRYPTED SIGSTORE PRIVATE
//! KEY`, or `ENCRYPTED COSIGN PRIVATE KEY` from older releases). The PEM body is JSON, as
//! `go-securesystemslib/encrypted` writes it: `kdf` (scrypt, its `N`, `r`, `p` and a salt),
//! `cipher` (`nacl/secretbox` and a 24-byte nonce) and `ciphertext`, the PKCS #8 DER of the key
//! sealed with a 32-byte key scrypt derives from the password. Decrypted here with RustCrypto's
//! `scrypt`, `salsa20` and `poly1305`, composed as NaCl's `crypto_secretbox_open` is: the first
//! 32 bytes of the XSalsa20 keystream key Poly1305, which authenticates the ciphertext (the 16
//! bytes after the tag); the rest of the keystream decrypts it.

use base64::Engine as _;
use poly1305::Poly1305;
use poly1305::universal_hash::KeyInit as _;
use salsa20::XSalsa20;
use salsa20::cipher::{KeyIvInit as _, StreamCipher as _};
use serde::Deserialize;

use crate::Invalid;

/// The PEM labels of cosign's encrypted keys, the current one first.
pub const LABELS: [&str; 2] = [
    "ENCRYPTED SIGSTORE PRIVATE KEY",
    "ENCRYPTED COSIGN PRIVATE KEY",
];

/// The most memory scrypt may be asked for (128 · r · N bytes): 256 MiB, four times what the
/// strongest cosign keys in use take (N = 65536, r = 8: 64 MiB); a key file asking for more is
/// refused before any work, so a hostile one cannot exhaust the build host.
const MAX_SCRYPT_MEMORY: u64 = 256 << 20;

#[derive(Deserialize)]
struct Sealed {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    salt: String,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct KdfParams {
    N: u64,
    r: u32,
    p: u32,
}

#[derive(Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

fn b64(text: &str, field: &str) -> Result<Vec<u8>, Invalid> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| format!("the encrypted key's {field} is not base64").into())
}

/// The PKCS #8 DER sealed in the PEM body `body` (the JSON, already base64-decoded), opened
/// with `password`.
pub(crate) fn open(body: &[u8], password: &[u8]) -> Result<Vec<u8>, Invalid> {
    let sealed: Sealed = serde_json::from_slice(body)
        .map_err(|e| format!("the encrypted key is not cosign's JSON: {e}"))?;
    if sealed.kdf.name != "scrypt" || sealed.cipher.name != "nacl/secretbox" {
        return Err(format!(
            "the encrypted key uses {} and {}, not scrypt and nacl/secretbox",
            sealed.kdf.name, sealed.cipher.name
        )
        .into());
    }
    let KdfParams { N: n, r, p } = sealed.kdf.params;
    if !n.is_power_of_two() || n < 2 {
        return Err(format!("the key's scrypt N {n} is not a power of two").into());
    }
    if 128 * u64::from(r) * n > MAX_SCRYPT_MEMORY || p > 16 {
        return Err(format!(
            "the key's scrypt parameters (N {n}, r {r}, p {p}) ask for more than the {} MiB \
             cks-iso gives a key",
            MAX_SCRYPT_MEMORY >> 20
        )
        .into());
    }
    let params = scrypt::Params::new(n.trailing_zeros() as u8, r, p)
        .map_err(|_| format!("the key's scrypt parameters (N {n}, r {r}, p {p}) are not valid"))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password, &b64(&sealed.kdf.salt, "salt")?, &params, &mut key)
        .expect("32 bytes is a valid scrypt output length");
    let nonce = b64(&sealed.cipher.nonce, "nonce")?;
    let boxed = b64(&sealed.ciphertext, "ciphertext")?;
    if nonce.len() != 24 || boxed.len() < 16 {
        return Err("the encrypted key's nonce or ciphertext is too short".into());
    }
    let mut stream = XSalsa20::new_from_slices(&key, &nonce).expect("32-byte key, 24-byte nonce");
    let mut mac_key = [0u8; 32];
    stream.apply_keystream(&mut mac_key);
    let (tag, sealed_der) = boxed.split_at(16);
    let expected = Poly1305::new_from_slice(&mac_key)
        .expect("a 32-byte Poly1305 key")
        .compute_unpadded(sealed_der);
    // Constant time: the comparison must not tell how much of a guessed tag was right.
    let differs = (expected.iter().zip(tag)).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if differs != 0 {
        return Err("the password does not open it (or the key file was altered)".into());
    }
    let mut der = sealed_der.to_vec();
    stream.apply_keystream(&mut der);
    Ok(der)
}
