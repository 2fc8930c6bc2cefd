//! What an operator passes to CloudStack's `addKubernetesSupportedVersion` for each ISO built,
//! printed as a ready CloudMonkey line and as JSON fields: a rendering of an [`IsoToRegister`] (what
//! `build` knows of each ISO it wrote), so that `build` prints it and any other command (a
//! `register`) computes the same parameters.
//!
//! Two values are easy to get wrong by hand: `checksum` takes `{SHA-256}<lowercase hex>` (bare hex
//! is taken as MD5), and `arch` must be `aarch64` for an arm64 ISO (blank means `x86_64`, so an
//! arm64 ISO registered without it runs nowhere).

use serde_json::{Value, json};

use super::{IsoToRegister, MIN_CPU, MIN_MEMORY};

/// The parameters of `addKubernetesSupportedVersion` for one ISO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Registration {
    /// `1.33.1`.
    pub(crate) semanticversion: String,
    /// The ISO's file name without `.iso` (`setup-v1.33.1-x86_64`).
    pub(crate) name: String,
    /// `x86_64` or `aarch64`.
    pub(crate) arch: &'static str,
    /// `{SHA-256}<hex>`.
    pub(crate) checksum: String,
    /// Where CloudStack downloads the ISO from: `--publish-url` joined with the file name.
    pub(crate) url: Option<String>,
}

/// A `--publish-url` CloudStack cannot download from.
#[derive(Debug, thiserror::Error)]
#[error("--publish-url {given:?} is not an http(s) URL CloudStack can download the ISOs from")]
pub struct BadPublishUrl {
    /// What was given.
    pub given: String,
}

impl BadPublishUrl {
    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        Some(
            "give the directory the ISOs will be served from, e.g. --publish-url \
             https://files.example.org/cks"
                .into(),
        )
    }
}

/// `--publish-url`, checked: an `http://` or `https://` URL.
pub fn publish_base(given: Option<&str>) -> Result<Option<String>, BadPublishUrl> {
    let Some(base) = given else { return Ok(None) };
    if !(base.starts_with("http://") || base.starts_with("https://"))
        || base.contains(char::is_whitespace)
    {
        return Err(BadPublishUrl {
            given: crate::fetch::redact(base),
        });
    }
    Ok(Some(base.trim_end_matches('/').to_owned()))
}

impl Registration {
    /// The registration of `iso`, served from the directory `base` when given.
    pub(crate) fn of(iso: &IsoToRegister, base: Option<&str>) -> Self {
        let file = iso.file_name();
        Self {
            semanticversion: iso.semver.clone(),
            name: iso.name.clone(),
            arch: iso.cloudstack_arch(),
            checksum: iso.checksum(),
            url: base.map(|b| format!("{b}/{file}")),
        }
    }

    /// `cmk add kubernetessupportedversion …`, with a placeholder URL when none is known. A user
    /// name and password in the URL are not printed (`***` in their place).
    pub(crate) fn cmk(&self) -> String {
        let url = self.url.as_deref().map_or_else(
            || format!("<URL-of-{}.iso>", self.name),
            crate::fetch::redact,
        );
        format!(
            "cmk add kubernetessupportedversion semanticversion={} name={} arch={} checksum={} \
             mincpunumber={MIN_CPU} minmemory={MIN_MEMORY} url={url}",
            self.semanticversion, self.name, self.arch, self.checksum
        )
    }

    /// The same parameters as JSON (`url` null when not known), with the line.
    pub(crate) fn json(&self) -> Value {
        json!({
            "semanticversion": self.semanticversion,
            "name": self.name,
            "arch": self.arch,
            "checksum": self.checksum,
            "mincpunumber": MIN_CPU,
            "minmemory": MIN_MEMORY,
            "url": self.url.as_deref().map(crate::fetch::redact),
            "cmk": self.cmk(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::Arch;

    fn built(arch: Arch, file: &str, kubernetes: &str) -> IsoToRegister {
        let path = std::path::PathBuf::from(format!("/out/{file}"));
        IsoToRegister {
            name: IsoToRegister::name_of(&path),
            path,
            semver: kubernetes.trim_start_matches('v').into(),
            arch,
            sha256: "AB".repeat(32),
            size: 1,
        }
    }

    #[test]
    fn an_arm64_iso_is_registered_as_aarch64_with_a_sha256_checksum() {
        let r = Registration::of(
            &built(Arch::Arm64, "setup-v1.33.1-aarch64.iso", "1.33.1"),
            Some("https://files.example.org/cks"),
        );
        assert_eq!(
            r.cmk(),
            format!(
                "cmk add kubernetessupportedversion semanticversion=1.33.1 \
                 name=setup-v1.33.1-aarch64 arch=aarch64 checksum={{SHA-256}}{} mincpunumber=2 \
                 minmemory=2048 url=https://files.example.org/cks/setup-v1.33.1-aarch64.iso",
                "ab".repeat(32)
            )
        );
        let amd = Registration::of(&built(Arch::Amd64, "x-x86_64.iso", "v1.33.1"), None);
        assert_eq!((amd.arch, amd.url.clone()), ("x86_64", None));
        assert!(
            amd.cmk().ends_with("url=<URL-of-x-x86_64.iso>"),
            "{}",
            amd.cmk()
        );
        assert_eq!(amd.json()["url"], Value::Null);
        assert_eq!(amd.json()["minmemory"], 2048);
    }

    #[test]
    fn a_publish_url_must_be_http_and_loses_its_trailing_slash() {
        assert_eq!(
            publish_base(Some("https://f.example/cks/"))
                .unwrap()
                .as_deref(),
            Some("https://f.example/cks")
        );
        for bad in ["ftp://f/x", "files.example.org", "https://a b"] {
            let err = publish_base(Some(bad)).unwrap_err();
            assert!(err.to_string().contains("--publish-url"), "{bad}");
        }
    }
}
