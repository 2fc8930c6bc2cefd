//! A small Sigstore for the world, generated per run: a Fulcio-like root and intermediate CA
//! (P-384), a CT log key whose SCTs are embedded in every leaf (RFC 6962 precertificate entries),
//! a Rekor key that signs entry timestamps (SETs) over hashedrekord entries, a Rekor v2 log and
//! timestamp authority ([`crate::rekor_v2`]), and the `trusted_root.json` naming them. It signs container images the way Kubernetes' promoter does
//! (cosign's simple-signing `.sig` tags), so cks-iso's verification meets the real formats.
//!
//! Written from the formats' specifications (protobuf-specs `TrustedRoot`, RFC 6962, cosign's
//! signature spec), independently of cks-iso's verifier. [`SignOptions`] makes the bad
//! signatures the tests need: another identity or issuer, a leaf from a CA outside the root, a
//! flipped bit in the SET, a payload for another digest.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, CustomExtension, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256,
    PKCS_ECDSA_P384_SHA384, PublicKeyData, SanType, SerialNumber, SigningKey,
};
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::http::base64;
pub use crate::sig_tags::{signature_manifest, signature_tag};

/// Kubernetes' image signer.
pub const K8S_IDENTITY: &str = "krel-trust@k8s-releng-prod.iam.gserviceaccount.com";
/// Kubernetes' binary signer (dl.k8s.io `.sig`/`.cert`).
pub const K8S_BINARY_IDENTITY: &str = "krel-staging@k8s-releng-prod.iam.gserviceaccount.com";
/// Google's OIDC issuer.
pub const GOOGLE_ISSUER: &str = "https://accounts.google.com";
/// The media type of a simple-signing layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

const SCT_OID: &[u64] = &[1, 3, 6, 1, 4, 1, 11129, 2, 4, 2];
const ISSUER_V1_OID: &[u64] = &[1, 3, 6, 1, 4, 1, 57264, 1, 1];
const ISSUER_V2_OID: &[u64] = &[1, 3, 6, 1, 4, 1, 57264, 1, 8];

/// Which Fulcio extensions carry the OIDC issuer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IssuerForm {
    /// Both `.1.1` (raw) and `.1.8` (UTF8String), as Fulcio writes today.
    Both,
    /// Only the deprecated `.1.1`.
    V1,
    /// Only `.1.8`.
    V2,
}

/// How to sign, and how to spoil it.
#[derive(Debug, Clone)]
pub struct SignOptions {
    /// The SAN e-mail.
    pub identity: String,
    /// The OIDC issuer.
    pub issuer: String,
    /// Where the issuer goes.
    pub issuer_form: IssuerForm,
    /// Issue the leaf from a CA that is not in the trusted root.
    pub rogue_ca: bool,
    /// Flip one bit of the signed entry timestamp.
    pub flip_set: bool,
    /// The payload names this digest instead of the one signed (a signature copied from
    /// another image).
    pub payload_digest: Option<String>,
    /// Seconds between the leaf's issuance and Rekor's integrated time (a leaf is valid for ten
    /// minutes from a minute before issuance: 3600 puts the entry outside it).
    pub integrated_after: i64,
    /// Flip a bit of the embedded SCT's signature (the CA still signs the leaf).
    pub spoil_sct: bool,
    /// The leaf's key usage says keyAgreement instead of digitalSignature.
    pub no_digital_signature: bool,
    /// The leaf carries an extension no verifier knows (OID 1.3.6.1.4.1.57264.99.1), marked
    /// critical.
    pub unknown_critical_extension: bool,
}

impl Default for SignOptions {
    fn default() -> Self {
        Self {
            identity: K8S_IDENTITY.into(),
            issuer: GOOGLE_ISSUER.into(),
            issuer_form: IssuerForm::Both,
            rogue_ca: false,
            flip_set: false,
            payload_digest: None,
            integrated_after: 0,
            spoil_sct: false,
            no_digital_signature: false,
            unknown_critical_extension: false,
        }
    }
}

/// One signature layer: the payload blob and the layer's annotations.
#[derive(Debug, Clone)]
pub struct SignedLayer {
    /// The simple-signing payload.
    pub payload: Vec<u8>,
    /// cosign's four annotations.
    pub annotations: BTreeMap<String, String>,
}

struct Ca {
    root: CertifiedIssuer<'static, KeyPair>,
    intermediate: CertifiedIssuer<'static, KeyPair>,
}

/// The world's Sigstore: CAs, CT log and Rekor keys.
pub struct Sigstore {
    ca: Ca,
    rogue: Ca,
    ct: KeyPair,
    rekor: KeyPair,
    next_index: AtomicI64,
    trusted_root: String,
    rekor_v2: crate::rekor_v2::RekorV2,
}

pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn at(t: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(t).expect("a valid time")
}

fn ca(name: &str) -> Ca {
    let mut root = CertificateParams::default();
    root.distinguished_name = DistinguishedName::new();
    root.distinguished_name
        .push(DnType::OrganizationName, "cks-world");
    root.distinguished_name.push(DnType::CommonName, name);
    root.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    root.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    root.not_before = rcgen::date_time_ymd(2021, 1, 1);
    root.not_after = rcgen::date_time_ymd(2041, 1, 1);
    let root_key = KeyPair::generate_for(&PKCS_ECDSA_P384_SHA384).expect("P-384 key");
    let root = CertifiedIssuer::self_signed(root, root_key).expect("root CA");
    let mut mid = CertificateParams::default();
    mid.distinguished_name = DistinguishedName::new();
    mid.distinguished_name
        .push(DnType::OrganizationName, "cks-world");
    mid.distinguished_name
        .push(DnType::CommonName, format!("{name}-intermediate"));
    mid.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    mid.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    mid.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
    mid.use_authority_key_identifier_extension = true;
    mid.not_before = rcgen::date_time_ymd(2021, 1, 1);
    mid.not_after = rcgen::date_time_ymd(2041, 1, 1);
    let mid_key = KeyPair::generate_for(&PKCS_ECDSA_P384_SHA384).expect("P-384 key");
    let intermediate = CertifiedIssuer::signed_by(mid, mid_key, &root).expect("intermediate CA");
    Ca { root, intermediate }
}

/// DER: one element.
fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = contents.len();
    if len < 0x80 {
        out.push(len as u8);
    } else if len < 0x100 {
        out.extend([0x81, len as u8]);
    } else {
        out.extend([0x82, (len >> 8) as u8, len as u8]);
    }
    out.extend_from_slice(contents);
    out
}

/// The TBSCertificate element of a DER certificate.
fn tbs_of(cert: &[u8]) -> Vec<u8> {
    // Skip the outer SEQUENCE header, then take the first element whole.
    let header = |b: &[u8]| -> (usize, usize) {
        match b[1] {
            n if n < 0x80 => (2, n as usize),
            0x81 => (3, b[2] as usize),
            0x82 => (4, ((b[2] as usize) << 8) | b[3] as usize),
            _ => panic!("certificate too large"),
        }
    };
    let (outer, _) = header(cert);
    let inner = &cert[outer..];
    let (h, len) = header(inner);
    inner[..h + len].to_vec()
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    sha2::Sha256::digest(bytes).to_vec()
}

pub(crate) fn pem(der: &[u8]) -> String {
    let b64 = base64(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).expect("ASCII"));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

fn log_entry(key: &KeyPair, url: &str) -> Value {
    let spki = key.subject_public_key_info();
    json!({
        "baseUrl": url,
        "hashAlgorithm": "SHA2_256",
        "publicKey": {
            "rawBytes": base64(&spki),
            "keyDetails": "PKIX_ECDSA_P256_SHA_256",
            "validFor": {"start": "2021-01-01T00:00:00Z"},
        },
        "logId": {"keyId": base64(&sha256(&spki))},
    })
}

impl Sigstore {
    /// Fresh keys and CAs.
    pub fn generate() -> Self {
        let ca_main = ca("sigstore");
        let rogue = ca("rogue");
        let ct = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("CT key");
        let rekor = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("Rekor key");
        let rekor_v2 = crate::rekor_v2::RekorV2::generate();
        let root = json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [log_entry(&rekor, "http://rekor.world.invalid"), rekor_v2.root_entry()],
            "certificateAuthorities": [{
                "subject": {"organization": "cks-world", "commonName": "sigstore"},
                "uri": "http://fulcio.world.invalid",
                "certChain": {"certificates": [
                    {"rawBytes": base64(ca_main.intermediate.der())},
                    {"rawBytes": base64(ca_main.root.der())},
                ]},
                "validFor": {"start": "2021-01-01T00:00:00Z"},
            }],
            "ctlogs": [log_entry(&ct, "http://ctfe.world.invalid")],
            "timestampAuthorities": rekor_v2.tsa_entries(),
        });
        Self {
            ca: ca_main,
            rogue,
            ct,
            rekor,
            next_index: AtomicI64::new(1000),
            trusted_root: serde_json::to_string_pretty(&root).expect("JSON"),
            rekor_v2,
        }
    }

    /// The Fulcio chain above every leaf, as PEM: the intermediate, then the root.
    pub fn chain_pem(&self) -> Vec<String> {
        vec![pem(self.ca.intermediate.der()), pem(self.ca.root.der())]
    }

    /// The world's Rekor v2 log and its timestamp authority.
    pub fn rekor_v2(&self) -> &crate::rekor_v2::RekorV2 {
        &self.rekor_v2
    }

    /// The `trusted_root.json` text.
    pub fn trusted_root(&self) -> &str {
        &self.trusted_root
    }

    /// A Fulcio-like leaf for `opts`, valid ten minutes around `t`, with an embedded SCT.
    /// An identity with `://` goes into a URI SAN (a workload's), any other into an e-mail SAN.
    pub(crate) fn leaf(&self, key: &impl PublicKeyData, opts: &SignOptions, t: i64) -> Vec<u8> {
        let ca = if opts.rogue_ca { &self.rogue } else { &self.ca };
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        let ia5 = opts.identity.as_str().try_into().expect("an IA5 identity");
        params.subject_alt_names = match opts.identity.contains("://") {
            true => vec![SanType::URI(ia5)],
            false => vec![SanType::Rfc822Name(ia5)],
        };
        params.key_usages = match opts.no_digital_signature {
            true => vec![KeyUsagePurpose::KeyAgreement],
            false => vec![KeyUsagePurpose::DigitalSignature],
        };
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
        params.use_authority_key_identifier_extension = true;
        if opts.unknown_critical_extension {
            let mut ext = CustomExtension::from_oid_content(
                &[1, 3, 6, 1, 4, 1, 57264, 99, 1],
                der(0x05, &[]),
            );
            ext.set_criticality(true);
            params.custom_extensions.push(ext);
        }
        params.serial_number = Some(SerialNumber::from(
            self.next_index.load(Ordering::SeqCst) as u64 + 0x5157_0000,
        ));
        params.not_before = at(t - 60);
        params.not_after = at(t + 540);
        let issuer = opts.issuer.as_bytes().to_vec();
        if opts.issuer_form != IssuerForm::V2 {
            params
                .custom_extensions
                .push(CustomExtension::from_oid_content(
                    ISSUER_V1_OID,
                    issuer.clone(),
                ));
        }
        if opts.issuer_form != IssuerForm::V1 {
            params
                .custom_extensions
                .push(CustomExtension::from_oid_content(
                    ISSUER_V2_OID,
                    der(0x0c, &issuer),
                ));
        }
        let pre = params
            .signed_by(key, &ca.intermediate)
            .expect("precertificate");
        let tbs = tbs_of(pre.der());
        // RFC 6962 §3.2 precert entry, signed by the CT log.
        let timestamp = (t as u64) * 1000;
        let mut signed = vec![0u8, 0u8];
        signed.extend(timestamp.to_be_bytes());
        signed.extend(1u16.to_be_bytes());
        signed.extend(sha256(&ca.intermediate.key().subject_public_key_info()));
        signed.extend(&(tbs.len() as u32).to_be_bytes()[1..]);
        signed.extend(&tbs);
        signed.extend(0u16.to_be_bytes());
        let mut sig = self.ct.sign(&signed).expect("CT signature");
        if opts.spoil_sct {
            let last = sig.len() - 1;
            sig[last] ^= 0x01;
        }
        let mut sct = vec![0u8];
        sct.extend(sha256(&self.ct.subject_public_key_info()));
        sct.extend(timestamp.to_be_bytes());
        sct.extend(0u16.to_be_bytes());
        sct.extend([4u8, 3u8]);
        sct.extend((sig.len() as u16).to_be_bytes());
        sct.extend(&sig);
        let mut list = (sct.len() as u16).to_be_bytes().to_vec();
        list.extend(&sct);
        let mut tls = (list.len() as u16).to_be_bytes().to_vec();
        tls.extend(&list);
        params
            .custom_extensions
            .push(CustomExtension::from_oid_content(SCT_OID, der(0x04, &tls)));
        params
            .signed_by(key, &ca.intermediate)
            .expect("certificate")
            .der()
            .to_vec()
    }

    /// The simple-signing payload for `digest` of `repository`.
    pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "critical": {
                "identity": {"docker-reference": repository},
                "image": {"docker-manifest-digest": digest},
                "type": "cosign container image signature",
            },
            "optional": {"org.kubernetes.kpromo.version": "kpromo-world"},
        }))
        .expect("JSON")
    }

    /// Signs `digest` of `repository` as the promoter would: leaf, signature, Rekor entry, SET.
    pub fn sign(&self, repository: &str, digest: &str, opts: &SignOptions) -> SignedLayer {
        let payload = Self::payload(repository, opts.payload_digest.as_deref().unwrap_or(digest));
        let index = self.next_index.fetch_add(1, Ordering::SeqCst);
        let signed = self.sign_bytes(Message::Bytes(&payload), None, index, opts);
        let bundle = json!({"SignedEntryTimestamp": base64(&signed.set), "Payload": signed.entry});
        let chain = [&self.ca.intermediate, &self.ca.root]
            .iter()
            .map(|c| pem(c.der()))
            .collect::<String>();
        let annotations = BTreeMap::from([
            (
                "dev.cosignproject.cosign/signature".to_owned(),
                base64(&signed.signature),
            ),
            (
                "dev.sigstore.cosign/certificate".to_owned(),
                signed.leaf_pem,
            ),
            ("dev.sigstore.cosign/chain".to_owned(), chain),
            (
                "dev.sigstore.cosign/bundle".to_owned(),
                serde_json::to_string(&bundle).expect("JSON"),
            ),
        ]);
        SignedLayer {
            payload,
            annotations,
        }
    }

    /// Signs a file as Kubernetes' release tooling does for dl.k8s.io: `.sig` (base64 of the DER
    /// signature) and `.cert` (base64 of the leaf's PEM), logged as entry `index` of the world's
    /// Rekor. `logged_hash` (hex) makes the entry log another blob.
    pub fn sign_blob(
        &self,
        file: &[u8],
        index: i64,
        logged_hash: Option<&str>,
        opts: &SignOptions,
    ) -> SignedBlob {
        let signed = self.sign_bytes(Message::Bytes(file), logged_hash, index, opts);
        self.signed_blob(signed, index)
    }

    /// [`Sigstore::sign_blob`] for a file known by its sha256 alone (one too large to hold, made
    /// as it streams): the leaf's P-256 key signs the digest (ECDSA over a prehash), as it would
    /// have signed the file.
    pub fn sign_blob_digest(
        &self,
        sha256: &[u8; 32],
        index: i64,
        opts: &SignOptions,
    ) -> SignedBlob {
        let signed = self.sign_bytes(Message::Sha256(sha256), None, index, opts);
        self.signed_blob(signed, index)
    }

    fn signed_blob(&self, signed: Signed, index: i64) -> SignedBlob {
        SignedBlob {
            sig: base64(&signed.signature).into_bytes(),
            cert: base64(signed.leaf_pem.as_bytes()).into_bytes(),
            body: signed.body,
            integrated_time: signed.integrated_time,
            log_index: index,
            log_id: self.rekor_log_id(),
            set: signed.set,
        }
    }

    /// The next log index, taken (for the signers beside this file).
    pub(crate) fn take_index(&self) -> i64 {
        self.next_index.fetch_add(1, Ordering::SeqCst)
    }

    /// The Rekor key's signature over `bytes` (a SET, for the signers beside this file).
    pub(crate) fn rekor_sign(&self, bytes: &[u8]) -> Vec<u8> {
        self.rekor.sign(bytes).expect("Rekor signature")
    }

    /// The Rekor log id (hex of the SHA-256 of its key).
    pub fn rekor_log_id(&self) -> String {
        crate::http::hex(&sha256(&self.rekor.subject_public_key_info()))
    }

    /// A checkpoint (signed note) for a tree of `size` with `root`, as Rekor v1 writes it: origin,
    /// size, base64 root, a blank line, `— <name> <base64(key hint ‖ DER signature)>`.
    pub fn checkpoint(&self, size: u64, root: &[u8]) -> String {
        self.checkpoint_as(
            "rekor.world.invalid - 1234567890",
            "rekor.world.invalid",
            size,
            root,
        )
    }

    /// [`Sigstore::checkpoint`] with another `origin` line and signature key `name`.
    pub fn checkpoint_as(&self, origin: &str, name: &str, size: u64, root: &[u8]) -> String {
        let note = format!("{origin}\n{size}\n{}\n", base64(root));
        let sig = self
            .rekor
            .sign(note.as_bytes())
            .expect("checkpoint signature");
        let mut signed = sha256(&self.rekor.subject_public_key_info())[..4].to_vec();
        signed.extend(sig);
        format!("{note}\n\u{2014} {name} {}\n", base64(&signed))
    }

    /// Leaf, signature over `message`, hashedrekord body (logging `logged_hash` or the message's
    /// hash), and the SET over the entry at `index`.
    fn sign_bytes(
        &self,
        message: Message<'_>,
        logged_hash: Option<&str>,
        index: i64,
        opts: &SignOptions,
    ) -> Signed {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("leaf key");
        let issued = now() - 120 - opts.integrated_after.max(0);
        let leaf = self.leaf(&key, opts, issued);
        let t = issued + opts.integrated_after;
        let (signature, message_hash) = match message {
            Message::Bytes(bytes) => (key.sign(bytes).expect("signature"), sha256(bytes)),
            Message::Sha256(digest) => {
                use p256::ecdsa::signature::hazmat::PrehashSigner as _;
                use p256::pkcs8::DecodePrivateKey as _;
                let signer = p256::ecdsa::SigningKey::from_pkcs8_der(&key.serialize_der())
                    .expect("the leaf key as PKCS#8");
                let signature: p256::ecdsa::Signature =
                    signer.sign_prehash(digest).expect("signature");
                (signature.to_der().as_bytes().to_vec(), digest.to_vec())
            }
        };
        let leaf_pem = pem(&leaf);
        let hash = logged_hash.map_or_else(|| crate::http::hex(&message_hash), str::to_owned);
        let body = json!({
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": hash}},
                "signature": {
                    "content": base64(&signature),
                    "publicKey": {"content": base64(leaf_pem.as_bytes())},
                },
            },
        });
        let body = serde_json::to_vec(&body).expect("JSON");
        // serde_json sorts object keys: compact output is the JCS form of these ASCII values.
        let entry = json!({
            "body": base64(&body),
            "integratedTime": t,
            "logID": self.rekor_log_id(),
            "logIndex": index,
        });
        let mut set = self
            .rekor
            .sign(&serde_json::to_vec(&entry).expect("JSON"))
            .expect("SET");
        if opts.flip_set {
            let last = set.len() - 1;
            set[last] ^= 0x01;
        }
        Signed {
            signature,
            leaf_pem,
            body,
            integrated_time: t,
            entry,
            set,
        }
    }
}

/// What a leaf signs: bytes, or the sha256 of bytes.
#[derive(Clone, Copy)]
enum Message<'a> {
    Bytes(&'a [u8]),
    Sha256(&'a [u8; 32]),
}

struct Signed {
    signature: Vec<u8>,
    leaf_pem: String,
    body: Vec<u8>,
    integrated_time: i64,
    entry: Value,
    set: Vec<u8>,
}

/// A file signed for dl.k8s.io, and what its Rekor entry holds.
#[derive(Debug, Clone)]
pub struct SignedBlob {
    /// The `.sig` file's bytes.
    pub sig: Vec<u8>,
    /// The `.cert` file's bytes.
    pub cert: Vec<u8>,
    /// The canonical hashedrekord body.
    pub body: Vec<u8>,
    /// Seconds since the epoch.
    pub integrated_time: i64,
    /// The entry's index in the world's log.
    pub log_index: i64,
    /// The log id, hex.
    pub log_id: String,
    /// The signed entry timestamp.
    pub set: Vec<u8>,
}
