//! What `ctr -n k8s.io image import <archive>` makes of an archive that cks-iso did not write,
//! for `cks-iso verify` of ISOs from other builders (apache/cloudstack#13157: an official ISO's
//! pause archive held only `blobs/`, and every upgrade to it aborted).
//!
//! The rules are containerd's, read from `images/archive/importer.go` (`ImportIndex`), the
//! client's `Import` and `ctr images import` (1.6, the containerd of CKS nodes), and restated
//! here, not copied:
//!
//! - every regular file is stored as a blob under the digest of its bytes, whatever its name;
//!   `oci-layout` and `manifest.json` are read as JSON instead;
//! - with an `oci-layout` (version `1.0.0`), `index.json` is the image index: "missing
//!   index.json in OCI layout 1.0.0" without it. The index's manifests are then read from the
//!   stored blobs by digest ("content digest …: not found"), indexes within it down to the
//!   node's platform only;
//! - without one, `manifest.json` (Docker's `Config`, `RepoTags`, `Layers`, by path in the tar)
//!   makes the index: "image config … not found", "layer … not found"; with neither file the
//!   import fails with "unrecognized image format";
//! - each image is named after `io.containerd.image.name`, else
//!   `org.opencontainers.image.ref.name` (a bare tag gets ctr's `import-<date>:` prefix), or a
//!   Docker `RepoTags` entry, normalised; an image without a name is not recorded at all;
//! - then each named image is unpacked for the node's platform: its manifest for that platform,
//!   its config and every layer must be there, and as many layers as the config has `diff_ids`.
//!
//! Streaming, one pass: blobs are hashed and dropped, only small JSON ones are kept to be read.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{self, Read};

use serde::Deserialize;

use super::inspect::hash_blob;
use super::layout::{IMAGE_NAME, REF_NAME};
use crate::image::{Arch, Descriptor, Digest, MAX_MANIFEST_SIZE, MediaType, Platform, Reference};

/// How containerd reads the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An OCI image layout (`oci-layout` + `index.json`).
    Oci,
    /// A Docker archive (`manifest.json`).
    Docker,
}

/// What the import records, when it succeeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// How containerd read it.
    pub format: Format,
    /// The names `ctr images ls` lists afterwards.
    pub names: Vec<String>,
    /// Files stored as blobs.
    pub blobs: usize,
}

/// Why the import fails on a node: containerd's own words, and what in the archive causes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// What `ctr` prints (after `ctr: `); `None` when it prints no error but records no image.
    pub containerd: Option<String>,
    /// What in the archive makes it so.
    pub cause: String,
}

/// Reads as the end of "`ctr -n k8s.io image import` …".
impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.containerd {
            Some(words) => write!(f, "fails with \"{words}\": {}", self.cause),
            None => write!(f, "succeeds but records no image: {}", self.cause),
        }
    }
}

fn refused(containerd: impl Into<String>, cause: impl Into<String>) -> Refused {
    Refused {
        containerd: Some(containerd.into()),
        cause: cause.into(),
    }
}

fn nameless(cause: &str) -> Refused {
    Refused {
        containerd: None,
        cause: cause.to_owned(),
    }
}

#[derive(Deserialize)]
struct Layout {
    #[serde(rename = "imageLayoutVersion", default)]
    version: String,
}

#[derive(Deserialize)]
struct DockerEntry {
    #[serde(rename = "Config", default)]
    config: String,
    #[serde(rename = "RepoTags", default)]
    repo_tags: Option<Vec<String>>,
    #[serde(rename = "Layers", default)]
    layers: Vec<String>,
}

#[derive(Deserialize)]
struct Index {
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

#[derive(Deserialize)]
struct Manifest {
    config: Descriptor,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

#[derive(Deserialize, Default)]
struct RootFs {
    #[serde(default)]
    diff_ids: Vec<String>,
}

#[derive(Deserialize)]
struct Config {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
    #[serde(default)]
    variant: Option<String>,
    #[serde(default)]
    rootfs: RootFs,
}

/// Everything read from the tar.
#[derive(Default)]
struct Tar {
    layout: Option<Layout>,
    docker: Option<Option<Vec<DockerEntry>>>,
    /// Path (cleaned) → digest of its bytes.
    by_path: BTreeMap<String, Digest>,
    /// Symlink path → its target, resolved from its directory.
    symlinks: BTreeMap<String, String>,
    /// The store: every digest present; small JSON-looking blobs kept.
    store: BTreeSet<Digest>,
    kept: BTreeMap<Digest, Vec<u8>>,
}

/// What `ctr -n k8s.io image import` does with the archive read from `reader` on a node of
/// `arch` (`None`: any platform will do).
pub fn import(reader: impl Read, arch: Option<Arch>) -> Result<Imported, Refused> {
    let read = read_tar(reader)?;
    let blobs = read.by_path.len();
    match (&read.layout, &read.docker) {
        (Some(layout), _) if !layout.version.is_empty() => {
            if layout.version != "1.0.0" {
                return Err(refused(
                    format!("unsupported OCI version {}", layout.version),
                    "oci-layout names a layout version containerd does not read",
                ));
            }
            let names = oci(&read, arch)?;
            Ok(Imported {
                format: Format::Oci,
                names,
                blobs,
            })
        }
        (_, Some(Some(entries))) => {
            let names = docker(&read, entries, arch)?;
            Ok(Imported {
                format: Format::Docker,
                names,
                blobs,
            })
        }
        _ => Err(refused("unrecognized image format", unrecognized(&read))),
    }
}

/// What the archive holds instead of `oci-layout` or `manifest.json`.
fn unrecognized(read: &Tar) -> String {
    let under_blobs = read
        .by_path
        .keys()
        .filter(|p| p.starts_with("blobs/"))
        .count();
    let others: Vec<&str> = read
        .by_path
        .keys()
        .filter(|p| !p.starts_with("blobs/"))
        .map(String::as_str)
        .collect();
    let layout = match read.layout {
        Some(_) => "an oci-layout without imageLayoutVersion",
        None => "no oci-layout",
    };
    match (under_blobs, others.is_empty()) {
        (0, true) => format!("the archive is empty: {layout} and no manifest.json"),
        (n, true) => format!(
            "it holds only blobs/ ({n} file(s)): {layout}, no index.json and no manifest.json"
        ),
        (n, false) => format!(
            "{layout} and no manifest.json; besides {n} file(s) under blobs/ it holds {others:?}"
        ),
    }
}

fn read_tar(reader: impl Read) -> Result<Tar, Refused> {
    let tar_error = |e: io::Error| {
        refused(
            e.to_string(),
            "the archive does not read as a tar to its end",
        )
    };
    let mut out = Tar::default();
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries().map_err(tar_error)? {
        let mut entry = entry.map_err(tar_error)?;
        let name = clean(&String::from_utf8_lossy(&entry.path_bytes()));
        let kind = entry.header().entry_type();
        if kind.is_symlink() {
            let link = entry
                .link_name_bytes()
                .map(|l| String::from_utf8_lossy(&l).into_owned())
                .unwrap_or_default();
            let dir = name.rsplit_once('/').map_or("", |(d, _)| d);
            out.symlinks
                .insert(name.clone(), clean(&format!("{dir}/{link}")));
        }
        if !kind.is_file() {
            continue;
        }
        let json = |entry: &mut tar::Entry<_>| -> Result<Vec<u8>, Refused> {
            let mut bytes = Vec::new();
            entry
                .by_ref()
                .take(MAX_MANIFEST_SIZE + 1)
                .read_to_end(&mut bytes)
                .map_err(tar_error)?;
            Ok(bytes)
        };
        match name.as_str() {
            "oci-layout" => {
                let bytes = json(&mut entry)?;
                let layout = serde_json::from_slice(&bytes).map_err(|e| {
                    refused(
                        format!("untar oci layout \"oci-layout\": {e}"),
                        "oci-layout is not JSON",
                    )
                })?;
                out.layout = Some(layout);
            }
            "manifest.json" => {
                let bytes = json(&mut entry)?;
                let entries = serde_json::from_slice(&bytes).map_err(|e| {
                    refused(
                        format!("untar manifest \"manifest.json\": {e}"),
                        "manifest.json is not Docker's list of images",
                    )
                })?;
                out.docker = Some(entries);
            }
            _ => {
                let (digest, small) = hash_blob(&mut entry).map_err(tar_error)?;
                if let Some(bytes) = small {
                    out.kept.insert(digest.clone(), bytes);
                }
                out.store.insert(digest.clone());
                out.by_path.insert(name, digest);
            }
        }
    }
    Ok(out)
}

/// `path.Clean` for the relative names of a tar: no `./`, no empty or `.` components.
fn clean(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// "content digest …: not found", saying what the archive holds under that digest's name.
fn not_found(read: &Tar, what: &str, digest: &Digest) -> Refused {
    let path = format!("blobs/sha256/{}", digest.hex());
    let cause = match read.by_path.get(&path) {
        Some(actual) => format!("{path} ({what}) holds other bytes, {actual}"),
        None => format!("{what} {digest} is not in the archive"),
    };
    refused(format!("content digest {digest}: not found"), cause)
}

fn parse<'a, T: Deserialize<'a>>(read: &'a Tar, what: &str, digest: &Digest) -> Result<T, Refused> {
    if !read.store.contains(digest) {
        return Err(not_found(read, what, digest));
    }
    let bytes = read.kept.get(digest).map_or(&b""[..], Vec::as_slice);
    serde_json::from_slice(bytes).map_err(|e| {
        refused(
            e.to_string(),
            format!("{what} {digest} is not JSON of its kind"),
        )
    })
}

fn matches(platform: &Platform, arch: Option<Arch>) -> bool {
    arch.is_none_or(|a| platform.os == "linux" && platform.architecture == a.as_str())
}

/// The OCI path: `index.json`'s images, each named and unpacked.
fn oci(read: &Tar, arch: Option<Arch>) -> Result<Vec<String>, Refused> {
    let Some(index_digest) = read.by_path.get("index.json") else {
        return Err(refused(
            "missing index.json in OCI layout 1.0.0",
            "oci-layout is there, index.json is not",
        ));
    };
    let index: Index = parse(read, "index.json", index_digest)?;
    let mut names = Vec::new();
    for top in &index.manifests {
        // The walk reads every manifest and index the node's platform reaches.
        walk(read, top, arch, 0)?;
        let Some(name) = oci_name(top) else { continue };
        unpack(read, top, arch, &name)?;
        names.push(name);
    }
    if names.is_empty() {
        return Err(nameless(
            "index.json gives no image a name (no io.containerd.image.name or \
             org.opencontainers.image.ref.name annotation), so nodes find nothing under any name",
        ));
    }
    Ok(names)
}

/// The name `ctr images import` (no `--base-name`) records for an `index.json` entry.
fn oci_name(top: &Descriptor) -> Option<String> {
    if let Some(name) = top.annotations.get(IMAGE_NAME).filter(|n| !n.is_empty()) {
        return Some(name.clone());
    }
    let reference = top.annotations.get(REF_NAME).filter(|n| !n.is_empty())?;
    match reference.contains(['/', ':', '@']) {
        true => Some(reference.clone()),
        false => Some(format!("import-<date>:{reference}")),
    }
}

/// Reads `desc` and, for an index, its entries of the node's platform, as containerd's walk does.
fn walk(read: &Tar, desc: &Descriptor, arch: Option<Arch>, depth: usize) -> Result<(), Refused> {
    let Some(kind) = MediaType::from_name(&desc.media_type) else {
        return Ok(());
    };
    if depth > 8 {
        return Err(refused("index nesting too deep", format!("{desc:?}")));
    }
    match kind.is_index() {
        true => {
            let index: Index = parse(read, "the index", &desc.digest)?;
            // A node reads its own platform's entries; with that unknown, the unpack below
            // still needs one platform whole.
            for entry in index.manifests.iter().filter(|_| arch.is_some()) {
                if entry.platform.as_ref().is_none_or(|p| matches(p, arch)) {
                    walk(read, entry, arch, depth + 1)?;
                }
            }
        }
        false => {
            parse::<Manifest>(read, "the manifest", &desc.digest)?;
        }
    }
    Ok(())
}

/// Unpacks the image `desc` names for the node's platform: its manifest, config and layers.
fn unpack(read: &Tar, desc: &Descriptor, arch: Option<Arch>, name: &str) -> Result<(), Refused> {
    let platform = arch.map_or("any platform".to_owned(), |a| format!("linux/{a}"));
    let manifest = platform_manifest(read, desc, arch, 0)?.ok_or_else(|| {
        refused(
            format!("unpacking {name}: no match for platform in manifest: not found"),
            format!("the archive holds no {platform} image"),
        )
    })?;
    let manifest: Manifest = parse(read, "the manifest", &manifest)?;
    let config: Config = parse(read, "the config", &manifest.config.digest)?;
    let layers: Vec<&Digest> = manifest.layers.iter().map(|l| &l.digest).collect();
    check_unpack(read, name, &config, &layers, arch)
}

/// The config and layers of an image, as `Unpack` reads them.
fn check_unpack(
    read: &Tar,
    name: &str,
    config: &Config,
    layers: &[&Digest],
    arch: Option<Arch>,
) -> Result<(), Refused> {
    let found = Platform {
        os: config.os.clone(),
        architecture: config.architecture.clone(),
        variant: config.variant.clone(),
    };
    if !matches(&found, arch) {
        return Err(refused(
            format!("unpacking {name}: no match for platform in manifest: not found"),
            format!(
                "the image is {found}, the node linux/{}",
                arch.map_or("", |a| a.as_str())
            ),
        ));
    }
    for layer in layers {
        if !read.store.contains(*layer) {
            return Err(not_found(read, "the layer", layer));
        }
    }
    if config.rootfs.diff_ids.len() != layers.len() {
        return Err(refused(
            format!("unpacking {name}: mismatched image rootfs and manifest layers"),
            format!(
                "the config lists {} diff_ids for {} layers",
                config.rootfs.diff_ids.len(),
                layers.len()
            ),
        ));
    }
    Ok(())
}

/// The manifest of `desc` for the node's platform: the first match in an index (recursively), or
/// `desc` itself.
fn platform_manifest(
    read: &Tar,
    desc: &Descriptor,
    arch: Option<Arch>,
    depth: usize,
) -> Result<Option<Digest>, Refused> {
    let index = MediaType::from_name(&desc.media_type).is_some_and(MediaType::is_index);
    if !index || depth > 8 {
        return Ok(Some(desc.digest.clone()));
    }
    let parsed: Index = parse(read, "the index", &desc.digest)?;
    for entry in parsed.manifests {
        let attestation = crate::image::is_attestation(&entry);
        // With the platform unknown, any platform the archive holds will do.
        let held = arch.is_some() || read.store.contains(&entry.digest);
        if !attestation
            && held
            && entry.platform.as_ref().is_none_or(|p| matches(p, arch))
            && let Some(found) = platform_manifest(read, &entry, arch, depth + 1)?
        {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The Docker path: each `manifest.json` entry's config and layers by path, named by its tags.
fn docker(read: &Tar, entries: &[DockerEntry], arch: Option<Arch>) -> Result<Vec<String>, Refused> {
    let by_path = |path: &str| {
        let path = clean(path);
        let target = read.symlinks.get(&path).cloned().unwrap_or(path);
        read.by_path.get(&target).cloned()
    };
    let mut names = Vec::new();
    for entry in entries {
        let config = by_path(&entry.config).ok_or_else(|| {
            refused(
                format!("image config \"{}\" not found", entry.config),
                "manifest.json names a config the archive does not hold",
            )
        })?;
        let mut layers = Vec::new();
        for layer in &entry.layers {
            let digest = by_path(layer).ok_or_else(|| {
                refused(
                    format!("failed to resolve layers: layer \"{layer}\" not found"),
                    "manifest.json names a layer the archive does not hold",
                )
            })?;
            // A file named after a digest that holds other bytes is a corrupt copy.
            if let Some(hex) = clean(layer).strip_prefix("blobs/sha256/")
                && hex != digest.hex()
            {
                return Err(refused(
                    format!("unpacking: wrong diff id calculated on extraction of {layer}"),
                    format!("{layer} holds other bytes, {digest}"),
                ));
            }
            layers.push(digest);
        }
        let config: Config = parse(read, "the config", &config)?;
        let tags = entry.repo_tags.clone().unwrap_or_default();
        for tag in &tags {
            let name = Reference::parse(tag)
                .map_err(|e| refused(format!("failed to normalize {tag:?}"), e.to_string()))?
                .to_string();
            check_unpack(
                read,
                &name,
                &config,
                &layers.iter().collect::<Vec<_>>(),
                arch,
            )?;
            names.push(name);
        }
    }
    if names.is_empty() {
        return Err(nameless(
            "manifest.json gives no image a RepoTags entry, so nodes find nothing under any name",
        ));
    }
    Ok(names)
}

#[cfg(test)]
#[path = "containerd_tests.rs"]
mod tests;
