//! Which index entries of a carried cache (`cache import DIR`) may enter a cache, and on what
//! evidence.
//!
//! A carry vouches for nothing by itself: a published checksum that travels in the same DIR as
//! the download it names was written by whoever wrote the download, so an unlocked offline build
//! would take a swapped tarball on the carry's own word. A download therefore enters only with
//! evidence from outside DIR: a `--locked` lock that names it with the same sha256 (another
//! sha256 is refused, naming both), or a signature in DIR verified here against the trusted root
//! under the policy rule that covers its URL. A published checksum enters only beside a download
//! admitted so, and naming it. Signature material and the tags of signed images enter as
//! before: each is verified again where it is used. Manifests and the tags of unsigned images
//! enter only with a lock. Reads DIR only; no network.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::tie::{Tie, Untied, published_checksum, tie};
use crate::cache::{Cache, IndexEntry, Key};
use crate::image::Digest;
use cks_iso_sigstore::{BUNDLE_SUFFIX, Policy, TrustedRoot, rekor};

/// The most a `.sig` or `.cert` may hold (as `build` reads them).
const PAIR_LIMIT: u64 = 64 * 1024;
/// The most a published bundle may hold (as `build` reads it).
const BUNDLE_LIMIT: u64 = 256 * 1024;
/// The most a Rekor entry reply may hold (as `build` reads it).
const REKOR_LIMIT: u64 = 4 << 20;

/// What the `--locked` locks name: each key with the digests they give it, and which lock.
#[derive(Debug, Default)]
pub struct Locks {
    named: BTreeMap<String, Vec<(Digest, PathBuf)>>,
}

impl Locks {
    /// Records that the lock read from `file` names `key` with `digest`.
    pub fn name(&mut self, key: &Key, digest: Digest, file: &Path) {
        self.named
            .entry(key.to_string())
            .or_default()
            .push((digest, file.to_owned()));
    }
}

/// What signatures are judged against at import: the trusted root and the policy.
pub struct Trust {
    /// The trusted root.
    pub root: TrustedRoot,
    /// The policy: its rule for a download's URL says who must have signed it.
    pub policy: Policy,
    /// Seconds since 1970, the time signatures are judged at (`crate::trust::now`).
    pub now: i64,
}

/// Why an entry was let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admitted {
    /// A `--locked` lock names it with this digest.
    Locked,
    /// A download whose signature in DIR verified against the trusted root.
    Signed,
    /// Signature material, a signed image's tag, or a published checksum naming a download
    /// admitted with it: verified again where it is used.
    Checked,
}

/// What becomes of one index entry of DIR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Imported.
    Take(Admitted),
    /// Not imported, and why (one clause, for `index entry KEY not imported: …`).
    Skip(String),
    /// Not imported: the lock read from `lock` names the key with `locked`, DIR with another
    /// digest.
    Refuse {
        /// The lock's file.
        lock: PathBuf,
        /// The digest the lock gives the key.
        locked: Digest,
    },
}

/// Judges each of `entries` (DIR's index, read from `from`), in order.
pub fn judge(
    from: &Cache,
    entries: &[IndexEntry],
    locks: &Locks,
    trust: Option<&Trust>,
) -> Vec<Verdict> {
    let ties: Vec<_> = entries
        .iter()
        .map(|e| tie(from, &e.key, &e.digest, &e.note))
        .collect();
    let mut verdicts: Vec<Option<Verdict>> = entries
        .iter()
        .zip(&ties)
        .map(|(entry, tied)| judge_one(from, entries, entry, tied, locks, trust))
        .collect();
    // A published checksum comes in beside a download admitted on outside evidence that it
    // names, never alone: alone (or naming another file) it could only turn a file the cache
    // verified into one it refuses.
    let vouching: BTreeSet<String> = verdicts
        .iter()
        .zip(&ties)
        .filter_map(|(verdict, tied)| match (verdict, tied) {
            (Some(Verdict::Take(_)), Ok(Tie::Checksum(url))) => {
                Some(Key::Url(url.clone()).to_string())
            }
            _ => None,
        })
        .collect();
    for ((verdict, entry), tied) in verdicts.iter_mut().zip(entries).zip(&ties) {
        if verdict.is_none() && matches!(tied, Ok(Tie::Published)) {
            *verdict = Some(match vouching.contains(&entry.key) {
                true => Verdict::Take(Admitted::Checked),
                false => Verdict::Skip(
                    "it is the published checksum of no download imported with it".to_owned(),
                ),
            });
        }
    }
    verdicts
        .into_iter()
        .map(|v| v.expect("every entry judged, published checksums last"))
        .collect()
}

/// One entry's verdict; `None` for a published checksum, judged once the downloads are.
fn judge_one(
    from: &Cache,
    entries: &[IndexEntry],
    entry: &IndexEntry,
    tied: &Result<Tie, Untied>,
    locks: &Locks,
    trust: Option<&Trust>,
) -> Option<Verdict> {
    if let Some(named) = locks.named.get(&entry.key) {
        if named.iter().any(|(digest, _)| *digest == entry.digest) {
            return Some(Verdict::Take(Admitted::Locked));
        }
        let (locked, lock) = named.first().expect("a key is named with a digest").clone();
        // A tag moves: DIR may have seen it later than the lock. A URL's content does not.
        return Some(match entry.key.starts_with("tag:") {
            true => Verdict::Skip(format!(
                "the lock {} names {locked} for it, DIR {} (the tag moved since the lock was \
                 written, or DIR was altered)",
                lock.display(),
                entry.digest
            )),
            false => Verdict::Refuse { lock, locked },
        });
    }
    let unlocked = "no --locked lock names it";
    // A download a signature rule covers may come in on its signature alone.
    let url = entry.key.strip_prefix("url:").unwrap_or_default();
    let signature = || {
        let trust = trust?;
        trust.policy.rule_for_url(url)?;
        Some(signed(from, entries, url, &entry.digest, trust))
    };
    Some(match tied {
        Ok(Tie::Published) => return None,
        Ok(Tie::Material | Tie::Signed) => Verdict::Take(Admitted::Checked),
        Ok(Tie::Checksum(_)) => match signature() {
            Some(Ok(())) => Verdict::Take(Admitted::Signed),
            Some(Err(why)) => Verdict::Skip(format!(
                "only DIR's own published checksum vouches for it, which proves nothing (it came \
                 with it), {unlocked}, and its signature does not verify: {why}"
            )),
            None => Verdict::Skip(format!(
                "only DIR's own published checksum vouches for it, which proves nothing (it came \
                 with it), and {unlocked}"
            )),
        },
        Ok(Tie::Served) => Verdict::Skip(format!(
            "nothing can verify it (a manifest or an unsigned image's tag) and {unlocked}"
        )),
        Ok(Tie::Unsigned) => Verdict::Skip(format!(
            "a signature rule covers the image, DIR holds no signature for it, and {unlocked}"
        )),
        Err(reason) => match published_checksum(url).and_then(|_| signature()) {
            Some(Ok(())) => Verdict::Take(Admitted::Signed),
            Some(Err(why)) => Verdict::Skip(format!(
                "it cannot be tied to a verification: {reason}; its signature does not verify: \
                 {why}"
            )),
            None => Verdict::Skip(format!("it cannot be tied to a verification: {reason}")),
        },
    })
}

/// Why the signature DIR holds for a download does not vouch for it ([`signed`]).
#[derive(Debug, thiserror::Error)]
pub enum NotSigned {
    /// No rule of the policy covers the URL.
    #[error("no signature rule covers its URL")]
    NoRule,
    /// Its bundle cannot be read.
    #[error("its bundle is not one cks-iso reads: {0}")]
    Bundle(rekor::BundleError),
    /// Neither a bundle nor a `.sig` and `.cert`.
    #[error("DIR holds no bundle, or no .sig and .cert, for it")]
    NoMaterial,
    /// No Rekor entry in DIR logs the file, its `.sig` and its `.cert`.
    #[error("DIR holds no Rekor entry that logs it, its .sig and its .cert")]
    NotLogged,
    /// The Rekor entry cannot be read as evidence.
    #[error("{0}")]
    Entry(cks_iso_sigstore::Invalid),
    /// A check of the signature fails.
    #[error("{step}: {reason}")]
    Fails {
        /// The check's name.
        step: &'static str,
        /// Why.
        reason: String,
    },
}

/// Verifies the signature DIR holds for the download at `url` (blob `digest`): the published
/// bundle (`<url>.sigstore.json`), else `.sig`, `.cert` and a Rekor entry that logs them, as
/// `build` reads them, under the policy rule covering `url`.
pub fn signed(
    from: &Cache,
    entries: &[IndexEntry],
    url: &str,
    digest: &Digest,
    trust: &Trust,
) -> Result<(), NotSigned> {
    let rule = trust.policy.rule_for_url(url).ok_or(NotSigned::NoRule)?;
    let file: [u8; 32] = digest.sum().into();
    let material = |suffix: &str, limit| {
        let found = from.recall(&Key::Url(format!("{url}{suffix}")))?;
        read(from, &found.digest, limit)
    };
    let evidence = match material(BUNDLE_SUFFIX, BUNDLE_LIMIT) {
        Some(bundle) => rekor::Evidence::from_bundle(&bundle).map_err(NotSigned::Bundle)?,
        None => {
            let (Some(sig), Some(cert)) =
                (material(".sig", PAIR_LIMIT), material(".cert", PAIR_LIMIT))
            else {
                return Err(NotSigned::NoMaterial);
            };
            let logged = entries
                .iter()
                .filter(|e| {
                    matches!(Key::parse(&e.key), Some(Key::Rekor { sha256, .. }) if sha256 == digest.hex())
                })
                .filter_map(|e| read(from, &e.digest, REKOR_LIMIT))
                .filter_map(|reply| rekor::entries(&reply).ok())
                .flat_map(|map| map.into_values())
                .find(|e| rekor::Evidence::logged_by(&file, &sig, &cert, e))
                .ok_or(NotSigned::NotLogged)?;
            rekor::Evidence::from_rekor(&file, &sig, &cert, &logged).map_err(NotSigned::Entry)?
        }
    };
    rekor::verify_digest(&trust.root, rule, &file, &evidence, trust.now)
        .map(|_| ())
        .map_err(|f| NotSigned::Fails {
            step: f.step.name(),
            reason: f.reason,
        })
}

/// The downloads in `from` that carry signature material (a bundle, or a `.sig`) under a rule
/// of `trust`'s policy, and whose signature does not verify against `trust`'s root: each URL with
/// why, sorted. `cache import` warns of them: a build on this side checks them again against the
/// same root and would fail, one step later and further from the cause (a carry signed under
/// another root, such as the test world's).
pub fn unverifiable(from: &Cache, trust: &Trust) -> Vec<(String, String)> {
    let Ok(entries) = from.index() else {
        return Vec::new();
    };
    let carried = |url: &str| {
        [BUNDLE_SUFFIX, ".sig"]
            .iter()
            .any(|suffix| from.recall(&Key::Url(format!("{url}{suffix}"))).is_some())
    };
    let mut out: Vec<(String, String)> = entries
        .iter()
        .filter_map(|entry| {
            let url = entry.key.strip_prefix("url:")?;
            let material = [BUNDLE_SUFFIX, ".sig", ".cert"]
                .iter()
                .any(|s| url.ends_with(s));
            if material || published_checksum(url).is_none() || !carried(url) {
                return None;
            }
            trust.policy.rule_for_url(url)?;
            let why = signed(from, &entries, url, &entry.digest, trust).err()?;
            Some((url.to_owned(), why.to_string()))
        })
        .collect();
    out.sort();
    out
}

/// The bytes of blob `digest` in `from`, at most `limit`, when they hash to it.
fn read(from: &Cache, digest: &Digest, limit: u64) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    from.open(digest)
        .ok()?
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= limit && Digest::of(&bytes) == *digest).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CNI: &str = "https://github.com/containernetworking/plugins/releases/download/v1.6.2/cni-plugins-linux-amd64-v1.6.2.tgz";
    const CRICTL: &str = "https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.33.0/crictl-v1.33.0-linux-amd64.tar.gz";

    /// Writes `bytes` into `dir` under `url`, as a carry would hold it.
    fn put(dir: &Cache, url: &str, bytes: &[u8]) -> Digest {
        let digest = dir.put_bytes(bytes).unwrap();
        let key = Key::Url(url.to_owned());
        dir.remember(&key, &digest, bytes.len() as u64, url)
            .unwrap();
        digest
    }

    /// The verdict on the entry for `url`.
    fn verdict_on(dir: &Cache, locks: &Locks, url: &str) -> Verdict {
        let entries = dir.index().unwrap();
        let at = entries.iter().position(|e| e.key == format!("url:{url}"));
        judge(dir, &entries, locks, None).remove(at.expect(url))
    }

    #[test]
    fn a_download_and_the_checksum_beside_it_come_in_only_with_a_lock_naming_its_digest() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Cache::new(tmp.path());
        let swapped = put(&dir, CNI, b"swapped");
        let sum = format!("{}  cni-plugins-linux-amd64-v1.6.2.tgz\n", swapped.hex());
        put(&dir, &format!("{CNI}.sha256"), sum.as_bytes());
        let checksum = format!("{CNI}.sha256");

        // Its own checksum names it, and proves nothing: both are skipped.
        let none = Locks::default();
        let Verdict::Skip(why) = verdict_on(&dir, &none, CNI) else {
            panic!("a download vouched for only by its carry came in");
        };
        assert!(why.contains("only DIR's own published checksum"), "{why}");
        assert!(matches!(
            verdict_on(&dir, &none, &checksum),
            Verdict::Skip(_)
        ));

        // A lock naming that very digest admits it, and the checksum beside it that names it.
        let mut same = Locks::default();
        same.name(&Key::Url(CNI.into()), swapped.clone(), Path::new("a.lock"));
        assert_eq!(
            verdict_on(&dir, &same, CNI),
            Verdict::Take(Admitted::Locked)
        );
        assert_eq!(
            verdict_on(&dir, &same, &checksum),
            Verdict::Take(Admitted::Checked)
        );

        // A lock naming another digest refuses it, naming the lock and its digest; the
        // checksum naming the refused blob stays out.
        let genuine = Digest::of(b"genuine");
        let mut other = Locks::default();
        other.name(&Key::Url(CNI.into()), genuine.clone(), Path::new("b.lock"));
        assert_eq!(
            verdict_on(&dir, &other, CNI),
            Verdict::Refuse {
                lock: "b.lock".into(),
                locked: genuine.clone(),
            }
        );
        assert!(matches!(
            verdict_on(&dir, &other, &checksum),
            Verdict::Skip(_)
        ));

        // A tag the lock gives another digest is skipped, not refused: tags move.
        let tag = Key::Tag("docker.io/library/busybox:1.36".into());
        let blob = dir.put_bytes(b"{}").unwrap();
        dir.remember(&tag, &blob, 2, "docker.io/library/busybox:1.36")
            .unwrap();
        let mut moved = Locks::default();
        moved.name(&tag, genuine, Path::new("c.lock"));
        let entries = dir.index().unwrap();
        let at = entries
            .iter()
            .position(|e| e.key == tag.to_string())
            .unwrap();
        let Verdict::Skip(why) = judge(&dir, &entries, &moved, None).remove(at) else {
            panic!("a moved tag was not skipped");
        };
        assert!(
            why.contains("c.lock") && why.contains("the tag moved"),
            "{why}"
        );

        // A lock admits a download it names even without a checksum in the carry.
        let crictl = put(&dir, CRICTL, b"crictl");
        assert!(matches!(verdict_on(&dir, &none, CRICTL), Verdict::Skip(_)));
        let mut locked = Locks::default();
        locked.name(&Key::Url(CRICTL.into()), crictl, Path::new("d.lock"));
        assert_eq!(
            verdict_on(&dir, &locked, CRICTL),
            Verdict::Take(Admitted::Locked)
        );
    }
}
