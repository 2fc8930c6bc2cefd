//! Reading an image archive back in one streaming pass, for `cks-iso verify`: every blob is hashed
//! against its name, then the archive is walked as an image source like any other — the same
//! [`Image::load`] that resolves registry and cache images picks the wanted platform and checks
//! the index → manifest → config chain — and `manifest.json` must describe that very image.
//!
//! Only JSON blobs up to [`MAX_MANIFEST_SIZE`] are kept in memory (to be parsed); layers are hashed
//! and dropped, so memory does not grow with the archive.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read};

use serde::Deserialize;

use super::layout::IMAGE_NAME;
use crate::image::{
    Arch, BlobSource, Digest, Hashing, Image, ImageError, Index, MAX_MANIFEST_SIZE, Reference,
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

/// Why an archive is not a good image archive for the wanted platform.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// The bytes are not a tar archive, or reading them failed.
    #[error("not a tar archive: {0}")]
    Tar(io::Error),
    /// An entry that has no place in an image archive.
    #[error("unexpected {0}")]
    Unexpected(String),
    /// A blob whose content is not what its name says.
    #[error("blobs/sha256/{} does not match: expected {named}, got {actual}", named.hex())]
    Blob {
        /// The digest its name gives.
        named: Digest,
        /// The digest of its bytes.
        actual: Digest,
    },
    /// A required file or blob is missing.
    #[error("{0} is not in the archive")]
    Missing(String),
    /// The platform manifest is not there: an archive written for another platform.
    #[error(
        "holds no linux/{arch} image: its {what} {digest} is not in the archive (archived for \
         another platform?)"
    )]
    NoPlatform {
        /// The wanted architecture.
        arch: &'static str,
        /// What is missing.
        what: String,
        /// Its digest.
        digest: Digest,
    },
    /// A JSON file that does not parse.
    #[error("{file}: {reason}")]
    Json {
        /// The file or blob.
        file: String,
        /// The parser's words.
        reason: String,
    },
    /// The image chain itself is wrong (platform, sizes, digests).
    #[error(transparent)]
    Image(ImageError),
    /// The config names another platform.
    #[error("the image is {found}, the ISO is linux/{arch}")]
    WrongPlatform {
        /// `os/architecture` of the config.
        found: String,
        /// The wanted architecture.
        arch: &'static str,
    },
    /// `manifest.json` (the Docker view) describes something else than the OCI view.
    #[error("manifest.json {0}")]
    DockerView(String),
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

/// The small JSON blobs of an archive, as an image source.
struct Kept(BTreeMap<Digest, Vec<u8>>);

impl BlobSource for Kept {
    fn open(&self, digest: &Digest) -> io::Result<Box<dyn Read + Send + '_>> {
        match self.0.get(digest) {
            Some(bytes) => Ok(Box::new(bytes.as_slice())),
            None => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "not in the archive",
            )),
        }
    }
}

fn json<T: for<'de> Deserialize<'de>>(file: &str, bytes: &[u8]) -> Result<T, InspectError> {
    serde_json::from_slice(bytes).map_err(|e| InspectError::Json {
        file: file.to_owned(),
        reason: e.to_string(),
    })
}

/// Reads the archive from `reader` and checks it for `arch`.
pub fn inspect(reader: impl Read, arch: Arch) -> Result<Inspected, InspectError> {
    let (present, kept, files) = read_entries(reader)?;
    let index: Index = json("index.json", &files["index.json"])?;
    let [top] = &index.manifests[..] else {
        return Err(InspectError::Unexpected(format!(
            "index.json with {} entries, not 1",
            index.manifests.len()
        )));
    };
    let name = top.annotations.get(IMAGE_NAME).cloned();
    let reference = name
        .as_deref()
        .and_then(|n| Reference::parse(n).ok())
        .unwrap_or_else(|| Reference::parse("localhost/archive").expect("a valid reference"));
    let kept = Kept(kept);
    let image = Image::load(reference, &top.digest, arch, &kept).map_err(|e| match e {
        ImageError::Source {
            what,
            digest,
            source,
            ..
        } if source.kind() == io::ErrorKind::NotFound => match digest == top.digest {
            true => InspectError::Missing(format!("the image {digest}")),
            false => InspectError::NoPlatform {
                arch: arch.as_str(),
                what,
                digest,
            },
        },
        other => InspectError::Image(other),
    })?;
    let config_bytes = kept
        .0
        .get(&image.config.digest)
        .ok_or_else(|| InspectError::Missing(format!("the config {}", image.config.digest)))?;
    let config: Config = json(&format!("config {}", image.config.digest), config_bytes)?;
    if config.os != "linux" || config.architecture != arch.as_str() {
        return Err(InspectError::WrongPlatform {
            found: format!("{}/{}", config.os, config.architecture),
            arch: arch.as_str(),
        });
    }
    if let Some(layer) = image.layers.iter().find(|l| !present.contains(&l.digest)) {
        return Err(InspectError::Missing(format!("layer {}", layer.digest)));
    }
    let docker: Vec<DockerEntry> = json("manifest.json", &files["manifest.json"])?;
    let [docker] = &docker[..] else {
        return Err(InspectError::DockerView(format!(
            "has {} entries, not 1",
            docker.len()
        )));
    };
    let path_of = |d: &Digest| format!("blobs/sha256/{}", d.hex());
    let want_layers: Vec<String> = image.layers.iter().map(|l| path_of(&l.digest)).collect();
    if docker.config != path_of(&image.config.digest) || docker.layers != want_layers {
        return Err(InspectError::DockerView(
            "does not match the platform manifest".into(),
        ));
    }
    Ok(Inspected {
        name,
        digest: top.digest.clone(),
        manifest: image.manifest.digest.clone(),
        architecture: config.architecture,
        repo_tags: docker.repo_tags.clone().unwrap_or_default(),
        blobs: present.len(),
    })
}

type Entries = (
    BTreeSet<Digest>,
    BTreeMap<Digest, Vec<u8>>,
    BTreeMap<String, Vec<u8>>,
);

/// Every entry once: blobs hashed against their names (small JSON ones kept), and the three
/// layout files read.
fn read_entries(reader: impl Read) -> Result<Entries, InspectError> {
    let mut archive = tar::Archive::new(reader);
    let mut present: BTreeSet<Digest> = BTreeSet::new();
    let mut kept: BTreeMap<Digest, Vec<u8>> = BTreeMap::new();
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for entry in archive.entries().map_err(InspectError::Tar)? {
        let mut entry = entry.map_err(InspectError::Tar)?;
        let path = entry
            .path()
            .map_err(InspectError::Tar)?
            .to_string_lossy()
            .into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            if !matches!(path.trim_end_matches('/'), "blobs" | "blobs/sha256") {
                return Err(InspectError::Unexpected(format!("directory {path}")));
            }
            continue;
        }
        if !kind.is_file() {
            return Err(InspectError::Unexpected(format!("{kind:?} entry {path}")));
        }
        if let Some(hex) = path.strip_prefix("blobs/sha256/") {
            let named = Digest::from_hex(hex)
                .map_err(|_| InspectError::Unexpected(format!("blob name {path}")))?;
            let (actual, small) = hash_blob(&mut entry).map_err(InspectError::Tar)?;
            if actual != named {
                return Err(InspectError::Blob { named, actual });
            }
            if let Some(bytes) = small {
                kept.insert(named.clone(), bytes);
            }
            present.insert(named);
        } else if matches!(path.as_str(), "index.json" | "manifest.json" | "oci-layout") {
            let mut bytes = Vec::new();
            entry
                .by_ref()
                .take(MAX_MANIFEST_SIZE + 1)
                .read_to_end(&mut bytes)
                .map_err(InspectError::Tar)?;
            files.insert(path, bytes);
        } else {
            return Err(InspectError::Unexpected(format!("entry {path}")));
        }
    }
    for required in ["oci-layout", "index.json", "manifest.json"] {
        if !files.contains_key(required) {
            return Err(InspectError::Missing(required.into()));
        }
    }
    Ok((present, kept, files))
}

/// Hashes a blob entry, keeping its bytes when it may be a JSON document worth parsing.
pub(super) fn hash_blob(entry: &mut impl Read) -> io::Result<(Digest, Option<Vec<u8>>)> {
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
