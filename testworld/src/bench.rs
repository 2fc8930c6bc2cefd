//! A big generated image set for `make bench`: many multi-arch images with a base layer shared by
//! all and large own layers, streamed into the registry without holding a layer in memory.
//!
//! Layers are real gzip tars with their `diff_ids` right, so skopeo can decompress them for
//! `docker-archive:` and containerd could unpack them. Their content is either
//! - [`Content::Binary`]: a word salad that gzip compresses about as well as real image layers
//!   (Go and ELF binaries: `/usr/lib` compresses 2.65× with `gzip -1`, 2.93× with `gzip -6`;
//!   this gives ~2.8×). Sizes are *compressed* sizes, as the registry stores them; or
//! - [`Content::Noise`]: incompressible noise in stored deflate blocks, for the big-layer memory
//!   check, where only the size matters and generating gigabytes must be quick.

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

/// What a generated layer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// Compresses like real binaries (~2.8×).
    Binary,
    /// Does not compress at all.
    Noise,
}

/// The word salad behind [`Content::Binary`]: words of 3–16 random bytes from a fixed
/// vocabulary, picked at random, with a few random literals between them.
struct Salad {
    vocabulary: Vec<Vec<u8>>,
    state: u64,
    carry: Vec<u8>,
}

impl Salad {
    const WORDS: usize = 1024;
    /// Percent of picks that are 4 random bytes instead of a word.
    const LITERALS: u64 = 3;

    fn new(seed: u64) -> Self {
        let mut state = 0x5EED_u64;
        let vocabulary = (0..Self::WORDS)
            .map(|_| {
                let len = 3 + (xorshift(&mut state) % 14) as usize;
                (0..len).map(|_| xorshift(&mut state) as u8).collect()
            })
            .collect();
        Self {
            vocabulary,
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            carry: Vec::new(),
        }
    }

    /// Fills `buf` with the next bytes of the salad.
    fn fill(&mut self, buf: &mut [u8]) {
        let mut at = self.carry.len().min(buf.len());
        buf[..at].copy_from_slice(&self.carry[..at]);
        self.carry.drain(..at);
        while at < buf.len() {
            let pick = xorshift(&mut self.state);
            let word = match pick % 100 < Self::LITERALS {
                true => &pick.to_le_bytes()[..4],
                false => &self.vocabulary[(pick >> 32) as usize % Self::WORDS][..],
            };
            let n = word.len().min(buf.len() - at);
            buf[at..at + n].copy_from_slice(&word[..n]);
            self.carry.extend_from_slice(&word[n..]);
            at += n;
        }
    }
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// How many content bytes make a [`Content::Binary`] layer of about `compressed` bytes: the
/// ratio is measured once on a sample compressed the way layers are.
fn binary_size_for(compressed: u64) -> u64 {
    static RATIO: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    let ratio = *RATIO.get_or_init(|| {
        let mut sample = vec![0u8; 8 << 20];
        Salad::new(1).fill(&mut sample);
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(&sample).expect("writing to memory");
        sample.len() as f64 / gz.finish().expect("writing to memory").len() as f64
    });
    (compressed as f64 * ratio) as u64
}

/// Streams a gzip tar holding one file of `content` from `seed` into `repo`: `size` bytes of
/// noise, or about `size` bytes once compressed of binary-like data.
pub fn push_layer(
    addr: &str,
    repo: &str,
    seed: u64,
    size: u64,
    content: Content,
) -> io::Result<PushedLayer> {
    let (size, level) = match content {
        Content::Noise => (size, Compression::none()),
        Content::Binary => (binary_size_for(size), Compression::fast()),
    };
    let mut salad = Salad::new(seed);
    let mut diff_id = String::new();
    let (digest, compressed) = crate::images::push_blob_streamed(addr, repo, &mut |out| {
        let gz = GzEncoder::new(out, level);
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
            match content {
                Content::Noise => state = fill_noise(state, &mut buf[..n]),
                Content::Binary => salad.fill(&mut buf[..n]),
            }
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

/// Pushes an image with `layers` for `arch` into `repo`; returns the manifest's descriptor and
/// the config's digest.
fn push_platform(
    addr: &str,
    repo: &str,
    arch: &str,
    layers: &[&PushedLayer],
) -> io::Result<(serde_json::Value, String)> {
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
    let desc = json!({
        "mediaType": OCI_MANIFEST, "digest": digest, "size": manifest.len(),
        "platform": {"architecture": arch, "os": "linux"},
    });
    Ok((desc, config_digest))
}

/// What [`push_set`] pushed.
#[derive(Debug, Default)]
pub struct BenchSet {
    /// `bench/img-NN:v1`, without the registry host.
    pub refs: Vec<String>,
    /// Every config and layer blob once: arch, a repository holding it, digest.
    pub blobs: Vec<(&'static str, String, String)>,
}

/// Pushes `images` multi-arch images `bench/img-NN:v1`, each with a base layer of `base_mb` MiB
/// shared by all and two own layers of `own_mb` MiB, per arch, all of `content`. Returns their
/// references without the registry host, and every config and layer blob once, per arch. The
/// two arches are generated on two threads.
pub fn push_set(
    addr: &str,
    images: usize,
    base_mb: u64,
    own_mb: u64,
    content: Content,
) -> io::Result<BenchSet> {
    const ARCHES: [&str; 2] = ["amd64", "arm64"];
    let first = "bench/img-01";
    let bases = std::thread::scope(|s| {
        let arm = s.spawn(|| push_layer(addr, first, 1001, base_mb << 20, content));
        let amd = push_layer(addr, first, 1000, base_mb << 20, content);
        Ok::<_, io::Error>([amd?, arm.join().expect("generator thread")?])
    })?;
    let mut set = BenchSet::default();
    for (i, arch) in ARCHES.into_iter().enumerate() {
        set.blobs
            .push((arch, first.to_owned(), bases[i].digest.clone()));
    }
    for n in 1..=images {
        let repo = format!("bench/img-{n:02}");
        let own = |i: usize| -> io::Result<[PushedLayer; 2]> {
            let seed = (n * 10 + i * 2) as u64;
            let a = push_layer(addr, &repo, seed, own_mb << 20, content)?;
            let b = push_layer(addr, &repo, seed + 1, own_mb << 20, content)?;
            Ok([a, b])
        };
        let layers = std::thread::scope(|s| {
            let arm = s.spawn(|| own(1));
            let amd = own(0);
            Ok::<_, io::Error>([amd?, arm.join().expect("generator thread")?])
        })?;
        let mut entries = Vec::new();
        for (i, arch) in ARCHES.into_iter().enumerate() {
            let base = &bases[i];
            if repo != first {
                mount(addr, &repo, first, &base.digest)?;
            }
            let [a, b] = &layers[i];
            let (desc, config) = push_platform(addr, &repo, arch, &[base, a, b])?;
            entries.push(desc);
            for digest in [config, a.digest.clone(), b.digest.clone()] {
                set.blobs.push((arch, repo.clone(), digest));
            }
        }
        let index = serde_json::to_vec(&json!({
            "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries,
        }))
        .unwrap();
        push_manifest(addr, &repo, "v1", OCI_INDEX, &index)?;
        set.refs.push(format!("{repo}:v1"));
    }
    Ok(set)
}

/// Pushes `bench/big:v1`, amd64 only, one layer of `mb` MiB; returns its reference.
pub fn push_big(addr: &str, mb: u64) -> io::Result<String> {
    let repo = "bench/big";
    let layer = push_layer(addr, repo, 4242, mb << 20, Content::Noise)?;
    let (desc, _) = push_platform(addr, repo, "amd64", &[&layer])?;
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [desc],
    }))
    .unwrap();
    push_manifest(addr, repo, "v1", OCI_INDEX, &index)?;
    Ok(format!("{repo}:v1"))
}
