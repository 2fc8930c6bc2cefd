//! Package URLs (purl) in their canonical form: the type, the name, `@version`, and qualifiers
//! sorted by key, each part percent-encoded (the purl specification's rules).

use cks_iso_oci::image::Reference;

/// Percent-encodes `text`, keeping the unreserved characters and those in `keep`.
pub(super) fn encode(text: &str, keep: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `pkg:<kind>/<name>@<version>?<k>=<v>&…`, qualifiers sorted by key.
fn purl(kind: &str, name: &str, version: &str, qualifiers: &mut [(&str, &str)]) -> String {
    qualifiers.sort();
    let query: Vec<String> = qualifiers
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v, b":/")))
        .collect();
    let mut out = format!("pkg:{kind}/{}@{}", encode(name, b""), encode(version, b""));
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query.join("&"));
    }
    out
}

/// `pkg:oci/<name>@sha256%3A<hex>?arch=…&repository_url=<registry>/<repository>&tag=…`, where the
/// name is the repository's last component, lower case, and the version the platform manifest's
/// digest.
pub(super) fn oci(reference: &Reference, manifest: &str, arch: &str) -> String {
    let name = reference
        .path()
        .rsplit('/')
        .next()
        .unwrap_or(reference.path())
        .to_lowercase();
    let repository = reference.repository();
    let mut qualifiers = vec![("arch", arch), ("repository_url", repository.as_str())];
    if let Some(tag) = reference.tag() {
        qualifiers.push(("tag", tag));
    }
    purl("oci", &name, manifest, &mut qualifiers)
}

/// `pkg:generic/<name>@<version>?download_url=<url>`.
pub(super) fn generic(name: &str, version: &str, url: &str) -> String {
    purl("generic", name, version, &mut [("download_url", url)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oci_purls_follow_the_oci_type() {
        let r = Reference::parse("registry.k8s.io/coredns/coredns:v1.12.0").unwrap();
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            oci(&r, &digest, "arm64"),
            format!(
                "pkg:oci/coredns@sha256%3A{}?arch=arm64&repository_url=registry.k8s.io/coredns/coredns&tag=v1.12.0",
                "a".repeat(64)
            )
        );
        let r = Reference::parse("localhost:5000/team/app:1.0").unwrap();
        assert!(
            oci(&r, &digest, "amd64")
                .contains("?arch=amd64&repository_url=localhost:5000/team/app&tag=1.0"),
            "a registry port keeps its colon"
        );
    }

    #[test]
    fn generic_purls_encode_what_the_spec_reserves() {
        assert_eq!(
            generic("kubeadm", "v1.33.1", "https://dl.k8s.io/a b?x=1&y#z"),
            "pkg:generic/kubeadm@v1.33.1?download_url=https://dl.k8s.io/a%20b%3Fx%3D1%26y%23z"
        );
    }
}
