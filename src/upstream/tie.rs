//! Whether a cache index entry can be tied to what verified it when it was written: the rule
//! `cache import` and `cache verify` share with the unlocked offline build (whose downloads are
//! checked by [`against`] here, and whose images by the signature check the same way), so that
//! what a build refuses, an import skips and a verify reports agree.
//!
//! A download that upstream publishes a checksum for is tied when the cache also holds that
//! published checksum (under its own `url:` entry) and it names the entry's blob; a published
//! checksum is trusted as far as the downloads it names. Signature material (signatures,
//! certificates, Rekor entries) is checked where it is used, against the trusted root and what it
//! signs. An image tag is tied when the cache holds a signature for the image it names (its index
//! or a platform manifest); the tag of an image a signature rule covers cannot be tied without
//! one. Manifests, kubeadm's constants and the tags of images no rule covers have nothing to be
//! tied to: an online build takes them as served too. No network.

use std::io::Read as _;

use super::{Checksum, file_name};
use crate::cache::{Cache, Key};
use crate::image::{Digest, Reference};

/// Checksum files are a line, or a short listing; more than this is not one.
const CHECKSUM_LIMIT: u64 = 1 << 20;

/// What ties an index entry to a verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tie {
    /// A download whose published checksum, kept in the cache at this URL, names its blob.
    Checksum(String),
    /// A published checksum: trusted as far as the downloads it names.
    Published,
    /// Signature material (a signature, a certificate, a Rekor entry), checked against the
    /// trusted root and what it signs wherever it is used.
    Material,
    /// An image tag whose image (its index or a platform manifest) has a signature in the cache,
    /// verified again where used.
    Signed,
    /// A manifest, kubeadm's constants or the tag of an image no signature rule covers: taken as
    /// served, online too.
    Served,
    /// The tag of an image a signature rule covers, with no signature in the cache: a publisher
    /// may have left it unsigned, but the cache cannot show it, so an offline build without
    /// `--locked` refuses it.
    Unsigned,
}

/// Where upstream publishes the checksum of the file at `url`, judged by the URL alone (as
/// [`super::catalog`] lays the downloads out); `None` for manifests and anything else.
pub fn published_checksum(url: &str) -> Option<Checksum> {
    let sha256 = || format!("{url}.sha256");
    let (dir, name) = url.rsplit_once('/')?;
    if name.ends_with(".sha256") || name == "SHA256SUMS" {
        return None;
    }
    if url.starts_with("https://dl.k8s.io/release/") && dir.contains("/bin/linux/") {
        return Some(Checksum::BareHex { url: sha256() });
    }
    let release = |repo: &str| url.starts_with(&format!("https://github.com/{repo}/releases/"));
    let tarball = name.ends_with(".tgz") || name.ends_with(".tar.gz");
    if tarball && (release("containernetworking/plugins") || release("kubernetes-sigs/cri-tools")) {
        return Some(Checksum::HexName { url: sha256() });
    }
    if tarball && release("etcd-io/etcd") {
        return Some(Checksum::Sums {
            url: format!("{dir}/SHA256SUMS"),
        });
    }
    None
}

/// Whether `key` names a published checksum.
fn is_published(key: &Key) -> bool {
    key.url()
        .is_some_and(|url| url.ends_with(".sha256") || url.ends_with("/SHA256SUMS"))
}

/// Whether `key` names signature material: a signature tag, a referrers list, a Rekor entry, or
/// a published `.sig`, `.cert` or bundle.
fn is_material(key: &Key) -> bool {
    match key {
        Key::Signature { .. } | Key::Referrers { .. } | Key::Rekor { .. } => true,
        Key::Url(url) => {
            url.ends_with(".sig")
                || url.ends_with(".cert")
                || url.ends_with(cks_iso_sigstore::BUNDLE_SUFFIX)
        }
        Key::Tag(_) => false,
    }
}

/// What ties the entry `key` (naming `digest`, written with `note`: the URL really used) in
/// `store` to a verification; the reason when nothing can.
pub fn tie(store: &Cache, key: &str, digest: &Digest, note: &str) -> Result<Tie, Untied> {
    let Some(key) = Key::parse(key) else {
        return Err(Untied::UnknownKind);
    };
    if is_published(&key) {
        return Ok(Tie::Published);
    }
    if is_material(&key) {
        return Ok(Tie::Material);
    }
    if let Key::Tag(text) = &key {
        let Ok(reference) = Reference::parse(text) else {
            return Err(Untied::NotAReference(text.to_owned()));
        };
        // Signed as a build checks it: the index itself, or one of its platform manifests.
        let signed = std::iter::once(digest.clone())
            .chain(listed(store, digest))
            .any(|d| {
                let tag = cks_iso_sigstore::tag_for(&d);
                store.recall(&Key::signature(&reference, &tag)).is_some()
                    || store.recall(&Key::referrers(&reference, &d)).is_some()
            });
        let covered = cks_iso_sigstore::Policy::builtin()
            .rule_for(&reference.repository())
            .is_some();
        return Ok(match (signed, covered) {
            (true, _) => Tie::Signed,
            (false, false) => Tie::Served,
            (false, true) => Tie::Unsigned,
        });
    }
    let Key::Url(url) = &key else {
        return Err(Untied::UnknownKind);
    };
    if published_checksum(url).is_none() {
        return Ok(Tie::Served);
    }
    // Taken under its legacy name: the checksum published beside that one.
    let from = match note.starts_with("https://") || note.starts_with("http://") {
        true => note,
        false => url,
    };
    let checksum = published_checksum(from)
        .or_else(|| published_checksum(url))
        .expect("checked above");
    against(store, &checksum, from, digest)?;
    Ok(Tie::Checksum(checksum.url().to_owned()))
}

/// The manifests the image index `digest` lists, when the cache holds it (none for a manifest).
fn listed(store: &Cache, digest: &Digest) -> Vec<Digest> {
    let mut bytes = Vec::new();
    let read = store.open(digest).map(|f| {
        f.take(crate::image::MAX_MANIFEST_SIZE)
            .read_to_end(&mut bytes)
    });
    if !matches!(read, Ok(Ok(_))) {
        return Vec::new();
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Vec::new();
    };
    value["manifests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| Digest::parse(m["digest"].as_str()?).ok())
        .collect()
}

/// Checks that the published checksum `checksum`, as the cache kept it, names `digest` for the
/// file at `url`.
pub fn against(
    store: &Cache,
    checksum: &Checksum,
    url: &str,
    digest: &Digest,
) -> Result<(), Untied> {
    let shown = crate::fetch::strip_userinfo(checksum.url());
    let kept = store
        .recall(&Key::Url(shown.clone()))
        .ok_or_else(|| Untied::NoChecksum(shown.clone()))?;
    let mut body = Vec::new();
    store
        .open(&kept.digest)
        .map_err(std::io::Error::other)
        .and_then(|f| f.take(CHECKSUM_LIMIT).read_to_end(&mut body))
        .map_err(Untied::ChecksumUnreadable)?;
    if Digest::of(&body) != kept.digest {
        return Err(Untied::ChecksumDamaged);
    }
    let expected = checksum
        .expected(&body, file_name(url))
        .map_err(Untied::ChecksumFile)?;
    if expected != digest.hex() {
        return Err(Untied::OtherFile {
            checksum_url: shown,
            expected,
            cached: digest.clone(),
        });
    }
    Ok(())
}

/// Why a cache index entry cannot be tied to a verification.
#[derive(Debug, thiserror::Error)]
pub enum Untied {
    /// A `tag:` entry whose reference does not parse.
    #[error("{0:?} is not an image reference")]
    NotAReference(String),
    /// A key of no kind the cache writes.
    #[error("the cache writes no entry of this kind")]
    UnknownKind,
    /// The published checksum it was verified against is not in the cache.
    #[error("the cache holds no published checksum for it ({0})")]
    NoChecksum(String),
    /// That checksum's blob cannot be read.
    #[error("its published checksum cannot be read: {0}")]
    ChecksumUnreadable(std::io::Error),
    /// That checksum's blob no longer hashes to its digest.
    #[error("its published checksum is damaged in the cache")]
    ChecksumDamaged,
    /// That checksum file gives no digest for the file.
    #[error("its published checksum: {0}")]
    ChecksumFile(super::ChecksumFileError),
    /// That checksum names another file than the cached one.
    #[error(
        "the checksum published in {checksum_url} is sha256:{expected}, the cached file is {cached}"
    )]
    OtherFile {
        /// The checksum file's URL.
        checksum_url: String,
        /// The hex sha256 it publishes.
        expected: String,
        /// The cached blob.
        cached: Digest,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::Arch;
    use crate::release::{AutoscalerVersion, KubeVersion};
    use crate::upstream::{Pins, catalog};

    #[test]
    fn the_url_alone_tells_where_each_catalog_download_publishes_its_checksum() {
        for (k, etcd) in [("1.33.1", Some("3.5.21")), ("1.29.0", None)] {
            let pins = Pins {
                kubernetes: k.parse::<KubeVersion>().unwrap(),
                cni: "1.6.2".into(),
                crictl: "1.33.0".into(),
                etcd: etcd.map(Into::into),
                etcd_own_name: false,
                autoscaler: AutoscalerVersion {
                    major: 1,
                    minor: 33,
                    patch: 4,
                },
                ccm_tag: "v1.1.0".into(),
                csi: Some("v3.0.0".into()),
            };
            for arch in [Arch::Amd64, Arch::Arm64] {
                for artifact in catalog(&pins, arch) {
                    assert_eq!(
                        published_checksum(&artifact.url),
                        artifact.checksum,
                        "{}",
                        artifact.url
                    );
                    assert!(published_checksum(&format!("{}.sha256", artifact.url)).is_none());
                    if let Some(legacy) = &artifact.legacy {
                        let at = artifact
                            .checksum
                            .as_ref()
                            .map(|c| c.at(format!("{}.sha256", legacy.url)));
                        assert_eq!(published_checksum(&legacy.url), at, "{}", legacy.url);
                    }
                }
            }
        }
    }

    #[test]
    fn material_is_told_from_what_it_verifies() {
        let key = |text: &str| Key::parse(text).expect(text);
        for text in [
            "url:https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm.sha256",
            "url:https://github.com/etcd-io/etcd/releases/download/v3.5.21/SHA256SUMS",
        ] {
            assert!(
                is_published(&key(text)) && !is_material(&key(text)),
                "{text}"
            );
        }
        for text in [
            "url:https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm.sig",
            "url:https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm.cert",
            "url:https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm.sigstore.json",
            "rekor:https://rekor.sigstore.dev:sha256:00",
            "sig:registry.k8s.io/pause:sha256-00.sig",
            "referrers:registry.k8s.io/pause@sha256:00",
        ] {
            assert!(
                is_material(&key(text)) && !is_published(&key(text)),
                "{text}"
            );
        }
        assert!(!is_material(&key(
            "url:https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm"
        )));
        assert!(!is_material(&key("tag:registry.k8s.io/pause:3.10")));
    }
}
