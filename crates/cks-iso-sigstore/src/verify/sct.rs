//! The embedded signed certificate timestamps of a Fulcio leaf (RFC 6962 §3.3): the TLS-encoded
//! list, and each SCT's signature by a CT log of the trusted root over the precertificate entry
//! (the leaf's TBS without the SCT list, and the issuer's key hash).

use crate::Invalid;
use sha2::{Digest as _, Sha256};

use crate::root::TrustedRoot;
use crate::x509::{Cert, Hash, SigAlg};

/// Checks the leaf's embedded SCTs: at least one from a CT log of the root must verify.
pub(crate) fn sct(root: &TrustedRoot, leaf: &Cert<'_>, issuer_spki: &[u8]) -> Result<(), Invalid> {
    let list = leaf.sct_list()?.ok_or("the leaf embeds no SCT")?;
    let scts = parse_scts(list)?;
    let tbs = leaf.precert_tbs();
    let issuer_hash = Sha256::digest(issuer_spki);
    let mut why = Vec::new();
    for s in &scts {
        let Some(log) = root.ctlogs.iter().find(|l| l.id == s.log_id) else {
            why.push(format!(
                "log {} is not a CT log of the trusted root",
                hex::encode(&s.log_id)
            ));
            continue;
        };
        let Some(key) = &log.key else {
            why.push("its CT log's key is of an unsupported kind".into());
            continue;
        };
        if !log.valid.covers((s.timestamp / 1000) as i64) {
            why.push(format!(
                "log {} was not valid when it signed the SCT",
                hex::encode(&s.log_id)
            ));
            continue;
        }
        let alg = match (s.hash_alg, s.sig_alg) {
            (4, 3) => SigAlg::Ecdsa(Hash::Sha256),
            (5, 3) => SigAlg::Ecdsa(Hash::Sha384),
            (4, 1) => SigAlg::Rsa(Hash::Sha256),
            _ => {
                why.push("an SCT signature algorithm other than ECDSA or RSA with SHA-2".into());
                continue;
            }
        };
        let mut signed = vec![0u8, 0u8];
        signed.extend(s.timestamp.to_be_bytes());
        signed.extend(1u16.to_be_bytes());
        signed.extend(issuer_hash.as_slice());
        signed.extend(&(tbs.len() as u32).to_be_bytes()[1..]);
        signed.extend(&tbs);
        signed.extend((s.extensions.len() as u16).to_be_bytes());
        signed.extend(&s.extensions);
        match key.verify_as(alg, &signed, &s.signature) {
            Ok(()) => return Ok(()),
            Err(_) => why.push(format!(
                "the SCT of log {} does not verify",
                hex::encode(&s.log_id)
            )),
        }
    }
    Err(match why.is_empty() {
        true => "the SCT list is empty".into(),
        false => why.join("; ").into(),
    })
}

struct Sct {
    log_id: Vec<u8>,
    timestamp: u64,
    extensions: Vec<u8>,
    hash_alg: u8,
    sig_alg: u8,
    signature: Vec<u8>,
}

/// The TLS `SignedCertificateTimestampList` (RFC 6962 §3.3).
fn parse_scts(bytes: &[u8]) -> Result<Vec<Sct>, Invalid> {
    let bad = || "a malformed SCT list".to_owned();
    let mut r = Tls(bytes);
    let mut list = Tls(r.take_vec(2).ok_or_else(bad)?);
    let mut out = Vec::new();
    while !list.0.is_empty() {
        let mut s = Tls(list.take_vec(2).ok_or_else(bad)?);
        if s.take(1).ok_or_else(bad)? != [0] {
            return Err("an SCT of a version other than 1".into());
        }
        let log_id = s.take(32).ok_or_else(bad)?.to_vec();
        let ts = s.take(8).ok_or_else(bad)?;
        let timestamp = u64::from_be_bytes(ts.try_into().map_err(|_| bad())?);
        let extensions = s.take_vec(2).ok_or_else(bad)?.to_vec();
        let algs = s.take(2).ok_or_else(bad)?;
        let signature = s.take_vec(2).ok_or_else(bad)?.to_vec();
        out.push(Sct {
            log_id,
            timestamp,
            extensions,
            hash_alg: algs[0],
            sig_alg: algs[1],
            signature,
        });
    }
    Ok(out)
}

struct Tls<'a>(&'a [u8]);

impl<'a> Tls<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        (self.0.len() >= n).then(|| {
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            head
        })
    }

    /// A vector with a `len`-byte big-endian length prefix.
    fn take_vec(&mut self, len: usize) -> Option<&'a [u8]> {
        let n = self
            .take(len)?
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        self.take(n)
    }
}
