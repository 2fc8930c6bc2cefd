//! Checks that a downloaded file is the kind of file it should be, before it gets its name.
//!
//! A checksum proves the bytes are the ones published, not that the right thing was published or
//! asked for: an HTML error page served with `200`, a binary for the other architecture or a
//! truncated tarball can all arrive with a matching (or no) checksum. So binaries must be ELF for
//! the target architecture (`e_machine`), tarballs must list as gzip tars to the end, and manifests
//! must be YAML mappings and not HTML (`iso-contract.md` §7). No network.

use std::io::Read;
use std::path::Path;

/// Target architecture as Kubernetes names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// x86-64.
    Amd64,
    /// AArch64.
    Arm64,
}

impl Arch {
    /// Reads `amd64`, `x86_64`, `arm64` or `aarch64`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "amd64" | "x86_64" | "x86-64" => Some(Self::Amd64),
            "arm64" | "aarch64" => Some(Self::Arm64),
            _ => None,
        }
    }

    /// `amd64` or `arm64`, as in upstream URLs.
    pub fn k8s(self) -> &'static str {
        match self {
            Self::Amd64 => "amd64",
            Self::Arm64 => "arm64",
        }
    }

    /// `x86_64` or `aarch64`, as in the ISO's file name.
    pub fn uname(self) -> &'static str {
        match self {
            Self::Amd64 => "x86_64",
            Self::Arm64 => "aarch64",
        }
    }

    /// The ELF `e_machine` of its executables.
    pub fn e_machine(self) -> u16 {
        match self {
            Self::Amd64 => EM_X86_64,
            Self::Arm64 => EM_AARCH64,
        }
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.k8s())
    }
}

const EM_X86_64: u16 = 62;
const EM_AARCH64: u16 = 183;

/// What a file must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// An ELF64 little-endian executable for the architecture.
    Elf(Arch),
    /// A gzip-compressed tar that lists to the end with at least one entry.
    GzipTar,
    /// One or more YAML documents, each a mapping (or empty), and not an HTML page.
    Yaml,
}

impl Content {
    /// How the requirement reads in an error: "… is not <this>".
    pub fn describe(self) -> String {
        match self {
            Self::Elf(arch) => format!("an ELF executable for {arch} ({})", arch.uname()),
            Self::GzipTar => "a gzip-compressed tar archive".into(),
            Self::Yaml => "a YAML manifest".into(),
        }
    }

    /// Checks the file at `path`; `Err` says what it is instead. `Ok` carries notes the user
    /// should see (e.g. a joined `---` separator in a manifest).
    pub fn check(self, path: &Path) -> Result<Vec<String>, String> {
        let io = |e: std::io::Error| format!("cannot read it back: {e}");
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
            Self::Yaml => {
                let bytes = std::fs::read(path).map_err(io)?;
                check_yaml(&bytes)
            }
        }
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
        EM_X86_64 => "x86-64 (amd64)".into(),
        EM_AARCH64 => "aarch64 (arm64)".into(),
        3 => "i386".into(),
        40 => "arm (32-bit)".into(),
        21 => "ppc64".into(),
        22 => "s390".into(),
        243 => "riscv".into(),
        other => format!("machine {other}"),
    }
}

/// Checks an ELF header: magic, 64-bit, little-endian, `e_machine` of `arch`.
pub fn check_elf(head: &[u8], arch: Arch) -> Result<(), String> {
    if head.len() < 20 || &head[..4] != b"\x7fELF" {
        return Err(match looks_like_html(head) {
            true => "it is an HTML page".into(),
            false => "it does not start with the ELF magic".into(),
        });
    }
    if head[4] != 2 {
        return Err("it is a 32-bit ELF file".into());
    }
    if head[5] != 1 {
        return Err("it is a big-endian ELF file".into());
    }
    let machine = u16::from_le_bytes([head[18], head[19]]);
    if machine != arch.e_machine() {
        return Err(format!(
            "it is an ELF executable for {}",
            machine_name(machine)
        ));
    }
    Ok(())
}

/// Lists a gzip tar to its end; returns the number of entries.
pub fn check_gzip_tar(reader: impl Read) -> Result<u64, String> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
    let entries = archive
        .entries()
        .map_err(|e| format!("it does not list as a gzip tar: {e}"))?;
    let mut count = 0;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("it does not list as a gzip tar: {e}"))?;
        // Read each body: a truncated or corrupt stream shows only when its bytes are inflated.
        std::io::copy(&mut entry, &mut std::io::sink())
            .map_err(|e| format!("entry {count} does not read: {e}"))?;
        count += 1;
    }
    if count == 0 {
        return Err("it is an empty archive".into());
    }
    Ok(count)
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

/// Lines (1-based) where `---` is glued to the end of content, e.g. `rbac.authorization.k8s.io---`:
/// a part that lacked its final newline, which merges two documents into one (`upstream.md` §4).
pub fn joined_separators(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let t = line.trim_end();
            t.len() > 3 && t.ends_with("---") && !t.trim_start().starts_with('#') && {
                let before = &t[..t.len() - 3];
                !before.ends_with('-') && !before.trim().is_empty()
            }
        })
        .map(|(i, _)| i + 1)
        .collect()
}

/// The text with each joined separator split onto its own line.
pub fn split_joined_separators(text: &str) -> String {
    let joined = joined_separators(text);
    let mut out = String::with_capacity(text.len() + joined.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if joined.contains(&(i + 1)) {
            let body = line.trim_end();
            out.push_str(&body[..body.len() - 3]);
            out.push_str("\n---");
            out.push_str(&line[body.len()..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// Parses every document; each must be a mapping (or empty). Notes name joined separators.
pub fn check_yaml(bytes: &[u8]) -> Result<Vec<String>, String> {
    if looks_like_html(bytes) {
        return Err("it is an HTML page".into());
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())?;
    let mut notes = Vec::new();
    let joined = joined_separators(text);
    let repaired;
    let text = if joined.is_empty() {
        text
    } else {
        notes.push(format!(
            "a `---` document separator is joined to the previous line (line {}); the documents \
             merge unless the line is split",
            joined
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
        repaired = split_joined_separators(text);
        &repaired
    };
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(text).map_err(|e| format!("it does not parse as YAML: {e}"))?;
    if docs.is_empty() {
        return Err("it holds no YAML document".into());
    }
    for (i, doc) in docs.iter().enumerate() {
        if !(doc.is_object() || doc.is_null()) {
            return Err(format!(
                "document {} is not a mapping (Kubernetes objects are)",
                i + 1
            ));
        }
    }
    Ok(notes)
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
        assert!(err.contains("x86-64"), "{err}");
        let err = check_elf(b"<!DOCTYPE html><html>404</html>", Arch::Amd64).unwrap_err();
        assert!(err.contains("HTML"), "{err}");
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
                .contains("HTML")
        );
        assert!(
            check_yaml(b"just a sentence")
                .unwrap_err()
                .contains("mapping")
        );
        assert!(check_yaml(b"a: [unclosed\n").unwrap_err().contains("YAML"));
        let joined = b"kind: A\nroleRef:\n  apiGroup: rbac.authorization.k8s.io---\nkind: B\n";
        let notes = check_yaml(joined).unwrap();
        assert!(notes[0].contains("line 3"), "{notes:?}");
    }

    #[test]
    fn splitting_joined_separators_keeps_everything_else() {
        let text = "a: 1\n  x: k8s.io---\nb: 2\n---\n# c---\n";
        assert_eq!(joined_separators(text), vec![2]);
        assert_eq!(
            split_joined_separators(text),
            "a: 1\n  x: k8s.io\n---\nb: 2\n---\n# c---\n"
        );
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
        assert_eq!(check_gzip_tar(tgz.as_slice()), Ok(1));
        assert!(check_gzip_tar(&tgz[..tgz.len() / 2]).is_err());
        assert!(check_gzip_tar(&b"<html>"[..]).is_err());
    }
}
