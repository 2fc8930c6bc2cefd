//! Checks 4 to 8, of the leaf certificate, at whatever time the evidence establishes (Rekor v1's
//! integrated time, an RFC 3161 timestamp's): its path to a Fulcio CA of the trusted root
//! (validated by webpki), its embedded SCT, its signature over the payload, the time inside its
//! validity, and the policy's identity and issuer among its names.

use crate::Invalid;
use crate::policy::Rule;
use crate::root::TrustedRoot;
use crate::x509::path::{self, Usage};
use crate::x509::{Cert, Hash, PublicKey};

use super::{Blob, Failure, Step, fail};

/// Checks 4 to 8, whatever gave the signing time `t` (`when.0`; `when.1` says how it was
/// established, "integrated" by Rekor v1 or "timestamped" by a timestamp authority): the leaf
/// chains to a CA of the root at `t`, embeds a valid SCT, signed `payload` (whose sha256 is
/// `digest`) with `signature`, was valid at `t` (not in the future of `now`), and names the
/// rule's identity and issuer. Returns the signer: the identity and the issuer that matched.
#[allow(clippy::too_many_arguments)]
pub(crate) fn signed_at(
    root: &TrustedRoot,
    rule: &Rule,
    leaf: &Cert<'_>,
    signature: &[u8],
    payload: Blob<'_>,
    digest: &[u8; 32],
    (t, when): (i64, &str),
    now: i64,
) -> Result<Signer, Failure> {
    use Step::*;
    // 7. Time, its first half: the leaf's own validity. Before the path (check 4), which webpki
    // validates at `t` for the leaf too: a signature made outside the leaf's validity is refused
    // as such, not as a path that does not validate.
    if t < leaf.not_before || t > leaf.not_after {
        return fail(
            Time,
            format!(
                "{when} at {t}, outside the certificate's validity {}..{}",
                leaf.not_before, leaf.not_after
            ),
        );
    }
    // 4. Chain, with the root's CAs only.
    let issuer_spki = chain(root, leaf, t).map_err(|reason| Failure {
        step: CertificateChain,
        reason: reason.into(),
    })?;

    // 5. SCT.
    super::sct::sct(root, leaf, &issuer_spki).map_err(|reason| Failure {
        step: Sct,
        reason: reason.into(),
    })?;

    // 6. Signature over the payload (or over its digest).
    PublicKey::from_spki(leaf.spki)
        .and_then(|k| match payload {
            Blob::Bytes(bytes) => k.verify(Hash::Sha256, bytes, signature),
            Blob::Sha256(_) => k.verify_prehash(Hash::Sha256, digest, signature),
        })
        .map_err(|e| Failure {
            step: Signature,
            reason: format!("the leaf's key: {e}"),
        })?;

    // 7. Time, its second half (the first, the leaf's validity, ran before check 4).
    if t > now + 300 {
        return fail(Time, format!("{when} at {t}, in the future"));
    }

    // 8. Identity and issuer.
    let ids = leaf.identities().map_err(|e| Failure {
        step: Identity,
        reason: e.into(),
    })?;
    let identity = ids
        .iter()
        .find(|i| rule.identity.matches(i))
        .cloned()
        .ok_or_else(|| Failure {
            step: Identity,
            reason: format!(
                "signed by {}, the policy wants {}",
                list(&ids),
                rule.identity.describe()
            ),
        })?;
    let issuer = leaf.oidc_issuer().map_err(|e| Failure {
        step: Issuer,
        reason: e.into(),
    })?;
    match issuer {
        Some(issuer) if rule.issuer.matches(&issuer) => Ok(Signer { identity, issuer }),
        issuer => fail(
            Issuer,
            format!(
                "issued for {}, the policy wants {}",
                issuer.as_deref().unwrap_or("no OIDC issuer"),
                rule.issuer.describe()
            ),
        ),
    }
}

/// Who a certificate says signed: the identity (SAN) and the OIDC issuer the rule accepted.
#[derive(Debug, Default)]
pub(crate) struct Signer {
    pub(crate) identity: String,
    pub(crate) issuer: String,
}

fn list(ids: &[String]) -> String {
    match ids.is_empty() {
        true => "no identity".into(),
        false => ids.join(", "),
    }
}

/// Check 4: `leaf` chains to one of the root's certificate authorities whose `validFor` covers
/// `t`, validated at `t` by webpki ([`crate::x509::path`]) for code signing; returns the issuing
/// CA's SPKI. webpki holds a trust anchor valid at all times and ignores key usage bits: the root
/// certificate's validity and the leaf's digitalSignature bit are checked here.
fn chain(root: &TrustedRoot, leaf: &Cert<'_>, t: i64) -> Result<Vec<u8>, Invalid> {
    if !leaf.digital_signature()? {
        return Err("the leaf's key usage does not include digitalSignature".into());
    }
    let mut why: Vec<String> = Vec::new();
    for ca in root.cas.iter().filter(|ca| ca.valid.covers(t)) {
        let anchor_valid = ca
            .chain
            .last()
            .and_then(|der| Cert::parse(der).ok())
            .is_some_and(|c| c.not_before <= t && t <= c.not_after);
        let attempt = match anchor_valid {
            true => path::validate(leaf.der, &ca.chain, t, Usage::CodeSigning),
            false => Err("a CA certificate is not valid at the signing time".into()),
        };
        match attempt {
            Ok(spki) => return Ok(spki),
            Err(e) => {
                let e = String::from(e);
                if !why.contains(&e) {
                    why.push(e);
                }
            }
        }
    }
    Err(match why.is_empty() {
        true => "no certificate authority of the trusted root is valid at the signing time".into(),
        false => format!(
            "not issued by a CA of the trusted root ({})",
            why.join("; ")
        )
        .into(),
    })
}
