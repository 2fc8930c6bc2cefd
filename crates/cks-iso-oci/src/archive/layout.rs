//! The three small JSON files of an archive: `oci-layout`, `index.json` and `manifest.json`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::image::{Digest, Image, MediaType};

/// containerd's annotation for the full image name; `ctr import` names the image after it.
pub const IMAGE_NAME: &str = "io.containerd.image.name";
/// The OCI annotation for the reference's name within the repository.
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// The path of a blob inside the archive.
pub fn blob_path(digest: &Digest) -> String {
    format!("blobs/sha256/{}", digest.hex())
}

/// `{"imageLayoutVersion":"1.0.0"}`
pub fn oci_layout() -> Vec<u8> {
    br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec()
}

/// One descriptor: the digest the reference resolved to, annotated with the full name and the
/// reference's object (`tag`, `tag@sha256:…` or `@sha256:…`) as `ctr images export` writes them.
pub fn index_json(image: &Image) -> Vec<u8> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Index {
        schema_version: u32,
        media_type: MediaType,
        manifests: [crate::image::Descriptor; 1],
    }
    let mut top = image.top.descriptor();
    top.annotations = BTreeMap::from([
        (IMAGE_NAME.to_owned(), image.reference.to_string()),
        (REF_NAME.to_owned(), image.reference.object()),
    ]);
    let index = Index {
        schema_version: 2,
        media_type: MediaType::OciIndex,
        manifests: [top],
    };
    serde_json::to_vec(&index).expect("plain structs serialise")
}

/// Docker's `manifest.json`: per image its config, `host/path:tag` when the reference has a tag
/// (on the first image only: `docker load` gives a tag to one image), and layers.
pub fn manifest_json(images: &[Image]) -> Vec<u8> {
    #[derive(Serialize)]
    #[serde(rename_all = "PascalCase")]
    struct Entry {
        config: String,
        repo_tags: Vec<String>,
        layers: Vec<String>,
    }
    let entries: Vec<Entry> = images
        .iter()
        .enumerate()
        .map(|(i, image)| Entry {
            config: blob_path(&image.config.digest),
            repo_tags: match i {
                0 => image.reference.tagged().into_iter().collect(),
                _ => Vec::new(),
            },
            layers: image.layers.iter().map(|l| blob_path(&l.digest)).collect(),
        })
        .collect();
    serde_json::to_vec(&entries).expect("plain structs serialise")
}
