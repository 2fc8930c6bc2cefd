//! A big generated image set for `make bench`: many multi-arch images with a base layer shared by
//! all and large own layers, streamed into the registry without holding a layer in memory.
//!
//! Layers are real gzip tars (stored deflate blocks around incompressible noise, so generating
//! a gigabyte takes seconds), their `diff_ids` right, so skopeo can decompress them for
//! `docker-archive:` and containerd could unpack them.

use std::collections::BTreeMap;
use std::io::{self, Write};

use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::json;
use sha2::Digest as _;

use crate::http::{self, request};
use crate::images::{OCI_INDEX, OCI_MANIFEST, fill_noise, push_manifest};

const LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
const CONFIG: &str = "application/vnd.oci.image.config.v1+json";

/// A pushed layer.
#[derive(Debug, Clone)]
pub struct PushedLayer {
    /// Compressed digest.
    pub digest: String,
    /// Compressed size.
    pub size: u64,
    /// Uncompressed digest.
    pub diff_id: String,
}

/// Hashes what passes through into `inner`.
struct HashWriter<W> {
    inner: W,
    hasher: sha2::Sha256,
}

impl<W: Write> Write for HashWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Streams a gzip tar holding one file of `size` noise bytes from `seed` into `repo`.
pub fn push_noise_layer(addr: &str, repo: &str, seed: u64, size: u64) -> io::Result<PushedLayer> {
    let mut diff_id = String::new();
    let (digest, compressed) = crate::images::push_blob_streamed(addr, repo, &mut |out| {
        let gz = GzEncoder::new(out, Compression::none());
        let mut tar = HashWriter {
            inner: gz,
            hasher: sha2::Sha256::new(),
        };
        let mut header = tar::Header::new_ustar();
        header.set_path(format!("data/blob-{seed}.bin"))?;
        header.set_size(size);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        tar.write_all(header.as_bytes())?;
        let mut buf = vec![0u8; 1 << 20];
        let mut state = seed;
        let mut left = size;
        while left > 0 {
            let n = left.min(buf.len() as u64) as usize;
            state = fill_noise(state, &mut buf[..n]);
            tar.write_all(&buf[..n])?;
            left -= n as u64;
        }
        let pad = (512 - (size % 512) as usize) % 512;
        tar.write_all(&vec![0; pad + 1024])?;
        diff_id = format!("sha256:{}", http::hex(&tar.hasher.clone().finalize()));
        tar.inner.finish()?;
        Ok(())
    })?;
    Ok(PushedLayer {
        digest,
        size: compressed,
        diff_id,
    })
}

/// Makes `layer` (already in `from`) available in `repo` by cross-repository mount.
pub fn mount(addr: &str, repo: &str, from: &str, digest: &str) -> io::Result<()> {
    let reply = request(
        addr,
        "POST",
        &format!("/v2/{repo}/blobs/uploads/?mount={digest}&from={from}"),
        &[],
        &[],
    )?;
    match reply.status {
        201 => Ok(()),
        s => Err(io::Error::other(format!(
            "mount {digest} into {repo}: HTTP {s}"
        ))),
    }
}

fn push_small(addr: &str, repo: &str, bytes: &[u8]) -> io::Result<String> {
    let digest = http::sha256(bytes);
    crate::images::push_blob(addr, repo, &digest, bytes)?;
    Ok(digest)
}

/// Pushes an image with `layers` for `arch` into `repo`; returns the manifest's descriptor.
fn push_platform(
    addr: &str,
    repo: &str,
    arch: &str,
    layers: &[&PushedLayer],
) -> io::Result<serde_json::Value> {
    let config = serde_json::to_vec(&json!({
        "architecture": arch, "os": "linux", "config": {},
        "rootfs": {"type": "layers", "diff_ids": layers.iter().map(|l| &l.diff_id).collect::<Vec<_>>()},
    }))
    .unwrap();
    let config_digest = push_small(addr, repo, &config)?;
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": CONFIG, "digest": config_digest, "size": config.len()},
        "layers": layers.iter().map(|l| json!({"mediaType": LAYER, "digest": l.digest, "size": l.size})).collect::<Vec<_>>(),
    }))
    .unwrap();
    let digest = http::sha256(&manifest);
    push_manifest(addr, repo, &digest, OCI_MANIFEST, &manifest)?;
    Ok(json!({
        "mediaType": OCI_MANIFEST, "digest": digest, "size": manifest.len(),
        "platform": {"architecture": arch, "os": "linux"},
    }))
}

/// Pushes `images` multi-arch images `bench/img-NN:v1`, each with a base layer of `base_mb` MiB
/// shared by all and two own layers of `own_mb` MiB, per arch. Returns their references
/// without the registry host.
pub fn push_set(addr: &str, images: usize, base_mb: u64, own_mb: u64) -> io::Result<Vec<String>> {
    let mut bases = BTreeMap::new();
    let first = "bench/img-01";
    for (i, arch) in ["amd64", "arm64"].into_iter().enumerate() {
        bases.insert(
            arch,
            push_noise_layer(addr, first, 1000 + i as u64, base_mb << 20)?,
        );
    }
    let mut refs = Vec::new();
    for n in 1..=images {
        let repo = format!("bench/img-{n:02}");
        let mut entries = Vec::new();
        for (i, arch) in ["amd64", "arm64"].into_iter().enumerate() {
            let base = &bases[arch];
            if repo != first {
                mount(addr, &repo, first, &base.digest)?;
            }
            let seed = (n * 10 + i * 2) as u64;
            let a = push_noise_layer(addr, &repo, seed, own_mb << 20)?;
            let b = push_noise_layer(addr, &repo, seed + 1, own_mb << 20)?;
            entries.push(push_platform(addr, &repo, arch, &[base, &a, &b])?);
        }
        let index = serde_json::to_vec(&json!({
            "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries,
        }))
        .unwrap();
        push_manifest(addr, &repo, "v1", OCI_INDEX, &index)?;
        refs.push(format!("{repo}:v1"));
    }
    Ok(refs)
}

/// Pushes `bench/big:v1`, amd64 only, one layer of `mb` MiB; returns its reference.
pub fn push_big(addr: &str, mb: u64) -> io::Result<String> {
    let repo = "bench/big";
    let layer = push_noise_layer(addr, repo, 4242, mb << 20)?;
    let desc = push_platform(addr, repo, "amd64", &[&layer])?;
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [desc],
    }))
    .unwrap();
    push_manifest(addr, repo, "v1", OCI_INDEX, &index)?;
    Ok(format!("{repo}:v1"))
}
