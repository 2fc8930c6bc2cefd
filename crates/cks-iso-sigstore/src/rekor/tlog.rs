//! Transparency-log proofs, as RFC 6962 and the signed-note format define them: the inclusion
//! proof of an entry up to a tree's root hash, and the checkpoint (a signed note) in which the
//! log that holds the entry commits to that root. Pure functions of their inputs.

use crate::Invalid;
use sha2::{Digest as _, Sha256};

use crate::root::TrustedRoot;
use crate::verify::b64;
use crate::x509::{Hash, KeyKind, PublicKey};

/// RFC 6962 leaf hash.
pub fn leaf_hash(entry: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(entry);
    h.finalize().into()
}

/// RFC 6962 interior node hash.
pub fn node_hash(left: &[u8], right: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Checks that `path` leads from `leaf` at `index` in a tree of `size` to `root` (RFC 9162
/// §2.1.3.2).
pub fn inclusion(
    index: i64,
    size: i64,
    leaf: [u8; 32],
    path: &[Vec<u8>],
    root: &[u8],
) -> Result<(), Invalid> {
    if index < 0 || size <= 0 || index >= size {
        return Err(format!("index {index} is outside a tree of size {size}").into());
    }
    let (mut f, mut s) = (index as u64, size as u64 - 1);
    let mut r = leaf;
    for p in path {
        if s == 0 {
            return Err("the proof has more hashes than the tree has levels".into());
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err("the proof has fewer hashes than the tree has levels".into());
    }
    if r.as_slice() != root {
        return Err(format!(
            "the path leads to {}, not to the root hash {}",
            hex::encode(r),
            hex::encode(root)
        )
        .into());
    }
    Ok(())
}

/// The most signature lines a checkpoint may carry: Go's signed-note reader
/// (`golang.org/x/mod/sumdb/note`) refuses a note with more than 100, "to avoid spending forever
/// parsing a note with many signatures". A line naming the entry's log costs a signature
/// verification, and the lines are covered by no signature of their own: anyone on the way can
/// add them. Rekor signs with one key; witnesses add a few cosignatures.
pub const MAX_NOTE_SIGNATURES: usize = 100;

/// A checkpoint's note: origin, tree size, root hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's origin line.
    pub origin: String,
    /// Its tree size.
    pub size: i64,
    /// Its root hash.
    pub root: Vec<u8>,
}

/// Verifies the signed note `envelope` with the key of the transparency log `log_id` of `root`
/// (the log that holds the entry: a checkpoint of another log proves nothing about it) and
/// returns what it commits to. The signature line is `— <name> <base64(key hint ‖ signature)>`,
/// the hint being the first four bytes of the log's id; the origin line must be non-empty and
/// be the signing key's name (Rekor v1 adds ` - <tree id>` to it). For an Ed25519 key (Rekor v2)
/// the hint is also the signed-note key id of that name and key, so the name is the key's own.
/// Lines of other keys (witness cosignatures, keys the root does not list) are passed over.
pub fn checkpoint(
    root: &TrustedRoot,
    log_id: &[u8],
    envelope: &str,
) -> Result<Checkpoint, CheckpointError> {
    use CheckpointError as E;
    if envelope.is_empty() {
        return Err(E::Missing);
    }
    let split = envelope.find("\n\n").ok_or(E::NoSignatures)?;
    let note = &envelope[..split + 1];
    let mut lines = note.lines();
    let origin = lines.next().unwrap_or_default().to_owned();
    if origin.trim().is_empty() {
        return Err(E::EmptyOrigin);
    }
    let size = lines
        .next()
        .and_then(|l| l.parse::<i64>().ok())
        .ok_or(E::Size)?;
    let root_hash = lines.next().and_then(b64).ok_or(E::RootHash)?;
    let log = root
        .tlogs
        .iter()
        .find(|l| l.id == log_id)
        .ok_or_else(|| E::UnknownLog(hex::encode(log_id)))?;
    let key = log.key.as_ref().ok_or(E::UnsupportedKey)?;
    let mut why = Vec::new();
    let lines: Vec<&str> = envelope[split + 2..]
        .lines()
        .filter(|l| !l.is_empty())
        .collect();
    if lines.len() > MAX_NOTE_SIGNATURES {
        return Err(E::TooManySignatures(lines.len()));
    }
    for line in lines {
        let Some(name) = signed_by_log(line, log_id, key, note, &mut why) else {
            continue;
        };
        if origin != name && !origin.starts_with(&format!("{name} - ")) {
            return Err(E::ForeignOrigin {
                name: name.to_owned(),
                origin,
            });
        }
        return Ok(Checkpoint {
            origin,
            size,
            root: root_hash,
        });
    }
    Err(E::Unsigned(match why.is_empty() {
        true => "it has no signature line".into(),
        false => why.join("; "),
    }))
}

/// The key name of signature `line` when it is the log's own (its key hint the log's id, for
/// Ed25519 also the note key id of the name) and verifies over `note`; else `None`, with why
/// pushed onto `why`.
fn signed_by_log<'l>(
    line: &'l str,
    log_id: &[u8],
    key: &PublicKey,
    note: &str,
    why: &mut Vec<String>,
) -> Option<&'l str> {
    let Some(rest) = line.strip_prefix("\u{2014} ") else {
        why.push("a signature line does not start with an em dash".to_owned());
        return None;
    };
    let Some((name, sig)) = rest
        .rsplit_once(' ')
        .and_then(|(name, sig)| Some((name, b64(sig)?)))
        .filter(|(_, s)| s.len() > 4)
    else {
        why.push("a signature line has no base64 signature".to_owned());
        return None;
    };
    let (hint, sig) = sig.split_at(4);
    if hint != &log_id[..4.min(log_id.len())] {
        why.push(format!(
            "key hint {} is not the entry's log {}",
            hex::encode(hint),
            hex::encode(log_id)
        ));
        return None;
    }
    if key.kind == KeyKind::Ed25519 && hint != note_key_id(name, key) {
        why.push(format!(
            "key hint {} is not the note key id of {name:?} and the log's key",
            hex::encode(hint)
        ));
        return None;
    }
    if key.verify(Hash::Sha256, note.as_bytes(), sig).is_err() {
        why.push(format!(
            "the signature of log {} does not verify",
            hex::encode(log_id)
        ));
        return None;
    }
    Some(name)
}

/// The first four bytes of the signed-note key id of an Ed25519 key named `name`: SHA-256 of
/// the name, a newline, the signature type 0x01 and the key.
pub(crate) fn note_key_id(name: &str, key: &PublicKey) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', 0x01]);
    h.update(&key.bits);
    let id: [u8; 32] = h.finalize().into();
    [id[0], id[1], id[2], id[3]]
}

/// Why a checkpoint proves nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// The inclusion proof carries none (older bundles).
    #[error("the inclusion proof has no checkpoint")]
    Missing,
    /// No blank line before signature lines.
    #[error("the checkpoint has no signature block")]
    NoSignatures,
    /// The first line is empty.
    #[error("the checkpoint's origin line is empty")]
    EmptyOrigin,
    /// The second line is not a number.
    #[error("the checkpoint's second line is not a tree size")]
    Size,
    /// The third line is not base64.
    #[error("the checkpoint's third line is not a base64 root hash")]
    RootHash,
    /// The entry's log is not in the trusted root.
    #[error("log {0} is not in the trusted root")]
    UnknownLog(String),
    /// The entry's log has a key of a kind not read.
    #[error("the entry's log has a key of an unsupported kind")]
    UnsupportedKey,
    /// Signed under a key name its origin does not carry.
    #[error("the checkpoint is signed as {name:?}, but its origin is {origin:?}")]
    ForeignOrigin {
        /// The signature line's key name.
        name: String,
        /// The origin line.
        origin: String,
    },
    /// More signature lines than [`MAX_NOTE_SIGNATURES`].
    #[error("the checkpoint has {0} signature lines, more than the {MAX_NOTE_SIGNATURES} read")]
    TooManySignatures(usize),
    /// No signature line of the entry's log verifies: why, line by line.
    #[error("{0}")]
    Unsigned(String),
}
