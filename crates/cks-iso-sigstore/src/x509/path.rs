//! Certificate path validation, done by `rustls-webpki` (the X.509 verifier rustls uses, already
//! in the tree) rather than by hand: from a leaf through an authority's intermediates to its root,
//! every signature under the algorithm its certificate names, names chained, CA and path-length
//! constraints, name constraints, each certificate's validity at the given time, the extended key
//! usage the caller needs on every certificate, and no critical extension webpki does not
//! understand. What webpki leaves to its caller stays with the callers: the trusted root's
//! `validFor`, the root certificate's own validity (a trust anchor has none for webpki), and the
//! leaf's key usage bits (webpki ignores KeyUsage, as browsers do).

use rustls_pki_types::{CertificateDer, UnixTime};
use webpki::{ALL_VERIFICATION_ALGS, EndEntityCert, KeyUsage};

use crate::Invalid;

/// `1.3.6.1.5.5.7.3.3`: id-kp-codeSigning.
pub(crate) const CODE_SIGNING: &[u8] = &[0x2b, 6, 1, 5, 5, 7, 3, 3];
/// `1.3.6.1.5.5.7.3.8`: id-kp-timeStamping.
pub(crate) const TIME_STAMPING: &[u8] = &[0x2b, 6, 1, 5, 5, 7, 3, 8];

/// What a path is validated for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Usage {
    /// A Fulcio leaf: every certificate of the path lists code signing, as Fulcio's do (and as
    /// sigstore-rs and sigstore-go require).
    CodeSigning,
    /// A timestamp authority's signer: a certificate above it that lists extended key usages
    /// must list time stamping (the signer's own, time stamping alone and critical, RFC 3161
    /// §2.3, is checked by the caller: webpki asks for the usage, not that it be the only one).
    TimeStamping,
}

impl Usage {
    fn key_usage(self) -> KeyUsage {
        match self {
            Self::CodeSigning => KeyUsage::required(CODE_SIGNING),
            Self::TimeStamping => KeyUsage::required_if_present(TIME_STAMPING),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::CodeSigning => "code signing",
            Self::TimeStamping => "time stamping",
        }
    }
}

/// Validates the path from `leaf` (DER) through `authority` (its certificates, the issuing one
/// first and the root last: the root is the trust anchor, the others intermediates) at `t`
/// (seconds since the epoch) for `usage`. Returns the SubjectPublicKeyInfo (DER) of the
/// certificate that issued the leaf, which the SCT check needs.
pub(crate) fn validate(
    leaf: &[u8],
    authority: &[Vec<u8>],
    t: i64,
    usage: Usage,
) -> Result<Vec<u8>, Invalid> {
    let (root, intermediates) = authority
        .split_last()
        .ok_or("the authority has no certificates")?;
    let leaf = CertificateDer::from(leaf);
    let leaf = EndEntityCert::try_from(&leaf).map_err(|e| describe(&e, usage))?;
    let root = CertificateDer::from(root.as_slice());
    let anchor = webpki::anchor_from_trusted_cert(&root).map_err(|e| describe(&e, usage))?;
    let intermediates: Vec<CertificateDer<'_>> = intermediates
        .iter()
        .map(|der| CertificateDer::from(der.as_slice()))
        .collect();
    let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(
        u64::try_from(t).map_err(|_| format!("a time before 1970 ({t})"))?,
    ));
    let anchors = [anchor];
    let path = leaf
        .verify_for_usage(
            ALL_VERIFICATION_ALGS,
            &anchors,
            &intermediates,
            time,
            usage.key_usage(),
            None,
            None,
        )
        .map_err(|e| describe(&e, usage))?;
    Ok(match path.intermediate_certificates().next() {
        Some(issuer) => issuer.subject_public_key_info().as_ref().to_vec(),
        None => webpki::spki_for_anchor(path.anchor()).as_ref().to_vec(),
    })
}

/// webpki's verdict in the words of the checks' other messages.
fn describe(e: &webpki::Error, usage: Usage) -> Invalid {
    use webpki::Error as E;
    match e {
        E::UnknownIssuer => "its issuer is not a certificate of the authority".into(),
        E::InvalidSignatureForPublicKey => "a CA's signature on the path does not verify".into(),
        E::UnsupportedSignatureAlgorithmContext(_)
        | E::UnsupportedSignatureAlgorithmForPublicKeyContext(_)
        | E::SignatureAlgorithmMismatch => {
            "a certificate of the path is signed with an algorithm cks-iso does not verify".into()
        }
        E::CaUsedAsEndEntity => "the leaf is a CA certificate".into(),
        E::EndEntityUsedAsCa => "a certificate of the CA chain is not a CA".into(),
        E::CertExpired { .. } | E::CertNotValidYet { .. } => {
            "a CA certificate is not valid at the signing time".into()
        }
        E::RequiredEkuNotFoundContext(_) | E::EmptyEkuExtension => format!(
            "a certificate of the path is not for {} (its extended key usage)",
            usage.name()
        )
        .into(),
        E::UnsupportedCriticalExtension => {
            "a certificate of the path has a critical extension cks-iso does not know".into()
        }
        E::PathLenConstraintViolated => {
            "the path is longer than a CA's path length constraint allows".into()
        }
        other => format!("the path does not validate ({other:?})").into(),
    }
}
