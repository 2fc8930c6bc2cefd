//! How cosign stores a legacy image signature in a registry: the `.sig` tag of the signed
//! digest, and the OCI manifest whose simple-signing layers carry the payloads (cosign's
//! signature spec), for [`crate::sigstore::Sigstore::sign`]'s layers.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::sigstore::{SIMPLE_SIGNING, SignedLayer};

fn sha256(bytes: &[u8]) -> Vec<u8> {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).to_vec()
}

/// The `.sig` manifest holding `layers`, and the blobs it names (config and payloads), by digest.
pub fn signature_manifest(layers: &[SignedLayer]) -> (Vec<u8>, BTreeMap<String, Vec<u8>>) {
    let mut blobs = BTreeMap::new();
    let config = br#"{"architecture":"","config":{},"created":"0001-01-01T00:00:00Z","os":"","rootfs":{"type":"layers","diff_ids":[]}}"#.to_vec();
    let config_digest = format!("sha256:{}", crate::http::hex(&sha256(&config)));
    let descriptors: Vec<Value> = layers
        .iter()
        .map(|l| {
            let digest = format!("sha256:{}", crate::http::hex(&sha256(&l.payload)));
            blobs.insert(digest.clone(), l.payload.clone());
            json!({
                "mediaType": SIMPLE_SIGNING,
                "size": l.payload.len(),
                "digest": digest,
                "annotations": l.annotations,
            })
        })
        .collect();
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "size": config.len(),
            "digest": config_digest,
        },
        "layers": descriptors,
    });
    blobs.insert(config_digest, config);
    (serde_json::to_vec(&manifest).expect("JSON"), blobs)
}

/// The `.sig` tag of `digest` (`sha256:<hex>`).
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replace(':', "-"))
}
