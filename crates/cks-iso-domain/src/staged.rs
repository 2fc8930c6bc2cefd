//! What realizing one architecture staged beyond what its lock records: the archive each image
//! is written as, the manifest edits applied, and what the signature checks found.
//!
//! Why a type of its own: `versions.txt` and the SBOMs are renderings of the run's lock and of
//! this, nothing else ([`crate::versions::render_for`], [`crate::sbom::Inventory::of`]); the
//! network side fills it in once, so a new kind of content changes the lock, this value and the
//! renderings, not the code that writes the ISO. The lock does not record these because they
//! follow from the lock and this cks-iso (the edits, the archive names) or are judgements of the
//! run (the verdicts and signers, kept in `signatures/report.json`), and the lock's bytes stay as
//! they are.

use std::collections::BTreeMap;

use cks_iso_oci::archive::Naming;

/// What one architecture's ISO holds beyond its lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Staged {
    /// Per image reference (as the lock writes it), its archive's file name in `docker/`
    /// (`pause:3.10.tar`; renamed where two images share a name).
    pub archives: BTreeMap<String, String>,
    /// The manifest edits `versions.txt` records as comments, `(path, what)`, in manifest order.
    pub edits: Vec<(String, String)>,
    /// What the signature checks found.
    pub signatures: Signatures,
}

impl Staged {
    /// What was staged: the images' archives as `naming` names them, `edits` and `signatures`.
    pub fn new(naming: &Naming, edits: Vec<(String, String)>, signatures: Signatures) -> Self {
        let archives = naming
            .files
            .iter()
            .map(|(reference, file)| (reference.to_string(), file.clone()))
            .collect();
        Self {
            archives,
            edits,
            signatures,
        }
    }

    /// The path in the ISO of `reference`'s archive (`docker/pause:3.10.tar`).
    ///
    /// # Panics
    ///
    /// When no archive was staged for `reference`: every image of the run's lock has one.
    pub fn archive(&self, reference: &str) -> String {
        let file = self
            .archives
            .get(reference)
            .unwrap_or_else(|| panic!("no archive was staged for {reference}"));
        crate::contract::image_archive(file)
    }
}

/// What the signature checks of one architecture found, per artifact they cover.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signatures {
    /// The mode the checks ran in (`verify`, `warn`, `enforce`); `None` under `--signatures off`.
    pub mode: Option<String>,
    /// Per image reference (as the lock writes it), what its check found.
    pub images: BTreeMap<String, Judged>,
    /// Per downloaded file's path in the ISO (`k8s/kubeadm`), what its check found.
    pub files: BTreeMap<String, Judged>,
}

/// What the check of one artifact found, as far as `versions.txt` and the SBOMs tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// A signature verified; who signed it (cks-iso's checks always say).
    Verified(Option<Signer>),
    /// A rule covers it and it has no signature.
    Unsigned,
    /// A rule covers it, but `--signatures off`: nothing was fetched or judged.
    NotChecked,
    /// No rule covers it: nothing to say.
    NotCovered,
}

/// Who signed an artifact: the certificate's identity and issuer, and the log entry's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// The identity (SAN) that matched the policy.
    pub identity: String,
    /// The OIDC issuer.
    pub issuer: String,
    /// The transparency log entry's index.
    pub log_index: i64,
}

/// What the SBOM says of a covered artifact's signature under `--signatures off`.
pub const NOT_CHECKED: &str = "not checked (--signatures off)";

/// The line `versions.txt` gets under `--signatures off`.
pub const OFF_SUMMARY: &str = "# signatures off: not checked\n";

impl Judged {
    /// What the SBOM says of it (`verified: <identity> via <issuer>, Rekor log index N`,
    /// `unsigned`, [`NOT_CHECKED`]); nothing when not covered.
    pub fn note(&self) -> Option<String> {
        match self {
            Self::Verified(Some(s)) => Some(format!(
                "verified: {} via {}, Rekor log index {}",
                s.identity, s.issuer, s.log_index
            )),
            Self::Verified(None) | Self::NotCovered => None,
            Self::Unsigned => Some("unsigned".to_owned()),
            Self::NotChecked => Some(NOT_CHECKED.to_owned()),
        }
    }
}

impl Signatures {
    /// The one line `versions.txt` gets: `# signatures verify: 9 of 9 covered images verified, 0
    /// unsigned (signatures/report.json)`, with `; 3 of 3 binaries verified` when files were
    /// checked; [`OFF_SUMMARY`] under `--signatures off`.
    pub fn summary(&self) -> String {
        let Some(mode) = &self.mode else {
            return OFF_SUMMARY.to_owned();
        };
        let count = |of: &BTreeMap<String, Judged>, verified: bool| {
            of.values()
                .filter(|j| match j {
                    Judged::Verified(_) => verified,
                    Judged::Unsigned => !verified,
                    _ => false,
                })
                .count()
        };
        let (verified, unsigned) = (count(&self.images, true), count(&self.images, false));
        let binaries = match self.files.is_empty() {
            true => String::new(),
            false => format!(
                "; {} of {} binaries verified",
                count(&self.files, true),
                self.files.len()
            ),
        };
        format!(
            "# signatures {mode}: {verified} of {} covered images verified, {unsigned} unsigned\
             {binaries} ({}/report.json)\n",
            verified + unsigned,
            crate::contract::SIGNATURES_DIR
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use cks_iso_oci::archive::assign_names;
    use cks_iso_oci::image::{Arch, Reference};

    use super::*;
    use crate::lock::sample::sample;
    use crate::lock::{EXTRA_ASKED, ImageEntry, Lock, ManifestEntry, extra_from_manifest};
    use crate::sbom::Inventory;
    use crate::versions::{Versions, render_for};

    const VELERO: &str = "docker.io/velero/velero:v1.16.0";
    const PAUSE: &str = "registry.k8s.io/pause:3.10";

    /// The sample lock with an add-on manifest, an image it names and an image asked for: what
    /// the run's lock of a build with add-on content holds.
    fn lock() -> Lock {
        let mut lock = sample();
        lock.manifests.push(ManifestEntry {
            path: "velero.yaml".into(),
            role: crate::lock::EXTRA_ROLE.into(),
            source: "file:velero.yaml".into(),
            sha256_taken: "e".repeat(64),
            sha256: "f".repeat(64),
        });
        let amd64 = lock.arches.get_mut("amd64").unwrap();
        let digest = |fill: &str| format!("sha256:{}", fill.repeat(64));
        amd64.images.push(ImageEntry {
            extra: Some(extra_from_manifest("velero.yaml")),
            ..ImageEntry::new(VELERO.into(), digest("1"), digest("2"), 30)
        });
        let asked = amd64
            .images
            .iter_mut()
            .find(|i| i.reference == "docker.io/a/b:1");
        asked.unwrap().extra = Some(EXTRA_ASKED.into());
        lock.normalise();
        lock
    }

    fn signer(index: i64) -> Option<Signer> {
        Some(Signer {
            identity: "krel-trust@k8s-releng-prod.iam.gserviceaccount.com".into(),
            issuer: "https://accounts.google.com".into(),
            log_index: index,
        })
    }

    /// What a `--signatures verify` run staged for the lock's amd64.
    fn staged(lock: &Lock) -> Staged {
        let references: Vec<Reference> = (lock.arches["amd64"].images.iter())
            .map(|i| Reference::parse(&i.reference).unwrap())
            .collect();
        let signatures = Signatures {
            mode: Some("verify".into()),
            images: BTreeMap::from([
                (PAUSE.into(), Judged::Verified(signer(7))),
                ("docker.io/a/b:1".into(), Judged::Unsigned),
                (VELERO.into(), Judged::NotCovered),
            ]),
            files: BTreeMap::from([
                ("k8s/kubeadm".into(), Judged::Verified(signer(8))),
                ("k8s/kubelet".into(), Judged::Unsigned),
            ]),
        };
        let edit = "imagePullPolicy: IfNotPresent inserted for 1 container(s)";
        let edits = vec![("velero.yaml".into(), edit.into())];
        Staged::new(&assign_names(&references), edits, signatures)
    }

    #[test]
    fn versions_txt_renders_the_lock_and_what_was_staged() {
        let lock = lock();
        let text = render_for(&lock, Arch::Amd64, &staged(&lock)).unwrap();
        let [a, c, d, f] = ["a", "c", "d", "f"].map(|x| x.repeat(64));
        let one = "1".repeat(64);
        let expected = format!(
            "# CKS binaries ISO contents, written by cks-iso {}\n\
             kubernetes v1.33.1\narch amd64\ncni-plugins v1.6.2\ncrictl v1.33.0\n\
             autoscaler 1.33.4\nccm v1.2.0\ncsi-driver v3.0.0\n\
             file k8s/kubeadm sha256:{d} https://dl.k8s.io/kubeadm\n\
             file k8s/kubelet sha256:{c} https://dl.k8s.io/kubelet\n\
             file velero.yaml sha256:{f} file:velero.yaml\n\
             image docker.io/a/b:1 sha256:{a} docker/b:1.tar\n\
             image {VELERO} sha256:{one} docker/velero:v1.16.0.tar\n\
             image {PAUSE} sha256:{a} docker/pause:3.10.tar\n\
             # edit velero.yaml: imagePullPolicy: IfNotPresent inserted for 1 container(s)\n\
             # extra docker.io/a/b:1 asked for\n\
             # extra {VELERO} named by velero.yaml\n\
             # signatures verify: 1 of 2 covered images verified, 1 unsigned; 1 of 2 binaries \
             verified (signatures/report.json)\n",
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(text, expected);
        assert_eq!(
            Versions::parse(&text).unwrap(),
            Versions::of(&lock, Arch::Amd64, &staged(&lock)).unwrap(),
            "the comments are skipped by every reader"
        );
    }

    #[test]
    fn the_inventory_renders_the_lock_and_what_was_staged() {
        let lock = lock();
        let staged = staged(&lock);
        let inventory = Inventory::of(&lock, Arch::Amd64, &staged).unwrap();
        assert_eq!(inventory.iso, "setup-v1.33.1-x86_64.iso");
        assert_eq!(inventory.epoch, 1_700_000_000);
        assert_eq!(
            inventory.versions,
            Versions::of(&lock, Arch::Amd64, &staged).unwrap()
        );
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect()
        };
        let (b, two) = (format!("sha256:{}", "b".repeat(64)), "2".repeat(64));
        let velero_manifest = format!("sha256:{two}");
        assert_eq!(
            inventory.manifests,
            map(&[
                ("docker/b:1.tar", &b),
                ("docker/pause:3.10.tar", &b),
                ("docker/velero:v1.16.0.tar", &velero_manifest),
            ])
        );
        let verified = |index: i64| {
            format!(
                "verified: krel-trust@k8s-releng-prod.iam.gserviceaccount.com via \
                 https://accounts.google.com, Rekor log index {index}"
            )
        };
        assert_eq!(
            inventory.signatures,
            map(&[
                ("docker/b:1.tar", "unsigned"),
                ("docker/pause:3.10.tar", &verified(7)),
                ("k8s/kubeadm", &verified(8)),
                ("k8s/kubelet", "unsigned"),
            ])
        );
        assert_eq!(
            inventory.extras,
            map(&[
                ("docker/b:1.tar", "add-on image docker.io/a/b:1, asked for"),
                (
                    "docker/velero:v1.16.0.tar",
                    &format!("add-on image {VELERO}, named by velero.yaml"),
                ),
            ])
        );
    }

    #[test]
    fn signatures_off_say_not_checked_where_a_rule_would_have_covered() {
        let lock = lock();
        let mut staged = staged(&lock);
        staged.signatures = Signatures {
            mode: None,
            images: BTreeMap::from([(PAUSE.into(), Judged::NotChecked)]),
            files: BTreeMap::from([("k8s/kubeadm".into(), Judged::NotChecked)]),
        };
        let text = render_for(&lock, Arch::Amd64, &staged).unwrap();
        assert!(
            text.ends_with(&format!("named by velero.yaml\n{OFF_SUMMARY}")),
            "{text}"
        );
        let inventory = Inventory::of(&lock, Arch::Amd64, &staged).unwrap();
        let notes: Vec<(&str, &str)> = (inventory.signatures.iter())
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            notes,
            [
                ("docker/pause:3.10.tar", NOT_CHECKED),
                ("k8s/kubeadm", NOT_CHECKED)
            ]
        );
    }

    #[test]
    fn an_arch_the_lock_does_not_hold_is_named() {
        let lock = lock().only(&["amd64"], "x").unwrap();
        let err = render_for(&lock, Arch::Arm64, &Staged::default()).unwrap_err();
        assert_eq!(err.to_string(), "the lock locks amd64, not arm64");
        assert!(Inventory::of(&lock, Arch::Arm64, &Staged::default()).is_err());
    }
}
