//! Reading X.509 certificates for what Sigstore needs of them beyond a validated path: the
//! validity (check 7 judges the signing time against the leaf's own), names and serial (a
//! timestamp names its signer by them), the public key, the leaf's key usage bits, the SAN
//! identities (e-mail addresses and URIs), Fulcio's OIDC issuer extensions, the embedded SCT list
//! and the TBS re-encoded without it (the precertificate an SCT signs), and a timestamp
//! authority's extended key usage (time stamping alone, critical). Path validation itself (the
//! signatures, CA flags, validity and usages along the chain, critical extensions) is
//! `rustls-webpki`'s, in [`path`]: webpki exposes none of the fields above.
//!
//! Read with [`der`], strictly (DER lengths in their shortest form, v3 only, each extension once,
//! nothing after the signature), so that what a lax reader would accept is refused here as
//! Sigstore's own clients refuse it.

pub(crate) mod der;
pub(crate) mod key;
pub(crate) mod path;

use crate::Invalid;
use der::{Reader, Tlv};
pub(crate) use key::{Hash, KeyKind, PublicKey, SigAlg};

/// `1.3.6.1.4.1.11129.2.4.2`: the embedded SCT list (RFC 6962 §3.3).
pub(crate) const OID_SCT_LIST: &[u8] = &[0x2b, 6, 1, 4, 1, 0xd6, 0x79, 2, 4, 2];
/// `1.3.6.1.4.1.57264.1.1`: Fulcio's OIDC issuer, raw bytes (deprecated form).
pub(crate) const OID_ISSUER_V1: &[u8] = &[0x2b, 6, 1, 4, 1, 0x83, 0xbf, 0x30, 1, 1];
/// `1.3.6.1.4.1.57264.1.8`: Fulcio's OIDC issuer, DER UTF8String.
pub(crate) const OID_ISSUER_V2: &[u8] = &[0x2b, 6, 1, 4, 1, 0x83, 0xbf, 0x30, 1, 8];
const OID_SAN: &[u8] = &[0x55, 0x1d, 0x11];
const OID_EKU: &[u8] = &[0x55, 0x1d, 0x25];
const OID_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
const OID_SUBJECT_KEY_ID: &[u8] = &[0x55, 0x1d, 0x0e];

/// The most a certificate may weigh, DER. Real Fulcio leaves weigh 0.7–2.5 KiB (the largest,
/// a GitHub Actions workflow's with its twenty-odd build extensions, 2.5 KiB in the Sigstore
/// conformance suite); the CA and timestamp authority certificates of a trusted root under
/// 2 KiB. 16 KiB leaves six times the room and refuses, before any parsing, the megabyte
/// certificates a signature annotation, a `.cert` or a bundle could otherwise carry (Go's x509
/// has no cap, but reads linearly; so does this reader).
pub const MAX_CERT_SIZE: usize = 16 * 1024;

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
    /// The whole certificate, DER (what webpki validates).
    pub(crate) der: &'a [u8],
    /// The serial number's INTEGER contents.
    pub(crate) serial: &'a [u8],
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
    pub(crate) fn parse(der_bytes: &'a [u8]) -> Result<Self, Invalid> {
        if der_bytes.len() > MAX_CERT_SIZE {
            return Err(format!(
                "a certificate of {} bytes, more than the {MAX_CERT_SIZE} a Fulcio or CA \
                 certificate needs",
                der_bytes.len()
            )
            .into());
        }
        let cert = der::one(der_bytes, der::SEQUENCE)?;
        let mut r = Reader::new(cert.value);
        let tbs = r.expect(der::SEQUENCE)?;
        let alg = r.expect(der::SEQUENCE)?;
        let sig = r.expect(der::BIT_STRING)?;
        if !r.is_empty() {
            return Err("bytes after the certificate's signature".into());
        }
        der::bits(&sig)?;
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
                    extensions = read_extensions(list.value)?;
                }
                _ => return Err("unexpected field in the TBS certificate".into()),
            }
        }
        Ok(Self {
            der: der_bytes,
            serial: serial.value,
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

    /// Whether the key usage extension allows digitalSignature (false when it is absent: Fulcio
    /// always writes it).
    pub(crate) fn digital_signature(&self) -> Result<bool, Invalid> {
        let Some(ext) = self.extension(OID_KEY_USAGE) else {
            return Ok(false);
        };
        let bits = der::one(ext.value, der::BIT_STRING)?;
        // The first content octet counts the unused bits; digitalSignature is bit 0, the
        // first octet's high bit.
        Ok(bits.value.get(1).is_some_and(|b| b & 0x80 != 0))
    }

    /// The subject key identifier's contents, if the certificate has one.
    pub(crate) fn subject_key_id(&self) -> Result<Option<&'a [u8]>, Invalid> {
        match self.extension(OID_SUBJECT_KEY_ID) {
            Some(ext) => Ok(Some(der::one(ext.value, der::OCTET_STRING)?.value)),
            None => Ok(None),
        }
    }

    /// Whether the extended key usage is `purpose` alone and marked critical, as RFC 3161 §2.3
    /// asks of a timestamp authority's certificate.
    pub(crate) fn sole_critical_usage(&self, purpose: &[u8]) -> Result<bool, Invalid> {
        let Some(ext) = self.extension(OID_EKU) else {
            return Ok(false);
        };
        let seq = der::one(ext.value, der::SEQUENCE)?;
        let mut r = Reader::new(seq.value);
        let mut purposes = Vec::new();
        while !r.is_empty() {
            purposes.push(r.expect(der::OID)?.value);
        }
        Ok(ext.critical && purposes == [purpose])
    }

    /// The SAN identities: e-mail addresses and URIs.
    pub(crate) fn identities(&self) -> Result<Vec<String>, Invalid> {
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
    pub(crate) fn oidc_issuer(&self) -> Result<Option<String>, Invalid> {
        if let Some(ext) = self.extension(OID_ISSUER_V2) {
            let text = der::one(ext.value, der::UTF8_STRING)?;
            return Ok(Some(String::from_utf8_lossy(text.value).into_owned()));
        }
        Ok(self
            .extension(OID_ISSUER_V1)
            .map(|ext| String::from_utf8_lossy(ext.value).into_owned()))
    }

    /// The TLS-encoded SCT list, if the certificate embeds one.
    pub(crate) fn sct_list(&self) -> Result<Option<&'a [u8]>, Invalid> {
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

/// The extensions of an `Extensions` SEQUENCE's contents, each OID at most once (RFC 5280
/// §4.2), none at all refused. Linear in their number: the duplicate check is one hash set, not
/// a scan of those read so far for each (which made a 1 MB certificate of 100 000 extensions
/// cost half a minute before any signature was checked).
fn read_extensions(list: &[u8]) -> Result<Vec<Extension<'_>>, Invalid> {
    let mut extensions = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut e = Reader::new(list);
    while !e.is_empty() {
        let ext = extension(e.expect(der::SEQUENCE)?)?;
        if !seen.insert(ext.oid) {
            return Err(format!(
                "the extension {} appears twice in a certificate",
                oid_text(ext.oid)
            )
            .into());
        }
        extensions.push(ext);
    }
    if extensions.is_empty() {
        return Err("a certificate with an empty extension list".into());
    }
    Ok(extensions)
}

fn extension(seq: Tlv<'_>) -> Result<Extension<'_>, Invalid> {
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

/// The DER of every `CERTIFICATE` block of a PEM text, in order.
pub(crate) fn pem_certificates(text: &str) -> Result<Vec<Vec<u8>>, Invalid> {
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

/// The first PEM block of `text`: its label and DER.
pub(crate) fn pem_block(text: &str) -> Result<(String, Vec<u8>), Invalid> {
    let mut label = None;
    let mut body = String::new();
    for line in text.lines().map(str::trim) {
        match (&label, line.strip_prefix("-----BEGIN ")) {
            (None, Some(rest)) => label = Some(rest.trim_end_matches('-').to_owned()),
            (None, None) => {}
            (Some(l), _) if line == format!("-----END {l}-----") => {
                let der = base64::Engine::decode(
                    &base64::engine::general_purpose::STANDARD,
                    body.as_bytes(),
                )
                .map_err(|_| format!("the PEM block {l:?} is not base64"))?;
                return Ok((l.clone(), der));
            }
            (Some(_), _) if line.contains(':') => {} // PEM headers (RFC 1421), none used here
            (Some(_), _) => body.push_str(line),
        }
    }
    Err(match label {
        Some(l) => format!("the PEM block {l:?} has no END line").into(),
        None => "no PEM block (-----BEGIN ...-----)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The extension reader alone, past the certificate cap that guards it: 100 000 distinct
    /// extensions (1.4 MB) read in linear time, and a duplicate at the end still found. The
    /// bound: two seconds plus twenty times a bare walk over the same elements.
    #[test]
    fn the_extension_list_is_read_in_linear_time() {
        let mut list = Vec::new();
        for i in 0..100_000u32 {
            let oid = [&[0x2b, 6, 1, 4, 1][..], &i.to_be_bytes()].concat();
            let body = [
                der::encode(der::OID, &oid),
                der::encode(der::OCTET_STRING, &[]),
            ];
            list.extend(der::encode(der::SEQUENCE, &body.concat()));
        }
        let first = Reader::new(&list).any().unwrap().raw.to_vec();
        let start = std::time::Instant::now();
        let mut walk = Reader::new(&list);
        while !walk.is_empty() {
            std::hint::black_box(extension(walk.any().unwrap()).unwrap());
        }
        let bound = std::time::Duration::from_secs(2) + start.elapsed() * 20;
        let start = std::time::Instant::now();
        assert_eq!(read_extensions(&list).unwrap().len(), 100_000);
        list.extend(first);
        let err = read_extensions(&list).unwrap_err();
        let took = start.elapsed();
        assert!(err.reason().contains("appears twice"), "{err}");
        // Quadratic, as it was, this took about a minute.
        assert!(took < bound, "{took:?}, more than {bound:?}");
    }
}
