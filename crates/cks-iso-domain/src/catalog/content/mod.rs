//! Checks that a downloaded file is the kind of file it should be, before it gets its name.
//!
//! A checksum proves the bytes are the ones published, not that the right thing was published or
//! asked for: an HTML error page served with `200`, a binary for the other architecture or a
//! truncated tarball can all arrive with a matching (or no) checksum. So binaries must be ELF for
//! the target architecture (`e_machine`), tarballs must list as gzip tars to the end, and manifests
//! must be YAML mappings and not HTML (`docs/reference/iso-contract.md` §7). No network.

use crate::manifest;
use std::io::Read;

mod tarball;
use std::path::Path;

use cks_iso_oci::image::Arch;

/// What a file must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// An ELF64 little-endian executable for the architecture.
    Elf(Arch),
    /// A gzip-compressed tar that lists to the end with at least one entry.
    GzipTar,
    /// A [`Content::GzipTar`] whose executables are ELF for the architecture (at least one): an
    /// arm64 etcd under the amd64 name etcd nodes read, where only its members say what it is.
    GzipTarOf(Arch),
    /// One or more YAML documents, each a mapping (or empty), and not an HTML page.
    Yaml,
}

impl Content {
    /// How the requirement reads in an error: "… is not `<this>`".
    pub fn describe(self) -> String {
        match self {
            Self::Elf(arch) => format!("an ELF executable for {arch} ({})", arch.uname()),
            Self::GzipTar => "a gzip-compressed tar archive".into(),
            Self::GzipTarOf(arch) => format!(
                "a gzip-compressed tar archive of executables for {arch} ({})",
                arch.uname()
            ),
            Self::Yaml => "a YAML manifest".into(),
        }
    }

    /// Checks the file at `path`; `Err` says what it is instead. `Ok` carries notes the user
    /// should see (e.g. a joined `---` separator in a manifest).
    pub fn check(self, path: &Path) -> Result<Vec<String>, WrongContent> {
        let io = WrongContent::Unreadable;
        match self {
            Self::Elf(arch) => {
                let mut head = [0u8; 20];
                let mut file = std::fs::File::open(path).map_err(io)?;
                let n = read_up_to(&mut file, &mut head).map_err(io)?;
                check_elf(&head[..n], arch).map(|()| Vec::new())
            }
            Self::GzipTar => {
                let file = std::fs::File::open(path).map_err(io)?;
                check_gzip_tar(std::io::BufReader::new(file)).map(|_| Vec::new())
            }
            Self::GzipTarOf(arch) => {
                let file = std::fs::File::open(path).map_err(io)?;
                check_gzip_tar_of(std::io::BufReader::new(file), Some(arch)).map(|_| Vec::new())
            }
            Self::Yaml => {
                let bytes = std::fs::read(path).map_err(io)?;
                check_yaml(&bytes)
            }
        }
    }
}

/// What a file is instead of what it should be ([`Content`]); each reads as the end of "… is not
/// an ELF executable for arm64: …".
#[derive(Debug, thiserror::Error)]
pub enum WrongContent {
    /// The file cannot be read back from disk.
    #[error("cannot read it back: {0}")]
    Unreadable(#[source] std::io::Error),
    /// An HTML page (an error page served with `200`).
    #[error("it is an HTML page")]
    Html,
    /// No ELF magic.
    #[error("it does not start with the ELF magic")]
    NoElfMagic,
    /// ELF32.
    #[error("it is a 32-bit ELF file")]
    Elf32,
    /// Big-endian ELF.
    #[error("it is a big-endian ELF file")]
    BigEndian,
    /// An ELF executable for another machine, named.
    #[error("it is an ELF executable for {0}")]
    OtherMachine(String),
    /// gzip or tar framing does not read.
    #[error("it does not list as a gzip tar: {0}")]
    NotGzipTar(#[source] std::io::Error),
    /// A member a node would extract outside its tree.
    #[error("member {name:?} {problem}")]
    UnsafeMember {
        /// The member's path as stored.
        name: String,
        /// Why it is unsafe.
        problem: String,
    },
    /// A member's body does not inflate.
    #[error("entry {index} does not read: {source}")]
    EntryUnreadable {
        /// The member's position, from 0.
        index: u64,
        /// What the reader said.
        #[source]
        source: std::io::Error,
    },
    /// A tar with no member.
    #[error("it is an empty archive")]
    EmptyArchive,
    /// A member that is an executable for another architecture than the archive's.
    #[error("member {name:?} is not for that architecture: {problem}")]
    MemberMachine {
        /// The member's path as stored.
        name: String,
        /// What it is instead (the ELF check's words).
        problem: Box<WrongContent>,
    },
    /// No member is an ELF executable, where the archive's executables were to be checked.
    #[error("no member is an ELF executable")]
    NoExecutable,
    /// Not UTF-8.
    #[error("it is not UTF-8 text")]
    NotUtf8,
    /// Not YAML.
    #[error("it does not parse as YAML: {0}")]
    Yaml(String),
    /// A document that is not a mapping.
    #[error("document {index} is not a mapping (Kubernetes objects are)")]
    NotMapping {
        /// The document's position.
        index: usize,
    },
    /// Another manifest problem.
    #[error(transparent)]
    Manifest(Box<manifest::ManifestError>),
    /// No document at all.
    #[error("it holds no YAML document")]
    NoDocument,
}

impl WrongContent {
    /// Whether the bytes were read as a document and it is not one a manifest can be (YAML that
    /// does not parse, including one past the parser's budgets; a document that is not a
    /// mapping; no document): what the server sent is the problem, not the transfer.
    pub fn is_document_problem(&self) -> bool {
        matches!(
            self,
            Self::Yaml(_) | Self::NotMapping { .. } | Self::Manifest(_) | Self::NoDocument
        )
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

fn machine_name(m: u16) -> String {
    match m {
        62 => "x86-64 (amd64)".into(),
        183 => "aarch64 (arm64)".into(),
        3 => "i386".into(),
        40 => "arm (32-bit)".into(),
        21 => "ppc64".into(),
        22 => "s390".into(),
        243 => "riscv".into(),
        other => format!("machine {other}"),
    }
}

/// Checks an ELF header: magic, 64-bit, little-endian, `e_machine` of `arch`.
pub(crate) fn check_elf(head: &[u8], arch: Arch) -> Result<(), WrongContent> {
    if head.len() < 20 || &head[..4] != b"\x7fELF" {
        return Err(match looks_like_html(head) {
            true => WrongContent::Html,
            false => WrongContent::NoElfMagic,
        });
    }
    if head[4] != 2 {
        return Err(WrongContent::Elf32);
    }
    if head[5] != 1 {
        return Err(WrongContent::BigEndian);
    }
    let machine = u16::from_le_bytes([head[18], head[19]]);
    if machine != arch.e_machine() {
        return Err(WrongContent::OtherMachine(machine_name(machine)));
    }
    Ok(())
}

/// Lists a gzip tar to its end as a node extracts it (as root, into its tree): every member
/// must be relative, without `..`, and every link must stay inside the tree. Returns the number
/// of entries.
pub(crate) fn check_gzip_tar(reader: impl Read) -> Result<u64, WrongContent> {
    check_gzip_tar_of(reader, None)
}

/// [`check_gzip_tar`], and with `arch` every member that starts with the ELF magic must be an
/// executable for `arch`, and at least one must.
pub(crate) fn check_gzip_tar_of(
    reader: impl Read,
    arch: Option<Arch>,
) -> Result<u64, WrongContent> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
    let entries = archive.entries().map_err(WrongContent::NotGzipTar)?;
    let mut count = 0;
    let mut executables = 0;
    for entry in entries {
        let mut entry = entry.map_err(WrongContent::NotGzipTar)?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let link = entry
            .link_name_bytes()
            .map(|l| String::from_utf8_lossy(&l).into_owned());
        if let Some(problem) = tarball::member_problem(&name, entry.header().entry_type(), link) {
            return Err(WrongContent::UnsafeMember { name, problem });
        }
        let unreadable = |source| WrongContent::EntryUnreadable {
            index: count,
            source,
        };
        if let Some(arch) = arch.filter(|_| entry.header().entry_type().is_file()) {
            let mut head = [0u8; 20];
            let n = read_up_to(&mut entry, &mut head).map_err(unreadable)?;
            if head[..n].starts_with(b"\x7fELF") {
                check_elf(&head[..n], arch).map_err(|problem| WrongContent::MemberMachine {
                    name: name.clone(),
                    problem: Box::new(problem),
                })?;
                executables += 1;
            }
        }
        // Read each body: a truncated or corrupt stream shows only when its bytes are inflated.
        std::io::copy(&mut entry, &mut std::io::sink()).map_err(unreadable)?;
        count += 1;
    }
    if count == 0 {
        return Err(WrongContent::EmptyArchive);
    }
    if arch.is_some() && executables == 0 {
        return Err(WrongContent::NoExecutable);
    }
    Ok(count)
}

/// The sha256 of a tarball read once, with what `check_gzip_tar` finds in the same pass: the
/// hash covers every byte, whatever the listing says. `Err` only when the bytes cannot be read.
pub fn hash_and_check_tar(
    reader: impl Read,
    arch: Option<Arch>,
) -> std::io::Result<(String, Result<u64, WrongContent>)> {
    let mut hashing = cks_iso_oci::image::Hashing::new(reader);
    let listed = check_gzip_tar_of(&mut hashing, arch);
    // The gzip trailer, the tar's padding, or what follows a bad member.
    std::io::copy(&mut hashing, &mut std::io::sink())?;
    Ok((hashing.sum().to_string(), listed))
}

fn looks_like_html(bytes: &[u8]) -> bool {
    let start: Vec<u8> = bytes
        .iter()
        .copied()
        .skip_while(u8::is_ascii_whitespace)
        .take(15)
        .map(|b| b.to_ascii_lowercase())
        .collect();
    start.starts_with(b"<!doctype html")
        || start.starts_with(b"<html")
        || start.starts_with(b"<head")
}

/// Parses every document; each must be a mapping (or empty). Notes name joined separators,
/// which are split before parsing (the rules live in [`crate::manifest`]).
pub fn check_yaml(bytes: &[u8]) -> Result<Vec<String>, WrongContent> {
    if looks_like_html(bytes) {
        return Err(WrongContent::Html);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| WrongContent::NotUtf8)?;
    let mut notes = Vec::new();
    let joined = manifest::find_joined_separators(text);
    if !joined.is_empty() {
        notes.push(format!(
            "a `---` is joined to the end of line(s) {}, running two documents together; a build \
             splits it (and records that in versions.txt)",
            joined
                .iter()
                .map(|j| j.line.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let docs = parse(text)?;
    if docs.is_empty() {
        return Err(WrongContent::NoDocument);
    }
    Ok(notes)
}

fn parse(text: &str) -> Result<Vec<serde_json::Value>, WrongContent> {
    let repaired = manifest::split_joined_separators(text);
    manifest::check_yaml("the manifest", &repaired).map_err(|e| match e {
        manifest::ManifestError::Yaml { source, .. } => WrongContent::Yaml(source.to_string()),
        manifest::ManifestError::NotObject { index, .. } => WrongContent::NotMapping { index },
        other => WrongContent::Manifest(Box::new(other)),
    })
}

/// Every image the manifest's documents reference, sorted, each once. Joined separators are
/// split first so merged documents do not hide an image.
pub fn images_in_yaml(text: &str) -> Result<Vec<String>, WrongContent> {
    Ok(manifest::images(&parse(text)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(machine: u16) -> Vec<u8> {
        let mut h = vec![
            0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0,
        ];
        h.extend_from_slice(&machine.to_le_bytes());
        h
    }

    #[test]
    fn elf_check_names_the_architecture_found() {
        assert!(check_elf(&header(183), Arch::Arm64).is_ok());
        let err = check_elf(&header(62), Arch::Arm64).unwrap_err();
        assert!(err.to_string().contains("x86-64"), "{err}");
        let err = check_elf(b"<!DOCTYPE html><html>404</html>", Arch::Amd64).unwrap_err();
        assert!(err.to_string().contains("HTML"), "{err}");
    }

    #[test]
    fn yaml_check_refuses_html_and_scalars_and_reports_joined_separators() {
        assert!(
            check_yaml(b"apiVersion: v1\nkind: List\n---\nkind: X\n")
                .unwrap()
                .is_empty()
        );
        assert!(
            check_yaml(b"<!DOCTYPE html>\n<html></html>")
                .unwrap_err()
                .to_string()
                .contains("HTML")
        );
        assert!(
            check_yaml(b"just a sentence")
                .unwrap_err()
                .to_string()
                .contains("mapping")
        );
        assert!(
            check_yaml(b"a: [unclosed\n")
                .unwrap_err()
                .to_string()
                .contains("YAML")
        );
        let joined = b"kind: A\nroleRef:\n  apiGroup: rbac.authorization.k8s.io---\nkind: B\n";
        let notes = check_yaml(joined).unwrap();
        assert!(notes[0].contains("line(s) 3"), "{notes:?}");
    }

    #[test]
    fn images_are_found_in_every_container_list_once() {
        let text = "spec:\n  initContainers:\n    - image: a:1\n  containers:\n    - name: x\n      image: b@sha256:00\n    - image: a:1\n  apiGroup: x---\nkind: Pod\nimage: c\n";
        // `containers` sorts before `initContainers`; list order is kept.
        assert_eq!(images_in_yaml(text).unwrap(), ["a:1", "b@sha256:00", "c"]);
    }

    #[test]
    fn gzip_tar_check_refuses_truncation() {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        let data = vec![7u8; 100_000];
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        builder.append_data(&mut h, "f", data.as_slice()).unwrap();
        let tgz = builder.into_inner().unwrap().finish().unwrap();
        assert_eq!(check_gzip_tar(tgz.as_slice()).unwrap(), 1);
        assert!(check_gzip_tar(&tgz[..tgz.len() / 2]).is_err());
        assert!(check_gzip_tar(&b"<html>"[..]).is_err());
    }

    fn tgz(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (name, data) in members {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o755);
            builder.append_data(&mut h, name, data.as_slice()).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn a_tarball_of_executables_names_a_member_of_another_architecture() {
        // The shape of an etcd release tarball: a top directory, three binaries and a README.
        let etcd = |machine: u16| {
            tgz(&[
                ("etcd-v3.5.21-linux-arm64/etcd", header(machine)),
                ("etcd-v3.5.21-linux-arm64/etcdctl", header(183)),
                ("etcd-v3.5.21-linux-arm64/README.md", b"# etcd\n".to_vec()),
            ])
        };
        assert_eq!(
            check_gzip_tar_of(etcd(183).as_slice(), Some(Arch::Arm64)).unwrap(),
            3
        );
        let err = check_gzip_tar_of(etcd(62).as_slice(), Some(Arch::Arm64)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "member \"etcd-v3.5.21-linux-arm64/etcd\" is not for that architecture: it is an ELF \
             executable for x86-64 (amd64)"
        );
        assert!(
            check_gzip_tar(etcd(62).as_slice()).is_ok(),
            "not asked, not checked"
        );
        let readme = tgz(&[("README.md", b"# etcd\n".to_vec())]);
        let err = check_gzip_tar_of(readme.as_slice(), Some(Arch::Arm64)).unwrap_err();
        assert!(matches!(err, WrongContent::NoExecutable), "{err}");
    }
}
