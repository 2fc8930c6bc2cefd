//! What a build records of signatures: the mode it ran in, per image and per binary what was found
//! and who signed it, and the files of the ISO's `signatures/` directory (`report.json`, the
//! accepted manifests and payloads, the binaries' bundles, the trusted root that judged), written
//! sorted so that the ISO stays reproducible.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Invalid;
use crate::image::SignatureManifest;
use crate::verify::Verified;

/// What a build does about signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Nothing is fetched or checked; `versions.txt` and the SBOMs record "not checked".
    Off,
    /// Every signature found must verify; a covered image without one is a warning, except
    /// where upstream always signs ([`always_signed`](crate::always_signed) images, Kubernetes binaries of 1.26 on):
    /// there a missing signature was withheld, and fails.
    #[default]
    Verify,
    /// As [`Mode::Verify`], but a missing signature is a warning even where upstream always
    /// signs: for a registry mirror known to drop signatures.
    Warn,
    /// Every covered image needs a valid signature.
    Enforce,
}

impl Mode {
    /// Its name, as the flag takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Verify => "verify",
            Self::Warn => "warn",
            Self::Enforce => "enforce",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = Invalid;
    fn from_str(text: &str) -> Result<Self, Invalid> {
        match text {
            "off" => Ok(Self::Off),
            "verify" => Ok(Self::Verify),
            "warn" => Ok(Self::Warn),
            "enforce" => Ok(Self::Enforce),
            _ => Err(format!("{text:?} is not off, verify, warn or enforce").into()),
        }
    }
}

/// What the check of one signed artifact (an image, a downloaded binary) concluded: one type for
/// every place that records, counts or prints a verdict, so that no site compares words of its own.
/// Its word (`verified`, …) is what `report.json`, `--json` objects and the lines on stdout hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A signature verified for the rule that covers it.
    Verified,
    /// A covered artifact without any signature.
    Unsigned,
    /// No rule covers it: nothing was looked for.
    NotCovered,
    /// A signature that does not verify, or could not be fetched (`verify-image` only: a build
    /// stops instead of recording it).
    Failed,
    /// A word this cks-iso does not write, read from a report made elsewhere: kept as read, so that
    /// the message naming it quotes it.
    Other(String),
}

impl Verdict {
    /// Its word, as reports and messages hold it.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Verified => "verified",
            Self::Unsigned => "unsigned",
            Self::NotCovered => "not-covered",
            Self::Failed => "failed",
            Self::Other(word) => word,
        }
    }
}

impl From<&str> for Verdict {
    fn from(word: &str) -> Self {
        match word {
            "verified" => Self::Verified,
            "unsigned" => Self::Unsigned,
            "not-covered" => Self::NotCovered,
            "failed" => Self::Failed,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Verdict {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::from(String::deserialize(deserializer)?.as_str()))
    }
}

/// What the check of one image found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageReport {
    /// The reference as bundled.
    pub reference: String,
    /// The index (or manifest) digest the reference resolved to.
    pub digest: String,
    /// The platform manifest shipped.
    pub manifest: String,
    /// [`Verdict::Verified`], [`Verdict::Unsigned`] or [`Verdict::NotCovered`].
    pub verdict: Verdict,
    /// Which digest the accepted signature signs (the platform manifest or the index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_digest: Option<String>,
    /// The `.sig` manifest or referrer that holds it (its file under `signatures/images/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_manifest: Option<String>,
    /// Where the accepted signature was found: `tag` (cosign's `.sig` tag) or `referrer` (an
    /// OCI 1.1 referrer holding a Sigstore bundle, as cosign 3 signs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<String>,
    /// Who signed it, when verified (`identity`, `issuer`, `log_index`, `integrated_time`).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<Signer>,
    /// The payload's docker-reference: recorded, not trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker_reference: Option<String>,
}

/// What the check of one downloaded file (a dl.k8s.io binary) found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinaryReport {
    /// Its path in the ISO (`k8s/kubeadm`).
    pub path: String,
    /// The upstream URL.
    pub url: String,
    /// Its sha256, hex.
    pub sha256: String,
    /// [`Verdict::Verified`] or [`Verdict::Unsigned`].
    pub verdict: Verdict,
    /// The Sigstore bundle that verified it, in the ISO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    /// Who signed it, when verified (`identity`, `issuer`, `log_index`, `integrated_time`).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<Signer>,
}

/// Who signed an artifact, from the accepted signature's certificate and log entry: the same
/// four report fields for images and binaries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signer {
    /// The identity from the certificate (its SAN) that matched the policy.
    pub identity: String,
    /// The OIDC issuer from the certificate.
    pub issuer: String,
    /// The transparency log entry's index.
    pub log_index: i64,
    /// When the log integrated the entry (seconds since 1970).
    pub integrated_time: i64,
}

impl From<&Verified> for Signer {
    fn from(v: &Verified) -> Self {
        Self {
            identity: v.identity.clone(),
            issuer: v.issuer.clone(),
            log_index: v.log_index,
            integrated_time: v.integrated_time,
        }
    }
}

/// A verified file's signature material, as written under `signatures/binaries/`.
#[derive(Debug, Clone)]
pub struct BinaryEvidence {
    /// Its path in the ISO (`k8s/kubeadm`).
    pub path: String,
    /// The `.sig`/`.cert` pair and Rekor entry it was verified with; `None` when the publisher's
    /// own bundle (`<file>.sigstore.json`) verified it, which [`BinaryEvidence::bundle`] then is.
    pub pair: Option<PairMaterial>,
    /// The Sigstore bundle: built from the pair, or the published one byte for byte.
    pub bundle: Vec<u8>,
}

/// dl.k8s.io's `.sig` and `.cert` beside a file, and the Rekor v1 entry found for them.
#[derive(Debug, Clone)]
pub struct PairMaterial {
    /// The `.sig` file as downloaded.
    pub sig: Vec<u8>,
    /// The `.cert` file as downloaded.
    pub cert: Vec<u8>,
    /// The Rekor entry as Rekor served it (kept in the cache, not the ISO).
    pub entry: Vec<u8>,
}

/// The suffix of the Sigstore bundle a publisher ships beside a signed file (`kubeadm` →
/// `kubeadm.sigstore.json`). Sigstore's documentation names `cosign sign-blob --bundle` output
/// `<artifact>.sigstore.json`, and Kubernetes' release tooling (kubernetes/release
/// `.goreleaser.yml`, since it moved to cosign's bundle format) publishes its own binaries'
/// bundles under that name; cosign 3 writes no default name, so one name is looked for, not a
/// guess list. The ISO keeps every binary's bundle under the same name.
pub const BUNDLE_SUFFIX: &str = ".sigstore.json";

impl BinaryEvidence {
    /// The bundle's path under `signatures/`.
    pub fn bundle_path(path: &str) -> String {
        format!("binaries/{path}{BUNDLE_SUFFIX}")
    }
}

/// The report written as `signatures/report.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Schema version.
    pub version: u32,
    /// The mode of the build.
    pub mode: String,
    /// sha256 of the trusted root's text that judged.
    pub trusted_root_sha256: String,
    /// Per image, sorted by reference.
    pub images: Vec<ImageReport>,
    /// Per downloaded file a rule covers (the dl.k8s.io binaries), sorted by path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub binaries: Vec<BinaryReport>,
}

/// The report's path in the ISO.
pub const REPORT_PATH: &str = "signatures/report.json";

/// The files of `signatures/` (paths relative to it) for `report` and the `.sig` manifests it
/// accepted: each manifest byte-exact as `images/<hex>.json`, each payload as
/// `images/blobs/sha256/<hex>`, `report.json`, and a copy of the trusted root that judged as
/// `trusted_root.json`, for third-party tools (cks-iso itself never trusts it); per verified
/// binary `binaries/<path>.sigstore.json` (a Sigstore bundle: the publisher's own, or one built
/// from the pair, then beside its original `.sig` and `.cert`). Sorted, so the ISO stays
/// reproducible.
pub fn evidence(
    report: &Report,
    manifests: &[SignatureManifest],
    binaries: &[BinaryEvidence],
    trusted_root: &str,
) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for b in binaries {
        files.insert(BinaryEvidence::bundle_path(&b.path), b.bundle.clone());
        if let Some(pair) = &b.pair {
            files.insert(format!("binaries/{}.sig", b.path), pair.sig.clone());
            files.insert(format!("binaries/{}.cert", b.path), pair.cert.clone());
        }
    }
    files.insert("trusted_root.json".into(), trusted_root.as_bytes().to_vec());
    for m in manifests {
        files.insert(format!("images/{}.json", m.digest.hex()), m.bytes.clone());
        for (desc, payload) in &m.layers {
            files.insert(
                format!("images/blobs/sha256/{}", desc.digest.hex()),
                payload.clone(),
            );
        }
    }
    let mut json = serde_json::to_vec_pretty(report).expect("plain JSON");
    json.push(b'\n');
    files.insert("report.json".into(), json);
    files
}
