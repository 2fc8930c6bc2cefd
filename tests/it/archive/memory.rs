//! Streaming: writing an archive must not hold a blob in memory. The measurement runs in a fresh
//! process of this test binary (the test re-runs itself with a filter), so no other test of the
//! one integration binary moves the peak resident size it reads.

use std::io::{self, Read};

use cks_iso::archive;
use cks_iso::image::{
    Arch, BlobSource, Descriptor, Digest, Hashing, Image, MediaType, Platform, RawManifest,
    Reference,
};

const LAYER_SIZE: u64 = 64 * 1024 * 1024;

/// A 64 MiB layer generated on the fly, and a tiny config.
struct Generated {
    config: Vec<u8>,
}

fn layer() -> impl Read + Send {
    io::repeat(0x5a).take(LAYER_SIZE)
}

impl BlobSource for Generated {
    fn open(&self, digest: &Digest) -> io::Result<Box<dyn Read + Send + '_>> {
        match *digest == Digest::of(&self.config) {
            true => Ok(Box::new(&self.config[..])),
            false => Ok(Box::new(layer())),
        }
    }
}

/// Peak resident set size of this process, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn raw(bytes: &[u8]) -> RawManifest {
    RawManifest {
        media_type: MediaType::OciManifest,
        digest: Digest::of(bytes),
        bytes: bytes.to_vec(),
    }
}

/// Set in the child process that does the measured work.
const CHILD: &str = "CKS_ISO_TEST_ARCHIVE_MEMORY_CHILD";

#[test]
fn archive_memory_does_not_grow_with_blob_size() {
    if std::env::var_os(CHILD).is_some() {
        return measure();
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "archive::memory::archive_memory_does_not_grow_with_blob_size",
        ])
        .args(["--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the measuring child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The measured work, alone in its process.
fn measure() {
    let mut hashing = Hashing::new(layer());
    io::copy(&mut hashing, &mut io::sink()).unwrap();
    let layer = Descriptor::new(
        "application/vnd.oci.image.layer.v1.tar",
        hashing.digest(),
        LAYER_SIZE,
    );
    let source = Generated {
        config: br#"{"architecture":"amd64","os":"linux"}"#.to_vec(),
    };
    let config = Descriptor::new(
        "application/vnd.oci.image.config.v1+json",
        Digest::of(&source.config),
        source.config.len() as u64,
    );
    let manifest = raw(br#"{"schemaVersion":2}"#);
    let image = Image {
        reference: Reference::parse("example.org/big:1").unwrap(),
        top: manifest.clone(),
        manifest,
        platform: Platform {
            architecture: Arch::Amd64.to_string(),
            os: "linux".into(),
            variant: None,
        },
        config,
        layers: vec![layer],
    };
    let out = tempfile::tempdir().unwrap();
    let before = peak_rss_kib();
    let written = archive::write(&image, &source, &out.path().join("big:1.tar"), 0).unwrap();
    let grown = peak_rss_kib().saturating_sub(before);
    assert!(written.size > LAYER_SIZE);
    assert!(
        grown < 16 * 1024,
        "peak RSS grew by {grown} KiB writing a {LAYER_SIZE}-byte layer"
    );
}
