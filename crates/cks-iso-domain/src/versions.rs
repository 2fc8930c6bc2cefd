//! `versions.txt`: what an ISO holds, written at its root and parsed back by `cks-iso verify`.
//!
//! Format (contract §6), one record a line, `#` starts a comment, stable order:
//!
//! ```text
//! kubernetes v1.33.1
//! arch amd64
//! cni-plugins v1.6.2
//! crictl v1.33.0
//! etcd v3.5.21                      (only when etcd was requested)
//! autoscaler 1.33.6
//! ccm v1.2.0
//! csi-driver v3.0.0                 (only when the CSI manifests are bundled)
//! cloudstack 4.23                   (only when built for one CloudStack release)
//! file <path> sha256:<hex> <source URL or builtin:…>
//! image <full name> sha256:<hex> docker/<archive>.tar
//! ```
//!
//! Fields are separated by blanks and `#` starts a comment, so a file's source (a local path with
//! a space, a URL with a `#` fragment) is written with those bytes percent-encoded: space `%20`,
//! `#` `%23`, `%` `%25`, and control characters `%XX`. Reading decodes exactly those escapes and
//! leaves any other `%XX` as written, so files written before the escaping (whose sources never
//! held a space or `#`) read the same.
//!
//! It is not a `.yaml` file, so node scripts that copy `*.yaml` from the ISO ignore it, and it is
//! never in `docker/`, where every file is imported as an image.

use std::fmt::Write as _;

use cks_iso_oci::image::Arch;

use crate::lock::{Lock, LockError};
use crate::staged::Staged;

/// One downloaded or generated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// Path in the ISO, e.g. `k8s/kubeadm`.
    pub path: String,
    /// Lowercase hex sha256 of the content.
    pub sha256: String,
    /// Where it came from: the upstream URL (not the mirror) or `builtin:<what>`.
    pub source: String,
}

/// One bundled image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRecord {
    /// Fully qualified name, e.g. `registry.k8s.io/pause:3.10`.
    pub name: String,
    /// The digest the reference resolved to (`sha256:<hex>`).
    pub digest: String,
    /// Path of its archive in the ISO, e.g. `docker/pause:3.10.tar`.
    pub archive: String,
}

/// Everything `versions.txt` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Versions {
    /// `v1.33.1`.
    pub kubernetes: String,
    /// `amd64` or `arm64`.
    pub arch: String,
    /// `v1.6.2`.
    pub cni_plugins: String,
    /// `v1.33.0`.
    pub crictl: String,
    /// `v3.5.21`, when etcd was requested.
    pub etcd: Option<String>,
    /// `1.33.6` (no `v`, as the release tag names it).
    pub autoscaler: String,
    /// `v1.2.0`.
    pub ccm: String,
    /// `v3.0.0`, when the CSI manifests are bundled.
    pub csi_driver: Option<String>,
    /// The CloudStack release the ISO was built for (`4.23`), when one was given or implied.
    pub cloudstack: Option<String>,
    /// Files, in ISO path order.
    pub files: Vec<FileRecord>,
    /// Images, in name order.
    pub images: Vec<ImageRecord>,
}

/// A line of `versions.txt` that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("versions.txt line {line}: {reason}")]
pub struct VersionsError {
    /// 1-based line number (0 for the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// `versions.txt` of linux/`arch`'s ISO: the records of [`Versions::of`], then as comments (which
/// every reader, older `verify` too, skips) the manifest edits, the add-on images told apart from
/// the core ones (their `image` lines stay alike, so every reader counts one line per archive),
/// and the signature summary.
pub fn render_for(lock: &Lock, arch: Arch, staged: &Staged) -> Result<String, LockError> {
    let mut text = Versions::of(lock, arch, staged)?.render();
    for (path, edit) in &staged.edits {
        let _ = writeln!(text, "# edit {path}: {edit}");
    }
    let mut extras: Vec<_> = (lock.arch(arch)?.images.iter())
        .filter_map(|i| Some((&i.reference, i.extra_words()?)))
        .collect();
    extras.sort();
    for (reference, words) in extras {
        let _ = writeln!(text, "# extra {reference} {words}");
    }
    text.push_str(&staged.signatures.summary());
    Ok(text)
}

impl Versions {
    /// The records of linux/`arch`'s ISO: the lock's versions, the arch's downloads and the
    /// manifests and units (as edited), and each image under the archive it was staged as.
    pub fn of(lock: &Lock, arch: Arch, staged: &Staged) -> Result<Self, LockError> {
        let entry = lock.arch(arch)?;
        let r = &lock.request;
        let downloads = entry.files.iter().map(|f| FileRecord {
            path: f.path.clone(),
            sha256: f.sha256.clone(),
            source: f.url.clone(),
        });
        let manifests = lock.manifests.iter().map(|m| FileRecord {
            path: m.path.clone(),
            sha256: m.sha256.clone(),
            source: m.source.clone(),
        });
        let images = entry.images.iter().map(|i| ImageRecord {
            name: i.reference.clone(),
            digest: i.digest.clone(),
            archive: staged.archive(&i.reference),
        });
        Ok(Self {
            kubernetes: format!("v{}", r.kubernetes),
            arch: arch.k8s().to_owned(),
            cni_plugins: format!("v{}", r.cni),
            crictl: format!("v{}", r.crictl),
            etcd: r.etcd.as_ref().map(|e| format!("v{e}")),
            autoscaler: r.autoscaler.clone(),
            ccm: r.ccm.clone(),
            csi_driver: r.csi.clone(),
            cloudstack: r.cloudstack.clone(),
            files: downloads.chain(manifests).collect(),
            images: images.collect(),
        })
    }

    /// The file's text, deterministic for the same content.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# CKS binaries ISO contents, written by cks-iso {}",
            env!("CARGO_PKG_VERSION")
        );
        // A record without a value would not read back: one that was absent stays absent.
        let mut kv = |k: &str, v: &str| {
            if !v.is_empty() {
                let _ = writeln!(out, "{k} {v}");
            }
        };
        kv("kubernetes", &self.kubernetes);
        kv("arch", &self.arch);
        kv("cni-plugins", &self.cni_plugins);
        kv("crictl", &self.crictl);
        if let Some(etcd) = &self.etcd {
            kv("etcd", etcd);
        }
        kv("autoscaler", &self.autoscaler);
        kv("ccm", &self.ccm);
        if let Some(csi) = &self.csi_driver {
            kv("csi-driver", csi);
        }
        if let Some(cloudstack) = &self.cloudstack {
            kv("cloudstack", cloudstack);
        }
        let mut files = self.files.clone();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        for f in &files {
            let _ = writeln!(
                out,
                "file {} sha256:{} {}",
                f.path,
                f.sha256,
                escape(&f.source)
            );
        }
        let mut images = self.images.clone();
        images.sort_by(|a, b| a.name.cmp(&b.name));
        for i in &images {
            let _ = writeln!(out, "image {} {} {}", i.name, i.digest, i.archive);
        }
        out
    }

    /// Reads the text back, refusing unknown or malformed records.
    pub fn parse(text: &str) -> Result<Self, VersionsError> {
        let mut v = Versions::default();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            let bad = |reason: &str| VersionsError {
                line,
                reason: format!("{reason}: {raw:?}"),
            };
            let fields: Vec<&str> = content.split_whitespace().collect();
            let one = |fields: &[&str]| match fields {
                [_, value] => Ok(value.to_string()),
                _ => Err(bad("expected `<key> <value>`")),
            };
            match fields[0] {
                "kubernetes" => v.kubernetes = one(&fields)?,
                "arch" => v.arch = one(&fields)?,
                "cni-plugins" => v.cni_plugins = one(&fields)?,
                "crictl" => v.crictl = one(&fields)?,
                "etcd" => v.etcd = Some(one(&fields)?),
                "autoscaler" => v.autoscaler = one(&fields)?,
                "ccm" => v.ccm = one(&fields)?,
                "csi-driver" => v.csi_driver = Some(one(&fields)?),
                "cloudstack" => v.cloudstack = Some(one(&fields)?),
                "file" => match fields[..] {
                    [_, path, digest, source] => v.files.push(FileRecord {
                        path: path.to_owned(),
                        sha256: hex_of(digest).ok_or_else(|| bad("expected sha256:<64 hex>"))?,
                        source: unescape(source),
                    }),
                    // An empty source renders as nothing after the hash.
                    [_, path, digest] => v.files.push(FileRecord {
                        path: path.to_owned(),
                        sha256: hex_of(digest).ok_or_else(|| bad("expected sha256:<64 hex>"))?,
                        source: String::new(),
                    }),
                    _ => return Err(bad("expected `file <path> sha256:<hex> <source>`")),
                },
                "image" => match fields[..] {
                    [_, name, digest, archive] => {
                        hex_of(digest).ok_or_else(|| bad("expected sha256:<64 hex>"))?;
                        v.images.push(ImageRecord {
                            name: name.to_owned(),
                            digest: digest.to_owned(),
                            archive: archive.to_owned(),
                        })
                    }
                    _ => return Err(bad("expected `image <name> sha256:<hex> <archive>`")),
                },
                _ => return Err(bad("unknown record")),
            }
        }
        for (key, value) in [("kubernetes", &v.kubernetes), ("arch", &v.arch)] {
            if value.is_empty() {
                return Err(VersionsError {
                    line: 0,
                    reason: format!("no `{key}` record"),
                });
            }
        }
        Ok(v)
    }
}

/// Bytes a field cannot hold as they are: blanks and control characters end it, `#` starts a
/// comment, `%` starts an escape.
fn needs_escape(b: u8) -> bool {
    b <= b' ' || b == b'#' || b == b'%' || b == 0x7f
}

/// Percent-encodes the bytes [`needs_escape`] names.
fn escape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    for c in field.chars() {
        match u8::try_from(c).ok().filter(|&b| needs_escape(b)) {
            Some(b) => {
                let _ = write!(out, "%{b:02X}");
            }
            None => out.push(c),
        }
    }
    out
}

/// Decodes the escapes [`escape`] writes; any other `%` is kept as written.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = (bytes[i] == b'%')
            .then(|| field.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            .filter(|&b| needs_escape(b));
        match decoded {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("only ASCII bytes were decoded")
}

fn hex_of(digest: &str) -> Option<String> {
    cks_iso_oci::image::Digest::parse(digest)
        .ok()
        .map(|d| d.hex().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Versions {
        Versions {
            kubernetes: "v1.33.1".into(),
            arch: "arm64".into(),
            cni_plugins: "v1.6.2".into(),
            crictl: "v1.33.0".into(),
            etcd: Some("v3.5.21".into()),
            autoscaler: "1.33.6".into(),
            ccm: "v1.2.0".into(),
            csi_driver: Some("v3.0.0".into()),
            cloudstack: None,
            files: vec![
                FileRecord {
                    path: "k8s/kubelet".into(),
                    sha256: "b".repeat(64),
                    source: "https://dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubelet".into(),
                },
                FileRecord {
                    path: "k8s/kubeadm".into(),
                    sha256: "a".repeat(64),
                    source: "https://dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubeadm".into(),
                },
            ],
            images: vec![ImageRecord {
                name: "registry.k8s.io/pause:3.10".into(),
                digest: format!("sha256:{}", "c".repeat(64)),
                archive: "docker/pause:3.10.tar".into(),
            }],
        }
    }

    #[test]
    fn renders_the_contract_format_in_stable_order() {
        let text = sample().render();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines[..8],
            [
                "kubernetes v1.33.1",
                "arch arm64",
                "cni-plugins v1.6.2",
                "crictl v1.33.0",
                "etcd v3.5.21",
                "autoscaler 1.33.6",
                "ccm v1.2.0",
                "csi-driver v3.0.0"
            ]
        );
        assert!(lines[8].starts_with("file k8s/kubeadm sha256:aaaa"));
        assert!(lines[10].starts_with("image registry.k8s.io/pause:3.10 sha256:cccc"));
    }

    #[test]
    fn a_record_absent_when_read_stays_absent_when_rendered() {
        // Found by `make fuzz` (versions_txt): `cni-plugins ` rendered for a missing value did
        // not parse back.
        let v = Versions::parse("kubernetes v1.33.1\narch amd64\n").unwrap();
        let text = v.render();
        assert!(!text.contains("cni-plugins"), "{text}");
        assert_eq!(Versions::parse(&text).unwrap(), v);
    }

    #[test]
    fn parses_back_what_it_renders() {
        let mut v = sample();
        let parsed = Versions::parse(&v.render()).unwrap();
        v.files.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(parsed, v);
        v.etcd = None;
        assert!(!v.render().contains("etcd"), "etcd only when requested");
    }

    #[test]
    fn sources_with_blanks_hash_or_percent_round_trip() {
        let mut v = sample();
        v.files = vec![
            FileRecord {
                path: "dashboard.yaml".into(),
                sha256: "d".repeat(64),
                source: "file:///home/me/CKS manifests/dash #2 100%.yaml".into(),
            },
            FileRecord {
                path: "network.yaml".into(),
                sha256: "e".repeat(64),
                source: "https://example.org/calico.yaml?ref=v3%2B1#L1".into(),
            },
        ];
        let text = v.render();
        assert!(
            text.contains("file:///home/me/CKS%20manifests/dash%20%232%20100%25.yaml\n"),
            "{text}"
        );
        assert!(text.contains("?ref=v3%252B1%23L1\n"), "{text}");
        assert_eq!(Versions::parse(&text).unwrap(), v);
    }

    #[test]
    fn files_written_before_the_escaping_read_the_same() {
        let old = format!(
            "kubernetes v1.33.1\narch amd64\nfile k8s/kubeadm sha256:{} https://x/a%2Bb%zz%\n",
            "a".repeat(64)
        );
        let v = Versions::parse(&old).unwrap();
        assert_eq!(v.files[0].source, "https://x/a%2Bb%zz%");
    }

    #[test]
    fn malformed_lines_are_named() {
        let err =
            Versions::parse("kubernetes v1\narch amd64\nfile k8s/kubeadm md5:00 x\n").unwrap_err();
        assert_eq!(err.line, 3);
        let err = Versions::parse("kubernetes v1\nflavour vanilla\n").unwrap_err();
        assert!(err.to_string().contains("unknown record"));
        assert!(
            Versions::parse("arch amd64\n")
                .unwrap_err()
                .to_string()
                .contains("kubernetes")
        );
    }
}
