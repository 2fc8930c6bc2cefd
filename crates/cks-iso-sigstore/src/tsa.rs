//! RFC 3161 timestamps, the signing time of a Rekor v2 entry (which has no integrated time): a
//! `TimeStampResp` whose token is a CMS `SignedData` (RFC 5652) over a `TSTInfo`. A timestamp
//! counts only when its message imprint is the hash of the bundle's signature, its signed
//! attributes bind that `TSTInfo`, a timestamp authority of the trusted root signed them, and its
//! generation time lies inside that authority's certificate chain and `validFor`. Read with the
//! crate's DER reader; certificates a token embeds are never trusted (the root decides).

use crate::Invalid;
use sha2::{Digest as _, Sha256, Sha384, Sha512};

use crate::root::TrustedRoot;
use crate::x509::der::{self, Reader, Tlv};
use crate::x509::key::OID_RSA;
use crate::x509::path::{self, Usage};
use crate::x509::{Cert, Hash, PublicKey, SigAlg};

/// `1.2.840.113549.1.7.2`: id-signedData.
const OID_SIGNED_DATA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 7, 2];
/// `1.2.840.113549.1.9.16.1.4`: id-ct-TSTInfo.
const OID_TST_INFO: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 9, 16, 1, 4];
/// `1.2.840.113549.1.9.3`: the content-type signed attribute.
const OID_CONTENT_TYPE: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 9, 3];
/// `1.2.840.113549.1.9.4`: the message-digest signed attribute.
const OID_MESSAGE_DIGEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 9, 4];
const OID_SHA256: &[u8] = &[0x60, 0x86, 0x48, 1, 0x65, 3, 4, 2, 1];
const OID_SHA384: &[u8] = &[0x60, 0x86, 0x48, 1, 0x65, 3, 4, 2, 2];
const OID_SHA512: &[u8] = &[0x60, 0x86, 0x48, 1, 0x65, 3, 4, 2, 3];
const SET: u8 = 0x31;

/// A hash a timestamp names (message imprint, signed-attribute digest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Digest {
    Sha256,
    Sha384,
    Sha512,
}

impl Digest {
    fn from_oid(oid: &[u8]) -> Result<Self, TimestampError> {
        match oid {
            OID_SHA256 => Ok(Self::Sha256),
            OID_SHA384 => Ok(Self::Sha384),
            OID_SHA512 => Ok(Self::Sha512),
            _ => Err(malformed("a hash other than SHA-256, SHA-384 or SHA-512")),
        }
    }

    fn of(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => Sha256::digest(bytes).to_vec(),
            Self::Sha384 => Sha384::digest(bytes).to_vec(),
            Self::Sha512 => Sha512::digest(bytes).to_vec(),
        }
    }

    fn hash(self) -> Hash {
        match self {
            Self::Sha256 => Hash::Sha256,
            Self::Sha384 => Hash::Sha384,
            Self::Sha512 => Hash::Sha512,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Sha256 => "SHA-256",
            Self::Sha384 => "SHA-384",
            Self::Sha512 => "SHA-512",
        }
    }
}

/// Why a timestamp gives no signing time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    /// Not the DER of an RFC 3161 response.
    #[error("it is not an RFC 3161 time-stamp response: {0}")]
    Malformed(String),
    /// The authority did not grant it.
    #[error("its status is {0}, not granted")]
    Status(u8),
    /// It timestamps something other than the bundle's signature.
    #[error("its message imprint is not the {0} of the bundle's signature")]
    Imprint(&'static str),
    /// The signed attributes do not bind the `TSTInfo`.
    #[error("its signed message digest is not that of its TSTInfo")]
    ContentDigest,
    /// The signer is none of the root's timestamp authorities.
    #[error("it was signed by no timestamp authority of the trusted root")]
    UnknownAuthority,
    /// The authority's key did not sign it.
    #[error("the signature of its timestamp authority does not verify")]
    Signature,
    /// Signed with an algorithm not verified here.
    #[error("its timestamp authority signed it with an algorithm cks-iso does not verify")]
    Algorithm,
    /// The authority's chain is not usable at the generation time.
    #[error("its timestamp authority's certificate chain: {0}")]
    Chain(String),
    /// Generated outside the authority's certificate validity.
    #[error(
        "generated at {time}, outside its timestamp authority's certificate validity \
         {not_before}..{not_after}"
    )]
    CertValidity {
        /// The generation time.
        time: i64,
        /// The certificate's notBefore.
        not_before: i64,
        /// Its notAfter.
        not_after: i64,
    },
    /// Generated outside the `validFor` the trusted root gives the authority.
    #[error("generated at {0}, outside the trusted root's validFor of its timestamp authority")]
    AuthorityValidity(i64),
}

fn malformed(reason: impl Into<String>) -> TimestampError {
    TimestampError::Malformed(reason.into())
}

/// How the token names its signer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SignerId<'a> {
    /// The issuer's Name (raw DER) and the serial number's contents.
    IssuerSerial { issuer: &'a [u8], serial: &'a [u8] },
    /// The subject key identifier.
    KeyId(&'a [u8]),
}

impl SignerId<'_> {
    fn names(&self, cert: &Cert<'_>) -> bool {
        match self {
            Self::IssuerSerial { issuer, serial } => {
                cert.issuer == *issuer && cert.serial == *serial
            }
            Self::KeyId(id) => cert.subject_key_id().ok().flatten() == Some(*id),
        }
    }
}

/// A parsed timestamp, borrowing its DER.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TimeStamp<'a> {
    /// `genTime`, seconds since the epoch (fractions dropped).
    pub(crate) gen_time: i64,
    imprint_hash: Digest,
    imprint: &'a [u8],
    /// The `TSTInfo` DER the signature covers (through the message-digest attribute).
    tst_info: &'a [u8],
    digest: Digest,
    message_digest: &'a [u8],
    signer: SignerId<'a>,
    /// The signed attributes re-tagged as the SET OF that was signed.
    signed_attrs: Vec<u8>,
    /// `None`: an algorithm not verified here (refused once its signer is known).
    sig_alg: Option<SigAlg>,
    signature: &'a [u8],
}

fn wrap<T>(r: Result<T, Invalid>) -> Result<T, TimestampError> {
    r.map_err(|e| TimestampError::Malformed(e.into()))
}

fn oid_of<'a>(alg: &Tlv<'a>) -> Result<&'a [u8], TimestampError> {
    Ok(wrap(Reader::new(alg.value).expect(der::OID))?.value)
}

/// Whether the SET OF AlgorithmIdentifier `set` names `oid`.
fn listed(set: &[u8], oid: &[u8]) -> Result<bool, TimestampError> {
    let mut r = Reader::new(set);
    while !r.is_empty() {
        if oid_of(&wrap(r.expect(der::SEQUENCE))?)? == oid {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `genTime`: `YYYYMMDDHHMMSS[.fff]Z`.
fn gen_time(tlv: &Tlv<'_>) -> Result<i64, TimestampError> {
    let text = std::str::from_utf8(tlv.value).map_err(|_| malformed("genTime is not ASCII"))?;
    let body = text
        .strip_suffix('Z')
        .ok_or_else(|| malformed("genTime is not UTC"))?;
    let whole = match body.split_once('.') {
        Some((whole, frac)) if !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()) => {
            whole
        }
        Some(_) => return Err(malformed("genTime has a malformed fraction")),
        None => body,
    };
    let seconds = format!("{whole}Z");
    wrap(der::time(&Tlv {
        tag: der::GENERALIZED_TIME,
        value: seconds.as_bytes(),
        raw: &[],
    }))
}

impl<'a> TimeStamp<'a> {
    /// Parses a DER `TimeStampResp` with a granted status and its token.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Self, TimestampError> {
        let resp = wrap(der::one(bytes, der::SEQUENCE))?;
        let mut r = Reader::new(resp.value);
        let status = wrap(r.expect(der::SEQUENCE))?;
        match wrap(Reader::new(status.value).expect(der::INTEGER))?.value {
            [0] | [1] => {}
            [n] => return Err(TimestampError::Status(*n)),
            _ => return Err(malformed("its status is not a small integer")),
        }
        let info = wrap(r.expect(der::SEQUENCE))?;
        if !r.is_empty() {
            return Err(malformed("bytes after its token"));
        }
        let mut c = Reader::new(info.value);
        if wrap(c.expect(der::OID))?.value != OID_SIGNED_DATA {
            return Err(malformed("its token is not CMS SignedData"));
        }
        let explicit = wrap(c.expect(0xa0))?;
        if !c.is_empty() {
            return Err(malformed("bytes after its SignedData"));
        }
        let signed_data = wrap(der::one(explicit.value, der::SEQUENCE))?;
        Self::signed_data(signed_data.value)
    }

    fn signed_data(bytes: &'a [u8]) -> Result<Self, TimestampError> {
        let mut s = Reader::new(bytes);
        // RFC 5652 §5.1: 3 for content other than id-data (4 and 5 with other certificate kinds).
        if !matches!(wrap(s.expect(der::INTEGER))?.value, [3..=5]) {
            return Err(malformed("its SignedData version is not 3, 4 or 5"));
        }
        let digest_algorithms = wrap(s.expect(SET))?.value;
        let encap = wrap(s.expect(der::SEQUENCE))?;
        // Certificates ([0]) and CRLs ([1]) it embeds are not trusted: the root decides.
        wrap(s.optional(0xa0))?;
        wrap(s.optional(0xa1))?;
        let signer_infos = wrap(s.expect(SET))?;
        if !s.is_empty() {
            return Err(malformed("bytes after its signer infos"));
        }
        let tst_info = Self::encapsulated(encap.value)?;
        let mut infos = Reader::new(signer_infos.value);
        let info = wrap(infos.expect(der::SEQUENCE))?;
        if !infos.is_empty() {
            return Err(malformed(
                "more than one signer (RFC 3161 allows the TSA's alone)",
            ));
        }
        let (imprint_hash, imprint, gen_time) = Self::tst_info(tst_info)?;
        let mut i = Reader::new(info.value);
        let version = wrap(i.expect(der::INTEGER))?.value;
        let sid = wrap(i.any())?;
        // RFC 5652 §5.3: version 1 names the signer by issuer and serial, 3 by key identifier.
        if !matches!((version, sid.tag), ([1], der::SEQUENCE) | ([3], 0x80)) {
            return Err(malformed(
                "its signer info's version does not match its signer identifier",
            ));
        }
        let signer = Self::signer_id(&sid)?;
        let digest_alg = wrap(i.expect(der::SEQUENCE))?;
        let digest = Digest::from_oid(oid_of(&digest_alg)?)?;
        if !listed(digest_algorithms, oid_of(&digest_alg)?)? {
            return Err(malformed(
                "its signer's digest algorithm is not among its SignedData's",
            ));
        }
        let attrs =
            wrap(i.optional(0xa0))?.ok_or_else(|| malformed("it has no signed attributes"))?;
        let sig_alg = wrap(i.expect(der::SEQUENCE))?;
        let sig_alg = match oid_of(&sig_alg)? {
            // Bare rsaEncryption: PKCS #1 v1.5 over the signer's digest algorithm.
            OID_RSA => Some(SigAlg::Rsa(digest.hash())),
            oid => SigAlg::from_oid(oid),
        };
        let signature = wrap(i.expect(der::OCTET_STRING))?.value;
        wrap(i.optional(0xa1))?;
        if !i.is_empty() {
            return Err(malformed("bytes after its signer info"));
        }
        let message_digest = Self::attributes(attrs.value)?;
        let mut signed_attrs = attrs.raw.to_vec();
        signed_attrs[0] = SET;
        Ok(Self {
            gen_time,
            imprint_hash,
            imprint,
            tst_info,
            digest,
            message_digest,
            signer,
            signed_attrs,
            sig_alg,
            signature,
        })
    }

    /// The `TSTInfo` a SignedData's encapsulated content holds (DER).
    fn encapsulated(bytes: &'a [u8]) -> Result<&'a [u8], TimestampError> {
        let mut e = Reader::new(bytes);
        if wrap(e.expect(der::OID))?.value != OID_TST_INFO {
            return Err(malformed("its content is not a TSTInfo"));
        }
        let content = wrap(e.expect(0xa0))?;
        if !e.is_empty() {
            return Err(malformed("bytes after its content"));
        }
        Ok(wrap(der::one(content.value, der::OCTET_STRING))?.value)
    }

    /// Who signed, as the signer info names it: issuer and serial, or key identifier.
    fn signer_id(sid: &Tlv<'a>) -> Result<SignerId<'a>, TimestampError> {
        Ok(match sid.tag {
            der::SEQUENCE => {
                let mut n = Reader::new(sid.value);
                let issuer = wrap(n.expect(der::SEQUENCE))?.raw;
                let serial = wrap(n.expect(der::INTEGER))?.value;
                if !n.is_empty() {
                    return Err(malformed("bytes after its signer's serial number"));
                }
                SignerId::IssuerSerial { issuer, serial }
            }
            0x80 => SignerId::KeyId(sid.value),
            _ => return Err(malformed("its signer identifier is of an unknown kind")),
        })
    }

    /// The message imprint and generation time of a `TSTInfo`.
    fn tst_info(bytes: &'a [u8]) -> Result<(Digest, &'a [u8], i64), TimestampError> {
        let seq = wrap(der::one(bytes, der::SEQUENCE))?;
        let mut t = Reader::new(seq.value);
        if wrap(t.expect(der::INTEGER))?.value != [1] {
            return Err(malformed("its TSTInfo is not version 1"));
        }
        wrap(t.expect(der::OID))?;
        let imprint = wrap(t.expect(der::SEQUENCE))?;
        wrap(t.expect(der::INTEGER))?;
        let time = gen_time(&wrap(t.expect(der::GENERALIZED_TIME))?)?;
        // accuracy, ordering, nonce, tsa, extensions: read, not needed.
        while !t.is_empty() {
            wrap(t.any())?;
        }
        let mut m = Reader::new(imprint.value);
        let hash = Digest::from_oid(oid_of(&wrap(m.expect(der::SEQUENCE))?)?)?;
        let hashed = wrap(m.expect(der::OCTET_STRING))?.value;
        if !m.is_empty() {
            return Err(malformed("bytes after its message imprint"));
        }
        Ok((hash, hashed, time))
    }

    /// The message-digest attribute, once the content-type one says TSTInfo.
    fn attributes(bytes: &'a [u8]) -> Result<&'a [u8], TimestampError> {
        let mut a = Reader::new(bytes);
        let (mut content_type, mut digest) = (None, None);
        while !a.is_empty() {
            let attr = wrap(a.expect(der::SEQUENCE))?;
            let mut r = Reader::new(attr.value);
            let oid = wrap(r.expect(der::OID))?.value;
            let values = wrap(r.expect(SET))?;
            if !r.is_empty() {
                return Err(malformed("bytes after a signed attribute"));
            }
            let slot = match oid {
                OID_CONTENT_TYPE => &mut content_type,
                OID_MESSAGE_DIGEST => &mut digest,
                _ => continue,
            };
            if slot.replace(values.value).is_some() {
                return Err(malformed("a signed attribute appears twice"));
            }
        }
        let content_type = content_type.ok_or_else(|| malformed("no content-type attribute"))?;
        if wrap(der::one(content_type, der::OID))?.value != OID_TST_INFO {
            return Err(malformed("its content-type attribute is not TSTInfo"));
        }
        let digest = digest.ok_or_else(|| malformed("no message-digest attribute"))?;
        Ok(wrap(der::one(digest, der::OCTET_STRING))?.value)
    }

    /// The generation time, once the timestamp is shown to be of `signed` (the bundle's
    /// signature bytes) by a timestamp authority of `root`, valid then.
    pub(crate) fn verify(&self, root: &TrustedRoot, signed: &[u8]) -> Result<i64, TimestampError> {
        if self.imprint_hash.of(signed) != self.imprint {
            return Err(TimestampError::Imprint(self.imprint_hash.name()));
        }
        if self.digest.of(self.tst_info) != self.message_digest {
            return Err(TimestampError::ContentDigest);
        }
        let t = self.gen_time;
        let mut first = None;
        for tsa in &root.tsas {
            let certs: Vec<Cert<'_>> = tsa
                .chain
                .iter()
                .filter_map(|d| Cert::parse(d).ok())
                .collect();
            if !certs.first().is_some_and(|leaf| self.signer.names(leaf)) {
                continue;
            }
            let attempt = || {
                let leaf = &certs[0];
                let alg = self.sig_alg.ok_or(TimestampError::Algorithm)?;
                PublicKey::from_spki(leaf.spki)
                    .and_then(|k| k.verify_as(alg, &self.signed_attrs, self.signature))
                    .map_err(|_| TimestampError::Signature)?;
                chain(&certs, &tsa.chain, t)?;
                match tsa.valid.covers(t) {
                    true => Ok(t),
                    false => Err(TimestampError::AuthorityValidity(t)),
                }
            };
            match attempt() {
                Ok(t) => return Ok(t),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        Err(first.unwrap_or(TimestampError::UnknownAuthority))
    }
}

/// The authority's chain `der` (its signing certificate first, parsed as `certs`): every
/// certificate valid at `t`, the signer's extended key usage time stamping alone and critical
/// (RFC 3161 §2.3, as OpenSSL under sigstore-python holds it), and the path from the signer to
/// the last certificate valid for time stamping, validated by webpki ([`path`]). A chain of one
/// certificate is a self-signed signer, its own anchor.
fn chain(certs: &[Cert<'_>], der: &[Vec<u8>], t: i64) -> Result<(), TimestampError> {
    let bad = |e: Invalid| TimestampError::Chain(e.into());
    let signer = certs.first().ok_or_else(|| bad("it is empty".into()))?;
    // Each certificate's validity by hand, before webpki's (which says neither which
    // certificate nor its bounds), and the anchor's, which webpki does not check.
    for c in certs {
        if t < c.not_before || t > c.not_after {
            return Err(TimestampError::CertValidity {
                time: t,
                not_before: c.not_before,
                not_after: c.not_after,
            });
        }
    }
    if !signer
        .sole_critical_usage(path::TIME_STAMPING)
        .map_err(bad)?
    {
        return Err(bad(
            "the signer's certificate is not for time stamping alone, marked critical (its \
             extended key usage)"
                .into(),
        ));
    }
    let authority = match der {
        [_, above @ ..] if !above.is_empty() => above,
        all => all,
    };
    path::validate(signer.der, authority, t, Usage::TimeStamping).map_err(bad)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Result<i64, TimestampError> {
        gen_time(&Tlv {
            tag: der::GENERALIZED_TIME,
            value: text.as_bytes(),
            raw: &[],
        })
    }

    #[test]
    fn gen_times_read_with_or_without_fractions_and_nothing_else() {
        let t = der::rfc3339("2025-06-12T12:02:20Z").unwrap();
        assert_eq!(at("20250612120220Z"), Ok(t));
        assert_eq!(at("20250612120220.5Z"), Ok(t));
        assert_eq!(at("20250612120220.123456Z"), Ok(t));
        for bad in [
            "20250612120220",
            "20250612120220.Z",
            "20250612120220.1aZ",
            "20250612120220+0100",
            "2025061212022Z",
            "\u{e9}",
        ] {
            let err = at(bad).unwrap_err();
            assert!(
                matches!(err, TimestampError::Malformed(_)),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn only_a_granted_response_is_read() {
        // status 0 (granted) and 1 (grantedWithMods) read on; 2 (rejection) is refused.
        for (status, verdict) in [(0u8, None), (1, None), (2, Some(TimestampError::Status(2)))] {
            let resp = der::encode(
                der::SEQUENCE,
                &[
                    der::encode(der::SEQUENCE, &der::encode(der::INTEGER, &[status])),
                    der::encode(der::SEQUENCE, &[]),
                ]
                .concat(),
            );
            let err = TimeStamp::parse(&resp).unwrap_err();
            match verdict {
                Some(expected) => assert_eq!(err, expected),
                // Past the status, the empty token is what is refused.
                None => assert!(matches!(err, TimestampError::Malformed(_)), "{err}"),
            }
        }
    }
}
