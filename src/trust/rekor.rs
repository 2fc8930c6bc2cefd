//! A file's Rekor entry, looked up as `build` does: one search of the Rekor server for the entry
//! that logs the file's sha256, signature and certificate (what cosign asks), through the
//! mirrors, an entry taken only when it logs exactly those, and kept in the cache (offline, the
//! one the cache last saw). `build` and `verify-bundle` share it.
//!
//! Not the index by hash: it lists every entry anyone logged for the file (anyone can sign
//! kubeadm and log it), each to be fetched, and an entry the index names but the log no longer
//! serves answered 404.

use crate::cache::{Cache, Key};
use crate::fetch::{FetchError, strip_userinfo};
use crate::image::Digest;
use crate::upstream::Fetcher;
use cks_iso_sigstore::rekor;

/// Rekor's public-good instance.
pub const DEFAULT_REKOR_URL: &str = "https://rekor.sigstore.dev";

/// Index key of the Rekor entry chosen for a file's sha256 (the entry reply's bytes). The
/// server is named without its user and password, which the requests use and nothing records
/// (the index, `cache ls`, a carry).
fn rekor_key(rekor_url: &str, sha256_hex: &str) -> Key {
    Key::Rekor {
        server: strip_userinfo(rekor_url).trim_end_matches('/').to_owned(),
        sha256: sha256_hex.to_owned(),
    }
}

/// Bytes the cache holds under `digest` (hex), if intact: what a lock names by digest.
pub fn cached(store: Option<&Cache>, digest: &str) -> Option<Vec<u8>> {
    let store = store?;
    let digest = Digest::from_hex(digest).ok()?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut store.open(&digest).ok()?, &mut bytes).ok()?;
    (Digest::of(&bytes) == digest).then_some(bytes)
}

/// The Rekor reply (a search's `[{uuid: entry}]`; from caches of earlier releases, an entry's
/// `{uuid: entry}`) at `rekor_url` with an entry that logs this file, signature and certificate
/// (offline: the one the cache last saw; `named`, the digest a lock names: the cached bytes of it).
pub async fn entry(
    rekor_url: &str,
    fetcher: &Fetcher<'_>,
    digest: &[u8],
    sig: &[u8],
    cert: &[u8],
    named: Option<&str>,
) -> Result<Option<Vec<u8>>, FetchError> {
    let hex = hex::encode(digest);
    let key = rekor_key(rekor_url, &hex);
    let url = format!("{rekor_url}{}", rekor::SEARCH_PATH);
    let logs = |bytes: &[u8]| {
        rekor::entries(bytes).is_ok_and(|map| {
            map.values()
                .any(|e| rekor::Evidence::logged_by(digest, sig, cert, e))
        })
    };
    if let Some(bytes) = named.and_then(|d| cached(fetcher.store, d)) {
        return Ok(Some(bytes));
    }
    let recalled = || {
        let recalled = fetcher.store.and_then(|s| s.recall(&key));
        let bytes = recalled.and_then(|r| cached(fetcher.store, r.digest.hex()));
        Ok::<_, FetchError>(bytes.map(Some))
    };
    let searched = async {
        // Refused offline by the client layer under the URL it is recorded as.
        fetcher.download.admit(&strip_userinfo(&url))?;
        let Ok((signature, leaf)) = rekor::read_pair(sig, cert) else {
            return Ok(None);
        };
        let query = rekor::search_query(&hex, &signature, &leaf);
        let bytes = fetcher
            .post_json(&url, &query, rekor::MAX_SEARCH_REPLY)
            .await?;
        if !logs(&bytes) {
            return Ok(None);
        }
        if let Some(store) = fetcher.store {
            let kept = store
                .put_bytes(&bytes)
                .and_then(|d| store.remember(&key, &d, bytes.len() as u64, &strip_userinfo(&url)));
            if let Err(e) = kept {
                tracing::warn!("cannot keep the Rekor entry of sha256:{hex} in the cache: {e}");
            }
        }
        Ok::<_, FetchError>(Some(bytes))
    };
    Ok(fetcher.download.or_cached(recalled, searched).await?.0)
}
