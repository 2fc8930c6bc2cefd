//! A timestamp authority for the world: a root CA and a signing certificate for time stamping
//! (P-256), named in the world's `trusted_root.json` under `timestampAuthorities`, answering
//! RFC 3161 `TimeStampResp`s whose token is a CMS `SignedData` (RFC 5652) over a `TSTInfo`. A
//! Rekor v2 entry has no integrated time: these responses are what date a signature.
//!
//! The DER is written here, from RFC 3161, RFC 5652 and RFC 5035, in the shape Sigstore's
//! timestamp-authority answers (checked against a conformance-suite response in the tests
//! below): granted status, the signing certificate embedded, signed attributes content type,
//! signing time, message digest and signing certificate v2, the signer named by issuer and
//! serial, and a `TSTInfo` with policy, imprint, serial, time, accuracy, nonce and TSA name.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, CustomExtension, DistinguishedName,
    DnType, IsCa, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SerialNumber, SigningKey,
};
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::http::base64;

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const INTEGER: u8 = 0x02;
const OCTET_STRING: u8 = 0x04;
const OID: u8 = 0x06;

const OID_SIGNED_DATA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 7, 2];
const OID_TST_INFO: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 9, 16, 1, 4];
const OID_CONTENT_TYPE: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 9, 3];
const OID_MESSAGE_DIGEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 9, 4];
const OID_SIGNING_TIME: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 9, 5];
const OID_SIGNING_CERT_V2: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 9, 16, 2, 47];
const OID_SHA256: &[u8] = &[0x60, 0x86, 0x48, 1, 0x65, 3, 4, 2, 1];
const OID_ECDSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 4, 3, 2];
/// `1.3.6.1.5.5.7.3.8`: id-kp-timeStamping.
const OID_TIME_STAMPING: &[u8] = &[0x2b, 6, 1, 5, 5, 7, 3, 8];
/// Sigstore's timestamp policy, `1.3.6.1.4.1.57264.2`.
const OID_POLICY: &[u8] = &[0x2b, 6, 1, 4, 1, 0x83, 0xbf, 0x30, 2];

/// DER: one element.
pub(crate) fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = contents.len();
    match len {
        0..0x80 => out.push(len as u8),
        0x80..0x100 => out.extend([0x81, len as u8]),
        0x100..0x10000 => out.extend([0x82, (len >> 8) as u8, len as u8]),
        _ => out.extend([0x83, (len >> 16) as u8, (len >> 8) as u8, len as u8]),
    }
    out.extend_from_slice(contents);
    out
}

/// The elements of a DER constructed value's contents, each whole (header and contents).
fn elements(mut contents: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while !contents.is_empty() {
        let (header, len) = match contents[1] {
            n if n < 0x80 => (2, n as usize),
            0x81 => (3, contents[2] as usize),
            0x82 => (4, ((contents[2] as usize) << 8) | contents[3] as usize),
            _ => panic!("a DER element too large for the world"),
        };
        out.push(&contents[..header + len]);
        contents = &contents[header + len..];
    }
    out
}

/// The contents of a whole DER element.
fn inner(element: &[u8]) -> &[u8] {
    let header = match element[1] {
        n if n < 0x80 => 2,
        0x81 => 3,
        _ => 4,
    };
    &element[header..]
}

/// A certificate's serial number (whole INTEGER), issuer and subject Names (whole SEQUENCEs).
fn cert_names(cert: &[u8]) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let tbs = elements(inner(cert))[0];
    let fields = elements(inner(tbs));
    // [0] version, serial, signature algorithm, issuer, validity, subject.
    (fields[1].to_vec(), fields[3].to_vec(), fields[5].to_vec())
}

fn utc_time(t: i64) -> Vec<u8> {
    let d = time::OffsetDateTime::from_unix_timestamp(t).expect("a valid time");
    let text = format!(
        "{:02}{:02}{:02}{:02}{:02}{:02}Z",
        d.year() % 100,
        u8::from(d.month()),
        d.day(),
        d.hour(),
        d.minute(),
        d.second()
    );
    der(0x17, text.as_bytes())
}

fn generalized_time(t: i64) -> Vec<u8> {
    let d = time::OffsetDateTime::from_unix_timestamp(t).expect("a valid time");
    let text = format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}Z",
        d.year(),
        u8::from(d.month()),
        d.day(),
        d.hour(),
        d.minute(),
        d.second()
    );
    der(0x18, text.as_bytes())
}

/// A positive INTEGER of `value`'s big-endian bytes, minimal.
fn integer(value: u64) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let first = bytes.iter().position(|&b| b != 0).unwrap_or(7);
    let mut contents = bytes[first..].to_vec();
    if contents[0] & 0x80 != 0 {
        contents.insert(0, 0);
    }
    der(INTEGER, &contents)
}

fn attribute(oid: &[u8], value: &[u8]) -> Vec<u8> {
    der(SEQUENCE, &[der(OID, oid), der(SET, value)].concat())
}

/// A timestamp authority: its CA, its time-stamping certificate and key.
pub struct Tsa {
    name: String,
    root: CertifiedIssuer<'static, KeyPair>,
    leaf: Vec<u8>,
    key: KeyPair,
}

impl Tsa {
    /// Fresh keys and certificates for an authority called `name`; `lax` writes its certificate's
    /// extended key usage non-critical, as RFC 3161 forbids.
    pub fn generate(name: &str, lax: bool) -> Self {
        let dn = |cn: String| {
            let mut dn = DistinguishedName::new();
            dn.push(DnType::OrganizationName, "cks-world");
            dn.push(DnType::CommonName, cn);
            dn
        };
        let mut root = CertificateParams::default();
        root.distinguished_name = dn(format!("{name}-root"));
        root.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        root.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        root.not_before = rcgen::date_time_ymd(2021, 1, 1);
        root.not_after = rcgen::date_time_ymd(2041, 1, 1);
        let root_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("P-256 key");
        let root = CertifiedIssuer::self_signed(root, root_key).expect("TSA root");
        let mut leaf = CertificateParams::default();
        leaf.distinguished_name = dn(name.to_owned());
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        // RFC 3161 §2.3: time stamping alone, and critical (OpenSSL, under sigstore-python,
        // refuses the certificate otherwise); rcgen writes its own EKU non-critical.
        let mut eku = CustomExtension::from_oid_content(
            &[2, 5, 29, 37],
            der(SEQUENCE, &der(OID, OID_TIME_STAMPING)),
        );
        eku.set_criticality(!lax);
        leaf.custom_extensions.push(eku);
        leaf.use_authority_key_identifier_extension = true;
        leaf.serial_number = Some(SerialNumber::from(0x7157_a001_u64));
        leaf.not_before = rcgen::date_time_ymd(2021, 1, 1);
        leaf.not_after = rcgen::date_time_ymd(2041, 1, 1);
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("P-256 key");
        let leaf = leaf
            .signed_by(&key, &root)
            .expect("TSA leaf")
            .der()
            .to_vec();
        Self {
            name: name.to_owned(),
            root,
            leaf,
            key,
        }
    }

    /// Its `timestampAuthorities` entry of a trusted root (protobuf-specs
    /// `CertificateAuthority`): subject, URI, the chain leaf first, `validFor`.
    pub fn root_entry(&self) -> Value {
        json!({
            "subject": {"organization": "cks-world", "commonName": self.name},
            "uri": format!("http://{}.world.invalid/api/v1/timestamp", self.name),
            "certChain": {"certificates": [
                {"rawBytes": base64(&self.leaf)},
                {"rawBytes": base64(self.root.der())},
            ]},
            "validFor": {"start": "2021-01-01T00:00:00Z"},
        })
    }

    /// The DER `TimeStampResp` granting a timestamp at `t` of `signature` (the bytes of a
    /// bundle's message signature), with `serial` and `nonce`.
    pub fn timestamp(&self, signature: &[u8], t: i64, serial: u64, nonce: u64) -> Vec<u8> {
        let (leaf_serial, issuer, subject) = cert_names(&self.leaf);
        let sha256 = der(SEQUENCE, &der(OID, OID_SHA256));
        let tst_info = tst_info(signature, t, serial, nonce, &subject);
        // RFC 5035 ESSCertIDv2 with the default hash (SHA-256): the hash and issuer-serial.
        let issuer_serial = der(
            SEQUENCE,
            &[der(SEQUENCE, &der(0xa4, &issuer)), leaf_serial.clone()].concat(),
        );
        let cert_id = der(
            SEQUENCE,
            &[
                der(OCTET_STRING, &sha2::Sha256::digest(&self.leaf)),
                issuer_serial,
            ]
            .concat(),
        );
        let mut attrs = [
            attribute(OID_CONTENT_TYPE, &der(OID, OID_TST_INFO)),
            attribute(OID_SIGNING_TIME, &utc_time(t)),
            attribute(
                OID_MESSAGE_DIGEST,
                &der(OCTET_STRING, &sha2::Sha256::digest(&tst_info)),
            ),
            attribute(
                OID_SIGNING_CERT_V2,
                &der(SEQUENCE, &der(SEQUENCE, &cert_id)),
            ),
        ];
        // A SET OF is in the order of its elements' encodings (X.690 §11.6).
        attrs.sort();
        let attrs = attrs.concat();
        let signature_value = self.key.sign(&der(SET, &attrs)).expect("TSA signature");
        let signer_info = der(
            SEQUENCE,
            &[
                integer(1),
                der(SEQUENCE, &[issuer, leaf_serial].concat()),
                sha256.clone(),
                der(0xa0, &attrs),
                der(SEQUENCE, &der(OID, OID_ECDSA_SHA256)),
                der(OCTET_STRING, &signature_value),
            ]
            .concat(),
        );
        let signed_data = der(
            SEQUENCE,
            &[
                integer(3),
                der(SET, &sha256),
                der(
                    SEQUENCE,
                    &[
                        der(OID, OID_TST_INFO),
                        der(0xa0, &der(OCTET_STRING, &tst_info)),
                    ]
                    .concat(),
                ),
                der(0xa0, &self.leaf),
                der(SET, &signer_info),
            ]
            .concat(),
        );
        let token = der(
            SEQUENCE,
            &[der(OID, OID_SIGNED_DATA), der(0xa0, &signed_data)].concat(),
        );
        der(SEQUENCE, &[der(SEQUENCE, &integer(0)), token].concat())
    }
}

/// The `TSTInfo` (RFC 3161) of a timestamp at `t` of `signature`, with `serial`, `nonce` and
/// the TSA's name `subject`.
fn tst_info(signature: &[u8], t: i64, serial: u64, nonce: u64, subject: &[u8]) -> Vec<u8> {
    let imprint = der(
        SEQUENCE,
        &[
            der(SEQUENCE, &[der(OID, OID_SHA256), der(0x05, &[])].concat()),
            der(OCTET_STRING, &sha2::Sha256::digest(signature)),
        ]
        .concat(),
    );
    der(
        SEQUENCE,
        &[
            integer(1),
            der(OID, OID_POLICY),
            imprint,
            integer(serial),
            generalized_time(t),
            der(SEQUENCE, &integer(1)),
            integer(nonce),
            der(0xa0, &der(0xa4, subject)),
        ]
        .concat(),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The tags of `der`'s elements to depth 8, depth first, as `depth:tag`: a response's
    /// outline down to the fields of its `TSTInfo` (the OCTET STRING at depth 6, opened) and of
    /// its signed attributes, not looking inside the embedded certificates (`[0]` at depth 4).
    pub(crate) fn skeleton(der: &[u8], depth: usize, out: &mut Vec<String>) {
        for e in elements(der) {
            out.push(format!("{depth}:{:02x}", e[0]));
            let certificates = e[0] == 0xa0 && depth == 4;
            let opens = e[0] & 0x20 != 0 || (e[0] == OCTET_STRING && depth == 6);
            if depth < 8 && opens && !certificates {
                skeleton(inner(e), depth + 1, out);
            }
        }
    }

    #[test]
    fn a_response_has_the_shape_of_sigstores_timestamp_authority() {
        // A response of Sigstore's staging timestamp authority, from the conformance suite's
        // data kept under tests/.
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/sigstore-conformance/bundle-verify/rekor2-happy-path/bundle.sigstore.json"
        );
        let bundle: Value = serde_json::from_slice(&std::fs::read(dir).unwrap()).unwrap();
        let real =
            crate::rekor_v2::unbase64(
                bundle["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"][0]
                    ["signedTimestamp"]
                    .as_str()
                    .unwrap(),
            );
        let ours = Tsa::generate("tsa", false).timestamp(b"signature", 1_750_000_000, 7, 9);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        skeleton(&real, 0, &mut a);
        skeleton(&ours, 0, &mut b);
        assert_eq!(a, b);
    }
}
