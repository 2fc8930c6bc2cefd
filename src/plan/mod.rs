//! What goes into a CKS ISO, decided from the command line and resolved versions, without touching
//! the network: the normalised request (flags or upstream's positional form), the edits each
//! manifest gets (and which manifests, [`manifests`]), the image set and the ISO's file name.
//! `app::build` carries the plan out.

mod locked;
mod manifests;
pub mod name;

use std::path::PathBuf;

pub use locked::{Extra, Locked, locked};
pub use manifests::{Role, Taken, autoscaler_image, manifests, not_taken, provider_image};

use crate::image::Reference;
use crate::manifest::{self, ManifestError};
use crate::upstream::Arch;

/// Where a user-given manifest comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Downloaded (through the mirrors).
    Url(String),
    /// Read from the local file system.
    File(PathBuf),
}

impl Source {
    /// `http://` and `https://` are URLs; anything else is a path.
    pub fn parse(text: &str) -> Self {
        match text.starts_with("http://") || text.starts_with("https://") {
            true => Self::Url(text.to_owned()),
            false => Self::File(PathBuf::from(text)),
        }
    }
}

/// A wrong command line.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Something required is missing.
    #[error("{what} is required")]
    Missing {
        /// The flag or argument.
        what: &'static str,
    },
    /// The positional form has the wrong number of arguments.
    #[error("the positional form takes 7 to 9 arguments, not {count}")]
    Positional {
        /// How many were given.
        count: usize,
    },
    /// A value is given twice: as a positional argument and as a flag.
    #[error("{what} is given both as a positional argument and as a flag")]
    Twice {
        /// The setting.
        what: &'static str,
    },
    /// `--locked` with upstream's positional form.
    #[error("--locked takes its versions from the lock, not from positional arguments")]
    LockedPositional,
    /// A flag says something else than the lock.
    #[error("{} contradicts the lock, which says {locked:?}", setting(flag, given))]
    Contradicts {
        /// The flag (or environment variable).
        flag: &'static str,
        /// Its value.
        given: String,
        /// What the lock says.
        locked: String,
    },
    /// The lock's manifest came from a local file, which must be given again.
    #[error("the lock's {path} came from the local file {name}; pass it again with {flag} FILE")]
    LocalManifest {
        /// The flag that takes it.
        flag: &'static str,
        /// Its path in the ISO.
        path: String,
        /// The file name the lock recorded.
        name: String,
    },
    /// The lock does not hold what was asked.
    #[error(transparent)]
    Lock(crate::lock::LockError),
    /// An ISO name that is not one path component.
    #[error(transparent)]
    Name(#[from] name::NameError),
    /// An architecture cks-iso cannot build for.
    #[error("--arch {given:?} is not an architecture cks-iso builds for")]
    Arch {
        /// What was given.
        given: String,
    },
    /// CloudStack 4.23's script form: argument 6 is a Headlamp version, not a dashboard manifest.
    #[error(
        "positional argument 6 is {given:?}, a Headlamp version as CloudStack 4.23's script takes \
         it; cks-iso takes DASHBOARD_YAML (a URL or a file) there, and the Headlamp manifest itself \
         with --headlamp"
    )]
    HeadlampVersion {
        /// What was given.
        given: String,
    },
}

/// A flag with its value (`--cni "1.7.0"`), or a variable with its (`AUTOSCALER_VERSION="1.2"`).
fn setting(flag: &str, given: &str) -> String {
    match flag.starts_with('-') {
        true => format!("{flag} {given:?}"),
        false => format!("{flag}={given:?}"),
    }
}

/// `0.40.1` or `v0.40.1`: what CloudStack 4.23's script takes as its sixth argument.
fn is_version(text: &str) -> bool {
    let digits = text.strip_prefix('v').unwrap_or(text);
    let parts: Vec<&str> = digits.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

impl PlanError {
    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Arch { .. } => "use amd64 (x86_64) or arm64 (aarch64)".into(),
            Self::Lock(e) => return e.hint(),
            Self::Name(_) => name::NameError::hint(),
            Self::Contradicts { .. } | Self::LockedPositional => {
                "drop the flag (the lock decides), or build without --locked to change the inputs"
                    .into()
            }
            Self::LocalManifest { .. } => {
                "the file must hash to what the lock records; a changed file is reported".into()
            }
            Self::HeadlampVersion { .. } => "give a dashboard manifest as argument 6 and the \
                Headlamp manifest with --headlamp URL|FILE (the URL the 4.23 script builds from the \
                version no longer exists upstream), e.g. cks-iso build OUTPUT_PATH 1.33.1 1.6.2 \
                1.33.0 NETWORK_YAML DASHBOARD_YAML setup-v1.33.1 amd64 --headlamp \
                https://example.org/headlamp.yaml"
                .into(),
            _ => "cks-iso build --kubernetes 1.33.1 --network URL --dashboard URL [--arch arm64]…, or \
                  upstream's form: OUTPUT_PATH KUBERNETES_VERSION CNI_VERSION CRICTL_VERSION \
                  NETWORK_YAML DASHBOARD_YAML BUILD_NAME [ARCH] [ETCD_VERSION]"
                .into(),
        })
    }
}

/// The command line, normalised. Versions keep what the user wrote; `resolve` parses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Kubernetes release as given.
    pub kubernetes: String,
    /// Architectures, each once, in the order given.
    pub arches: Vec<Arch>,
    /// CNI plugins release, if given.
    pub cni: Option<String>,
    /// crictl release, if given.
    pub crictl: Option<String>,
    /// etcd release, if given.
    pub etcd: Option<String>,
    /// `network.yaml`.
    pub network: Source,
    /// `dashboard.yaml`.
    pub dashboard: Source,
    /// `headlamp.yaml`, optional.
    pub headlamp: Option<Source>,
    /// Output directory.
    pub output: PathBuf,
    /// ISO name before `-<uname>.iso`.
    pub name: String,
}

/// The flags of `build` that the positional form can also set.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--kubernetes`.
    pub kubernetes: Option<String>,
    /// `--cni`.
    pub cni: Option<String>,
    /// `--crictl`.
    pub crictl: Option<String>,
    /// `--arch`, repeatable.
    pub arches: Vec<String>,
    /// `--etcd`.
    pub etcd: Option<String>,
    /// `--network`.
    pub network: Option<String>,
    /// `--dashboard`.
    pub dashboard: Option<String>,
    /// `--headlamp`.
    pub headlamp: Option<String>,
    /// `--output`.
    pub output: Option<PathBuf>,
    /// `--name`.
    pub name: Option<String>,
}

fn merge<T>(
    what: &'static str,
    positional: Option<T>,
    flag: Option<T>,
) -> Result<Option<T>, PlanError> {
    match (positional, flag) {
        (Some(_), Some(_)) => Err(PlanError::Twice { what }),
        (p, f) => Ok(p.or(f)),
    }
}

/// Combines upstream's positional form with the flags.
pub fn request(positional: &[String], flags: Flags) -> Result<Request, PlanError> {
    if !positional.is_empty() && !(7..=9).contains(&positional.len()) {
        return Err(PlanError::Positional {
            count: positional.len(),
        });
    }
    let at = |i: usize| positional.get(i).filter(|s| !s.is_empty()).cloned();
    if let Some(given) = at(5).filter(|a| is_version(a)) {
        return Err(PlanError::HeadlampVersion { given });
    }
    let output = merge(
        "OUTPUT_PATH / --output",
        at(0).map(PathBuf::from),
        flags.output,
    )?;
    let kubernetes = merge("KUBERNETES_VERSION / --kubernetes", at(1), flags.kubernetes)?.ok_or(
        PlanError::Missing {
            what: "--kubernetes",
        },
    )?;
    let cni = merge("CNI_VERSION / --cni", at(2), flags.cni)?;
    let crictl = merge("CRICTL_VERSION / --crictl", at(3), flags.crictl)?;
    let network = merge("NETWORK_YAML / --network", at(4), flags.network)?
        .ok_or(PlanError::Missing { what: "--network" })?;
    let dashboard = merge("DASHBOARD_YAML / --dashboard", at(5), flags.dashboard)?.ok_or(
        PlanError::Missing {
            what: "--dashboard",
        },
    )?;
    let name_field = if at(6).is_some() {
        "BUILD_NAME"
    } else {
        "--name"
    };
    let name = merge("BUILD_NAME / --name", at(6), flags.name)?;
    if let Some(name) = &name {
        name::check(name, name_field)?;
    }
    let positional_arch = at(7).map(|a| vec![a]);
    let arch_flags = (!flags.arches.is_empty()).then_some(flags.arches);
    let arch_texts = merge("ARCH / --arch", positional_arch, arch_flags)?
        .unwrap_or_else(|| vec!["amd64".into()]);
    let etcd = merge("ETCD_VERSION / --etcd", at(8), flags.etcd)?;
    let mut arches = Vec::new();
    for text in arch_texts {
        let arch = Arch::parse(&text).map_err(|_| PlanError::Arch { given: text })?;
        if !arches.contains(&arch) {
            arches.push(arch);
        }
    }
    let bare = kubernetes.trim().trim_start_matches('v').to_owned();
    Ok(Request {
        name: name.unwrap_or_else(|| format!("setup-v{bare}")),
        kubernetes,
        arches,
        cni,
        crictl,
        etcd,
        network: Source::parse(&network),
        dashboard: Source::parse(&dashboard),
        headlamp: flags.headlamp.as_deref().map(Source::parse),
        output: output.unwrap_or_else(|| PathBuf::from(".")),
    })
}

/// `<name>-<x86_64|aarch64>.iso`, as upstream names it.
pub fn iso_file_name(name: &str, arch: Arch) -> String {
    format!("{name}-{}.iso", arch.uname())
}

/// A manifest after its edits, with the images it references.
#[derive(Debug, Clone)]
pub struct Edited {
    /// The text that goes into the ISO.
    pub text: String,
    /// Every image it references, normalised.
    pub images: Vec<String>,
    /// What was changed, for the log.
    pub notes: Vec<String>,
    /// What was repaired in upstream's text (a joined `---`), for a warning the user sees.
    pub warnings: Vec<String>,
}

/// Applies the contract's edits to the manifest `name` and lists its images.
pub fn edit(name: &str, text: &str, role: &Role) -> Result<Edited, ManifestError> {
    let mut notes = Vec::new();
    let mut warnings = Vec::new();
    let mut text = text.to_owned();
    let joined = manifest::find_joined_separators(&text);
    if !joined.is_empty() {
        for j in &joined {
            warnings.push(format!(
                "line {} joins two documents ({:?}): split it so each document parses on its own",
                j.line, j.text
            ));
        }
        text = manifest::split_joined_separators(&text);
    }
    match role {
        Role::Autoscaler { image } => {
            text = manifest::pin_single_image(name, &text, image)?;
            text = manifest::append_autoscaler_extra(&text);
            notes.push(format!(
                "image set to {image}; cluster-autoscaler-extra RBAC appended"
            ));
        }
        Role::Provider { image } => {
            text = manifest::pin_single_image(name, &text, image)?;
            notes.push(format!("image set to {image}"));
        }
        Role::Network | Role::Dashboard | Role::Headlamp | Role::Csi | Role::Unit => {}
    }
    let (pulled, changed) = manifest::pull_if_not_present(&text);
    if changed > 0 {
        notes.push(format!(
            "{changed} imagePullPolicy line(s) set to IfNotPresent"
        ));
    }
    let docs = manifest::check_yaml(name, &pulled)?;
    Ok(Edited {
        images: manifest::images(&docs),
        text: pulled,
        notes,
        warnings,
    })
}

/// Whether `image` is a pause image by the rule `verify` applies: the last component of its
/// repository is `pause`. Nodes choose their sandbox image with `ctr images ls -q | grep pause |
/// sort | tail -1`, so an ISO must hold exactly one.
pub fn is_pause(image: &Reference) -> bool {
    image.path().rsplit('/').next() == Some("pause")
}

/// A bundled manifest names another pause image than kubeadm's.
#[derive(Debug, thiserror::Error)]
#[error(
    "{manifest} ({origin}){} names the pause image {theirs}, but kubeadm's is {kubeadm}: an ISO \
     must hold exactly one pause image, and nodes pick their sandbox image with \
     `ctr images ls -q | grep pause | sort | tail -1`, which would run {picked}",
    line.map_or(String::new(), |l| format!(" line {l}"))
)]
pub struct PauseConflict {
    /// The manifest's name in the ISO (`network.yaml`).
    pub manifest: String,
    /// Where it came from (URL or `file://…`).
    pub origin: String,
    /// The 1-based line naming the other pause image, when it is an `image:` line.
    pub line: Option<usize>,
    /// The manifest's pause image, normalised.
    pub theirs: String,
    /// kubeadm's pause image, normalised.
    pub kubeadm: String,
    /// The one `sort | tail -1` picks of the two.
    pub picked: String,
}

impl PauseConflict {
    /// What the user can do.
    pub fn hint(&self) -> String {
        format!(
            "make {} name {} (kubeadm's for this Kubernetes release) or leave that image out of it",
            self.manifest, self.kubeadm
        )
    }
}

/// Refuses a manifest that names a pause image other than kubeadm's, before anything is pulled.
/// `manifests` yields each manifest's ISO name, origin and edited text with its images. Images
/// that do not parse are left to [`image_set`] to report.
pub fn one_pause<'a>(
    kubeadm: &[&str],
    manifests: impl IntoIterator<Item = (&'a str, &'a str, &'a Edited)>,
) -> Result<(), Box<PauseConflict>> {
    let normal = |text: &str| Reference::parse(text).ok();
    let Some(want) = kubeadm.iter().filter_map(|t| normal(t)).find(is_pause) else {
        return Ok(());
    };
    let want = want.to_string();
    for (manifest, origin, edited) in manifests {
        for image in &edited.images {
            let Some(theirs) = normal(image).filter(is_pause).map(|r| r.to_string()) else {
                continue;
            };
            if theirs == want {
                continue;
            }
            let line = manifest::image_lines(&edited.text)
                .into_iter()
                .find(|(_, v)| normal(v).is_some_and(|r| r.to_string() == theirs))
                .map(|(n, _)| n);
            return Err(Box::new(PauseConflict {
                manifest: manifest.to_owned(),
                origin: origin.to_owned(),
                line,
                picked: want.clone().max(theirs.clone()),
                theirs,
                kubeadm: want,
            }));
        }
    }
    Ok(())
}

/// The images an ISO bundles: kubeadm's list and every manifest image, normalised like Docker,
/// each once, sorted by full name.
pub fn image_set<'a>(
    names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Reference>, crate::image::ImageError> {
    let mut refs: Vec<Reference> = Vec::new();
    for name in names {
        let r = Reference::parse(name)?;
        if !refs.iter().any(|x| x.to_string() == r.to_string()) {
            refs.push(r);
        }
    }
    refs.sort_by_key(|r| r.to_string());
    Ok(refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn upstream_positional_form_maps_to_the_same_request_as_flags() {
        let p = request(
            &pos(&[
                "out",
                "1.33.1",
                "1.6.2",
                "1.33.0",
                "net.yaml",
                "https://x/d.yaml",
                "setup-x",
                "aarch64",
                "3.5.21",
            ]),
            Flags::default(),
        )
        .unwrap();
        let f = request(
            &[],
            Flags {
                output: Some("out".into()),
                kubernetes: Some("1.33.1".into()),
                cni: Some("1.6.2".into()),
                crictl: Some("1.33.0".into()),
                network: Some("net.yaml".into()),
                dashboard: Some("https://x/d.yaml".into()),
                name: Some("setup-x".into()),
                arches: vec!["arm64".into()],
                etcd: Some("3.5.21".into()),
                headlamp: None,
            },
        )
        .unwrap();
        assert_eq!(p, f);
        assert_eq!(p.network, Source::File("net.yaml".into()));
        assert_eq!(p.dashboard, Source::Url("https://x/d.yaml".into()));
        assert_eq!(iso_file_name(&p.name, p.arches[0]), "setup-x-aarch64.iso");
    }

    #[test]
    fn defaults_and_errors() {
        let r = request(
            &[],
            Flags {
                kubernetes: Some("v1.33.1".into()),
                network: Some("n".into()),
                dashboard: Some("d".into()),
                ..Flags::default()
            },
        )
        .unwrap();
        assert_eq!(
            (r.name.as_str(), r.arches.clone()),
            ("setup-v1.33.1", vec![Arch::Amd64])
        );
        assert!(matches!(
            request(&pos(&["a", "b"]), Flags::default()),
            Err(PlanError::Positional { count: 2 })
        ));
        let twice = request(
            &pos(&["o", "1.33.1", "1", "1", "n", "d", "x"]),
            Flags {
                kubernetes: Some("1.32.0".into()),
                ..Flags::default()
            },
        );
        assert!(matches!(twice, Err(PlanError::Twice { .. })));
        let arch = request(
            &[],
            Flags {
                kubernetes: Some("1".into()),
                network: Some("n".into()),
                dashboard: Some("d".into()),
                arches: vec!["s390x".into()],
                ..Flags::default()
            },
        );
        assert!(matches!(arch, Err(PlanError::Arch { .. })));
    }

    #[test]
    fn cloudstack_4_23_headlamp_version_in_argument_6_is_refused_showing_headlamp() {
        let args = pos(&[
            "out",
            "1.33.1",
            "1.6.2",
            "1.33.0",
            "https://x/net.yaml",
            "0.40.1",
            "setupheadlamp-v1.33.1",
            "amd64",
        ]);
        let err = request(&args, Flags::default()).unwrap_err();
        assert!(matches!(err, PlanError::HeadlampVersion { .. }), "{err}");
        assert!(err.to_string().contains("\"0.40.1\""), "{err}");
        assert!(err.hint().unwrap().contains("--headlamp URL|FILE"));
        for dashboard in ["dash.yaml", "v2", "1.yaml", "https://x/2.7.0"] {
            let mut ok = args.clone();
            ok[5] = dashboard.into();
            assert!(request(&ok, Flags::default()).is_ok(), "{dashboard}");
        }
    }

    #[test]
    fn autoscaler_gets_its_pin_rbac_and_pull_policy_and_keeps_placeholders() {
        let text = "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - image: apache/cloudstack-kubernetes-autoscaler:latest\n          imagePullPolicy: Always\n          command:\n            - --nodes=<min>:<max>:<cluster-id>\n";
        let image = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6".to_owned();
        let e = edit(
            "autoscaler.yaml",
            text,
            &Role::Autoscaler {
                image: image.clone(),
            },
        )
        .unwrap();
        assert_eq!(e.images, [image]);
        assert!(e.text.contains("<min>:<max>:<cluster-id>"));
        assert!(e.text.contains("imagePullPolicy: IfNotPresent") && !e.text.contains("Always"));
        assert!(e.text.contains("name: cluster-autoscaler-extra"));
    }

    #[test]
    fn joined_separators_are_split_and_reported() {
        let text = "kind: A\nmetadata:\n  name: rbac.authorization.k8s.io---\nkind: B\nmetadata:\n  name: b\n";
        let e = edit("manifest.yaml", text, &Role::Csi).unwrap();
        assert!(e.warnings[0].contains("line 3 joins two documents"));
        assert!(e.notes.is_empty(), "a repair is a warning, not a note");
    }

    #[test]
    fn a_byte_order_mark_and_a_right_quoted_policy_leave_the_file_unchanged() {
        let text = "\u{feff}---\nkind: Pod\nspec:\n  containers:\n  - image: busybox:1\n    imagePullPolicy: \"IfNotPresent\"\n";
        let e = edit("network.yaml", text, &Role::Network).unwrap();
        assert_eq!(e.text, text);
        assert!(e.notes.is_empty(), "{:?}", e.notes);
        assert_eq!(e.images, ["busybox:1"]);
    }

    #[test]
    fn another_pause_tag_in_a_manifest_is_refused_naming_both_and_the_line() {
        let kubeadm = [
            "registry.k8s.io/kube-proxy:v1.33.1",
            "registry.k8s.io/pause:3.10",
        ];
        let text = "kind: DaemonSet\nspec:\n  template:\n    spec:\n      containers:\n      - image: calico/node:v3\n      - name: sandbox\n        image: \"registry.k8s.io/pause:3.9\"\n";
        let net = edit("network.yaml", text, &Role::Network).unwrap();
        let err = one_pause(&kubeadm, [("network.yaml", "file:///n.yaml", &net)]).unwrap_err();
        let msg = err.to_string();
        for want in [
            "network.yaml (file:///n.yaml) line 8",
            "registry.k8s.io/pause:3.9",
            "kubeadm's is registry.k8s.io/pause:3.10",
            "which would run registry.k8s.io/pause:3.9",
        ] {
            assert!(msg.contains(want), "{want:?} not in {msg}");
        }
        assert!(err.hint().contains("registry.k8s.io/pause:3.10"));
        // kubeadm's own pause, written short or long, and other images named like it are fine.
        let same = "image: registry.k8s.io/pause:3.10\n---\nimage: rancher/mirrored-pause:3.6\n";
        let same = edit("dashboard.yaml", same, &Role::Dashboard).unwrap();
        assert!(one_pause(&kubeadm, [("dashboard.yaml", "u", &same)]).is_ok());
    }

    #[test]
    fn image_set_normalises_and_deduplicates() {
        let set = image_set([
            "nginx",
            "docker.io/library/nginx:latest",
            "k8s.gcr.io/pause:3.2",
        ])
        .unwrap();
        let names: Vec<String> = set.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            ["docker.io/library/nginx:latest", "k8s.gcr.io/pause:3.2"]
        );
    }
}
