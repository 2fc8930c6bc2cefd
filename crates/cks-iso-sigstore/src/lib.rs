//! Verifies Kubernetes' Sigstore signatures of images, offline, and says what was verified.
//!
//! A crate of its own so that "signature checks never touch the network" is the compiler's rule:
//! it has no HTTP client and no async runtime; the `cks-iso` crate fetches what it judges.
//!
//! An ISO crosses an air gap once and is trusted for years; registry.k8s.io signs every image it
//! serves (cosign's keyless "simple signing" format: a `sha256-<digest>.sig` tag whose layers are
//! the signed payloads, with the signature, the Fulcio leaf and the Rekor signed entry timestamp in
//! annotations). This crate judges those layers with the nine checks of [`verify::Step`] against
//! a [`TrustedRoot`] and a policy [`Rule`] (identity and OIDC issuer), binding by digest only: the
//! payload's `docker-reference` is recorded, never trusted (it named backing registries for years).
//!
//! Pure: no network, no file system. The `cks-iso` crate's `registry` fetches the `.sig` manifests and
//! payloads; `app::build` decides per [`Mode`] what a missing or bad signature means and writes
//! the evidence ([`evidence`]) into the ISO.
//!
//! Own code on `ring` (already in the tree through rustls) and a small DER reader, not
//! `sigstore-verify`: see "Library choice" in `docs/design/signatures.md` for why.

mod bundle;
#[cfg(test)]
mod cases;
mod der;
pub mod dsse;
mod invalid;
mod key;
pub mod policy;
pub mod referrer;
pub mod rekor;
mod rekor_v2;
pub mod root;
mod sct;
#[cfg(test)]
mod strict;
mod tlog;
mod tsa;
pub mod verify;
mod x509;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use invalid::Invalid;
pub use policy::{
    ALWAYS_SIGNED_SINCE_MINOR, GOOGLE_ISSUER, K8S_BINARY_IDENTITY, K8S_IMAGE_IDENTITY, Policy,
    Rule, always_signed,
};
pub use root::TrustedRoot;
pub use verify::{Failure, Step, Verified};
pub use x509::MAX_CERT_SIZE;

use cks_iso_oci::image::{Descriptor, Digest};

/// Annotation: base64 of the DER ECDSA signature over the payload.
pub const ANN_SIGNATURE: &str = "dev.cosignproject.cosign/signature";
/// Annotation: the Fulcio leaf, PEM.
pub const ANN_CERTIFICATE: &str = "dev.sigstore.cosign/certificate";
/// Annotation: the chain, PEM; untrusted and ignored (the trusted root decides).
pub const ANN_CHAIN: &str = "dev.sigstore.cosign/chain";
/// Annotation: the Rekor bundle (SET and entry).
pub const ANN_BUNDLE: &str = "dev.sigstore.cosign/bundle";
/// Media type of a simple-signing layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// `critical.type` of a cosign image signature.
pub const SIMPLE_SIGNING_TYPE: &str = "cosign container image signature";

/// Sigstore's public-good trusted root, as shipped in the `sigstore-trust-root` 0.15.1 crate
/// (`src/trusted_root.json`, sha256
/// `6494e21ea73fa7ee769f85f57d5a3e6a08725eae1e38c755fc3517c9e6bc0b66`).
pub const PUBLIC_GOOD_ROOT: &str = include_str!("sigstore-public-good.trusted_root.json");

/// The `.sig` tag cosign attaches to `digest`.
pub fn tag_for(digest: &Digest) -> String {
    format!("sha256-{}.sig", digest.hex())
}

/// What a build does about signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Nothing is fetched or checked; `versions.txt` and the SBOMs record "not checked".
    Off,
    /// Every signature found must verify; a covered image without one is a warning, except
    /// where upstream always signs ([`always_signed`] images, Kubernetes binaries of 1.26 on):
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

/// One `sha256-<digest>.sig` manifest as the registry served it, with its layers' payloads; or
/// one cosign 3 signature referrer (see [`referrer`]), its layer the Sigstore bundle.
#[derive(Debug, Clone)]
pub struct SignatureManifest {
    /// The digest it signs (whose tag it is).
    pub signs: Digest,
    /// Its own digest (of `bytes`).
    pub digest: Digest,
    /// Its exact bytes.
    pub bytes: Vec<u8>,
    /// Each layer's descriptor and payload.
    pub layers: Vec<(Descriptor, Vec<u8>)>,
}

impl SignatureManifest {
    /// Where cosign put it: `referrer` (an OCI 1.1 referrer holding a Sigstore bundle) or `tag`
    /// (the legacy `sha256-<hex>.sig` tag).
    pub fn found(&self) -> &'static str {
        match self
            .layers
            .iter()
            .any(|(d, _)| referrer::is_bundle_layer(&d.media_type))
        {
            true => "referrer",
            false => "tag",
        }
    }

    /// The tag that names it for `signs`: the `.sig` tag, or for a referrer the tag-schema name
    /// `sha256-<hex>` of the digest it refers to (what a lock records).
    pub fn tag(&self) -> String {
        match self.found() {
            "referrer" => referrer::fallback_tag(&self.signs),
            _ => tag_for(&self.signs),
        }
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
    /// `verified`, `unsigned` or `not-covered`.
    pub verdict: String,
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
    /// `verified` or `unsigned`.
    pub verdict: String,
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

/// Why an image's signatures are not acceptable.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// Signatures exist, and none verifies.
    #[error("{artifact}: the signature of {digest} fails the {} check: {reason}", step.name())]
    Invalid {
        /// The image reference.
        artifact: String,
        /// The digest the failing signature is for.
        digest: String,
        /// The failed step (of the first failing layer).
        step: Step,
        /// What that step found.
        reason: String,
    },
    /// `--signatures enforce` and no signature.
    #[error("{artifact}: no signature for {digest} or its index (--signatures enforce)")]
    Unsigned {
        /// The image reference.
        artifact: String,
        /// The platform manifest.
        digest: String,
    },
    /// A covered image that upstream always signs ([`always_signed`]) without a signature: the
    /// registry or a mirror on the way withheld it.
    #[error(
        "{artifact}: no signature for {digest} or its index, and registry.k8s.io signs every \
         {repository} image of Kubernetes 1.{ALWAYS_SIGNED_SINCE_MINOR} and later"
    )]
    Withheld {
        /// The image reference.
        artifact: String,
        /// The platform manifest.
        digest: String,
        /// The image's repository (`registry.k8s.io/kube-apiserver`).
        repository: String,
    },
    /// A covered file without a signature, where one is required: `enforce`, or a Kubernetes
    /// binary of a release that always publishes one.
    #[error("{artifact}: no signature for {digest}: {why}")]
    UnsignedFile {
        /// The file's URL.
        artifact: String,
        /// Its digest.
        digest: String,
        /// Why that fails the build.
        why: String,
    },
    /// The `.sig` manifest itself is malformed.
    #[error("{artifact}: the signature manifest for {digest} is malformed: {reason}")]
    Malformed {
        /// The image reference.
        artifact: String,
        /// The digest it signs.
        digest: String,
        /// What is wrong.
        reason: String,
    },
}

impl SignatureError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Invalid {
                step: Step::Identity | Step::Issuer,
                ..
            } => "it is signed, but not by whom the policy expects; check the registry mirror \
                 (--registry-mirror) or mirror (--mirror) serving it, or the identities in \
                 --signature-policy"
                .into(),
            Self::Invalid {
                step: Step::Timestamp,
                ..
            } => "nothing dates the signature by a timestamp authority the trusted root lists: \
                  check its timestampAuthorities (--trusted-root), or the bundle was altered"
                .into(),
            Self::Invalid { .. } | Self::Malformed { .. } => {
                "the artifact or its signature was altered, or the trusted root (--trusted-root) \
                 is not the one that signed it"
                    .into()
            }
            Self::UnsignedFile { .. } => {
                "dl.k8s.io publishes .sig and .cert beside every Kubernetes >= 1.26 binary: check \
                 that the mirror serving it (--mirror) carries them too (offline, that the cache \
                 holds them from an online build); --signatures warn accepts it with a warning, \
                 --signatures off skips the check"
                    .into()
            }
            Self::Withheld { .. } => {
                "the registry mirror serving it (--registry-mirror) or a proxy on the way does not \
                 pass its sha256-<hex>.sig tags and referrers on (offline, the cache holds none \
                 from an online build); --signatures warn accepts it with a warning"
                    .into()
            }
            Self::Unsigned { .. } => {
                "use --signatures verify to accept unsigned images with a warning".into()
            }
        })
    }
}

/// Why one signature manifest was not accepted (see [`judge_manifest`]), without the image it
/// was found for, so that a verdict can be kept and given again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// It has no layers.
    NoLayers,
    /// How its first failing layer failed.
    Failed(Failure),
}

impl Rejection {
    /// The error that says it of `artifact`'s signature manifest for `signs`.
    pub fn into_error(self, artifact: &str, signs: &Digest) -> SignatureError {
        match self {
            Self::NoLayers => SignatureError::Malformed {
                artifact: artifact.into(),
                digest: signs.to_string(),
                reason: "it has no layers".into(),
            },
            Self::Failed(Failure { step, reason }) => SignatureError::Invalid {
                artifact: artifact.into(),
                digest: signs.to_string(),
                step,
                reason,
            },
        }
    }
}

/// Judges one signature manifest (a `.sig` manifest or a referrer) under `rule`: the first of
/// its layers that verifies, else how the first one failed. Its layers' payloads must be those
/// its descriptors name (the registry checks each one it fetches).
pub fn judge_manifest(
    root: &TrustedRoot,
    rule: &Rule,
    sig: &SignatureManifest,
    now: i64,
) -> Result<Verified, Rejection> {
    let mut first = None;
    for (desc, payload) in &sig.layers {
        let result = match referrer::is_bundle_layer(&desc.media_type) {
            true => referrer::verify_layer(root, rule, &sig.signs, desc, payload, now),
            false => verify::layer(
                root,
                rule,
                &sig.signs.to_string(),
                &desc.digest.to_string(),
                &desc.annotations,
                payload,
                now,
            ),
        };
        match result {
            Ok(verified) => return Ok(verified),
            Err(failure) => {
                first.get_or_insert(failure);
            }
        }
    }
    Err(first.map_or(Rejection::NoLayers, Rejection::Failed))
}

/// Judges an image's signatures: those found for its platform manifest and for its index
/// (`found`, either may be missing), under `rule`. `Ok(None)` when nothing was found; the
/// caller's [`Mode`] decides what that means. The index path needs no extra membership check:
/// the platform manifest was chosen from that index, verified by digest.
pub fn judge(
    root: &TrustedRoot,
    rule: &Rule,
    artifact: &str,
    found: &[SignatureManifest],
    now: i64,
) -> Result<Option<(Digest, Digest, Verified)>, SignatureError> {
    let mut first: Option<SignatureError> = None;
    for sig in found {
        match judge_manifest(root, rule, sig, now) {
            Ok(verified) => return Ok(Some((sig.signs.clone(), sig.digest.clone(), verified))),
            Err(rejection) => {
                first.get_or_insert_with(|| rejection.into_error(artifact, &sig.signs));
            }
        }
    }
    match first {
        Some(err) => Err(err),
        None => Ok(None),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_good_root_parses() {
        let root = TrustedRoot::from_json(PUBLIC_GOOD_ROOT).unwrap();
        assert_eq!(root.cas.len(), 2);
        assert_eq!(root.ctlogs.len(), 2);
        // Rekor v1 (P-256) is usable; its log id is the SHA-256 of its key.
        let rekor = &root.tlogs[0];
        assert_eq!(
            hex::encode(&rekor.id),
            "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d"
        );
        assert!(rekor.key.is_some());
    }

    #[test]
    fn modes_parse() {
        assert_eq!("enforce".parse::<Mode>().unwrap(), Mode::Enforce);
        assert_eq!("warn".parse::<Mode>().unwrap(), Mode::Warn);
        assert_eq!(Mode::Warn.to_string(), "warn");
        assert!("on".parse::<Mode>().is_err());
        assert_eq!(Mode::default(), Mode::Verify);
    }
}
