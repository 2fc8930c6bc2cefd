//! Reading an image archive back in one streaming pass, for `cks-iso verify`: every blob is hashed
//! against its name, and the index → manifest → config chain is checked for the wanted platform.
//!
//! Only JSON blobs up to [`MAX_MANIFEST_SIZE`] are kept in memory (to be parsed); layers are hashed
//! and dropped, so memory does not grow with the archive.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read};

use serde::Deserialize;

use super::layout::IMAGE_NAME;
use crate::image::{
    Arch, Digest, Hashing, Index, MAX_MANIFEST_SIZE, Manifest, MediaType, platform,
};

/// What an archive holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspected {
    /// The `io.containerd.image.name` annotation: the full image name.
    pub name: Option<String>,
    /// The digest `index.json` points at (what `ctr import` records).
    pub digest: Digest,
    /// The platform manifest chosen for the wanted architecture.
    pub manifest: Digest,
    /// The config's `architecture`.
    pub architecture: String,
    /// `RepoTags` of `manifest.json`.
    pub repo_tags: Vec<String>,
    /// Blobs in the archive, all verified.
    pub blobs: usize,
}

#[derive(Deserialize)]
struct DockerEntry {
    #[serde(rename = "Config")]
    config: String,
    #[serde(rename = "RepoTags", default)]
    repo_tags: Option<Vec<String>>,
    #[serde(rename = "Layers")]
    layers: Vec<String>,
}

#[derive(Deserialize)]
struct Config {
    architecture: String,
    os: String,
}

/// Reads the archive from `reader` and checks it for `arch`; the error says what is wrong.
pub fn inspect(reader: impl Read, arch: Arch) -> Result<Inspected, String> {
    let mut archive = tar::Archive::new(reader);
    let mut present: BTreeSet<Digest> = BTreeSet::new();
    let mut json: BTreeMap<Digest, Vec<u8>> = BTreeMap::new();
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let entries = archive
        .entries()
        .map_err(|e| format!("not a tar archive: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("not a tar archive: {e}"))?;
        let path = entry
            .path()
            .map_err(|e| format!("bad entry name: {e}"))?
            .to_string_lossy()
            .into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            if !matches!(path.trim_end_matches('/'), "blobs" | "blobs/sha256") {
                return Err(format!("unexpected directory {path}"));
            }
            continue;
        }
        if !kind.is_file() {
            return Err(format!("unexpected {kind:?} entry {path}"));
        }
        if let Some(hex) = path.strip_prefix("blobs/sha256/") {
            let named = Digest::parse(&format!("sha256:{hex}"))
                .map_err(|_| format!("blob with a malformed name {path}"))?;
            let (actual, kept) = hash_blob(&mut entry).map_err(|e| format!("{path}: {e}"))?;
            if actual != named {
                return Err(format!("{path} hashes to {actual}, not {named}"));
            }
            if let Some(bytes) = kept {
                json.insert(named.clone(), bytes);
            }
            present.insert(named);
        } else if matches!(path.as_str(), "index.json" | "manifest.json" | "oci-layout") {
            let mut bytes = Vec::new();
            entry
                .by_ref()
                .take(MAX_MANIFEST_SIZE + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| format!("{path}: {e}"))?;
            files.insert(path, bytes);
        } else {
            return Err(format!("unexpected entry {path}"));
        }
    }
    for required in ["oci-layout", "index.json", "manifest.json"] {
        if !files.contains_key(required) {
            return Err(format!("no {required}"));
        }
    }
    let index: Index =
        serde_json::from_slice(&files["index.json"]).map_err(|e| format!("index.json: {e}"))?;
    let [top] = &index.manifests[..] else {
        return Err(format!(
            "index.json has {} entries, not 1",
            index.manifests.len()
        ));
    };
    let name = top.annotations.get(IMAGE_NAME).cloned();
    let blob = |d: &Digest, what: &str| -> Result<&Vec<u8>, String> {
        json.get(d)
            .ok_or_else(|| format!("the {what} {d} is not in the archive"))
    };
    let mut manifest_digest = top.digest.clone();
    let mut bytes = blob(&top.digest, "image")?;
    let kind = MediaType::sniff(bytes).map_err(|e| format!("{}: {e}", top.digest))?;
    if kind.is_index() {
        let list: Index =
            serde_json::from_slice(bytes).map_err(|e| format!("{}: {e}", top.digest))?;
        let chosen = platform::select(&list.manifests, arch).map_err(|has| {
            format!(
                "no linux/{} manifest; the index has {}",
                arch.as_str(),
                has.join(", ")
            )
        })?;
        manifest_digest = chosen.digest.clone();
        bytes = json.get(&chosen.digest).ok_or_else(|| {
            format!(
                "holds no linux/{} image: the index's linux/{} manifest {} is not in the archive \
                 (archived for another platform?)",
                arch.as_str(),
                arch.as_str(),
                chosen.digest
            )
        })?;
    }
    let manifest: Manifest =
        serde_json::from_slice(bytes).map_err(|e| format!("{manifest_digest}: {e}"))?;
    let config: Config = serde_json::from_slice(blob(&manifest.config.digest, "config")?)
        .map_err(|e| format!("config {}: {e}", manifest.config.digest))?;
    if config.os != "linux" || config.architecture != arch.as_str() {
        return Err(format!(
            "the image is {}/{}, the ISO is linux/{}",
            config.os,
            config.architecture,
            arch.as_str()
        ));
    }
    for layer in &manifest.layers {
        if !present.contains(&layer.digest) {
            return Err(format!("layer {} is not in the archive", layer.digest));
        }
    }
    let docker: Vec<DockerEntry> = serde_json::from_slice(&files["manifest.json"])
        .map_err(|e| format!("manifest.json: {e}"))?;
    let [docker] = &docker[..] else {
        return Err(format!("manifest.json has {} entries, not 1", docker.len()));
    };
    let path_of = |d: &Digest| format!("blobs/sha256/{}", d.hex());
    let want_layers: Vec<String> = manifest.layers.iter().map(|l| path_of(&l.digest)).collect();
    if docker.config != path_of(&manifest.config.digest) || docker.layers != want_layers {
        return Err("manifest.json does not match the platform manifest".into());
    }
    Ok(Inspected {
        name,
        digest: top.digest.clone(),
        manifest: manifest_digest,
        architecture: config.architecture,
        repo_tags: docker.repo_tags.clone().unwrap_or_default(),
        blobs: present.len(),
    })
}

/// Hashes a blob entry, keeping its bytes when it may be a JSON document worth parsing.
fn hash_blob(entry: &mut impl Read) -> io::Result<(Digest, Option<Vec<u8>>)> {
    let mut entry = Hashing::new(entry);
    let mut kept: Option<Vec<u8>> = Some(Vec::new());
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = entry.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if let Some(k) = kept.as_mut() {
            if (k.is_empty() && buf[0] != b'{') || (k.len() + n) as u64 > MAX_MANIFEST_SIZE {
                kept = None;
            } else {
                k.extend_from_slice(&buf[..n]);
            }
        }
    }
    Ok((entry.digest(), kept))
}
