//! `cks-iso-image`: writes cks-iso's own container image, for CI jobs that want
//! `image: cks-iso` rather than a Rust toolchain (`make image`).
//!
//! Why a program of the workspace and not Docker or buildah: the image is written by the same
//! code that writes every image archive cks-iso puts on an ISO (`cks_iso_oci`): the blobs made
//! here are read back through [`Image::load`], which checks every digest and picks each platform
//! as a pull would, and [`archive::write_platforms`] writes the OCI archive. No daemon, no root.
//!
//! One multi-arch index (linux/amd64, linux/arm64/v8); per platform one layer holding the static
//! binary as `/usr/local/bin/cks-iso` (the entrypoint), the CA certificates given, `/etc/passwd`
//! and `/etc/group` with the non-root user `cks-iso` (65532) the image runs as, its home (the
//! working directory) and `/tmp`. Every date is `--epoch` (SOURCE_DATE_EPOCH), every owner
//! numeric, every map sorted, gzip without name or time: the same inputs give the same digests.
//!
//! Output: `OUT/cks-iso-VERSION.oci.tar` (an OCI archive: `skopeo inspect oci-archive:…`,
//! `ctr import`) and `OUT/cks-iso-VERSION.oci/` (the same as an OCI layout directory,
//! `skopeo inspect oci:…`); stdout gets the index digest.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use cks_iso_oci::archive;
use cks_iso_oci::image::{Arch, BlobSource, Descriptor, Digest, Image, MediaType, Reference};
use clap::Parser;
use serde_json::{Value, json};

const CONFIG_TYPE: &str = "application/vnd.oci.image.config.v1+json";
const LAYER_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
/// The non-root user the image runs as (distroless' `nonroot` number).
const UID: u64 = 65532;
const HOME: &str = "home/cks-iso";

#[derive(Parser)]
#[command(about = "Writes cks-iso's multi-arch container image (OCI layout and archive)")]
struct Args {
    /// The version the image is tagged and annotated with.
    #[arg(long)]
    version: String,
    /// Seconds since the epoch for every date (SOURCE_DATE_EPOCH).
    #[arg(long, env = "SOURCE_DATE_EPOCH")]
    epoch: u64,
    /// The static amd64 binary.
    #[arg(long)]
    amd64: PathBuf,
    /// The static arm64 binary.
    #[arg(long)]
    arm64: PathBuf,
    /// The PEM CA bundle to install as /etc/ssl/certs/ca-certificates.crt.
    #[arg(long)]
    ca_bundle: PathBuf,
    /// The image's name (containerd's, and the archive's tag).
    #[arg(long, default_value = "localhost/cks-iso")]
    name: String,
    /// The git commit it is built from (org.opencontainers.image.revision).
    #[arg(long)]
    revision: Option<String>,
    /// Where its source is published (org.opencontainers.image.source); none yet.
    #[arg(long)]
    source: Option<String>,
    /// The directory to write into.
    #[arg(long)]
    out: PathBuf,
}

/// The blobs written so far, by digest: what [`Image::load`] and the archive writer read.
#[derive(Default)]
struct Blobs(HashMap<Digest, Vec<u8>>);

impl Blobs {
    fn add(&mut self, media_type: &str, bytes: Vec<u8>) -> Descriptor {
        let digest = Digest::of(&bytes);
        let desc = Descriptor::new(media_type, digest.clone(), bytes.len() as u64);
        self.0.insert(digest, bytes);
        desc
    }
}

impl BlobSource for Blobs {
    fn open(&self, digest: &Digest) -> io::Result<Box<dyn Read + Send + '_>> {
        match self.0.get(digest) {
            Some(bytes) => Ok(Box::new(&bytes[..])),
            None => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{digest}: no such blob was written"),
            )),
        }
    }
}

fn main() -> Result<()> {
    let digest = write(&Args::parse())?;
    println!("{digest}");
    Ok(())
}

/// Writes the archive and the layout; returns the index digest.
fn write(args: &Args) -> Result<Digest> {
    let created = cks_iso_io::date::rfc3339(args.epoch as i64);
    let annotations = annotations(args, &created);
    let ca = read_ca_bundle(args)?;
    let mut blobs = Blobs::default();
    let mut entries = Vec::new();
    for (arch, binary) in [(Arch::Amd64, &args.amd64), (Arch::Arm64, &args.arm64)] {
        let image = Platform {
            arch,
            binary,
            ca: &ca,
            epoch: args.epoch,
            created: &created,
            annotations: &annotations,
        };
        entries.push(image.add_to(&mut blobs)?);
    }
    let index = json!({
        "schemaVersion": 2,
        "mediaType": MediaType::OciIndex.as_str(),
        "manifests": entries,
        "annotations": annotations.clone(),
    });
    let index = blobs.add(MediaType::OciIndex.as_str(), serde_json::to_vec(&index)?);

    // Read back as a pull would: every digest checked, each platform chosen from the index.
    let reference = Reference::parse(&format!("{}:{}", args.name, args.version))?;
    let images = [Arch::Amd64, Arch::Arm64]
        .into_iter()
        .map(|arch| Image::load(reference.clone(), &index.digest, arch, &blobs))
        .collect::<Result<Vec<_>, _>>()?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("{}: cannot create it", args.out.display()))?;
    let tar_path = args.out.join(format!("cks-iso-{}.oci.tar", args.version));
    archive::write_platforms(&images, &blobs, &tar_path, args.epoch)?;
    let dir = args.out.join(format!("cks-iso-{}.oci", args.version));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("{}: cannot remove the old layout", dir.display()))?;
    }
    let file = std::fs::File::open(&tar_path)?;
    tar::Archive::new(file)
        .unpack(&dir)
        .with_context(|| format!("{}: cannot unpack the layout", dir.display()))?;
    Ok(index.digest)
}

/// The OCI annotations of the image, its manifests and its index (also its configs' labels).
fn annotations(args: &Args, created: &str) -> serde_json::Map<String, Value> {
    let mut annotations = serde_json::Map::new();
    for (key, value) in [
        ("org.opencontainers.image.title", Some("cks-iso".to_owned())),
        (
            "org.opencontainers.image.description",
            Some("Builds the Apache CloudStack Kubernetes Service (CKS) binaries ISO".to_owned()),
        ),
        (
            "org.opencontainers.image.version",
            Some(args.version.clone()),
        ),
        (
            "org.opencontainers.image.licenses",
            Some("Apache-2.0".to_owned()),
        ),
        ("org.opencontainers.image.created", Some(created.to_owned())),
        ("org.opencontainers.image.revision", args.revision.clone()),
        ("org.opencontainers.image.source", args.source.clone()),
    ] {
        if let Some(value) = value {
            annotations.insert(key.to_owned(), Value::String(value));
        }
    }
    annotations
}

/// The CA bundle the image carries, refused when it does not start as a PEM one.
fn read_ca_bundle(args: &Args) -> Result<Vec<u8>> {
    let ca = std::fs::read(&args.ca_bundle)
        .with_context(|| format!("{}: cannot read the CA bundle", args.ca_bundle.display()))?;
    if !ca.starts_with(b"-----BEGIN CERTIFICATE-----") {
        bail!(
            "{}: expected a PEM CA bundle, found no certificate at its start\n\
             hint: Debian's ca-certificates installs /etc/ssl/certs/ca-certificates.crt",
            args.ca_bundle.display()
        );
    }
    Ok(ca)
}

/// One platform's image: the binary and CA bundle in one layer, its config and manifest.
struct Platform<'a> {
    arch: Arch,
    binary: &'a PathBuf,
    ca: &'a [u8],
    epoch: u64,
    created: &'a str,
    annotations: &'a serde_json::Map<String, Value>,
}

impl Platform<'_> {
    /// Adds the layer, config and manifest to `blobs`; the manifest's descriptor, with its
    /// platform, for the index.
    fn add_to(&self, blobs: &mut Blobs) -> Result<Descriptor> {
        let (arch, binary, created, annotations) =
            (self.arch, self.binary, self.created, self.annotations);
        let bin = std::fs::read(binary)
            .with_context(|| format!("{}: cannot read the {arch:?} binary", binary.display()))?;
        let tar = layer(&bin, self.ca, self.epoch)?;
        let diff_id = Digest::of(&tar);
        let layer = blobs.add(LAYER_TYPE, gzip(&tar)?);
        let mut platform = json!({"architecture": arch.as_str(), "os": "linux"});
        if arch == Arch::Arm64 {
            platform["variant"] = json!("v8");
        }
        let mut config = platform.clone();
        config["created"] = json!(created);
        config["config"] = json!({
            "User": format!("{UID}:{UID}"),
            "Entrypoint": ["/usr/local/bin/cks-iso"],
            "Cmd": ["--help"],
            "Env": [
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
                format!("HOME=/{HOME}"),
            ],
            "WorkingDir": format!("/{HOME}"),
            "Labels": annotations.clone(),
        });
        config["rootfs"] = json!({"type": "layers", "diff_ids": [diff_id.to_string()]});
        config["history"] =
            json!([{"created": created, "created_by": "cks-iso-image (make image)"}]);
        let config = blobs.add(CONFIG_TYPE, serde_json::to_vec(&config)?);
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": MediaType::OciManifest.as_str(),
            "config": config,
            "layers": [layer],
            "annotations": annotations.clone(),
        });
        let mut entry = blobs.add(
            MediaType::OciManifest.as_str(),
            serde_json::to_vec(&manifest)?,
        );
        entry.platform = Some(serde_json::from_value(platform)?);
        Ok(entry)
    }
}

/// The layer's tar: directories before their entries, numeric owners, one date.
fn layer(binary: &[u8], ca: &[u8], epoch: u64) -> Result<Vec<u8>> {
    let passwd = format!(
        "root:x:0:0:root:/root:/sbin/nologin\ncks-iso:x:{UID}:{UID}:cks-iso:/{HOME}:/sbin/nologin\n"
    );
    let group = format!("root:x:0:\ncks-iso:x:{UID}:\n");
    // (path, mode, owner, data: None for a directory)
    let entries: [(&str, u32, u64, Option<&[u8]>); 13] = [
        ("etc/", 0o755, 0, None),
        ("etc/group", 0o644, 0, Some(group.as_bytes())),
        ("etc/passwd", 0o644, 0, Some(passwd.as_bytes())),
        ("etc/ssl/", 0o755, 0, None),
        ("etc/ssl/certs/", 0o755, 0, None),
        ("etc/ssl/certs/ca-certificates.crt", 0o644, 0, Some(ca)),
        ("home/", 0o755, 0, None),
        ("home/cks-iso/", 0o755, UID, None),
        ("tmp/", 0o1777, 0, None),
        ("usr/", 0o755, 0, None),
        ("usr/local/", 0o755, 0, None),
        ("usr/local/bin/", 0o755, 0, None),
        ("usr/local/bin/cks-iso", 0o755, 0, Some(binary)),
    ];
    let mut tar = tar::Builder::new(Vec::new());
    for (path, mode, owner, data) in entries {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(match data {
            Some(_) => tar::EntryType::Regular,
            None => tar::EntryType::Directory,
        });
        header.set_mode(mode);
        header.set_uid(owner);
        header.set_gid(owner);
        header.set_mtime(epoch);
        header.set_size(data.map_or(0, |d| d.len() as u64));
        tar.append_data(&mut header, path, data.unwrap_or_default())?;
    }
    Ok(tar.into_inner()?)
}

/// gzip without a file name or date in its header: the same tar gives the same bytes.
fn gzip(data: &[u8]) -> Result<Vec<u8>> {
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    gz.write_all(data)?;
    Ok(gz.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cks_iso_io::date::rfc3339;

    fn args(dir: &std::path::Path, out: &str) -> Args {
        std::fs::write(dir.join("amd64"), b"\x7fELF amd64 stand-in").unwrap();
        std::fs::write(dir.join("arm64"), b"\x7fELF arm64 stand-in").unwrap();
        std::fs::write(dir.join("ca.pem"), b"-----BEGIN CERTIFICATE-----\nMA==\n").unwrap();
        Args {
            version: "1.2.3".into(),
            epoch: 1_700_000_000,
            amd64: dir.join("amd64"),
            arm64: dir.join("arm64"),
            ca_bundle: dir.join("ca.pem"),
            name: "localhost/cks-iso".into(),
            revision: Some("abc".into()),
            source: None,
            out: dir.join(out),
        }
    }

    /// Both platforms, each with its own binary at the entrypoint, run as the non-root user; the
    /// layout and the archive agree; a second run writes the same bytes.
    #[test]
    fn two_platforms_reproducible_and_read_back_by_the_archive_reader() {
        let dir = tempfile::tempdir().unwrap();
        let first = write(&args(dir.path(), "a")).unwrap();
        let again = write(&args(dir.path(), "b")).unwrap();
        assert_eq!(first, again);
        let tar = |out: &str| std::fs::read(dir.path().join(out).join("cks-iso-1.2.3.oci.tar"));
        assert_eq!(tar("a").unwrap(), tar("b").unwrap());

        let layout = dir.path().join("a/cks-iso-1.2.3.oci");
        let index: Value =
            serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
        assert_eq!(index["manifests"][0]["digest"], json!(first.to_string()));
        let blob = |digest: &str| -> Value {
            let path = layout
                .join("blobs/sha256")
                .join(digest.trim_start_matches("sha256:"));
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
        };
        let top = blob(&first.to_string());
        let platforms: Vec<String> = top["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["platform"].to_string())
            .collect();
        assert_eq!(
            platforms,
            [
                r#"{"architecture":"amd64","os":"linux"}"#,
                r#"{"architecture":"arm64","os":"linux","variant":"v8"}"#
            ]
        );
        for (i, arch) in ["amd64", "arm64"].into_iter().enumerate() {
            let manifest = blob(top["manifests"][i]["digest"].as_str().unwrap());
            let config = blob(manifest["config"]["digest"].as_str().unwrap());
            assert_eq!(config["architecture"], json!(arch));
            assert_eq!(config["config"]["User"], json!("65532:65532"));
            assert_eq!(config["created"], json!("2023-11-14T22:13:20Z"));
            let labels = &config["config"]["Labels"];
            assert_eq!(labels["org.opencontainers.image.version"], json!("1.2.3"));
            let layer = manifest["layers"][0]["digest"].as_str().unwrap();
            let gz = std::fs::read(layout.join("blobs/sha256").join(&layer[7..])).unwrap();
            let mut layer = tar::Archive::new(flate2::read::GzDecoder::new(&gz[..]));
            let mut found = Vec::new();
            for entry in layer.entries().unwrap() {
                let mut entry = entry.unwrap();
                let path = entry.path().unwrap().display().to_string();
                let mut data = Vec::new();
                entry.read_to_end(&mut data).unwrap();
                if path == "usr/local/bin/cks-iso" {
                    assert_eq!(data, format!("\x7fELF {arch} stand-in").as_bytes());
                    assert_eq!(entry.header().mode().unwrap(), 0o755);
                }
                assert_eq!(entry.header().mtime().unwrap(), 1_700_000_000);
                found.push(path);
            }
            assert!(found.contains(&"etc/passwd".to_owned()), "{found:?}");
        }
    }

    #[test]
    fn a_ca_file_that_is_not_pem_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let args = args(dir.path(), "a");
        std::fs::write(&args.ca_bundle, b"not a certificate").unwrap();
        let err = write(&args).unwrap_err().to_string();
        assert!(err.contains("ca.pem: expected a PEM CA bundle"), "{err}");
        assert!(err.contains("hint:"), "{err}");
    }

    #[test]
    fn dates_are_utc_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // `date -u -d @1709210096 +%FT%TZ`: a leap day.
        assert_eq!(rfc3339(1_709_210_096), "2024-02-29T12:34:56Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
